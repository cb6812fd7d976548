use crate::machines::{load_game, with_machine, MachineArgs};
use anyhow::Result;
use propel_runtime::formats::{to_line, TraceLine};
use propel_runtime::trace::{trace, TraceEnd};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Random seed: the same seed gives the same game on every machine.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many steps (lines) if the game has not ended.
    #[arg(long, default_value_t = 10_000)]
    max_steps: usize,
    #[command(flatten)]
    machine: MachineArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = load_game(&a.game)?;
    let roles = game.role_names();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_err = None;
    let end = with_machine!(a.machine, game, |m| trace(&mut m, a.seed, a.max_steps, &mut |s| {
        if let Err(e) = writeln!(out, "{}", to_line(&TraceLine::new(&roles, s))) {
            write_err.get_or_insert(e);
        }
    })?);
    out.flush()?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    match end {
        TraceEnd::Terminal | TraceEnd::StepLimit => Ok(ExitCode::SUCCESS),
        TraceEnd::NoLegalMove { step, role } => {
            eprintln!("error: at step {step} role `{role}` has no legal move, but the state is not terminal");
            Ok(ExitCode::FAILURE)
        }
    }
}
