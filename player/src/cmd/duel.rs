//! `propel duel GAME --challenger SETTINGS [--base SETTINGS] [--move-time T]
//! [--games N]`: games between two of the player's search settings on the
//! machine the player would search on (interpreted tree, lanes on the JIT),
//! each side with a fixed time per move, the challenger in each seat in
//! turn (docs/mcts.md, *Duels*).

use crate::machines::BuildArgs;
use crate::opts;
use anyhow::Result;
use propel_compiler::Deadline;
use propel_runtime::analysis::analyse;
use propel_runtime::build::prepare;
use propel_runtime::mcts::validate::{validate, Pace};
use propel_runtime::mcts::{duel, Config, Tuning};
use propel_runtime::{Hybrid, StateMachine};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif): with two or more roles the challenger takes each
    /// seat in turn; a puzzle is played by each side alone.
    game: PathBuf,
    /// The challenger's search settings (`--search` of `propel serve`).
    #[arg(long)]
    challenger: Tuning,
    /// The base's search settings (default: the player's).
    #[arg(long, default_value = "")]
    base: Tuning,
    /// Search time of a side per move (seconds, 0.001 to 60).
    #[arg(long, default_value_t = 0.05, value_parser = opts::seconds_between(0.001, 60.0), allow_hyphen_values = true)]
    move_time: f64,
    /// Games to play (1 to 10,000; the challenger takes the first role in
    /// even games).
    #[arg(long, default_value_t = 8, value_parser = opts::count(1, 10_000), allow_hyphen_values = true)]
    games: usize,
    /// Stop after this many seconds (the game under way is not counted).
    #[arg(long, value_parser = opts::seconds(), allow_hyphen_values = true)]
    seconds: Option<f64>,
    /// Seconds of meta-game analysis first, as the player's (0.1 to 600).
    #[arg(long, default_value_t = 3.0, value_parser = opts::seconds_between(0.1, 600.0), allow_hyphen_values = true)]
    analyse: f64,
    /// Play the player: before each game its start-clock validation, with
    /// this many seconds, decides whether the challenger plays with its
    /// analysed settings or with none of the analysis's features (as the
    /// player does with `--search` settings and no `--no-validation`).
    #[arg(long, value_parser = opts::seconds_between(0.1, 600.0), allow_hyphen_values = true)]
    validate: Option<f64>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    build: BuildArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = a.build.load_game(&a.game)?;
    let opts = a.build.build_options()?;
    let p = prepare(&game, &opts).map_err(|e| anyhow::anyhow!("a duel needs a propnet: {e}"))?;
    let analysis = analyse(p.net(), p.goal_net(), &p.propnet(), Duration::from_secs_f64(a.analyse), a.seed, false)?;
    let (native, _) = p.jit(&game.name)?;
    let lanes = native.has_lanes();
    let mut m = Hybrid::new(p.propnet(), native);
    let config = |t: &Tuning| {
        let mut c = Config { seed: a.seed, ..Config::default() };
        t.configure(&mut c, &analysis, true, false);
        c.lanes = lanes && c.lanes_fit();
        c
    };
    let (base, challenger) = (config(&a.base), config(&a.challenger));
    let features = propel_runtime::mcts::validate::features(&challenger, &base);
    let root = m.initial_state()?;
    let stop = match a.seconds {
        Some(s) => Deadline::at(Instant::now() + Duration::from_secs_f64(s)),
        None => Deadline::none(),
    };
    let t = Instant::now();
    let games = u32::try_from(a.games)?;
    let per_move = Duration::from_secs_f64(a.move_time);
    // With `--validate`: the player's choice, game by game.
    let mut kept = 0u32;
    let d = match a.validate {
        None => duel::duel(&m, &root, &base, &challenger, per_move, 0..games, &stop)?,
        Some(s) => {
            let plain = config(&Tuning { features: false, ..a.challenger.clone() });
            let pace = Pace { avg_length: analysis.avg_length, simultaneous: analysis.simultaneous };
            let mut d = duel::Duel::default();
            for g in 0..games {
                let seed = a.seed ^ u64::from(g + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let (analysed, plain) = (Config { seed, ..challenger.clone() }, Config { seed, ..plain.clone() });
                let until = Instant::now() + Duration::from_secs_f64(s);
                let v = validate(&m, &root, &analysed, &plain, pace, until, &stop)?;
                eprintln!("game {}: validation: {}", g + 1, v.describe());
                kept += u32::from(v.adopted);
                let chosen = if v.adopted { &challenger } else { &plain };
                d.merge(&duel::duel(&m, &root, &base, chosen, per_move, g..g + 1, &stop)?);
                if d.cut_short {
                    break;
                }
            }
            d
        }
    };
    let seconds = t.elapsed().as_secs_f64();
    if a.json {
        println!(
            "{}",
            json!({
                "game": a.game.display().to_string(), "move_time": a.move_time, "seconds": seconds,
                "games": d.games, "wins": d.wins, "draws": d.draws, "losses": d.losses,
                "mean": d.mean(), "std_error": d.std_error(), "gain": d.gain(), "adopt": d.adopt(),
                "plies": d.plies, "cut_short": d.cut_short, "features": features,
                "validated": a.validate.map(|_| kept),
            })
        );
    } else {
        println!("duel on {} ({:.1} s, {} moves, {} s a move)", a.game.display(), seconds, d.plies, a.move_time);
        if !features.is_empty() {
            println!("the challenger's features beyond the base's: {}", features.join(", "));
        }
        println!("{}", d.describe("the challenger"));
        if a.validate.is_some() {
            println!("its validation kept the analysed settings in {kept} of {} games", d.games);
        }
        if d.cut_short {
            println!("the last game was cut short (the time limit or {} moves) and is not counted", duel::MAX_PLIES);
        }
    }
    Ok(ExitCode::SUCCESS)
}
