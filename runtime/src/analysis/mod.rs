//! Meta-gaming: what random games and the propnet's structure say about a
//! game before the first move. Statistics from random games played within
//! a time budget; search parameters chosen from them; candidate heuristics
//! (counts of base-proposition groups, mobility) kept or dropped by their
//! correlation with the outcome; latches and goal bounds; independent
//! factors; and, for puzzles, an iterative-deepening solver.

mod endings;
mod factors;
mod learn;
mod material;

use crate::heuristic::{Evaluator, Material};
use crate::machine::{MachineError, StateMachine};
use crate::propnet::{NetState, PropnetMachine};
use crate::rng::Rng;
use crate::simulate::{Greedy, Simulator};
pub use endings::winning_moves;
use factors::{factors, Breadth, Solver};
use learn::{base_groups, pearson};
use propel_compiler::propnet::{Kind, Propnet};
use propel_compiler::Deadline;
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::{Duration, Instant};

/// A candidate heuristic and what the samples said of it.
#[derive(Clone, Debug)]
pub struct Heuristic {
    /// e.g. `count (cell _ _ white)`.
    pub name: String,
    /// The role whose outcome it predicts.
    pub role: usize,
    /// In the role's model: goal points per proposition that holds.
    pub weight: f64,
    /// Pearson correlation with the role's final goal in the samples.
    pub correlation: f64,
}

/// A set of base and input propositions whose next-state and legality
/// logic touches nothing outside it.
#[derive(Clone, Debug)]
pub struct Factor {
    pub bases: usize,
    pub inputs: usize,
    /// Its inputs (move ids).
    pub moves: Vec<u32>,
    /// A few of its input (move) names.
    pub sample_moves: Vec<String>,
}

/// A puzzle's solution found by the solver.
#[derive(Clone, Debug)]
pub struct Solution {
    pub goal: u8,
    pub moves: Vec<String>,
}

/// The most moves that can end a game, per decision, for which the
/// analysis chooses decisive lanes (see `decisive`).
const DECISIVE_MAX_CHECK: f64 = 12.0;

#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub roles: Vec<String>,
    pub seconds: f64,
    /// Random games played to the end.
    pub games: usize,
    pub avg_length: f64,
    /// (length, games of that length), sorted.
    pub length_histogram: Vec<(u32, u32)>,
    /// Mean legal moves per role over the states of random games.
    pub branching: Vec<f64>,
    /// Some state gives more than one role a choice.
    pub simultaneous: bool,
    pub playouts_per_s: f64,
    /// Per role: (goal, games ending with it).
    pub goal_distribution: Vec<Vec<(u8, u32)>>,
    pub exploration: f64,
    pub exploration_reason: String,
    pub greedy_rollouts: bool,
    pub greedy_reason: String,
    /// Moves (inputs) seen to end a game in the sample: the only ones
    /// greedy rollouts try.
    pub terminating_moves: usize,
    /// Next states per decision for a greedy check of those moves alone.
    pub greedy_check_cost: f64,
    /// What greedy rollouts try, where they are chosen.
    pub greedy: Option<Greedy>,
    /// Moves (inputs, ascending) that won the game at once for the role
    /// that played them every time the greedy sample tried them (never a
    /// draw, a loss or a game going on): what win-first lanes take
    /// (`lanes::Lanes::set_win_first`). Empty in simultaneous games.
    pub winning: Vec<u32>,
    /// A few of their names, for reports.
    pub winning_names: Vec<String>,
    /// Where material was found: the moves (inputs, ascending) seen in
    /// the greedy sample to take another role's piece, each with the
    /// pieces (bases, ascending) it took: what capture-first lanes read
    /// without a look-ahead (`lanes::Captures::Table`).
    pub captures: crate::lanes::CaptureTable,
    /// A few of those moves' names, for reports.
    pub capture_names: Vec<String>,
    /// Decisive safe-first lanes for rollouts (`mcts::Config::decisive`):
    /// where random play often misses a win one move away, the game has
    /// no material and few moves can end it.
    pub decisive: bool,
    pub decisive_reason: String,
    pub rollouts_per_request: u32,
    /// Share of turn-taking decisions in random games where the mover had a
    /// win one move away and did not play it.
    pub missed_wins: f64,
    /// Next states per such decision to look for that win (the mover's
    /// moves tried until one wins).
    pub win_check_cost: f64,
    /// Make terminal children on expansion (see `mcts::Config`).
    pub expand_terminal: bool,
    pub expand_terminal_reason: String,
    /// The terms of each role's heuristic model.
    pub heuristics: Vec<Heuristic>,
    /// Candidates tried.
    pub candidates: usize,
    /// Per role: the model's share of outcome variance explained on
    /// held-out games (`None`: no model).
    pub heuristic_r2: Vec<Option<f64>>,
    /// Per role: the correlation of its mobility with each role's goal
    /// (reported only: it needs the legal moves of a state).
    pub mobility: Vec<Vec<f64>>,
    /// Rollouts a prediction is worth (the least over the roles' models).
    pub prior_visits: u32,
    /// States that measured it.
    pub calibration_states: usize,
    /// Piece groups tried for a material heuristic.
    pub piece_candidates: usize,
    /// Each role's material (two-player capture games), relative to the
    /// search's root; see [`Material`].
    pub material: Option<Material>,
    pub material_reason: String,
    /// What the search uses to initialise nodes, when the models are worth
    /// at least one rollout.
    pub evaluator: Option<Evaluator>,
    pub latches_positive: Vec<String>,
    pub latches_negative: Vec<String>,
    pub constant_bases: usize,
    /// Per role: the least and greatest goal the network can give.
    pub goal_bounds: Vec<(u8, u8)>,
    pub factors: Vec<Factor>,
    pub puzzle: Option<Solution>,
    pub puzzle_note: String,
    /// States the puzzle solver expanded.
    pub puzzle_nodes: u64,
}

