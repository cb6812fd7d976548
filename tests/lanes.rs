//! Bit-parallel playouts (128 games per word, generated code) against a
//! reference: the same driver over a lane evaluator that runs the
//! propnet's from-scratch evaluation lane by lane must give exactly the
//! same games, seed by seed; and the lane playouts must agree in
//! distribution (mean length, mean goals) with the standard playout loop.
//! Win-first lanes (moves that win at once taken wherever legal) match
//! the reference too, and end breakthrough's random games sooner.

use propel_runtime::analysis::winning_moves;
use propel_runtime::build::{prepare, BuildOptions, Prepared};
use propel_runtime::heuristic::Material;
use propel_runtime::lanes::{Captures, Lanes, Reference};
use propel_runtime::playout::{playout, PlayoutStats};
use propel_runtime::{NativeMachine, Rng, StateMachine};
use propel_tests::{bundled_games, corpus_dir, root};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn load(path: &Path) -> Arc<propel_compiler::Game> {
    Arc::new(propel_compiler::load_file(path).unwrap_or_else(|e| panic!("{e}")))
}

/// A game's build and its JIT machine.
fn jit_of(path: &Path) -> (Prepared, NativeMachine) {
    let game = load(path);
    let p = prepare(&game, &BuildOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (m, _) = p.jit(&game.name).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (p, m)
}

/// The generated lane code and the reference give the same playouts.
fn check_exact(path: &Path, count: usize, seeds: &[u64]) {
    check_exact_win_first(path, count, seeds, &[]);
}

/// [`check_exact`] with win-first lanes taking `winning` on both sides.
fn check_exact_win_first(path: &Path, count: usize, seeds: &[u64], winning: &[u32]) {
    check_exact_with(path, count, seeds, winning, false);
}

/// [`check_exact`] with win-first lanes taking `winning`, and decisive
/// lanes where `decisive`.
fn check_exact_with(path: &Path, count: usize, seeds: &[u64], winning: &[u32], decisive: bool) {
    let (p, mut m) = jit_of(path);
    let code = m.code().clone();
    let plan = code.lanes().unwrap_or_else(|| panic!("{}: no lane code", path.display()));
    let s0 = m.initial_state().unwrap();
    let mut reference = Reference::new(p.lane_net(), p.goal_net(), plan);
    let mut lanes = Lanes::new(plan);
    lanes.set_win_first(plan, winning);
    m.set_win_first(winning);
    lanes.set_decisive(plan, decisive);
    m.set_decisive(decisive);
    // Decisive lanes are checked with safe-first, which takes moves back
    // on the wins they find.
    lanes.set_safe_first(decisive);
    m.set_safe_first(decisive);
    for &seed in seeds {
        let (mut g1, mut l1) = (Vec::new(), Vec::new());
        m.lane_playouts(&s0, count, seed, 100_000, &mut g1, &mut l1).unwrap();
        let roles = m.roles().len();
        let (mut g2, mut l2) = (vec![0; count * roles], vec![0; count]);
        lanes
            .run(plan, &mut reference, code.role_range(), |_| s0.bits(), count, seed, 100_000, &mut g2, &mut l2)
            .unwrap();
        assert_eq!(l1, l2, "{}: seed {seed}: lengths", path.display());
        assert_eq!(g1, g2, "{}: seed {seed}: goals", path.display());
        assert!(l1.iter().all(|&n| n > 0 || count == 0));
    }
}

#[test]
fn lane_code_matches_the_reference_evaluator_exactly() {
    for g in bundled_games() {
        // More playouts than lanes, so lanes are refilled mid-run.
        check_exact(&g, 150, &[1, 2]);
    }
}

#[test]
fn lane_code_matches_the_reference_on_corpus_games() {
    let Some(dir) = corpus_dir() else { return };
    // Games with a separate goal network, cycles, many roles, and
    // simultaneous moves.
    for name in ["base/pentago.v1.kif", "base/3pConnectFour.kif", "base/nineBoardTicTacToe.kif", "base/blocker.kif"] {
        let path = dir.join(name);
        if path.exists() {
            check_exact(&path, 70, &[7]);
        } else {
            propel_tests::skip(&format!("{} not found", path.display()));
        }
    }
}

/// Breakthrough's winning moves are its moves onto the far row (found
/// by random games, nothing keyed on names); with them, the lane code
/// still plays exactly the reference's games, and random games end
/// sooner (a pawn one step from the far row moves there).
#[test]
fn win_first_lanes_take_breakthroughs_wins() {
    let g = root().join("games/breakthrough.kif");
    let game = load(&g);
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let mut pm = p.propnet();
    let winning = winning_moves(&mut pm, Duration::from_millis(600), 3).unwrap();
    assert!(winning.len() > 10, "{} winning moves", winning.len());
    for &w in &winning {
        let name = pm.move_kif(w);
        let rows: Vec<&str> = name.trim_matches(|c| c == '(' || c == ')').split_whitespace().collect();
        assert!(
            matches!(rows.as_slice(), ["move", _, "7", _, "8"] | ["move", _, "2", _, "1"]),
            "{name} is not a move onto the far row"
        );
    }
    check_exact_win_first(&g, 150, &[4], &winning);
    let (mut m, _) = p.jit(&game.name).unwrap();
    let s0 = m.initial_state().unwrap();
    let mut mean_length = |win: &[u32]| {
        m.set_win_first(win);
        let (mut goals, mut lengths) = (Vec::new(), Vec::new());
        m.lane_playouts(&s0, 2000, 5, 100_000, &mut goals, &mut lengths).unwrap();
        assert!(goals.iter().all(|&g| g == 0 || g == 100), "every game ends with a winner");
        lengths.iter().map(|&l| l as f64).collect::<Vec<f64>>()
    };
    let (uniform, win_first) = (mean_length(&[]), mean_length(&winning));
    let ((mu, _), (mw, _)) = (moments(&uniform), moments(&win_first));
    assert!(mw < mu && !agree(&uniform, &win_first, 5.0), "mean length {mw:.1} with win-first, {mu:.1} without");
}

/// Mean and variance of a sample.
fn moments(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (mean, xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0))
}

