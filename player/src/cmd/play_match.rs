//! `propel match GAME --player URL|builtin:NAME ... --start-clock S
//! --play-clock P [--matches N] [--round-robin] [-o DIR]`: runs matches
//! over HTTP, writes each as a ggp.org-style JSON record, and prints a
//! summary per player.

use crate::cmd::serve::MEMORY_SHARE;
use crate::ggp::budget::machine_memory;
use crate::ggp::manager::{pairings, player_name, run_match, Clocks, Seat};
use crate::ggp::protocol::forms;
use crate::ggp::server::Server;
use crate::ggp::PlayerArgs;
use crate::machines::load_game;
use anyhow::{Context as _, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// A player: its URL (http://host:port), or builtin:mcts, builtin:random,
    /// builtin:legal (started in this process on a free port). In role order.
    #[arg(long = "player", required = true)]
    players: Vec<String>,
    #[arg(long, default_value_t = 10.0)]
    start_clock: f64,
    #[arg(long, default_value_t = 5.0)]
    play_clock: f64,
    /// Seconds allowed beyond each clock for the network.
    #[arg(long, default_value_t = 0.5)]
    grace: f64,
    /// Matches per pairing.
    #[arg(long, default_value_t = 1)]
    matches: usize,
    /// Every ordered choice of distinct players for the roles.
    #[arg(long)]
    round_robin: bool,
    /// Where match records, statistics and built-in players' logs go.
    #[arg(short, long, default_value = "matches")]
    out: PathBuf,
    #[command(flatten)]
    player: PlayerArgs,
}

/// Per player: matches, goal sum, wins/draws/losses, errors.
#[derive(Default, Clone)]
struct Tally {
    matches: usize,
    goals: Vec<f64>,
    wins: usize,
    draws: usize,
    losses: usize,
    errors: usize,
    fallbacks: usize,
}

pub fn run(a: Args) -> Result<ExitCode> {
    for (name, v) in [("--start-clock", a.start_clock), ("--play-clock", a.play_clock), ("--grace", a.grace)] {
        if !(0.0..=1e6).contains(&v) {
            anyhow::bail!("{name} must be between 0 and 1e6 seconds, not {v}");
        }
    }
    let game = load_game(&a.game)?;
    let text = std::fs::read_to_string(&a.game).with_context(|| format!("reading {}", a.game.display()))?;
    let rules = forms(&game.name, &text)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;

    // Built-in players live as long as this command, and share the memory
    // a server would have.
    let builtin = a.players.iter().filter(|p| p.starts_with("builtin:")).count().max(1);
    let memory = machine_memory().map_or(4 << 30, |m| (m as f64 * MEMORY_SHARE) as u64) / builtin as u64;
    let mut servers = Vec::new();
    let mut seats: Vec<Seat> = Vec::new();
    for p in &a.players {
        let (label, url, seeds) = match p.strip_prefix("builtin:") {
            Some(strategy) => {
                let n = seats.iter().filter(|s| s.label.starts_with(strategy)).count();
                let label = if n == 0 { strategy.to_string() } else { format!("{strategy}-{}", n + 1) };
                let cfg = a.player.config(&label, strategy, Some(a.out.join("logs")), memory)?;
                let seeds = cfg.seeds.clone();
                let server = Server::start("127.0.0.1:0", cfg)?;
                let url = server.url();
                servers.push(server);
                (label, url, Some(seeds))
            }
            None => {
                let url = p.trim_end_matches('/').to_string();
                (player_name(&url).map_or_else(|| url.clone(), |n| format!("{n}@{url}")), url, None)
            }
        };
        seats.push(Seat { label, url, seeds });
    }

    let roles = game.role_names();
    let schedule = pairings(seats.len(), roles.len(), a.round_robin)?;
    let clocks = Clocks { start: a.start_clock, play: a.play_clock, grace: a.grace };
    let stem: String = a
        .game
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let total = schedule.len() * a.matches;
    let bar = indicatif::ProgressBar::new(total as u64);
    let mut tally = vec![Tally::default(); seats.len()];
    let mut k = 0;
    for rep in 0..a.matches {
        for pairing in &schedule {
            k += 1;
            let id = format!("propel.{stem}.{stamp}.{k}");
            let match_seats: Vec<Seat> = pairing.iter().map(|&p| seats[p].clone()).collect();
            let seed = a.player.seed ^ ((rep as u64) << 32) ^ k as u64;
            let out = run_match(&game, &rules, &match_seats, &clocks, &id, &a.out, seed)?;
            for (i, &p) in pairing.iter().enumerate() {
                let t = &mut tally[p];
                let g = out.goals[i];
                let best_other = out.goals.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &x)| x).max();
                t.matches += 1;
                t.goals.push(g as f64);
                t.errors += out.errors[i];
                t.fallbacks += out.fallbacks[i];
                match best_other {
                    Some(o) if g > o => t.wins += 1,
                    Some(o) if g == o => t.draws += 1,
                    Some(_) => t.losses += 1,
                    None => {}
                }
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    println!(
        "{:<28} {:>7} {:>16} {:>5} {:>5} {:>6} {:>12} {:>6} {:>9}",
        "player", "matches", "mean goal (95%)", "wins", "draws", "losses", "score (95%)", "errors", "fallbacks"
    );
    for (s, t) in seats.iter().zip(&tally) {
        let (mean, half) = mean_ci(&t.goals);
        // Score: a win 1, a draw 1/2, a loss 0 (undefined in a puzzle).
        let points: Vec<f64> = std::iter::repeat_n(1.0, t.wins)
            .chain(std::iter::repeat_n(0.5, t.draws))
            .chain(std::iter::repeat_n(0.0, t.losses))
            .collect();
        let score = if points.is_empty() {
            "-".to_string()
        } else {
            let (m, h) = mean_ci(&points);
            format!("{:.0}% ± {:.0}", 100.0 * m, 100.0 * h)
        };
        println!(
            "{:<28} {:>7} {:>9.1} ± {:<4.1} {:>5} {:>5} {:>6} {:>12} {:>6} {:>9}",
            s.label, t.matches, mean, half, t.wins, t.draws, t.losses, score, t.errors, t.fallbacks
        );
    }
    println!("records in {}", a.out.display());
    drop(servers);
    Ok(ExitCode::SUCCESS)
}

/// Mean and the half-width of a normal 95% confidence interval.
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, 1.96 * (var / n).sqrt())
}
