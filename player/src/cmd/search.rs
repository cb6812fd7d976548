//! `propel search GAME --seconds T --threads N [--mode auto|pipeline|root]
//! [--from MOVES | --state FACTS]`: MCTS from the initial state or a given
//! position; prints iterations/s, rollouts/s, node-pool
//! use, search-thread busy and rollout-thread idle shares, and the best
//! move with its value.

use crate::machines::{with_machine, Chosen, MachineArgs};
use crate::opts;
use crate::position::PositionArgs;
use anyhow::Result;
use propel_runtime::analysis::Analysis;
use propel_runtime::build::prepare;
use propel_runtime::formats::RootMove;
use propel_runtime::mcts::{Config, Mode, Search, Stats};
use propel_runtime::simulate::Simulator;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// How long to search (seconds, at most 1e6).
    #[arg(long, default_value_t = 5.0, value_parser = opts::seconds(), allow_hyphen_values = true)]
    seconds: f64,
    /// Threads, 1 to 256 (pipeline: one searches, the others run
    /// rollouts; root: a graph each).
    #[arg(long, default_value_t = 1, value_parser = opts::threads_usize(), allow_hyphen_values = true)]
    threads: usize,
    /// auto (root parallelisation where rollouts run on lanes, else the
    /// pipeline), pipeline or root.
    #[arg(long, default_value = "auto")]
    mode: Mode,
    /// Nodes in the search graph's pool (16 to 100,000,000).
    #[arg(long, default_value_t = 1_000_000, value_parser = opts::count(16, opts::MAX_POOL), allow_hyphen_values = true)]
    pool: usize,
    /// UCB exploration constant (values 0..1 are usual; at most 10).
    #[arg(long, default_value_t = 0.7, value_parser = opts::exploration(), allow_hyphen_values = true)]
    exploration: f64,
    /// Pin threads to cores.
    #[arg(long)]
    pin: bool,
    /// The role whose move is reported (default: the one to move).
    #[arg(long)]
    role: Option<String>,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Greedy rollouts: take wins and avoid losses one move ahead. They run
    /// one leaf at a time through the machine interface, so this implies
    /// `--no-lanes` (`--win-first` is their lane counterpart).
    #[arg(long)]
    greedy: bool,
    /// Rollouts in batches (bit-parallel lanes on the JIT): more rollouts
    /// per second, fewer iterations.
    #[arg(long)]
    batch: bool,
    /// Roll out one leaf at a time even where the machine has bit-parallel
    /// lanes (by default every lane plays a rollout from its own leaf:
    /// machines auto, jit, aot and hybrid).
    #[arg(long)]
    no_lanes: bool,
    /// Win-first lanes: before the clock starts, random games (for
    /// `--win-first-sample` seconds) find the moves that win at once for
    /// the role that plays them (see docs/analysis.md, `winning`); lane
    /// rollouts then play one wherever one is legal.
    #[arg(long)]
    win_first: bool,
    /// Seconds of random games that find the win-first moves (0.01 to 60).
    #[arg(long, default_value_t = 1.0, value_parser = opts::seconds_between(0.01, 60.0), allow_hyphen_values = true, requires = "win_first")]
    win_first_sample: f64,
    /// With `--win-first` or `--decisive`: safe-first lanes (a lane's
    /// move that leaves the other side a winning move is taken back and
    /// another tried).
    #[arg(long)]
    safe_first: bool,
    /// Decisive lanes: each rollout step tries every move one ply ahead
    /// and takes one that wins at once (docs/mcts.md, `decisive`). With
    /// `--analyse`, the analysis decides (`--search decisive=on` asks).
    #[arg(long)]
    decisive: bool,
    /// Make terminal children on expansion (wins one move away solve a node).
    #[arg(long)]
    expand_terminal: bool,
    /// A child joins the search graph from this visit of the move to it on
    /// (1: at once); before, rollouts start from it without keeping it
    /// (an expansion threshold; see docs/mcts.md).
    #[arg(long, default_value_t = propel_runtime::mcts::EXPAND_AFTER, value_parser = clap::value_parser!(u32).range(1..=1000))]
    expand_after: u32,
    /// RAVE's bias, 0 (off) to 1 (Sancho's: 0.05): lane rollouts report
    /// their moves and UCB blends in all-moves-as-first values
    /// (docs/mcts.md).
    #[arg(long, default_value_t = 0.0, value_parser = opts::rave(), allow_hyphen_values = true)]
    rave: f64,
    /// Run the player's meta-game analysis for this many seconds (0.1 to
    /// 600) first and search as the player would with it (material,
    /// greedy or win-first rollouts, exploration, expansion; the flags
    /// above that it decides are replaced), so that a match's search can
    /// be replayed on a position.
    #[arg(long, value_parser = opts::seconds_between(0.1, 600.0), allow_hyphen_values = true)]
    analyse: Option<f64>,
    /// With `--analyse`: the player's search settings (`propel serve
    /// --search`, KEY=VALUE,...; docs/mcts.md).
    #[arg(long, default_value = "", requires = "analyse")]
    search: propel_runtime::mcts::Tuning,
    /// Also list the reported role's N most visited moves at the root,
    /// with their visits and mean values (0: none).
    #[arg(long, default_value_t = 0, value_parser = opts::count(0, 65_535), allow_hyphen_values = true)]
    moves: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    machine: MachineArgs,
}

