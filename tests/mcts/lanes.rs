//! The search with lane-parallel rollouts: wins found and solved, every
//! visit backed up, in-flight selections bounded, root-parallel graphs
//! kept between turns.

use super::*;

/// Batched rollouts on a JIT with bit-parallel lanes: rollouts come in
/// batches (more rollouts than iterations) and the win is still found.
#[test]
fn batched_lane_rollouts_find_the_win() {
    let g = game("tictactoe.kif");
    for threads in [1, 2] {
        let mut m = propel_runtime::build::jit_machine(&g, &Default::default()).unwrap().machine;
        assert!(m.has_lanes());
        assert!(m.batches_on_lanes());
        let cfg = Config { batch: true, ..config(threads, Mode::Pipeline, 10_000) };
        // From the start: rollouts come in batches of 16 or more.
        let s0 = m.initial_state().unwrap();
        let mut search = Search::new(m.clone(), s0, cfg.clone()).unwrap();
        let stats = search.run(Instant::now() + Duration::from_millis(200)).unwrap();
        assert!(stats.per_request >= 16 && stats.rollouts >= 16, "{stats:?}");
        if threads == 1 {
            assert_eq!(stats.rollouts % 16, 0, "{stats:?}");
        }
        let s = play(&mut m, &X_WINS);
        let mut search = Search::new(m, s, cfg).unwrap();
        search.run(Instant::now() + Duration::from_millis(300)).unwrap();
        let (mv, value, _) = search.best(0).unwrap();
        assert_eq!(search.machine().move_kif(mv), "(mark 1 3)", "threads {threads}");
        assert!(value > 0.9, "value {value}");
    }
}

/// Lane-parallel search (every lane a rollout from its own leaf, the tree
/// grown on the lanes) finds the win and solves the position, on the JIT
/// alone and with the tree on the interpreter.
#[test]
fn lane_parallel_search_finds_and_solves_the_win() {
    let g = game("tictactoe.kif");
    for threads in [1, 2] {
        lane_search_wins("jit", lane_search(jit(&g), &X_WINS, threads));
        lane_search_wins("hybrid", lane_search(hybrid(&g), &X_WINS, threads));
    }
}

fn lane_search_wins<M: Simulator>(name: &str, mut search: Search<M>)
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    search.run(Instant::now() + Duration::from_millis(300)).unwrap();
    assert!(search.lane_parallel(), "{name}");
    let (mv, value, _) = search.best(0).unwrap();
    assert_eq!(search.machine().move_kif(mv), "(mark 1 3)", "{name}");
    assert!(value > 0.9, "{name}: value {value}");
    let solved = search.graph.root_solved().unwrap_or_else(|| panic!("{name}: the root is solved"));
    assert_eq!(solved[0], 1.0);
    search.graph.check_visits().unwrap_or_else(|e| panic!("{name}: {e}"));
}

fn lane_search<M: Simulator>(mut m: M, moves: &[[&str; 2]], threads: usize) -> Search<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let s = play(&mut m, moves);
    Search::new(m, s, Config { lanes: true, ..config(threads, Mode::Pipeline, 10_000) }).unwrap()
}

/// The drawn endgame, proven by lane-parallel search: up to 128 selections
/// in flight, the tree grown from the lanes' children.
#[test]
fn lane_parallel_search_solves_the_drawn_endgame() {
    let g = game("tictactoe.kif");
    let mut search = lane_search(hybrid(&g), &DRAWN_ENDGAME, 1);
    search.run(Instant::now() + Duration::from_secs(20)).unwrap();
    let v = search.graph.root_solved().expect("solved within 20 s");
    assert_eq!(v.as_slice(), &[0.5, 0.5]);
}

/// With settled children passed by (`Config::settle`), the drawn endgame
/// is still proven (a node's every child solved), by one-leaf and by
/// lane-parallel search, and every visit is backed up.
#[test]
fn settled_children_still_solve_the_drawn_endgame() {
    let g = game("tictactoe.kif");
    let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
    let s = play(&mut m, &DRAWN_ENDGAME);
    let one = Search::new(m, s, Config { settle: true, ..config(1, Mode::Pipeline, 10_000) }).unwrap();
    solves_to_a_draw("one leaf", one);
    let mut lanes = lane_search(hybrid(&g), &DRAWN_ENDGAME, 1);
    lanes.graph.set_settle(true);
    solves_to_a_draw("lanes", lanes);
}

fn solves_to_a_draw<M: Simulator>(name: &str, mut search: Search<M>)
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    search.run(Instant::now() + Duration::from_secs(20)).unwrap();
    let v = search.graph.root_solved().unwrap_or_else(|| panic!("{name}: solved within 20 s"));
    assert_eq!(v.as_slice(), &[0.5, 0.5], "{name}");
    search.graph.check_visits().unwrap_or_else(|e| panic!("{name}: {e}"));
}

/// After any run, in every mode, each move's visits equal the values
/// backed up through it: no selection's virtual visit is left behind (the
/// pipeline used to drop replies still in flight at its deadline). Runs
/// in short slices, as the player ponders, on a game with long rollouts.
#[test]
fn every_visit_is_backed_up_in_every_mode() {
    let g = game("breakthrough.kif");
    let modes: [(&str, usize, Mode, bool); 8] = [
        ("inline", 1, Mode::Pipeline, false),
        ("pipeline", 2, Mode::Pipeline, false),
        ("pipeline", 3, Mode::Pipeline, false),
        ("root", 2, Mode::Root, false),
        ("lanes", 1, Mode::Pipeline, true),
        ("lanes", 2, Mode::Pipeline, true),
        ("lanes", 3, Mode::Pipeline, true),
        ("root lanes", 2, Mode::Root, true),
    ];
    for ((name, threads, mode, lanes), expand_after) in modes.into_iter().flat_map(|m| [(m, 1), (m, 3)]) {
        let name = format!("{name}, children join at visit {expand_after}");
        let mut m = hybrid(&g);
        let s0 = m.initial_state().unwrap();
        let cfg = Config { lanes, expand_after, ..config(threads, mode, 20_000) };
        let mut search = Search::new(m, s0, cfg).unwrap();
        for slice in 0..5 {
            let stats = search.run(Instant::now() + Duration::from_millis(40)).unwrap();
            assert!(stats.iterations > 0, "{name}, {threads} threads: {stats:?}");
            for graph in search.graphs() {
                graph.check_visits().unwrap_or_else(|e| panic!("{name}, {threads} threads, slice {slice}: {e}"));
            }
        }
    }
}

