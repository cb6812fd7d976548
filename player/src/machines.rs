//! Choosing a state machine by name (`--machine`), and loading games.

use crate::opts;
use crate::position::PositionArgs;
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
    /// Every output asked of the rules top-down, with tabling.
    TopDown,
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
            "topdown" => Ok(MachineKind::TopDown),
            "propnet" => Ok(MachineKind::Propnet),
            "jit" => Ok(MachineKind::Jit),
            "hybrid" => Ok(MachineKind::Hybrid),
            other if other.starts_with("aot:") => Ok(MachineKind::Aot(other[4..].into())),
            other => Err(format!(
                "unknown machine `{other}` (available: auto, prover, topdown, propnet, jit, aot:FILE, hybrid)"
            )),
        }
    }
}

impl MachineKind {
    pub fn name(&self) -> String {
        match self {
            MachineKind::Auto => "auto".into(),
            MachineKind::Prover => "prover".into(),
            MachineKind::TopDown => "topdown".into(),
            MachineKind::Propnet => "propnet".into(),
            MachineKind::Jit => "jit".into(),
            MachineKind::Aot(p) => format!("aot:{}", p.display()),
            MachineKind::Hybrid => "hybrid".into(),
        }
    }
}

/// How a game is read and built into a network (every command that
/// builds one): passes, the grounding budget, code generation, and the
/// input size allowed.
#[derive(clap::Args, Clone, Debug)]
pub struct BuildArgs {
    /// Propnet optimisation passes, comma-separated (`all`, `none`, or names).
    #[arg(long, default_value = "all", value_parser = parse_passes)]
    pub passes: PassList,
    /// Seconds allowed for grounding (at most 1e6).
    #[arg(long, default_value_t = 60.0, value_parser = opts::seconds(), allow_hyphen_values = true)]
    pub ground_seconds: f64,
    /// Largest game file read, in MB: reading takes about 36 bytes of
    /// memory per byte of input, so larger files are refused before they
    /// are read.
    #[arg(long, default_value_t = DEFAULT_MAX_FILE_MB, value_parser = opts::count64(1, 1_000_000), allow_hyphen_values = true)]
    pub max_file_mb: u64,
    /// With the `eliminate` pass: keep the eliminated network whenever it
    /// builds, not only at a quarter of the edges (for measuring).
    #[arg(long)]
    pub always_eliminate: bool,
    #[command(flatten)]
    pub codegen: CodegenArgs,
}

/// Options shared by every command that runs a machine.
#[derive(clap::Args, Clone, Debug)]
pub struct MachineArgs {
    /// Which state machine: auto (the best the game builds: the
    /// interpreted propnet for single states, with the JIT's bit-parallel
    /// lanes where rollouts matter; the prover where no propnet builds),
    /// prover, topdown (the rules asked top-down, with tabling), propnet,
    /// jit, aot:FILE (a library from `propel compile`) or hybrid (the
    /// propnet, with rollouts on the JIT's lanes).
    #[arg(long, default_value = "auto")]
    pub machine: MachineKind,
    #[command(flatten)]
    pub build: BuildArgs,
}

/// Propnet passes, checked when the command line is read (so that a bad
/// name is an error whatever machine runs).
#[derive(Clone, Debug)]
pub struct PassList(pub Vec<Pass>);

fn parse_passes(s: &str) -> Result<PassList, String> {
    Pass::parse_list(s).map(PassList)
}

/// How native code is generated (commands that build a JIT or a library).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CodegenArgs {
    /// Threads for code generation (default: every core; at most 256).
    #[arg(long, value_parser = opts::count(1, opts::MAX_THREADS), allow_hyphen_values = true)]
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
            o.threads = n;
        }
        Ok(o)
    }
}

impl BuildArgs {
    pub fn limits(&self) -> GroundLimits {
        GroundLimits {
            time: Duration::from_secs_f64(self.ground_seconds),
            always_eliminate: self.always_eliminate,
            ..Default::default()
        }
    }