struct Outcome {
    stats: Stats,
    /// The machine searched on (as built, and as the search saw it), and
    /// whether rollouts ran lane-parallel.
    chosen: Chosen,
    machine: &'static str,
    lanes: bool,
    /// How rollouts chose their moves ([`Search::rollout_policy`]).
    policy: String,
    /// The mode that ran (`auto` resolved).
    mode: Mode,
    role: String,
    best: Option<(String, f64, u32)>,
    root_moves: Vec<RootMove>,
}

/// The `n` most visited root moves of `role`.
fn root_moves<M: Simulator>(search: &mut Search<M>, role: usize, n: usize) -> Vec<RootMove>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let Some(t) = search.root_stats(role) else { return Vec::new() };
    let mut order: Vec<usize> = (0..t.moves.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(t.visits[i]));
    order.truncate(n);
    let m = search.machine();
    order
        .into_iter()
        .map(|i| RootMove {
            mv: m.move_kif(t.moves[i]),
            visits: t.visits[i],
            value: if t.visits[i] > 0 { 100.0 * t.sums[i] / t.visits[i] as f64 } else { 0.0 },
            lost: t.lost[i],
        })
        .collect()
}

fn go<M: Simulator>(m: M, chosen: Chosen, a: &Args, analysis: Option<&Analysis>) -> Result<Outcome>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let mut m = m;
    let win_first = if a.win_first {
        let sample = Duration::from_secs_f64(a.win_first_sample);
        let w = propel_runtime::analysis::winning_moves(&mut m, sample, a.seed)?;
        tracing::info!("win-first lanes: {} winning moves", w.len());
        Some(std::sync::Arc::from(w))
    } else {
        None
    };
    let s0 = m.initial_state()?;
    let mut cfg = Config {
        threads: a.threads,
        mode: a.mode,
        pool: a.pool,
        exploration: a.exploration,
        pin: a.pin,
        seed: a.seed,
        greedy: a.greedy,
        batch: a.batch,
        // Lane rollouts are never greedy: asked for greedy, roll out one
        // leaf at a time rather than ignore it.
        lanes: !a.no_lanes && !a.greedy,
        safe_first: a.safe_first,
        decisive: a.decisive,
        win_first,
        heuristic: None,
        factors: Vec::new(),
        goal_max: Vec::new(),
        expand_terminal: a.expand_terminal,
        expand_after: a.expand_after,
        rave: a.rave,
        ..Config::default()
    };
    if let Some(an) = analysis {
        a.search.configure(&mut cfg, an, true, false);
        // As the player: greedy rollouts with no winning moves for lanes
        // run one leaf at a time.
        cfg.lanes = !a.no_lanes && cfg.lanes_fit();
        if a.rave > 0.0 {
            cfg.rave = a.rave;
        }
    }
    let mut search = Search::new(m, s0, cfg)?;
    let deadline = Instant::now() + Duration::from_secs_f64(a.seconds);
    let stats = search.run(deadline)?;
    let roles = search.machine().roles().to_vec();
    let role = match &a.role {
        Some(r) => roles.iter().position(|x| x == r).ok_or_else(|| anyhow::anyhow!("no role `{r}`"))?,
        None => search.graph.chooser(),
    };
    let best = search.best(role).map(|(mv, v, n)| (search.machine().move_kif(mv), v * 100.0, n));
    let root_moves = root_moves(&mut search, role, a.moves);
    let (machine, lanes, policy) = (search.machine().kind(), search.lane_parallel(), search.rollout_policy());
    let role = roles[role].clone();
    Ok(Outcome { stats, chosen, machine, lanes, policy, mode: search.mode(), role, best, root_moves })
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = a.machine.load_game(&a.game)?;
    let game = a.machine.at_position(game, &a.position, &a.game)?;
    let analysis = match a.analyse {
        Some(secs) => {
            // The player analyses the game it builds, with the same options.
            let opts = a.machine.build.build_options()?;
            let p = prepare(&game, &opts).map_err(|e| anyhow::anyhow!("the analysis needs a propnet: {e}"))?;
            let budget = Duration::from_secs_f64(secs);
            Some(propel_runtime::analysis::analyse(p.net(), p.goal_net(), &p.propnet(), budget, a.seed, false)?)
        }
        None => None,
    };
    let out = with_machine!(a.machine, game, true, |m, chosen| go(m, chosen, &a, analysis.as_ref())?);
    let s = &out.stats;
    if a.json {
        println!(
            "{}",
            propel_runtime::formats::to_line(&propel_runtime::formats::SearchReport {
                game: a.game.display().to_string(),
                machine: out.machine.to_string(),
                machine_chosen: out.chosen.name.to_string(),
                machine_reason: out.chosen.why.clone(),
                lanes: out.lanes,
                rollout_policy: out.policy.clone(),
                expand_after: s.expand_after,
                mode: format!("{:?}", out.mode).to_lowercase(),
                threads: a.threads,
                seconds: s.seconds,
                iterations: s.iterations,
                iterations_per_s: s.iterations_per_s(),
                rollouts: s.rollouts,
                rollouts_per_s: s.rollouts_per_s(),
                nodes: s.nodes,
                pool: s.pool,
                search_busy: s.search_busy,
                rollout_idle: s.rollout_idle,
                rollouts_per_request: s.per_request,
                peak_inflight: s.peak_inflight,
                role: out.role.clone(),
                best_move: out.best.as_ref().map(|b| b.0.clone()),
                value: out.best.as_ref().map(|b| b.1),
                visits: out.best.as_ref().map(|b| b.2),
                root_moves: out.root_moves.clone(),
            })
        );
    } else {
        let rollouts = if out.lanes { "lane-parallel rollouts" } else { "rollouts one leaf at a time" };
        println!("machine:         {} ({rollouts}: {})", out.chosen.describe(), out.policy);
        println!("mode:            {:?} ({} threads)", out.mode, a.threads);
        println!("iterations:      {} ({:.0}/s)", s.iterations, s.iterations_per_s());
        println!("rollouts:        {} ({:.0}/s, {} per request)", s.rollouts, s.rollouts_per_s(), s.per_request);
        println!("node pool:       {} of {} ({:.1}%)", s.nodes, s.pool, 100.0 * s.nodes as f64 / s.pool.max(1) as f64);
        println!("children join:   at visit {} of their move", s.expand_after);
        println!("search busy:     {:.1}%", 100.0 * s.search_busy);
        println!("rollout idle:    {:.1}%", 100.0 * s.rollout_idle);
        if s.peak_inflight > 0 {
            println!("lanes in flight: at most {} selections at once", s.peak_inflight);
        }
        match &out.best {
            Some((mv, v, n)) => println!("best move of {}: {mv} (value {v:.1}, {n} visits)", out.role),
            None => println!("no move (the state is terminal)"),
        }
        for r in &out.root_moves {
            let lost = if r.lost { " (proven loss)" } else { "" };
            println!("  {:<28} {:>9} visits  value {:5.1}{lost}", r.mv, r.visits, r.value);
        }
    }
    Ok(ExitCode::SUCCESS)
}
