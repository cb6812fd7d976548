use crate::machines::{with_machine, MachineArgs};
use crate::opts;
use crate::position::PositionArgs;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use propel_runtime::perft::perft;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Deepest depth to count (lines are printed for 0..=depth; at most 1000).
    #[arg(long, short, value_parser = opts::count(0, opts::MAX_DEPTH), allow_hyphen_values = true)]
    depth: usize,
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    machine: MachineArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = a.machine.load_game(&a.game)?;
    let game = a.machine.at_position(game, &a.position, &a.game)?;
    let bar = ProgressBar::new_spinner().with_style(ProgressStyle::with_template("{spinner} perft: {msg} states")?);
    let result = with_machine!(a.machine, game, |m, chosen| {
        chosen.announce("perft");
        perft(&mut m, a.depth, &mut |n| {
            bar.set_message(n.to_string());
            bar.tick();
        })?
    });
    bar.finish_and_clear();
    for l in &result.lines {
        println!("{}", serde_json::json!({"depth": l.depth, "nodes": l.nodes, "terminal": l.terminal}));
    }
    if result.dead_ends > 0 {
        tracing::warn!(
            "{} non-terminal states had a role without legal moves (counted as dead ends)",
            result.dead_ends
        );
    }
    Ok(ExitCode::SUCCESS)
}
