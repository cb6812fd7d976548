//! Choosing a state machine by name (`--machine`), and loading games.

use anyhow::{bail, Result};
use propel_compiler::Game;
use std::path::Path;
use std::sync::Arc;

/// The machines a command can run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachineKind {
    Prover,
}

impl std::str::FromStr for MachineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "prover" => Ok(MachineKind::Prover),
            other => Err(format!("unknown machine `{other}` (available: prover)")),
        }
    }
}

impl MachineKind {
    pub fn name(&self) -> String {
        match self {
            MachineKind::Prover => "prover".into(),
        }
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
    ($kind:expr, $game:expr, |$m:ident| $body:expr) => {
        match $kind {
            $crate::machines::MachineKind::Prover => {
                #[allow(unused_mut)]
                let mut $m = propel_runtime::Prover::new($game.clone())?;
                $body
            }
        }
    };
}
pub(crate) use with_machine;