    pub fn passes(&self) -> Vec<Pass> {
        self.passes.0.clone()
    }

    /// Everything a build takes from these options.
    pub fn build_options(&self) -> Result<BuildOptions> {
        Ok(BuildOptions {
            limits: self.limits(),
            passes: self.passes(),
            codegen: self.codegen.options()?,
            lookups: false,
        })
    }

    /// Reads and validates a game, refusing files over `--max-file-mb`.
    pub fn load_game(&self, path: &Path) -> Result<Arc<Game>> {
        load_game_within(path, self.max_file_mb)
    }

    /// Grounds, compiles and generates native code for `game`, logging what it took.
    pub fn build_jit(&self, game: &Arc<Game>) -> Result<propel_runtime::build::BuiltJit> {
        let opts = self.build_options()?;
        let b = propel_runtime::build::jit_machine(game, &opts).map_err(|e| match e {
            propel_runtime::build::JitError::Compile(c) => lookup_hint(game, c),
            other => other.into(),
        })?;
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
        let b = propnet_machine(game, &opts).map_err(|e| lookup_hint(game, e))?;
        for r in &b.report {
            tracing::debug!("{}: {:.3} s, {}", r.stage, r.seconds, r.counts);
        }
        Ok(b)
    }
}

impl MachineArgs {
    pub fn load_game(&self, path: &Path) -> Result<Arc<Game>> {
        self.build.load_game(path)
    }

    /// `game` started from `position` (see [`crate::position`]); a
    /// library from `propel compile` cannot start elsewhere than where its
    /// file does.
    pub fn at_position(&self, game: Arc<Game>, position: &PositionArgs, path: &Path) -> Result<Arc<Game>> {
        if position.is_set() {
            if let MachineKind::Aot(p) = &self.machine {
                bail!(
                    "--from and --state need a machine built from the rules: {} was compiled for the file's initial state",
                    p.display()
                );
            }
        }
        position.apply(game, path)
    }

    pub fn build_jit(&self, game: &Arc<Game>) -> Result<propel_runtime::build::BuiltJit> {
        self.build.build_jit(game)
    }

    pub fn build_hybrid(&self, game: &Arc<Game>) -> Result<propel_runtime::Hybrid> {
        self.build.build_hybrid(game)
    }

    pub fn build(&self, game: &Arc<Game>) -> Result<Built> {
        self.build.build(game)
    }
}

/// The machine a command runs on, and why it was chosen: commands print
/// it (on stderr, or in their JSON) so that `--machine auto`'s choice is
/// never hidden.
#[derive(Clone, Debug)]
pub struct Chosen {
    /// prover, propnet, jit, hybrid or aot.
    pub name: &'static str,
    /// Empty when the machine was named on the command line.
    pub why: String,
}

impl Chosen {
    pub fn named(name: &'static str) -> Chosen {
        Chosen { name, why: String::new() }
    }

    /// `propnet (--machine auto: ...)`, or the bare name.
    pub fn describe(&self) -> String {
        if self.why.is_empty() {
            self.name.to_string()
        } else {
            format!("{} (--machine auto: {})", self.name, self.why)
        }
    }

    /// One line on stderr: `COMMAND: machine NAME (why)`.
    pub fn announce(&self, command: &str) {
        eprintln!("{command}: machine {}", self.describe());
    }
}

/// What `--machine auto` built.
#[allow(clippy::large_enum_variant, reason = "one per command, built once: boxing would only add an indirection")]
pub enum AutoMachine {
    Hybrid(propel_runtime::Hybrid),
    Propnet(propel_runtime::PropnetMachine),
    /// The propnet, with the goal or terminal logic it was built without
    /// answered by the rules.
    Lookups(propel_runtime::lookup::LookupMachine<propel_runtime::PropnetMachine>),
    Prover(propel_runtime::Prover),
}

