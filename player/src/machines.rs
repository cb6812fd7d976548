//! Choosing a state machine by name (`--machine`), and loading games.

use anyhow::{bail, Result};
use propel_compiler::ground::GroundLimits;
use propel_compiler::lower::CodegenOptions;
use propel_compiler::propnet::passes::Pass;
use propel_compiler::Game;
use propel_runtime::build::{propnet_machine, BuildOptions, Built};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The machines a command can run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachineKind {
    /// The best machine the game builds ([`MachineArgs::build_auto`]).
    Auto,
    /// The reference prover.
    Prover,
    /// The interpreted propnet.
    Propnet,
    /// The propnet compiled to native code in memory.
    Jit,
    /// A library written by `propel compile`.
    Aot(std::path::PathBuf),
    /// The interpreted propnet, with rollouts on the JIT's lanes.
    Hybrid,
}

impl std::str::FromStr for MachineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(MachineKind::Auto),
            "prover" => Ok(MachineKind::Prover),
            "propnet" => Ok(MachineKind::Propnet),
            "jit" => Ok(MachineKind::Jit),
            "hybrid" => Ok(MachineKind::Hybrid),
            other if other.starts_with("aot:") => Ok(MachineKind::Aot(other[4..].into())),
            other => {
                Err(format!("unknown machine `{other}` (available: auto, prover, propnet, jit, aot:FILE, hybrid)"))
            }
        }
    }
}

impl MachineKind {
    pub fn name(&self) -> String {
        match self {
            MachineKind::Auto => "auto".into(),
            MachineKind::Prover => "prover".into(),
            MachineKind::Propnet => "propnet".into(),
            MachineKind::Jit => "jit".into(),
            MachineKind::Aot(p) => format!("aot:{}", p.display()),
            MachineKind::Hybrid => "hybrid".into(),
        }
    }
}

/// Options shared by every command that runs a machine.
#[derive(clap::Args, Clone, Debug)]
pub struct MachineArgs {
    /// Which state machine: auto (the best the game builds: the
    /// interpreted propnet for single states, with the JIT's bit-parallel
    /// lanes where rollouts matter; the prover where no propnet builds),
    /// prover, propnet, jit, aot:FILE (a library from `propel compile`) or
    /// hybrid (the propnet, with rollouts on the JIT's lanes).
    #[arg(long, default_value = "auto")]
    pub machine: MachineKind,
    /// Propnet optimisation passes, comma-separated (`all`, `none`, or names).
    #[arg(long, default_value = "all")]
    pub passes: String,
    /// Seconds allowed for grounding.
    #[arg(long, default_value_t = 60.0)]
    pub ground_seconds: f64,
    #[command(flatten)]
    pub codegen: CodegenArgs,
}

/// How native code is generated (commands that build a JIT or a library).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CodegenArgs {
    /// Threads for code generation (default: every core).
    #[arg(long)]
    pub codegen_threads: Option<usize>,
    /// Code generation settings for measurement and debugging,
    /// comma-separated key=value: threads, batch-insts, move-table,
    /// fanout-piece, opt-level (none|speed|speed_and_size), regalloc
    /// (backtracking|single_pass), verify, dump-asm, pass-times (on|off).
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub codegen: Option<String>,
}

impl CodegenArgs {
    pub fn options(&self) -> Result<CodegenOptions> {
        let mut o = CodegenOptions::default();
        if let Some(list) = &self.codegen {
            o.apply(list).map_err(anyhow::Error::msg)?;
        }
        if let Some(n) = self.codegen_threads {
            anyhow::ensure!(n > 0, "--codegen-threads must be at least 1");
            o.threads = n;
        }
        Ok(o)
    }
}

impl MachineArgs {
    pub fn limits(&self) -> GroundLimits {
        GroundLimits { time: Duration::from_secs_f64(self.ground_seconds.max(0.0)), ..Default::default() }
    }

    pub fn passes(&self) -> Result<Vec<Pass>> {
        Pass::parse_list(&self.passes).map_err(anyhow::Error::msg)
    }

    /// Everything a build takes from these options.
    pub fn build_options(&self) -> Result<BuildOptions> {
        Ok(BuildOptions { limits: self.limits(), passes: self.passes()?, codegen: self.codegen.options()? })
    }

    /// Grounds, compiles and generates native code for `game`, logging what it took.
    pub fn build_jit(&self, game: &Arc<Game>) -> Result<propel_runtime::build::BuiltJit> {
        let opts = self.build_options()?;
        let b = propel_runtime::build::jit_machine(game, &opts)?;
        for r in &b.report {
            tracing::debug!("{}: {:.3} s, {}", r.stage, r.seconds, r.counts);
        }
        tracing::debug!(
            "codegen: {:.3} s, {} functions, {} counter updates",
            b.code.seconds,
            b.code.functions,
            b.code.updates
        );
        Ok(b)
    }

    /// The interpreted propnet and the JIT of the same network, as one
    /// machine: tree operations on the first, rollouts on the second.
    pub fn build_hybrid(&self, game: &Arc<Game>) -> Result<propel_runtime::Hybrid> {
        let opts = self.build_options()?;
        let p = propel_runtime::build::prepare(game, &opts)?;
        let (native, _) = p.jit(&game.name)?;
        Ok(propel_runtime::Hybrid::new(p.propnet(), native))
    }