/// Whether two samples' means agree within `k` standard errors.
fn agree(a: &[f64], b: &[f64], k: f64) -> bool {
    let ((ma, va), (mb, vb)) = (moments(a), moments(b));
    let se = (va / a.len() as f64 + vb / b.len() as f64).sqrt();
    (ma - mb).abs() <= k * se + 1e-9
}

#[test]
fn lane_playouts_agree_with_standard_playouts_in_distribution() {
    for g in bundled_games() {
        check_distribution(&g, 2000);
    }
}

/// base/reversi's goals are a separate network, so lanes that end wait
/// (parked, in their terminal state) until several can be scored at once.
#[test]
fn parked_lanes_keep_the_distribution() {
    let Some(dir) = corpus_dir() else { return };
    let path = dir.join("base/reversi.kif");
    if !path.exists() {
        propel_tests::skip(&format!("{} not found", path.display()));
        return;
    }
    let p = prepare(&load(&path), &BuildOptions::default()).unwrap();
    assert!(p.goal_net().is_some(), "reversi's goals are no longer split off: pick another game");
    check_distribution(&path, 600);
}

/// Lane playouts and the standard loop agree on mean length and goals.
fn check_distribution(g: &Path, n: usize) {
    let game = load(g);
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let (mut m, _): (NativeMachine, _) = p.jit(&game.name).unwrap();
    let roles = m.roles().len();
    let s0 = m.initial_state().unwrap();
    let (mut goals, mut lengths) = (Vec::new(), Vec::new());
    m.lane_playouts(&s0, n, 99, 100_000, &mut goals, &mut lengths).unwrap();
    let fast_len: Vec<f64> = lengths.iter().map(|&l| l as f64).collect();
    let mut std_len = Vec::with_capacity(n);
    let mut std_goals = vec![Vec::with_capacity(n); roles];
    let mut rng = Rng::new(12345);
    for _ in 0..n {
        let mut stats = PlayoutStats::default();
        std_len.push(playout(&mut m, &mut rng, &mut stats).unwrap() as f64);
        for (r, v) in std_goals.iter_mut().enumerate() {
            v.push(stats.goal_sums[r] as f64);
        }
    }
    let name = g.display();
    assert!(
        agree(&fast_len, &std_len, 5.0),
        "{name}: mean lengths {:?} vs {:?}",
        moments(&fast_len),
        moments(&std_len)
    );
    for (r, sg) in std_goals.iter().enumerate() {
        let fg: Vec<f64> = (0..n).map(|p| goals[p * roles + r].max(0) as f64).collect();
        assert!(agree(&fg, sg, 5.0), "{name}: role {r}: mean goals {:?} vs {:?}", moments(&fg), moments(sg));
    }
}

