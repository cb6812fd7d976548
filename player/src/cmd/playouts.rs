use crate::machines::{with_machine, Chosen, MachineArgs, MachineKind};
use crate::opts;
use anyhow::Result;
use propel_runtime::playout::{playouts, PlayoutStats};
use propel_runtime::{NativeMachine, Rng, StateMachine};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// How long to run playouts (seconds, at most 1e6).
    #[arg(long, default_value_t = 5.0, value_parser = opts::seconds(), allow_hyphen_values = true)]
    seconds: f64,
    #[command(flatten)]
    machine: MachineArgs,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Run exactly this many playouts instead of for `--seconds` (for
    /// instruction counts, which do not depend on the clock).
    #[arg(long, value_parser = opts::count64(1, 1_000_000_000_000), allow_hyphen_values = true)]
    count: Option<u64>,
    /// Whole playouts in native code (no states copied, no move lists),
    /// instead of calls through the machine interface: on the JIT (with
    /// `--machine auto` or `jit`) or a library (`aot:FILE`).
    #[arg(long)]
    fast: bool,
    /// With `--fast`: bit-parallel lanes (`on`), the differential code one
    /// playout at a time (`off`), or lanes wherever the code has them
    /// (`auto`).
    #[arg(long, default_value = "auto", value_parser = ["auto", "on", "off"], requires = "fast")]
    lanes: String,
    /// With `--fast`: win-first lanes (random games for this many
    /// seconds first find the moves that win at once for their role; the
    /// lanes then play one wherever one is legal: docs/analysis.md,
    /// `winning`).
    #[arg(long, value_parser = opts::seconds(), allow_hyphen_values = true, requires = "fast")]
    win_first: Option<f64>,
    /// With `--win-first` or `--decisive`: safe-first lanes (a lane's
    /// move that leaves the other side a winning move is taken back and
    /// another tried).
    #[arg(long)]
    safe_first: bool,
    /// With `--fast`: decisive lanes (each step tries every move one ply
    /// ahead and takes one that wins at once: docs/mcts.md, `decisive`).
    #[arg(long, requires = "fast")]
    decisive: bool,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = a.machine.load_game(&a.game)?;
    let roles = game.role_names();
    let secs = a.seconds;
    let announce = |c: &Chosen| {
        if !a.json {
            eprintln!("running random playouts on {} for {secs} s (machine {})", a.game.display(), c.describe());
        }
    };
    let (stats, chosen) = if a.fast {
        let (mut m, chosen) = match &a.machine.machine {
            MachineKind::Jit => (a.machine.build_jit(&game)?.machine, Chosen::named("jit")),
            MachineKind::Auto => (
                a.machine.build_jit(&game)?.machine,
                Chosen { name: "jit", why: "--fast runs whole playouts in native code".into() },
            ),
            MachineKind::Aot(p) => (crate::machines::load_aot(p, &game)?, Chosen::named("aot")),
            _ => anyhow::bail!("--fast needs --machine auto, jit or aot:FILE"),
        };
        announce(&chosen);
        if a.lanes != "auto" {
            let on = a.lanes == "on";
            if on && !m.has_lanes() {
                anyhow::bail!("this machine has no lane code (see docs/native.md: lanes)");
            }
            m.set_batch_lanes(on);
        }
        if let Some(secs) = a.win_first {
            let w = propel_runtime::analysis::winning_moves(&mut m, Duration::from_secs_f64(secs), a.seed)?;
            if !a.json {
                eprintln!("win-first lanes: {} winning moves", w.len());
            }
            m.set_win_first(&w);
        }
        m.set_decisive(a.decisive);
        m.set_safe_first(a.safe_first);
        (fast_playouts(&mut m, Duration::from_secs_f64(secs), a.count, a.seed)?, chosen)
    } else {
        with_machine!(a.machine, game, |m, chosen| {
            announce(&chosen);
            let stats = match a.count {
                Some(n) => count_playouts(&mut m, n, a.seed)?,
                None => playouts(&mut m, Duration::from_secs_f64(secs), a.seed)?,
            };
            (stats, chosen)
        })
    };
    if stats.undefined_goals > 0 {
        tracing::warn!(
            "{} playouts ended in a state where some role's goal is undefined; counted as 0",
            stats.undefined_goals
        );
    }
    if a.json {
        println!(
            "{}",
            propel_runtime::formats::to_line(&propel_runtime::formats::PlayoutsReport {
                game: a.game.display().to_string(),
                machine: chosen.name.to_string(),
                playouts: stats.playouts,
                seconds: stats.seconds,
                playouts_per_s: stats.playouts_per_s(),
                states_per_s: stats.states_per_s(),
                avg_length: stats.avg_length(),
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

/// Native playouts from the initial state for `duration` (at least one
/// batch), in batches of up to [`BATCH`] (bit-parallel where the code
/// can): the first of one lane-ful, doubling while a batch takes under a
/// twentieth of `duration`, so that slow games (one at a time: 4,096 of
/// chess_200's took 8 s) end near their time.
/// Never inlined: `scripts/instructions.sh` counts instructions inside it.
#[inline(never)]
fn fast_playouts(m: &mut NativeMachine, duration: Duration, count: Option<u64>, seed: u64) -> Result<PlayoutStats> {
    let mut rng = Rng::new(seed);
    let mut stats = PlayoutStats::default();
    let roles = m.roles().len();
    stats.goal_sums = vec![0; roles];
    let s0 = m.initial_state()?;
    let (mut goals, mut lengths) = (Vec::new(), Vec::new());
    let start = std::time::Instant::now();
    let mut size = propel_runtime::lanes::LANES;
    loop {
        let n = count.map_or(size, |c| (c - stats.playouts).min(BATCH as u64) as usize);
        let max = propel_runtime::playout::MAX_PLAYOUT_STEPS as u32;
        let t = std::time::Instant::now();
        m.playouts(&s0, n, rng.next_u64(), max, &mut goals, &mut lengths)?;
        if t.elapsed() < duration / 20 {
            size = (2 * size).min(BATCH);
        }
        stats.playouts += n as u64;
        stats.states += lengths.iter().map(|&l| l as u64).sum::<u64>();
        for g in goals.chunks(roles.max(1)) {
            let mut undefined = false;
            for (sum, &v) in stats.goal_sums.iter_mut().zip(g) {
                undefined |= v < 0;
                *sum += v.max(0) as u64;
            }
            stats.undefined_goals += undefined as u64;
        }
        let done = match count {
            Some(n) => stats.playouts >= n,
            None => start.elapsed() >= duration,
        };
        if done {
            break;
        }
    }
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(stats)
}

/// Playouts per call of the native batch: lanes are refilled as games end,
/// so only the last game of a call leaves lanes idle; 32 lane-fuls make
/// that tail a few percent of the time.
const BATCH: usize = 32 * propel_runtime::lanes::LANES;

/// Exactly `n` playouts through the machine interface. Never inlined:
/// `scripts/instructions.sh` counts instructions inside it.
#[inline(never)]
fn count_playouts<M: StateMachine>(m: &mut M, n: u64, seed: u64) -> Result<PlayoutStats> {
    let mut rng = Rng::new(seed);
    let mut stats = PlayoutStats::default();
    let start = std::time::Instant::now();
    for _ in 0..n {
        propel_runtime::playout::playout(m, &mut rng, &mut stats)?;
    }
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(stats)
}