    /// Grounds and compiles `game` to a propnet machine, logging what it took.
    pub fn build(&self, game: &Arc<Game>) -> Result<Built> {
        let opts = self.build_options()?;
        let b = propnet_machine(game, &opts)?;
        for r in &b.report {
            tracing::debug!("{}: {:.3} s, {}", r.stage, r.seconds, r.counts);
        }
        Ok(b)
    }
}

/// What `--machine auto` built.
pub enum AutoMachine {
    Hybrid(propel_runtime::Hybrid),
    Propnet(propel_runtime::PropnetMachine),
    Prover(propel_runtime::Prover),
}

impl MachineArgs {
    /// `--machine auto`: the interpreted propnet (the fastest machine for
    /// one state at a time), with the JIT's bit-parallel lanes beside it
    /// when `rollouts` (searches and playouts: the hybrid machine); the
    /// prover where the game builds no propnet. Logs what it chose and why.
    pub fn build_auto(&self, game: &Arc<Game>, rollouts: bool) -> Result<AutoMachine> {
        let opts = self.build_options()?;
        let p = match propel_runtime::build::prepare(game, &opts) {
            Ok(p) => p,
            Err(e) => {
                tracing::info!("machine: auto -> prover (no propnet: {e})");
                return Ok(AutoMachine::Prover(propel_runtime::Prover::new(game.clone())?));
            }
        };
        if rollouts {
            match p.jit(&game.name) {
                Ok((native, _)) if native.has_lanes() => {
                    tracing::info!("machine: auto -> hybrid (tree on the propnet, rollouts on the JIT's lanes)");
                    return Ok(AutoMachine::Hybrid(propel_runtime::Hybrid::new(p.propnet(), native)));
                }
                Ok(_) => tracing::info!("machine: auto -> propnet (the JIT has no lane code for this network)"),
                Err(e) => tracing::info!("machine: auto -> propnet (no JIT: {e})"),
            }
        } else {
            tracing::info!("machine: auto -> propnet");
        }
        Ok(AutoMachine::Propnet(p.propnet()))
    }
}

/// Loads a machine library, checking it was built from this game file.
pub fn load_aot(path: &Path, game: &Game) -> Result<propel_runtime::NativeMachine> {
    let text = std::fs::read(&game.name).map_err(|e| anyhow::anyhow!("{}: {e}", game.name))?;
    let hash = propel_compiler::lower::game_hash(&text);
    let code = Arc::new(propel_runtime::aot::load(path, Some(&hash))?);
    Ok(propel_runtime::NativeMachine::new(code))
}

/// Reads and validates a game; the error names the file, line and column.
pub fn load_game(path: &Path) -> Result<Arc<Game>> {
    match propel_compiler::load_file(path) {
        Ok(g) => {
            for w in &g.warnings {
                tracing::warn!("{}: {w}", path.display());
            }
            Ok(Arc::new(g))
        }
        Err(e) => bail!("{e}"),
    }
}

/// Runs `$body` with `$m` bound to a machine of the chosen kind; with
/// `rollouts`, `--machine auto` adds the JIT's lanes (see
/// [`MachineArgs::build_auto`]).
macro_rules! with_machine {
    ($args:expr, $game:expr, |$m:ident| $body:expr) => {
        with_machine!($args, $game, false, |$m| $body)
    };
    ($args:expr, $game:expr, $rollouts:expr, |$m:ident| $body:expr) => {
        match &$args.machine {
            $crate::machines::MachineKind::Auto => match $args.build_auto(&$game, $rollouts)? {
                $crate::machines::AutoMachine::Hybrid(m) => {
                    #[allow(unused_mut)]
                    let mut $m = m;
                    $body
                }
                $crate::machines::AutoMachine::Propnet(m) => {
                    #[allow(unused_mut)]
                    let mut $m = m;
                    $body
                }
                $crate::machines::AutoMachine::Prover(m) => {
                    #[allow(unused_mut)]
                    let mut $m = m;
                    $body
                }
            },
            $crate::machines::MachineKind::Prover => {
                #[allow(unused_mut)]
                let mut $m = propel_runtime::Prover::new($game.clone())?;
                $body
            }
            $crate::machines::MachineKind::Propnet => {
                #[allow(unused_mut)]
                let mut $m = $args.build(&$game)?.machine;
                $body
            }
            $crate::machines::MachineKind::Jit => {
                #[allow(unused_mut)]
                let mut $m = $args.build_jit(&$game)?.machine;
                $body
            }
            $crate::machines::MachineKind::Hybrid => {
                #[allow(unused_mut)]
                let mut $m = $args.build_hybrid(&$game)?;
                $body
            }
            $crate::machines::MachineKind::Aot(ref path) => {
                #[allow(unused_mut)]
                let mut $m = $crate::machines::load_aot(path, &$game)?;
                $body
            }
        }
    };
}
pub(crate) use with_machine;
