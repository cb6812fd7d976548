//! What the analysis adds to the search: RAVE samples, material seeds and
//! backups, dropped losses, and the start-clock validation that decides
//! whether the analysed settings are used.

use super::*;

/// RAVE over lane rollouts: every iteration through the root gives an
/// AMAF sample to each move its role played there or later, so a move has
/// at least as many samples as visits (its own visits count), at most as
/// many as the root's iterations, and since connect four's moves recur
/// (a column is dropped into again and again) the root's moves have more
/// samples than visits in all; the same through the rollout threads'
/// replies. Off, no move has any.
#[test]
fn rave_samples_every_move_played_below() {
    let g = game("connect4.kif");
    for (threads, rave) in [(1, 0.05), (2, 0.05), (1, 0.0)] {
        let mut m = hybrid(&g);
        let s0 = m.initial_state().unwrap();
        let cfg = Config { lanes: true, rave, ..config(threads, Mode::Pipeline, 20_000) };
        let mut search = Search::new(m, s0, cfg).unwrap();
        search.run(Instant::now() + Duration::from_millis(200)).unwrap();
        search.graph.check_visits().unwrap();
        let role = search.graph.chooser();
        let st = search.graph.root_stats(role).unwrap();
        let visits: u32 = st.visits.iter().sum();
        let samples: u32 = st.amaf.iter().sum();
        assert!(visits > 100, "{threads} threads: {visits} visits");
        if rave == 0.0 {
            assert_eq!(samples, 0);
            continue;
        }
        for (i, (&n, &a)) in st.visits.iter().zip(&st.amaf).enumerate() {
            assert!(a >= n && a <= visits, "{threads} threads, move {i}: {a} samples, {n} visits of {visits}");
        }
        assert!(samples > visits * 2, "{threads} threads: {samples} samples, {visits} visits");
    }
}

/// Breakthrough's pawns as material, one point each, `weight` visits.
fn pawns(m: &mut propel_runtime::PropnetMachine, weight: u32) -> propel_runtime::heuristic::Material {
    let words = m.initial_state().unwrap().bits().len();
    let mut pieces = vec![Vec::new(), Vec::new()];
    for i in 0..words * 64 {
        let mut bits = vec![0u64; words];
        bits[i / 64] = 1 << (i % 64);
        let s = m.state_from_bits(&bits).unwrap();
        if let Some(name) = m.state_kif(&s).first() {
            for (r, colour) in ["white)", "black)"].iter().enumerate() {
                if name.starts_with("(cellholds") && name.ends_with(colour) {
                    pieces[r].push((i as u32, 1.0));
                }
            }
        }
    }
    assert_eq!((pieces[0].len(), pieces[1].len()), (64, 64));
    propel_runtime::heuristic::Material { pieces, names: vec![Vec::new(), Vec::new()], weight }
}

/// Bundled breakthrough, white to move: (move 1 4 2 5) takes a black pawn
/// that nothing can take back at once; no other move takes anything.
const CAPTURE: [[&str; 2]; 4] =
    [["(move 1 2 1 3)", "noop"], ["noop", "(move 2 7 2 6)"], ["(move 1 3 1 4)", "noop"], ["noop", "(move 2 6 2 5)"]];

#[test]
fn local_material_seeds_only_the_moves_that_capture() {
    let g = game("breakthrough.kif");
    for local in [false, true] {
        let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
        let s = play(&mut m, &CAPTURE);
        let mut legal = Vec::new();
        m.legal_moves(&s, 0, &mut legal).unwrap();
        let material = Some(Arc::new(pawns(&mut m, 5)));
        let c = Config { material, local_material: local, expand_after: 1, ..config(1, Mode::Pipeline, 100_000) };
        let mut search = Search::new(m, s, c).unwrap();
        search.run(Instant::now() + Duration::from_millis(500)).unwrap();
        let stats = search.root_stats(0).unwrap();
        assert!(stats.visits.iter().all(|&v| v > 0), "every move tried");
        let prior = search.graph.root_prior();
        if local {
            // Only the capture is seeded, relative to the root, and up.
            assert_eq!(prior, 5);
            let i = stats.moves.iter().position(|&mv| search.machine().move_kif(mv) == "(move 1 4 2 5)").unwrap();
            assert!(stats.visits[i] >= 5);
        } else {
            // Every new child is seeded, relative to the root.
            assert_eq!(prior, 5 * legal.len() as u32);
        }
    }
}

/// `n` iterations of `graph` whose rollouts are all worth 0.5 to both
/// roles: known values are backed up as they are.
fn search_with_even_rollouts<M: Simulator>(graph: &mut propel_runtime::mcts::Graph<M>, m: &mut M, n: usize)
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    use propel_runtime::mcts::Leaf;
    let mut path = Vec::new();
    for _ in 0..n {
        match graph.select(m, &mut path).unwrap() {
            Leaf::Known(v) => graph.backprop_known(&path, &v),
            Leaf::Rollout(_) => graph.backprop(&path, &[0.5, 0.5]),
            Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
        }
    }
}