impl BuildArgs {
    /// `--machine auto`: the interpreted propnet (the fastest machine for
    /// one state at a time), with the JIT's bit-parallel lanes beside it
    /// when `rollouts` (searches and playouts: the hybrid machine); the
    /// prover where the game builds no propnet. A game whose goal or
    /// terminal logic is over the budget gets the propnet with those
    /// outputs answered by the rules. Says what it chose and why.
    pub fn build_auto(&self, game: &Arc<Game>, rollouts: bool) -> Result<(AutoMachine, Chosen)> {
        let opts = BuildOptions { lookups: true, ..self.build_options()? };
        let chosen = |name, why: String| Chosen { name, why };
        let p = match propel_runtime::build::prepare(game, &opts) {
            Ok(p) => p,
            Err(e) => {
                let c = chosen("prover", format!("no propnet: {e}"));
                return Ok((AutoMachine::Prover(propel_runtime::Prover::new(game.clone())?), c));
            }
        };
        let lookups = p.lookups();
        if lookups.any() {
            let why = match lookups.questions {
                true => format!(
                    "rules over the grounding budget: {} query components ask questions of the state, answered top-down",
                    p.net().queries.len()
                ),
                false => format!(
                    "the network has no {} logic (over the grounding budget): the rules answer it",
                    lookups.describe()
                ),
            };
            let m = p.lookup_machine(propel_runtime::Prover::new(game.clone())?)?;
            return Ok((AutoMachine::Lookups(m), chosen("propnet+lookups", why)));
        }
        if rollouts {
            let why = match p.jit(&game.name) {
                Ok((native, _)) if native.has_lanes() => {
                    let c = chosen("hybrid", "tree on the propnet, rollouts on the JIT's lanes".into());
                    return Ok((AutoMachine::Hybrid(propel_runtime::Hybrid::new(p.propnet(), native)), c));
                }
                Ok(_) => "the JIT has no lane code for this network".to_string(),
                Err(e) => format!("no JIT: {e}"),
            };
            return Ok((AutoMachine::Propnet(p.propnet()), chosen("propnet", why)));
        }
        Ok((AutoMachine::Propnet(p.propnet()), chosen("propnet", "the fastest machine for one state at a time".into())))
    }
}

impl MachineArgs {
    pub fn build_auto(&self, game: &Arc<Game>, rollouts: bool) -> Result<(AutoMachine, Chosen)> {
        self.build.build_auto(game, rollouts)
    }
}

/// `e`, and where it is a grounding failure in what only the goal or
/// terminal test reads, the machine that builds anyway.
fn lookup_hint(game: &Game, e: propel_compiler::pipeline::CompileError) -> anyhow::Error {
    let left = match &e {
        propel_compiler::pipeline::CompileError::Ground(g) => propel_compiler::lookup::for_failure(game, g),
        _ => None,
    };
    match left {
        Some(l) => anyhow::anyhow!(
            "{e} (only the {} test needs it: `--machine auto` builds the propnet with that test answered by the rules)",
            l.describe()
        ),
        None => e.into(),
    }
}

/// Loads a machine library, checking it was built from this game file.
pub fn load_aot(path: &Path, game: &Game) -> Result<propel_runtime::NativeMachine> {
    let text = std::fs::read(&game.name).map_err(|e| anyhow::anyhow!("{}: {e}", game.name))?;
    let hash = propel_compiler::lower::game_hash(&text);
    let code = Arc::new(propel_runtime::aot::load(path, Some(&hash))?);
    Ok(propel_runtime::NativeMachine::new(code))
}

/// Default of `--max-file-mb`: 64 MB of rules take about 2.3 GB to read.
pub const DEFAULT_MAX_FILE_MB: u64 = 64;

/// Memory the reader takes per byte of input (measured: about 36).
pub const READ_BYTES_PER_BYTE: u64 = 36;