/// A toy game for safe-first lanes: white plays `a`, `b` or `c`; after
/// `a` or `b` (or any move, with `every_move_opens`) black may play `win`
/// and win at once, else it passes and white wins.
fn opening_game(every_move_opens: bool) -> Arc<propel_compiler::Game> {
    let opens = if every_move_opens { "(<= (next open) (does white c))" } else { "" };
    let text = format!(
        "(role white) (role black) (init (control white))
         (<= (legal white a) (true (control white)))
         (<= (legal white b) (true (control white)))
         (<= (legal white c) (true (control white)))
         (<= (legal black noop) (true (control white)))
         (<= (legal white noop) (true (control black)))
         (<= (legal black win) (true (control black)) (true open))
         (<= (legal black pass) (true (control black)))
         (<= (next open) (does white a))
         (<= (next open) (does white b))
         {opens}
         (<= (next (control black)) (true (control white)))
         (<= (next done) (true (control black)))
         (<= (next bwins) (does black win))
         (<= terminal (true done))
         (<= (goal black 100) (true bwins))
         (<= (goal white 0) (true bwins))
         (<= (goal white 100) (not (true bwins)))
         (<= (goal black 0) (not (true bwins)))"
    );
    Arc::new(propel_compiler::validate::load("opening", text).unwrap_or_else(|e| panic!("{e}")))
}

/// White's share of wins over `n` lane playouts of [`opening_game`],
/// with black's `win` as the win-first move, safe-first on or off; the
/// generated code and the reference evaluator must play the same games.
fn white_wins(every_move_opens: bool, safe: bool, n: usize) -> f64 {
    opening_wins(every_move_opens, Policy::WinFirst { safe }, n)
}

/// How the lanes of [`opening_wins`] choose.
#[derive(Clone, Copy)]
enum Policy {
    Uniform,
    WinFirst { safe: bool },
    Decisive { safe: bool },
}

/// [`white_wins`] under any policy.
fn opening_wins(every_move_opens: bool, policy: Policy, n: usize) -> f64 {
    let game = opening_game(every_move_opens);
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let pm = p.propnet();
    let win: Vec<u32> = (0..16).filter(|&i| pm.move_kif(i) == "win").collect();
    assert_eq!(win.len(), 1, "black's `win` input");
    let (mut m, _) = p.jit(&game.name).unwrap();
    let code = m.code().clone();
    let plan = code.lanes().expect("lane code");
    let s0 = m.initial_state().unwrap();
    let (win, safe, decisive) = match policy {
        Policy::Uniform => (vec![], false, false),
        Policy::WinFirst { safe } => (win, safe, false),
        Policy::Decisive { safe } => (vec![], safe, true),
    };
    m.set_win_first(&win);
    m.set_safe_first(safe);
    m.set_decisive(decisive);
    let (mut goals, mut lengths) = (Vec::new(), Vec::new());
    m.lane_playouts(&s0, n, 9, 1000, &mut goals, &mut lengths).unwrap();
    let mut lanes = Lanes::new(plan);
    lanes.set_win_first(plan, &win);
    lanes.set_safe_first(safe);
    lanes.set_decisive(plan, decisive);
    let mut reference = Reference::new(p.lane_net(), p.goal_net(), plan);
    let (mut g2, mut l2) = (vec![0; n * 2], vec![0; n]);
    lanes.run(plan, &mut reference, code.role_range(), |_| s0.bits(), n, 9, 1000, &mut g2, &mut l2).unwrap();
    assert_eq!((&goals, &lengths), (&g2, &l2), "generated code and reference differ");
    // Moves taken back are not counted: every game is two moves long.
    assert!(lengths.iter().all(|&l| l == 2), "lengths {lengths:?}");
    goals.chunks(2).filter(|g| g[0] == 100).count() as f64 / n as f64
}