/// With material backups, every rollout value that passes the end of an
/// exchange is moved towards the side that came out ahead: rollouts that
/// all say "even" make the capture look better than the quiet moves.
#[test]
fn material_backups_move_values_through_an_exchange() {
    use propel_runtime::mcts::Graph;
    let g = game("breakthrough.kif");
    let mut capture_mean = Vec::new();
    for backup in [false, true] {
        let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
        let s = play(&mut m, &CAPTURE);
        let material = Some(Arc::new(pawns(&mut m, 1)));
        let mut graph = Graph::new(&mut m, s, 100_000, 0.7, 3).unwrap();
        graph.set_material(material);
        graph.set_expand_after(1);
        graph.set_material_backup(backup);
        // Every rollout says "even": only the material moves values.
        search_with_even_rollouts(&mut graph, &mut m, 3000);
        graph.check_visits().unwrap();
        let st = graph.root_stats(0).unwrap();
        let i = st.moves.iter().position(|&mv| m.move_kif(mv) == "(move 1 4 2 5)").unwrap();
        let mean = |j: usize| st.sums[j] / st.visits[j] as f64;
        capture_mean.push(mean(i));
        if backup {
            // A pawn up in 31: the logistic of a quarter of the material
            // times the share won is 0.56, so the values through the
            // exchange's end are 0.5 moved 12% of the way to a win.
            assert!(mean(i) > 0.54, "capture {}", mean(i));
        }
    }
    assert!(capture_mean[1] > capture_mean[0] + 0.03, "{capture_mean:?}");
}

/// With proven losses dropped, a move found to lose is marked lost and
/// the visit that found it is taken back: the move keeps only its earlier
/// rollouts (here all worth 0.5), and the node's value is that of the
/// moves still open. Without, each losing move keeps that visit, worth 0.
#[test]
fn dropped_losses_leave_the_threatened_node_its_one_answer() {
    use propel_runtime::mcts::Graph;
    let g = game("tictactoe.kif");
    // o to move: x threatens (mark 1 3); every other move of o loses at once.
    let turns = [["(mark 1 1)", "noop"], ["noop", "(mark 3 3)"], ["(mark 1 2)", "noop"]];
    for drop in [false, true] {
        let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
        let s = play(&mut m, &turns);
        let mut graph = Graph::new(&mut m, s, 10_000, 0.7, 3).unwrap();
        graph.set_expand_terminal(true);
        graph.set_expand_after(1);
        graph.set_drop_lost(drop);
        search_with_even_rollouts(&mut graph, &mut m, 200);
        graph.check_visits().unwrap();
        let st = graph.root_stats(1).unwrap();
        let block = st.moves.iter().position(|&mv| m.move_kif(mv) == "(mark 1 3)").unwrap();
        assert_eq!(st.lost.iter().filter(|&&l| l).count(), 5, "drop={drop}: {:?}", st.lost);
        assert!(!st.lost[block]);
        // The lost moves whose loss was backed up (a move is also marked
        // lost by a solution found through another move: then no value
        // of its loss comes up through it either way).
        let losses = (0..st.moves.len()).filter(|&i| i != block && st.sums[i] < 0.5 * st.visits[i] as f64).count();
        if drop {
            assert_eq!(losses, 0, "only rollouts backed up: {:?} {:?}", st.sums, st.visits);
        } else {
            assert!(losses > 0, "losses backed up: {:?} {:?}", st.sums, st.visits);
        }
        let others: u32 = st.visits.iter().sum::<u32>() - st.visits[block];
        assert!(st.visits[block] > others, "drop={drop}: {:?}", st.visits);
    }
}

/// The player's validation: settings equal to the plain ones need no
/// duel; with no time for one the analysis's checks decide; a duel
/// against a crippled challenger (16 nodes, exploring at random) measures
/// no gain and keeps the plain settings; a three-role game and a puzzle
/// duel too.
#[test]
fn validation_duels_the_analysed_settings_against_plain_ones() {
    use propel_compiler::propnet::passes::Pass;
    use propel_compiler::Deadline;
    use propel_runtime::mcts::validate::{validate, Pace, Validation};
    let plain = config(1, Mode::Pipeline, 100_000);
    let crippled = Config { pool: 16, exploration: 10.0, ..plain.clone() };
    let soon = || Instant::now() + Duration::from_secs(4);
    // Validates `analysed` on game `name` until `until`.
    let check = |name: &str, analysed: &Config, until: Instant| -> Validation {
        let mut m = propnet_machine(&game(name), Pass::DEFAULT);
        let root = m.initial_state().unwrap();
        let pace = Pace { avg_length: 30.0, simultaneous: false };
        validate(&m, &root, analysed, &plain, pace, until, &Deadline::none()).unwrap()
    };
    let v = check("connect4.kif", &plain, soon());
    assert!(v.adopted && v.duel.is_none() && v.features.is_empty(), "{v:?}");
    let v = check("connect4.kif", &crippled, Instant::now());
    assert!(v.adopted && v.duel.is_none() && v.reason.contains("no time"), "{v:?}");
    let v = check("connect4.kif", &crippled, soon());
    let d = v.duel.clone().unwrap_or_else(|| panic!("{v:?}"));
    assert!(d.games >= 4 && !v.adopted && d.losses > d.wins, "{v:?}");
    assert_eq!(v.features, ["exploration 10.00"]);
    for name in ["trinim.kif", "hanoi.kif"] {
        let v = check(name, &crippled, soon());
        assert!(v.duel.as_ref().is_some_and(|d| d.games >= 1), "{name}: {v:?}");
    }
}