/// Win-first lane search (breakthrough's winning moves from random
/// games): every lane runner takes them, in the search thread's lanes,
/// the rollout threads' and the root-parallel peers', and every visit is
/// backed up.
#[test]
fn win_first_lane_search_backs_up_every_visit() {
    let g = game("breakthrough.kif");
    let mut probe = hybrid(&g);
    let winning: Arc<[u32]> =
        propel_runtime::analysis::winning_moves(&mut probe, Duration::from_millis(300), 1).unwrap().into();
    assert!(!winning.is_empty());
    for (threads, mode) in [(1, Mode::Pipeline), (2, Mode::Pipeline), (2, Mode::Root)] {
        let mut m = hybrid(&g);
        let s0 = m.initial_state().unwrap();
        let cfg = Config { lanes: true, win_first: Some(winning.clone()), ..config(threads, mode, 20_000) };
        let mut search = Search::new(m, s0, cfg).unwrap();
        assert_eq!(search.rollout_policy(), "win-first lanes");
        for _ in 0..3 {
            let stats = search.run(Instant::now() + Duration::from_millis(40)).unwrap();
            assert!(stats.iterations > 0, "{threads} threads {mode:?}: {stats:?}");
            for graph in search.graphs() {
                graph.check_visits().unwrap_or_else(|e| panic!("{threads} threads {mode:?}: {e}"));
            }
        }
    }
    let mut m = hybrid(&g);
    let s0 = m.initial_state().unwrap();
    let plain = Search::new(m, s0, Config { lanes: true, ..config(1, Mode::Pipeline, 1000) }).unwrap();
    assert_eq!(plain.rollout_policy(), "lanes");
}

/// `inflight` bounds the selections a thread's lanes hold at once (the
/// other lanes idle), and every visit is still backed up; by default the
/// lanes hold many at once.
#[test]
fn lane_search_holds_at_most_inflight_selections() {
    let g = game("breakthrough.kif");
    for (inflight, threads, mode) in [(4, 1, Mode::Pipeline), (1, 2, Mode::Pipeline), (128, 1, Mode::Pipeline)] {
        let mut m = hybrid(&g);
        let s0 = m.initial_state().unwrap();
        let cfg = Config { lanes: true, inflight, ..config(threads, mode, 20_000) };
        let mut search = Search::new(m, s0, cfg).unwrap();
        for _ in 0..2 {
            let stats = search.run(Instant::now() + Duration::from_millis(60)).unwrap();
            assert!(stats.iterations > 0 && stats.rollouts > 0, "inflight {inflight}: {stats:?}");
            assert!(stats.peak_inflight <= inflight, "inflight {inflight}: {stats:?}");
            if inflight == 128 {
                assert!(stats.peak_inflight > 4, "the lanes hold many selections: {stats:?}");
            } else {
                assert!(stats.peak_inflight >= 1, "{stats:?}");
            }
            search.graph.check_visits().unwrap_or_else(|e| panic!("inflight {inflight}: {e}"));
        }
    }
}

/// Root parallelisation keeps every thread's graph between runs and moves
/// each one's root with the game: the trees carry over from turn to turn
/// (`auto` picks it for lane-parallel search with several threads).
#[test]
fn root_parallel_graphs_carry_over_between_turns() {
    let g = game("breakthrough.kif");
    let mut m = hybrid(&g);
    let s0 = m.initial_state().unwrap();
    let cfg = Config { lanes: true, ..config(2, Mode::Auto, 20_000) };
    let mut search = Search::new(m.clone(), s0.clone(), cfg).unwrap();
    assert_eq!(search.mode(), Mode::Root);
    search.run(Instant::now() + Duration::from_millis(300)).unwrap();
    assert_eq!(search.graphs().count(), 2);
    let (mv, _, visits) = search.best(0).expect("a move");
    let total: usize = search.graphs().map(|g| g.live_nodes()).sum();
    assert!(visits > 0 && total > 2, "{visits} visits, {total} nodes");
    // Play the best move and a reply: every graph keeps what it knew below.
    let mut moves = Vec::new();
    m.legal_moves(&s0, 1, &mut moves).unwrap();
    let s1 = m.next_state(&s0, &[mv, moves[0]]).unwrap();
    search.set_root(s1).unwrap();
    for graph in search.graphs() {
        assert!(graph.root_state().is_some());
        graph.check_visits().unwrap();
    }
    let before: usize = search.graphs().map(|g| g.live_nodes()).sum();
    search.run(Instant::now() + Duration::from_millis(100)).unwrap();
    assert_eq!(search.graphs().count(), 2, "the same peers");
    assert!(search.graphs().map(|g| g.live_nodes()).sum::<usize>() >= before);
    // One thread and no lanes: the pipeline.
    let one = Search::new(m.clone(), s0.clone(), config(1, Mode::Auto, 1_000)).unwrap();
    assert_eq!(one.mode(), Mode::Pipeline);
}