#[test]
fn safe_first_lanes_take_back_a_move_that_gives_a_win() {
    let (plain, safe) = (white_wins(false, false, 600), white_wins(false, true, 600));
    assert!((0.25..0.42).contains(&plain), "win-first alone: white wins {plain} (about a third)");
    assert_eq!(safe, 1.0, "safe-first: white always finds `c`");
    // Where every move gives black the win, the lanes run out of moves to
    // try and play on: black wins every game, and nothing stalls.
    assert_eq!(white_wins(true, true, 300), 0.0);
}

/// Decisive lanes find black's win one ply ahead without being told
/// which move wins: where it is legal black always plays it, so white
/// wins only after `c` (a third of the games), against two thirds with
/// uniform moves (black finds `win` half the time). The generated code
/// and the reference play the same games.
#[test]
fn decisive_lanes_find_the_win_one_ply_ahead() {
    let uniform = opening_wins(false, Policy::Uniform, 600);
    assert!((0.58..0.75).contains(&uniform), "uniform: white wins {uniform} (about two thirds)");
    let decisive = opening_wins(false, Policy::Decisive { safe: false }, 600);
    assert!((0.25..0.42).contains(&decisive), "decisive: white wins {decisive} (about a third)");
    assert_eq!(opening_wins(true, Policy::Decisive { safe: false }, 300), 0.0, "every move opens: black always wins");
}

/// With safe-first, the look-ahead's wins are threats too: white takes
/// back `a` and `b`, which leave black its win, and always plays `c`;
/// where every move opens, white runs out of moves to try and plays on.
#[test]
fn decisive_safe_first_lanes_take_back_a_move_that_leaves_a_win() {
    assert_eq!(opening_wins(false, Policy::Decisive { safe: true }, 600), 1.0);
    assert_eq!(opening_wins(true, Policy::Decisive { safe: true }, 300), 0.0);
}

/// Decisive lanes play exactly the reference's games on the bundled
/// games and on corpus games with a goal network and simultaneous moves.
/// Breakthrough is left out: the reference evaluates every lane from
/// scratch for each of its thirty-odd moves a step (43 s in release).
#[test]
fn decisive_lanes_match_the_reference_evaluator_exactly() {
    let games = bundled_games().into_iter().filter(|g| !g.ends_with("breakthrough.kif"));
    for g in games {
        check_exact_with(&g, 130, &[3], &[], true);
    }
    let Some(dir) = corpus_dir() else { return };
    for name in ["ggp-base-games/connectFour.kif", "base/pentago.v1.kif", "base/blocker.kif"] {
        let path = dir.join(name);
        if path.exists() {
            check_exact_with(&path, 20, &[7], &[], true);
        } else {
            propel_tests::skip(&format!("{} not found", path.display()));
        }
    }
}

/// A toy game for capture-first lanes: white plays `a`, `b` or `take`
/// (which removes black's pawn), then black `wait`s or `pass`es and the
/// game ends; white wins where the pawn is gone. No move wins at once, so
/// only the capture preference changes white's share.
fn capture_game() -> Arc<propel_compiler::Game> {
    let text = "(role white) (role black) (init (control white)) (init (pawn black))
         (<= (legal white a) (true (control white)))
         (<= (legal white b) (true (control white)))
         (<= (legal white take) (true (control white)))
         (<= (legal black noop) (true (control white)))
         (<= (legal white noop) (true (control black)))
         (<= (legal black wait) (true (control black)))
         (<= (legal black pass) (true (control black)))
         (<= (next (pawn black)) (true (pawn black)) (not (does white take)))
         (<= (next (control black)) (true (control white)))
         (<= (next done) (true (control black)))
         (<= terminal (true done))
         (<= (goal white 100) (not (true (pawn black))))
         (<= (goal black 0) (not (true (pawn black))))
         (<= (goal white 0) (true (pawn black)))
         (<= (goal black 100) (true (pawn black)))";
    Arc::new(propel_compiler::validate::load("capture", text).unwrap_or_else(|e| panic!("{e}")))
}

