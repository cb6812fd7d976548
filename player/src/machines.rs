//! Choosing a state machine by name (`--machine`), and loading games.

use anyhow::{bail, Result};
use propel_compiler::ground::GroundLimits;
use propel_compiler::pipeline::{compile, Compiled};
use propel_compiler::propnet::passes::Pass;
use propel_compiler::Game;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The machines a command can run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachineKind {
    /// The reference prover.
    Prover,
    /// The interpreted propnet.
    Propnet,
}

impl std::str::FromStr for MachineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "prover" => Ok(MachineKind::Prover),
            "propnet" => Ok(MachineKind::Propnet),
            other => Err(format!("unknown machine `{other}` (available: prover, propnet)")),
        }
    }
}

impl MachineKind {
    pub fn name(&self) -> String {
        match self {
            MachineKind::Prover => "prover".into(),
            MachineKind::Propnet => "propnet".into(),
        }
    }
}

/// Options shared by every command that runs a machine.
#[derive(clap::Args, Clone, Debug)]
pub struct MachineArgs {
    /// Which state machine: prover or propnet.
    #[arg(long, default_value = "prover")]
    pub machine: MachineKind,
    /// Propnet optimisation passes, comma-separated (`all`, `none`, or names).
    #[arg(long, default_value = "all")]
    pub passes: String,
    /// Seconds allowed for grounding.
    #[arg(long, default_value_t = 60.0)]
    pub ground_seconds: f64,
}

impl MachineArgs {
    pub fn limits(&self) -> GroundLimits {
        GroundLimits { time: Duration::from_secs_f64(self.ground_seconds.max(0.0)), ..Default::default() }
    }

    pub fn passes(&self) -> Result<Vec<Pass>> {
        Pass::parse_list(&self.passes).map_err(anyhow::Error::msg)
    }

    /// Grounds and compiles `game` to propnets, logging what it took.
    pub fn compile(&self, game: &Arc<Game>) -> Result<Compiled> {
        let c = compile(game, &self.limits(), &self.passes()?)?;
        for r in &c.report {
            tracing::debug!("{}: {:.3} s, {}", r.stage, r.seconds, r.counts);
        }
        Ok(c)
    }
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

/// Runs `$body` with `$m` bound to a machine of the chosen kind.
macro_rules! with_machine {
    ($args:expr, $game:expr, |$m:ident| $body:expr) => {
        match $args.machine {
            $crate::machines::MachineKind::Prover => {
                #[allow(unused_mut)]
                let mut $m = propel_runtime::Prover::new($game.clone())?;
                $body
            }
            $crate::machines::MachineKind::Propnet => {
                let compiled = $args.compile(&$game)?;
                let topo = std::sync::Arc::new(propel_runtime::Topology::new(&compiled.net, compiled.goal_net));
                #[allow(unused_mut)]
                let mut $m = propel_runtime::PropnetMachine::new(topo);
                $body
            }
        }
    };
}
pub(crate) use with_machine;
