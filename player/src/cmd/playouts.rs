use crate::machines::{load_game, with_machine, MachineArgs};
use anyhow::Result;
use propel_runtime::playout::playouts;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// How long to run playouts.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    #[command(flatten)]
    machine: MachineArgs,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = load_game(&a.game)?;
    let roles = game.role_names();
    let secs = if a.seconds.is_finite() && a.seconds >= 0.0 {
        a.seconds
    } else {
        anyhow::bail!("--seconds must be a non-negative number")
    };
    if !a.json {
        eprintln!("running random playouts on {} for {secs} s ({})", a.game.display(), a.machine.machine.name());
    }
    let stats = with_machine!(a.machine, game, |m| playouts(&mut m, Duration::from_secs_f64(secs), a.seed)?);
    if stats.undefined_goals > 0 {
        tracing::warn!(
            "{} playouts ended in a state where some role's goal is undefined; counted as 0",
            stats.undefined_goals
        );
    }
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "game": a.game.display().to_string(),
                "machine": a.machine.machine.name(),
                "playouts": stats.playouts,
                "seconds": stats.seconds,
                "playouts_per_s": stats.playouts_per_s(),
                "states_per_s": stats.states_per_s(),
                "avg_length": stats.avg_length(),
            })
        );
    } else {
        println!("playouts:       {}", stats.playouts);
        println!("seconds:        {:.3}", stats.seconds);
        println!("playouts/s:     {:.1}", stats.playouts_per_s());
        println!("states/s:       {:.1}", stats.states_per_s());
        println!("average length: {:.2}", stats.avg_length());
        for (r, sum) in roles.iter().zip(&stats.goal_sums) {
            println!("mean goal {r}: {:.2}", *sum as f64 / stats.playouts.max(1) as f64);
        }
    }
    Ok(ExitCode::SUCCESS)
}