/// White's share of wins over `n` lane playouts of [`capture_game`] with
/// capture-first lanes at `chance` (`None`: uniform lanes), safe-first
/// as `safe`; the generated code and the reference play the same games.
/// The captures are found by the look-ahead, or read from a table where
/// `table`.
fn capture_wins(chance: Option<f64>, safe: bool, table: bool, n: usize) -> f64 {
    capture_wins_with(chance, safe, table, false, n)
}

/// [`capture_wins`] on the reference's lanes only, finishing plainly
/// after the run's stop where `plain`.
fn capture_wins_with(chance: Option<f64>, safe: bool, table: bool, plain: bool, n: usize) -> f64 {
    let game = capture_game();
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let (mut m, _) = p.jit(&game.name).unwrap();
    let code = m.code().clone();
    let plan = code.lanes().expect("lane code");
    let names = code.base_names();
    let pawn: Vec<(u32, f64)> =
        (0..names.len() as u32).filter(|&b| names[b as usize].contains("pawn")).map(|b| (b, 1.0)).collect();
    assert_eq!(pawn.len(), 1, "the pawn's base: {names:?}");
    let inputs = code.input_names();
    let take = inputs.iter().position(|i| i.contains("take")).expect("the take input") as u32;
    let captures = if table {
        Captures::Table(vec![(take, vec![pawn[0].0])])
    } else {
        Captures::LookAhead(Material { pieces: vec![Vec::new(), pawn], names: vec![Vec::new(), Vec::new()], weight: 1 })
    };
    let capture = chance.map(|c| (c, &captures));
    let s0 = m.initial_state().unwrap();
    m.set_capture_first(capture);
    m.set_safe_first(safe);
    let (mut goals, mut lengths) = (Vec::new(), Vec::new());
    m.lane_playouts(&s0, n, 11, 1000, &mut goals, &mut lengths).unwrap();
    let mut lanes = Lanes::new(plan);
    lanes.set_capture_first(plan, capture);
    lanes.set_safe_first(safe);
    lanes.set_plain_after_stop(plain);
    assert_eq!(lanes.capture_first(), chance);
    assert_eq!(lanes.decisive(), chance.is_some() && !table, "capture-first turns the look-ahead on, without a table");
    assert_eq!(lanes.capture_table(), chance.is_some() && table);
    let mut reference = Reference::new(p.lane_net(), p.goal_net(), plan);
    let (mut g2, mut l2) = (vec![0; n * 2], vec![0; n]);
    lanes.run(plan, &mut reference, code.role_range(), |_| s0.bits(), n, 11, 1000, &mut g2, &mut l2).unwrap();
    if plain {
        return g2.chunks(2).filter(|g| g[0] == 100).count() as f64 / n as f64;
    }
    assert_eq!((&goals, &lengths), (&g2, &l2), "generated code and reference differ");
    assert!(lengths.iter().all(|&l| l == 2), "lengths {lengths:?}");
    goals.chunks(2).filter(|g| g[0] == 100).count() as f64 / n as f64
}

/// Lanes told to finish plainly after the stop (as a search's are) play
/// without the look-ahead once the source has nothing more to hand out:
/// with 100 playouts all handed out at the first step, no lane takes the
/// pawn on purpose; with 1000, the lanes refilled before the stop do.
#[test]
fn lanes_finish_plainly_after_the_stop() {
    for table in [false, true] {
        let tail = capture_wins_with(Some(1.0), !table, table, true, 100);
        assert!((0.15..0.55).contains(&tail), "plain after the stop: white wins {tail} (about a third)");
        let long = capture_wins_with(Some(1.0), !table, table, true, 1000);
        assert!(long > 0.8, "refilled lanes capture before the stop: white wins {long}");
    }
}