/// Refuses a file over `max_mb` megabytes before anything reads it: the
/// reader's memory grows with the input (about [`READ_BYTES_PER_BYTE`]
/// bytes per byte), and an allocation failure would abort the process.
pub fn check_file_size(path: &Path, max_mb: u64) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // Missing or unreadable: the read says why.
    };
    let size = meta.len();
    if size > max_mb.saturating_mul(1_000_000) {
        bail!(
            "{}: {:.1} MB of rules would take about {:.1} GB of memory to read ({} bytes per byte of input); \
             the limit is --max-file-mb {max_mb}",
            path.display(),
            size as f64 / 1e6,
            size as f64 * READ_BYTES_PER_BYTE as f64 / 1e9,
            READ_BYTES_PER_BYTE
        );
    }
    Ok(())
}

/// Reads and validates a game no larger than the default limit; the
/// error names the file, line and column.
pub fn load_game(path: &Path) -> Result<Arc<Game>> {
    load_game_within(path, DEFAULT_MAX_FILE_MB)
}

/// Reads and validates a game no larger than `max_mb` megabytes.
pub fn load_game_within(path: &Path, max_mb: u64) -> Result<Arc<Game>> {
    check_file_size(path, max_mb)?;
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

/// Runs `$body` with `$m` bound to a machine of the chosen kind and `$c`
/// to its [`Chosen`] description; with `rollouts`, `--machine auto` adds
/// the JIT's lanes (see [`BuildArgs::build_auto`]).
macro_rules! with_machine {
    ($args:expr, $game:expr, |$m:ident, $c:ident| $body:expr) => {
        with_machine!($args, $game, false, |$m, $c| $body)
    };
    ($args:expr, $game:expr, $rollouts:expr, |$m:ident, $c:ident| $body:expr) => {
        match &$args.machine {
            $crate::machines::MachineKind::Auto => match $args.build_auto(&$game, $rollouts)? {
                ($crate::machines::AutoMachine::Hybrid(m), $c) => {
                    #[allow(unused_mut)]
                    let mut $m = m;
                    $body
                }
                ($crate::machines::AutoMachine::Propnet(m), $c) => {
                    #[allow(unused_mut)]
                    let mut $m = m;
                    $body
                }
                ($crate::machines::AutoMachine::Lookups(m), $c) => {
                    #[allow(unused_mut)]
                    let mut $m = m;
                    $body
                }
                ($crate::machines::AutoMachine::Prover(m), $c) => {
                    #[allow(unused_mut)]
                    let mut $m = m;
                    $body
                }
            },
            $crate::machines::MachineKind::Prover => {
                #[allow(unused_mut)]
                let mut $m = propel_runtime::Prover::new($game.clone())?;
                let $c = $crate::machines::Chosen::named("prover");
                $body
            }
            $crate::machines::MachineKind::TopDown => {
                #[allow(unused_mut)]
                let mut $m = propel_runtime::topdown::TopDownMachine::new($game.clone())?;
                let $c = $crate::machines::Chosen::named("topdown");
                $body
            }
            $crate::machines::MachineKind::Propnet => {
                #[allow(unused_mut)]
                let mut $m = $args.build(&$game)?.machine;
                let $c = $crate::machines::Chosen::named("propnet");
                $body
            }
            $crate::machines::MachineKind::Jit => {
                #[allow(unused_mut)]
                let mut $m = $args.build_jit(&$game)?.machine;
                let $c = $crate::machines::Chosen::named("jit");
                $body
            }
            $crate::machines::MachineKind::Hybrid => {
                #[allow(unused_mut)]
                let mut $m = $args.build_hybrid(&$game)?;
                let $c = $crate::machines::Chosen::named("hybrid");
                $body
            }
            $crate::machines::MachineKind::Aot(ref path) => {
                #[allow(unused_mut)]
                let mut $m = $crate::machines::load_aot(path, &$game)?;
                let $c = $crate::machines::Chosen::named("aot");
                $body
            }
        }
    };
}
pub(crate) use with_machine;