/// The puzzle solver's deepest search (it recurses once per move).
const MAX_SOLVE_DEPTH: u32 = 500;
/// States a puzzle's breadth-first search keeps before it turns to
/// iterative deepening (a state is its bitset and two indices: tens of
/// MB).
const MAX_BREADTH_STATES: usize = 500_000;
/// At most this many held-out states measure what a prediction is worth.
const MAX_CALIBRATION: usize = 400;
/// At most this many sampled states feed the correlations.
const MAX_SAMPLES: usize = 20_000;

/// Analyses a game on its interpreted propnet `m` built from `net` (the
/// playout network) and `goal_net` (where the goal logic went, if split
/// off), within about `budget`.
pub fn analyse(
    net: &Propnet,
    goal_net: Option<&Propnet>,
    m: &PropnetMachine,
    budget: Duration,
    seed: u64,
    use_factors: bool,
) -> Result<Analysis, MachineError> {
    analyse_until(net, goal_net, m, budget, seed, use_factors, &Deadline::none())
}

/// As [`analyse`], also ending each phase early once `stop` passes (a
/// match's abort): what was learnt by then is returned.
pub fn analyse_until(
    net: &Propnet,
    goal_net: Option<&Propnet>,
    m: &PropnetMachine,
    budget: Duration,
    seed: u64,
    use_factors: bool,
    stop: &Deadline,
) -> Result<Analysis, MachineError> {
    let start = Instant::now();
    let mut m = m.clone();
    let roles = m.roles().to_vec();
    let nr = roles.len();
    let mut a = Analysis { roles: roles.clone(), ..Analysis::default() };
    let groups = base_groups(net);
    let mut rng = Rng::new(seed);

    // Random games: lengths, branching, goals, and sampled states' features.
    let sample_budget = budget.mul_f64(0.55);
    let mut lengths: FxHashMap<u32, u32> = FxHashMap::default();
    let mut legal_sum = vec![0u64; nr];
    let mut states = 0u64;
    let mut goal_counts: Vec<FxHashMap<u8, u32>> = vec![FxHashMap::default(); nr];
    let nfeat = groups.len() + nr;
    let mut features: Vec<Vec<f64>> = Vec::new();
    let mut outcomes: Vec<Vec<f64>> = vec![Vec::new(); nr];
    let mut moves = Vec::new();
    let mut joint = Vec::with_capacity(nr);
    let mut game_feats: Vec<Vec<f64>> = Vec::new();
    let mut game_states: Vec<NetState> = Vec::new();
    // Which game each sample came from, and held-out states kept whole.
    let mut sample_game: Vec<u32> = Vec::new();
    let mut calib: Vec<NetState> = Vec::new();
    let mut pieces = material::Sampler::new(net, nr);
    let mut final_goals = vec![0.0; nr];
    let s0 = m.initial_state()?;
    let t_games = Instant::now();
    while t_games.elapsed() < sample_budget && a.games < 100_000 && !stop.passed() {
        let mut s = s0.clone();
        let mut len = 0u32;
        game_feats.clear();
        game_states.clear();
        let keep_every = 1 + (a.games as u64 * 50 / MAX_SAMPLES as u64) as u32;
        pieces.start_game();
        while !m.is_terminal(&s)? {
            joint.clear();
            let mut choosers = 0;
            let mut mobility = Vec::with_capacity(nr);
            for r in 0..nr {
                m.legal_moves(&s, r, &mut moves)?;
                if moves.is_empty() {
                    return Err(MachineError::NoLegalMove { role: Some(roles[r].clone()) });
                }
                legal_sum[r] += moves.len() as u64;
                choosers += (moves.len() > 1) as usize;
                mobility.push(moves.len() as f64);
                joint.push(moves[rng.below(moves.len())]);
            }
            a.simultaneous |= choosers > 1;
            let mover = (choosers == 1).then(|| mobility.iter().position(|&n| n > 1.0)).flatten();
            pieces.state(s.bits(), mover);
            states += 1;
            if len.is_multiple_of(keep_every) && features.len() + game_feats.len() < MAX_SAMPLES {
                let bits = s.bits();
                let mut f: Vec<f64> = groups
                    .iter()
                    .map(|(_, g)| g.iter().filter(|&&i| bits[i / 64] >> (i % 64) & 1 == 1).count() as f64)
                    .collect();
                f.extend(mobility);
                game_feats.push(f);
                game_states.push(s.clone());
            }
            s = m.next_state(&s, &joint)?;
            len += 1;
            if len as u64 > crate::playout::MAX_PLAYOUT_STEPS {
                return Err(MachineError::StepLimit { steps: crate::playout::MAX_PLAYOUT_STEPS });
            }
        }
        a.games += 1;
        *lengths.entry(len).or_default() += 1;
        pieces.state(s.bits(), None);
        // Only the second half of a game: early states say little about a
        // random game's outcome and would drown what later states say.
        let half = game_feats.len() / 2;
        game_feats.drain(..half);
        game_states.drain(..half);
        sample_game.extend(std::iter::repeat_n(a.games as u32 - 1, game_feats.len()));
        if (a.games - 1).is_multiple_of(4) && calib.len() < MAX_CALIBRATION {
            // One state per held-out game, from its second half.
            if let Some(st) = game_states.get(rng.below(game_states.len().max(1))) {
                calib.push(st.clone());
            }
        }
        for r in 0..nr {
            let g = m.goal(&s, r)?.score();
            final_goals[r] = g as f64;
            *goal_counts[r].entry(g).or_default() += 1;
            for _ in 0..game_feats.len() {
                outcomes[r].push(g as f64);
            }
        }
        features.append(&mut game_feats);
        pieces.end_game(&final_goals);
    }
    let secs = t_games.elapsed().as_secs_f64();
    a.playouts_per_s = a.games as f64 / secs.max(1e-9);
    let total_len: u64 = lengths.iter().map(|(l, n)| *l as u64 * *n as u64).sum();
    a.avg_length = total_len as f64 / a.games.max(1) as f64;
    a.length_histogram = lengths.into_iter().collect();
    a.length_histogram.sort();
    a.branching = legal_sum.iter().map(|&s| s as f64 / states.max(1) as f64).collect();
    a.goal_distribution = goal_counts
        .into_iter()
        .map(|c| {
            let mut v: Vec<(u8, u32)> = c.into_iter().collect();
            v.sort();
            v
        })
        .collect();

    // Heuristics: a linear model per role over the group counts that
    // correlate with its outcome, fitted on three games in four and judged
    // on the fourth (states of one game are alike: the split is by game).
    a.candidates = nfeat;
    let test_game = |i: usize| sample_game[i].is_multiple_of(4);
    let (models, train_models) = learn::fit_models(&groups, &features, &outcomes, &test_game, &roles);
    for (r, m) in models.iter().enumerate() {
        for t in m.iter().flat_map(|m| &m.terms) {
            a.heuristics.push(Heuristic {
                name: t.name.clone(),
                role: r,
                weight: t.weight,
                correlation: t.correlation,
            });
        }
    }
    a.heuristic_r2 = models.iter().map(|m| m.as_ref().map(|m| m.r2)).collect();
    a.piece_candidates = pieces.candidates();
    (a.material, a.material_reason) = pieces.finish();
    a.mobility = (0..nr)
        .map(|r| {
            let xs: Vec<f64> = features.iter().map(|f| f[groups.len() + r]).collect();
            (0..nr).map(|o| pearson(&xs, &outcomes[o]).unwrap_or(0.0)).collect()
        })
        .collect();

    // What a prediction is worth in rollouts: two rollouts from each of
    // the held-out states kept (see `heuristic::prior_visits`).
    if models.iter().any(Option::is_some) {
        let t = Instant::now();
        let calib_budget = budget.mul_f64(0.15);
        let mut pairs: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); nr];
        let (mut g1, mut g2) = (vec![0.0; nr], vec![0.0; nr]);
        for s in &calib {
            if t.elapsed() > calib_budget || stop.passed() {
                break;
            }
            m.rollout(s, &mut rng, &mut g1)?;
            m.rollout(s, &mut rng, &mut g2)?;
            for (r, model) in train_models.iter().enumerate() {
                if let Some(model) = model {
                    pairs[r].push((model.predict(s.bits()), g1[r], g2[r]));
                }
            }
        }
        let worth = learn::worth(&pairs, &models);
        let k = worth.iter().copied().fold(f64::INFINITY, f64::min);
        a.prior_visits = if k.is_finite() { k.round() as u32 } else { 0 };
        a.calibration_states = pairs.iter().map(Vec::len).max().unwrap_or(0);
        if a.prior_visits > 0 {
            a.evaluator = Some(Evaluator { models, prior_visits: a.prior_visits });
        }
    }

    // Tuning. UCB's exploration term should scale with the spread of the
    // rewards (as UCB1-Tuned does): 0.7 suits a fair win/loss game, whose
    // outcomes have a standard deviation of 0.5.
    let sd: Vec<f64> = a
        .goal_distribution
        .iter()
        .map(|d| {
            let n: f64 = d.iter().map(|x| x.1 as f64).sum::<f64>().max(1.0);
            let mean = d.iter().map(|x| x.0 as f64 / 100.0 * x.1 as f64).sum::<f64>() / n;
            (d.iter().map(|x| (x.0 as f64 / 100.0 - mean).powi(2) * x.1 as f64).sum::<f64>() / n).sqrt()
        })
        .collect();
    let spread = sd.iter().copied().fold(0.0, f64::max);
    if spread < 0.05 {
        // Random games all end alike: nothing to scale by.
        a.exploration = 0.7;
        a.exploration_reason = format!("random games all end alike (goal spread {spread:.2}): default kept");
    } else if (spread - 0.5).abs() < 0.05 {
        // Within a tenth of a fair win/loss game's: a change too small to
        // matter, and one the start-clock validation would duel for.
        a.exploration = 0.7;
        a.exploration_reason = format!(
            "largest standard deviation of random-game goals {spread:.2}, near a fair win/loss game's 0.5: 0.7 kept"
        );
    } else {
        a.exploration = (0.7 * spread / 0.5).clamp(0.2, 1.0);
        a.exploration_reason = format!(
            "largest standard deviation of random-game goals {spread:.2} (0.5, a fair win/loss game, gives 0.7)"
        );
    }
    a.rollouts_per_request = match a.playouts_per_s {
        x if x > 100_000.0 => 4,
        x if x > 20_000.0 => 2,
        _ => 1,
    };

    // Greedy rollouts pay when random play often misses a win one move
    // away: measured on states from random games, where every move of the
    // mover is tried to learn which moves can end the game at all.
    let greedy_budget = budget.mul_f64(0.15);
    let ends = if a.games > 0 && !a.simultaneous {
        let foes = a.material.as_ref().map(|m| m.foes()).unwrap_or_default();
        endings::sample(&mut m, &s0, net.inputs.len(), greedy_budget, &mut rng, stop, MAX_SAMPLES, &foes)?
    } else {
        endings::Endings::default()
    };
    let (decisions, missed, extra_steps) = (ends.decisions, ends.missed, ends.extra_steps);
    let terminating = ends.terminating.clone();
    let sampled = &ends.sampled;
    let tried: usize = sampled.iter().map(|mv| mv.iter().filter(|&&i| terminating[i as usize]).count()).sum();
    a.greedy_check_cost = tried as f64 / sampled.len().max(1) as f64;
    a.terminating_moves = terminating.iter().filter(|&&t| t).count();
    a.winning = ends.winning();
    a.winning_names = a.winning.iter().take(8).map(|&i| m.move_kif(i)).collect();
    a.captures = ends.captures();
    a.capture_names = a.captures.iter().take(8).map(|&(i, _)| m.move_kif(i)).collect();
    let miss_rate = missed as f64 / decisions.max(1) as f64;
    let cost = extra_steps as f64 / decisions.max(1) as f64;
    // The check multiplies the cost of a playout step by about `cost`, and
    // takes rollouts off the native playout path: measured, 8.6x slower
    // search on breakthrough (cost 24), 6x on connect four (cost 6.1), where
    // the player with greedy rollouts then lost 8 of 10 matches (2 draws) at
    // 0.5 s a move. Terminal children on expansion (below) catch wins one
    // move away inside the tree for far less; greedy rollouts only where the
    // check is nearly free.
    // Greedy rollouts try only the moves seen to end a game: in
    // breakthrough and knightThrough, moves onto the last row, legal only
    // where such a move wins.
    a.greedy_rollouts = !a.simultaneous && miss_rate > 0.02 && a.greedy_check_cost < 3.0;
    if a.greedy_rollouts {
        a.greedy = Some(Greedy { terminating });
    }
    // Terminal children on expansion cost one next state per move of the
    // expanded node. Counted in next states against a rollout's steps, it
    // looked cheap on breakthrough (24 against 64) and connect four (6.1
    // against 21), and the player that used it lost there: 7-0-13 and
    // 6-3-11 over two runs of matches against the same player without
    // the analysis (RESULTS.md). The check runs on the tree's
    // machine (the interpreter under the hybrid) while rollouts run
    // natively, several times faster, so a count understates it: only a
    // check under a tenth of a rollout's steps turns it on.
    // Decisive lanes try each lane's moves one ply ahead, a round of both
    // networks per move of the lane with the most (docs/mcts.md, decisive
    // lanes), where random play often misses a win one move away. With
    // material the search has win-first lanes and material tuned for it.
    // The moves that can end a game bound the rounds from below: connect
    // four 7.8 a decision (search 0.92x as fast), nineBoardTicTacToe 9.8
    // (0.51x); pentago 15.1 (0.29x, and no gain in matches: 2-0-2 against
    // the default, 0-0-2 against Sancho); hex 20.8, where each lane has
    // about a hundred moves, rolls out 70x slower.
    // The look-ahead tries every move of a lane, so a step costs about as
    // many rounds as the mover has moves: the mean branching bounds it too
    // (chess_200, 14 moves a decision: 47 iterations a second).
    let branching = a.branching.iter().copied().fold(0.0, f64::max);
    a.decisive = !a.simultaneous
        && miss_rate > 0.02
        && a.material.is_none()
        && a.greedy_check_cost <= DECISIVE_MAX_CHECK
        && branching <= DECISIVE_MAX_CHECK;
    a.decisive_reason = format!(
        "random play missed an immediate win in {:.1}% of decisions (on over 2%); {:.1} moves that can end a game and {branching:.1} moves a decision (on up to {DECISIVE_MAX_CHECK}); {}",
        100.0 * miss_rate,
        a.greedy_check_cost,
        if a.simultaneous {
            "not with simultaneous moves"
        } else if a.material.is_some() {
            "not with material (win-first lanes and material instead)"
        } else {
            "no material"
        }
    );
    a.missed_wins = miss_rate;
    a.win_check_cost = cost;
    a.expand_terminal = decisions > 0 && miss_rate > 0.005 && cost < 0.1 * a.avg_length;
    a.expand_terminal_reason = format!(
        "a win one move away was missed in {:.1}% of decisions; checking costs {cost:.1} next states per expansion against {:.1} steps per rollout (on under a tenth)",
        100.0 * miss_rate,
        a.avg_length
    );
    a.greedy_reason = format!(
        "random play missed an immediate win in {:.1}% of {decisions} decisions; a 1-ply check of the {} moves seen to end a game costs {:.2} extra steps per move (on under 3){}",
        100.0 * miss_rate,
        a.terminating_moves,
        a.greedy_check_cost,
        if a.simultaneous { "; not used with simultaneous moves" } else { "" }
    );

    // Latches and goal bounds.
    let l = net.latches();
    a.latches_positive = l.positive.iter().map(|&i| net.bases[i].name.clone()).collect();
    a.latches_negative = l.negative.iter().map(|&i| net.bases[i].name.clone()).collect();
    a.constant_bases = l.constant.len();
    let gnet = goal_net.unwrap_or(net);
    a.goal_bounds = (0..nr)
        .map(|r| {
            let vals: Vec<u8> = gnet
                .goals
                .iter()
                .filter(|g| g.role as usize == r && g.value <= crate::machine::GOAL_MAX)
                .filter(|g| !matches!(gnet.kind(g.comp), Kind::False))
                .map(|g| g.value)
                .collect();
            (vals.iter().copied().min().unwrap_or(0), vals.iter().copied().max().unwrap_or(0))
        })
        .collect();

    a.factors = factors(net);

    // Puzzles: iterative deepening while the budget lasts. With factors,
    // first on each factor's moves alone (and the moves of no factor): a
    // line found there is a line of the whole game, found in the factor's
    // search space instead of the product of all of them.
    if nr == 1 {
        let longest = a.length_histogram.last().map_or(0, |x| x.0) + 1;
        let mut searches: Vec<(String, Option<Vec<bool>>)> = Vec::new();
        if use_factors {
            let in_some: FxHashSet<u32> = a.factors.iter().flat_map(|f| f.moves.iter().copied()).collect();
            for (k, f) in a.factors.iter().enumerate() {
                let mine: FxHashSet<u32> = f.moves.iter().copied().collect();
                let allowed =
                    (0..net.inputs.len() as u32).map(|mv| mine.contains(&mv) || !in_some.contains(&mv)).collect();
                searches.push((format!("on factor {} alone", k + 1), Some(allowed)));
            }
        }
        searches.push(("on the whole game".into(), None));
        let mut solver = Solver { m: &mut m, deadline: start + budget, stop, allowed: None, nodes: 0 };
        a.puzzle_note = "not solved within the budget".into();
        let mut line = Vec::new();
        let end = start + budget;
        let factored = searches.len() - 1;
        'searches: for (k, (what, allowed)) in searches.into_iter().enumerate() {
            // The factors share half of what is left, each in turn; the
            // whole game gets the rest (at least half), so a puzzle whose
            // solution needs several factors is still solved.
            let left = end.saturating_duration_since(Instant::now());
            solver.deadline = if allowed.is_some() { Instant::now() + left / (2 * (factored - k) as u32) } else { end };
            solver.allowed = allowed;
            match solver.breadth_first(&s0, MAX_BREADTH_STATES)? {
                Breadth::Found(found) => {
                    let moves = found.iter().map(|&mv| solver.m.move_kif(mv)).collect();
                    a.puzzle_note = format!("solved {what} at depth {} (breadth first)", found.len());
                    a.puzzle = Some(Solution { goal: 100, moves });
                    break 'searches;
                }
                Breadth::Exhausted => {
                    if solver.allowed.is_none() {
                        a.puzzle_note = "no line to goal 100 (every reachable state seen)".into();
                    }
                    continue 'searches;
                }
                // Too many states to keep: depth first, with no memory.
                Breadth::GaveUp => {}
            }
            for depth in 1..=longest.min(MAX_SOLVE_DEPTH) {
                line.clear();
                match solver.solve(&s0, depth, &mut line)? {
                    Some(true) => {
                        let moves = line.iter().map(|&mv| solver.m.move_kif(mv)).collect();
                        a.puzzle = Some(Solution { goal: 100, moves });
                        a.puzzle_note = format!("solved {what} at depth {depth}");
                        break 'searches;
                    }
                    Some(false) if depth == longest && solver.allowed.is_none() => {
                        a.puzzle_note = format!("no line to goal 100 within {depth} moves");
                    }
                    Some(false) => {}
                    // Out of this search's time: on to the next.
                    None => continue 'searches,
                }
            }
        }
        a.puzzle_nodes = solver.nodes;
    }
    a.seconds = start.elapsed().as_secs_f64();
    Ok(a)
}