/// Capture-first lanes take the pawn wherever they may, with the chance
/// given: always at 1, in about half the lanes and a third of the rest at
/// 0.5 (two thirds in all), against a third with uniform moves. Black,
/// which has nothing to take, draws uniformly as before. The same with
/// the captures read from a table as with the look-ahead.
#[test]
fn capture_first_lanes_take_a_piece_with_their_chance() {
    let uniform = capture_wins(None, false, false, 600);
    assert!((0.25..0.42).contains(&uniform), "uniform: white wins {uniform} (about a third)");
    for table in [false, true] {
        assert_eq!(capture_wins(Some(1.0), false, table, 600), 1.0, "always take (table {table})");
        assert_eq!(capture_wins(Some(1.0), true, table, 300), 1.0, "always take, with safe-first (table {table})");
        let half = capture_wins(Some(0.5), false, table, 600);
        assert!((0.58..0.75).contains(&half), "chance 0.5: white wins {half} (about two thirds; table {table})");
        let never = capture_wins(Some(0.0), false, table, 600);
        assert!((0.25..0.42).contains(&never), "chance 0: white wins {never} (about a third; table {table})");
    }
}

/// Material for the bundled breakthrough: one point per pawn of each side.
fn pawns(m: &NativeMachine) -> Material {
    let side = |colour: &str| -> Vec<(u32, f64)> {
        let names = m.code().base_names();
        (0..names.len() as u32)
            .filter(|&b| {
                names[b as usize].starts_with("(cellholds") && names[b as usize].ends_with(&format!("{colour})"))
            })
            .map(|b| (b, 1.0))
            .collect()
    };
    let pieces = vec![side("white"), side("black")];
    assert_eq!((pieces[0].len(), pieces[1].len()), (64, 64), "a base per cell and side");
    Material { pieces, names: vec![Vec::new(), Vec::new()], weight: 1 }
}

/// Material-cutoff lanes: a playout that has run its steps stops there,
/// valued by its material against the reference state's; the generated
/// code and the reference evaluator cut the same games alike.
#[test]
fn cut_rollouts_stop_at_their_depth_and_are_valued_by_material() {
    let (p, mut m) = jit_of(&root().join("games/breakthrough.kif"));
    let code = m.code().clone();
    let plan = code.lanes().expect("lane code");
    let s0 = m.initial_state().unwrap();
    let material = pawns(&m);
    let n = 300;
    let run = |m: &mut NativeMachine, steps: u32, reference: &[u64]| {
        m.set_cutoff(Some((steps, &material)), reference);
        let (mut goals, mut lengths) = (Vec::new(), Vec::new());
        m.lane_playouts(&s0, n, 5, 10_000, &mut goals, &mut lengths).unwrap();
        let mut lanes = Lanes::new(plan);
        lanes.set_cutoff(plan, Some((steps, &material)));
        lanes.set_cutoff_reference(&material, reference);
        let mut reference_eval = Reference::new(p.lane_net(), p.goal_net(), plan);
        let (mut g2, mut l2) = (vec![0; n * 2], vec![0; n]);
        let start = |_| s0.bits();
        lanes.run(plan, &mut reference_eval, code.role_range(), start, n, 5, 10_000, &mut g2, &mut l2).unwrap();
        assert_eq!((&goals, &lengths), (&g2, &l2), "cutoff {steps}: generated code and reference differ");
        (goals, lengths)
    };
    // Four plies from the start no pawn can be taken: every game is cut
    // at 4 with the material it started with, an even 50.
    let (goals, lengths) = run(&mut m, 4, s0.bits());
    assert!(lengths.iter().all(|&l| l == 4), "lengths {lengths:?}");
    assert!(goals.iter().all(|&g| g == 50), "goals {goals:?}");
    // Against a reference where black had a pawn less, the same material
    // is a loss for white.
    let mut fewer = s0.bits().to_vec();
    let (b, _) = material.pieces[1][0..]
        .iter()
        .copied()
        .find(|&(b, _)| s0.bits()[b as usize / 64] >> (b % 64) & 1 == 1)
        .unwrap();
    fewer[b as usize / 64] &= !(1 << (b % 64));
    assert!(Material::value(16.0, 16.0, material.share(&fewer)) < 0.5);
    let (goals, _) = run(&mut m, 4, &fewer);
    assert!(goals.chunks(2).all(|g| g == [0, 100]), "goals {goals:?}");
    // Cut deeper, pawns are taken: values spread, and no game passes the
    // cutoff; without one, games run to the end (breakthrough's take over
    // 20 steps).
    let (goals, lengths) = run(&mut m, 24, s0.bits());
    assert!(lengths.iter().all(|&l| l <= 24), "lengths {lengths:?}");
    assert!(goals.chunks(2).all(|g| g[0] + g[1] == 100));
    assert!(goals.chunks(2).all(|g| [0, 50, 100].contains(&g[0])));
    assert!(goals.chunks(2).any(|g| g[0] != 50), "some game is cut with a pawn up or down");
    m.set_cutoff(None, &[]);
    let (mut goals, mut lengths) = (Vec::new(), Vec::new());
    m.lane_playouts(&s0, n, 5, 10_000, &mut goals, &mut lengths).unwrap();
    assert!(lengths.iter().any(|&l| l > 24));
    assert!(goals.iter().all(|&g| g == 0 || g == 100));
}

