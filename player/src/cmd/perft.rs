use crate::machines::{load_game, with_machine, MachineArgs};
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use propel_runtime::perft::perft;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Deepest depth to count (lines are printed for 0..=depth).
    #[arg(long, short)]
    depth: usize,
    #[command(flatten)]
    machine: MachineArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = load_game(&a.game)?;
    let bar = ProgressBar::new_spinner().with_style(ProgressStyle::with_template("{spinner} perft: {msg} states")?);
    let result = with_machine!(a.machine, game, |m| perft(&mut m, a.depth, &mut |n| {
        bar.set_message(n.to_string());
        bar.tick();
    })?);
    bar.finish_and_clear();
    for l in &result.lines {
        println!("{}", propel_runtime::formats::to_line(l));
    }
    if result.dead_ends > 0 {
        tracing::warn!(
            "{} non-terminal states had a role without legal moves (counted as dead ends)",
            result.dead_ends
        );
    }
    Ok(ExitCode::SUCCESS)
}