/// Lanes that record their moves hand each playout's inputs to the source
/// before its goals: on tic-tac-toe, where every mark is a different
/// input and each role plays `noop` at least once, that is the game's
/// length plus the two noops, every one a mark or a noop; a lane refilled
/// starts with none (more playouts than lanes).
#[test]
fn recorded_moves_are_the_moves_each_playout_played() {
    use propel_runtime::lanes::{LaneSource, Refill};
    struct Record<'a> {
        start: &'a [u64],
        left: usize,
        played: Vec<Vec<u64>>,
        got: Vec<(Vec<u64>, u32)>,
    }
    impl LaneSource for Record<'_> {
        fn next_start(&mut self, _lane: usize) -> Refill<'_> {
            if self.left == 0 {
                return Refill::Stop;
            }
            self.left -= 1;
            Refill::Start(self.start)
        }
        fn played(&mut self, lane: usize, inputs: &[u64]) {
            self.played[lane] = inputs.to_vec();
        }
        fn finished(&mut self, lane: usize, _goals: &[i32], length: u32) {
            self.got.push((std::mem::take(&mut self.played[lane]), length));
        }
    }
    let (p, mut m) = jit_of(&root().join("games/tictactoe.kif"));
    let code = m.code().clone();
    let plan = code.lanes().expect("lane code");
    let s0 = m.initial_state().unwrap();
    let mut lanes = Lanes::new(plan);
    lanes.set_record_moves(plan, true);
    let mut eval = Reference::new(p.lane_net(), p.goal_net(), plan);
    let mut source = Record { start: s0.bits(), left: 300, played: vec![Vec::new(); 128], got: Vec::new() };
    lanes.stream(plan, &mut eval, code.role_range(), &mut source, 7, 1000).unwrap();
    assert_eq!(source.got.len(), 300);
    let names = code.input_names();
    for (played, length) in &source.got {
        let inputs: Vec<usize> =
            (0..names.len()).filter(|&i| played.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)).collect();
        assert_eq!(inputs.len(), *length as usize + 2, "{length} moves: {:?}", inputs.iter().map(|&i| &names[i]));
        let marks = inputs.iter().filter(|&&i| names[i].contains("mark")).count();
        assert_eq!(marks, *length as usize, "{:?}", inputs.iter().map(|&i| &names[i]).collect::<Vec<_>>());
    }
    // Off, nothing is handed over.
    lanes.set_record_moves(plan, false);
    source.left = 10;
    source.got.clear();
    lanes.stream(plan, &mut eval, code.role_range(), &mut source, 7, 1000).unwrap();
    assert!(source.got.iter().all(|(p, _)| p.is_empty()));
}
