//! The search engines on positions with known answers: an immediate win is
//! found and the position solved, tic-tac-toe is solved to a draw, the node
//! pool stays within its bound, and every mode answers a legal move.

use propel_runtime::mcts::uct::PlainUct;
use propel_runtime::mcts::{Config, Mode, Search};
use propel_runtime::simulate::Simulator;
use propel_runtime::{Prover, StateMachine};
use propel_tests::{propnet_machine, root};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn game(name: &str) -> Arc<propel_compiler::Game> {
    Arc::new(propel_compiler::load_file(&root().join("games").join(name)).unwrap())
}

/// Plays `moves` (KIF, one per role per turn) from the initial state.
fn play<M: StateMachine>(m: &mut M, turns: &[[&str; 2]]) -> M::State {
    let mut s = m.initial_state().unwrap();
    let mut legal = Vec::new();
    for t in turns {
        let mut joint = Vec::new();
        for (r, want) in t.iter().enumerate() {
            m.legal_moves(&s, r, &mut legal).unwrap();
            joint.push(*legal.iter().find(|&&l| m.move_kif(l) == *want).unwrap_or_else(|| panic!("{want}")));
        }
        s = m.next_state(&s, &joint).unwrap();
    }
    s
}

/// x has (1 1) and (1 2); o has (2 1) and (2 2); x to move wins with (1 3).
const X_WINS: [[&str; 2]; 4] =
    [["(mark 1 1)", "noop"], ["noop", "(mark 2 1)"], ["(mark 1 2)", "noop"], ["noop", "(mark 2 2)"]];

fn config(threads: usize, mode: Mode, pool: usize) -> Config {
    Config { threads, mode, pool, exploration: 0.7, seed: 7, ..Config::default() }
}

fn search_finds_the_win<M: Simulator>(mut m: M, threads: usize, mode: Mode)
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let s = play(&mut m, &X_WINS);
    let mut search = Search::new(m, s, config(threads, mode, 10_000)).unwrap();
    search.run(Instant::now() + Duration::from_millis(300)).unwrap();
    let (mv, value, _) = search.best(0).unwrap();
    assert_eq!(search.machine().move_kif(mv), "(mark 1 3)", "threads {threads}, {mode:?}");
    assert!(value > 0.9, "value {value}");
    if mode == Mode::Pipeline {
        let solved = search.graph.root_solved().expect("the root is solved");
        assert_eq!(solved[0], 1.0);
    }
}

#[test]
fn immediate_win_found_and_solved() {
    let g = game("tictactoe.kif");
    search_finds_the_win(Prover::new(g.clone()).unwrap(), 1, Mode::Pipeline);
    // A prover's states are not portable: the pipeline runs inline.
    search_finds_the_win(Prover::new(g.clone()).unwrap(), 2, Mode::Pipeline);
    search_finds_the_win(propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL), 1, Mode::Pipeline);
    search_finds_the_win(propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL), 3, Mode::Pipeline);
    search_finds_the_win(propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL), 2, Mode::Root);
}

/// x o x / . o . / o x . with x to move: a draw with best play, proven
/// only by exploring every line.
const DRAWN_ENDGAME: [[&str; 2]; 6] = [
    ["(mark 1 1)", "noop"],
    ["noop", "(mark 1 2)"],
    ["(mark 1 3)", "noop"],
    ["noop", "(mark 2 2)"],
    ["(mark 3 2)", "noop"],
    ["noop", "(mark 3 1)"],
];

#[test]
fn an_endgame_is_solved_to_a_draw() {
    let g = game("tictactoe.kif");
    for threads in [1, 2] {
        let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
        let s = play(&mut m, &DRAWN_ENDGAME);
        let mut search = Search::new(m, s, config(threads, Mode::Pipeline, 10_000)).unwrap();
        search.run(Instant::now() + Duration::from_secs(20)).unwrap();
        let v = search.graph.root_solved().expect("solved within 20 s");
        assert_eq!(v.as_slice(), &[0.5, 0.5]);
    }
}

/// The role to move's opponent has one legal move (`noop`); its value is
/// still the mean of its goals over the search, not 0 (tic-tac-toe's goals
/// add up to 100, so the two values add up to 1).
#[test]
fn a_role_without_a_choice_reports_its_value() {
    let g = game("tictactoe.kif");
    let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
    let s = play(&mut m, &X_WINS[..1]);
    let mut search = Search::new(m, s, config(1, Mode::Pipeline, 100_000)).unwrap();
    search.run(Instant::now() + Duration::from_millis(300)).unwrap();
    let (mv, waiting, visits) = search.best(0).unwrap();
    assert_eq!(search.machine().move_kif(mv), "noop");
    assert!(visits > 100, "{visits} visits");
    let (_, mover, _) = search.best(1).unwrap();
    assert!(waiting > 0.2 && (waiting + mover - 1.0).abs() < 0.1, "x {waiting}, o {mover}");
    search.graph.check_visits().unwrap();
}

/// Normalised values (`Config::normalize`): applied on a search long
/// enough to pass the warm-up, never without the setting; every visit
/// still backed up, every move's mean a value, and the immediate win of
/// tic-tac-toe still found and solved.
#[test]
fn normalised_values_stay_values_and_the_win_is_still_found() {
    let g = game("connect4.kif");
    for normalize in [false, true] {
        let m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
        let mut m2 = m.clone();
        let s = m2.initial_state().unwrap();
        let cfg = Config { normalize, ..config(1, Mode::Pipeline, 100_000) };
        let mut search = Search::new(m, s, cfg).unwrap();
        search.run(Instant::now() + Duration::from_millis(700)).unwrap();
        let n = search.graph.normalizations();
        assert_eq!(n > 0, normalize, "{n} normalisations");
        search.graph.check_visits().unwrap();
        let stats = search.graph.root_stats(0).unwrap();
        for (i, &v) in stats.visits.iter().enumerate() {
            let mean = stats.sums[i] / v.max(1) as f64;
            assert!((0.0..=1.0).contains(&mean), "move {i}: mean {mean}");
        }
    }
    let g = game("tictactoe.kif");
    let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
    let s = play(&mut m, &X_WINS);
    let mut search = Search::new(m, s, Config { normalize: true, ..config(1, Mode::Pipeline, 10_000) }).unwrap();
    search.run(Instant::now() + Duration::from_millis(300)).unwrap();
    let (mv, value, _) = search.best(0).unwrap();
    assert_eq!(search.machine().move_kif(mv), "(mark 1 3)");
    assert!(value > 0.9, "value {value}");
}

#[test]
fn the_pool_bounds_the_graph() {
    let g = game("connect4.kif");
    let m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
    let mut m2 = m.clone();
    let s = m2.initial_state().unwrap();
    for threads in [1, 2] {
        let mut search = Search::new(m.clone(), s.clone(), config(threads, Mode::Pipeline, 500)).unwrap();
        let st = search.run(Instant::now() + Duration::from_millis(500)).unwrap();
        assert!(st.iterations > 1000, "{} iterations", st.iterations);
        assert!(st.nodes <= 500 && search.graph.live_nodes() <= 500, "{} nodes", st.nodes);
        let (mv, _, _) = search.best(0).unwrap();
        let mut legal = Vec::new();
        m2.legal_moves(&s, 0, &mut legal).unwrap();
        assert!(legal.contains(&mv));
    }
}

#[test]
fn plain_uct_finds_the_win() {
    let g = game("tictactoe.kif");
    let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
    let s = play(&mut m, &X_WINS);
    let mut u = PlainUct::new(m, s, 3).unwrap();
    u.run(Instant::now() + Duration::from_millis(300)).unwrap();
    let (mv, value, _) = u.best(0).unwrap();
    assert_eq!(u.machine().move_kif(mv), "(mark 1 3)");
    assert!(value > 0.9);
}

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

fn jit(g: &Arc<propel_compiler::Game>) -> propel_runtime::NativeMachine {
    propel_runtime::build::jit_machine(g, &Default::default()).unwrap().machine
}

fn hybrid(g: &Arc<propel_compiler::Game>) -> propel_runtime::Hybrid {
    let p = propel_runtime::build::prepare(g, &Default::default()).unwrap();
    let (native, _) = p.jit(&g.name).unwrap();
    propel_runtime::Hybrid::new(p.propnet(), native)
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

/// With terminal children made on expansion, one iteration solves a node
/// whose win is one move away.
#[test]
fn terminal_children_on_expansion_solve_at_once() {
    use propel_runtime::mcts::{Graph, Leaf};
    let g = game("tictactoe.kif");
    for seed in 0..8 {
        let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
        let s = play(&mut m, &X_WINS);
        let mut graph = Graph::new(&mut m, s, 1000, 0.7, seed).unwrap();
        graph.set_expand_terminal(true);
        let mut path = Vec::new();
        match graph.select(&mut m, &mut path).unwrap() {
            Leaf::Known(v) => graph.backprop_known(&path, &v),
            Leaf::Rollout(_) => graph.backprop(&path, &[0.0, 0.0]),
            Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
        }
        let solved = graph.root_solved().unwrap_or_else(|| panic!("seed {seed}: not solved after one iteration"));
        assert_eq!(solved[0], 1.0);
        assert_eq!(m.move_kif(graph.best(0).unwrap().0), "(mark 1 3)");
    }
}

/// With an expansion threshold of 3, a child joins the graph at the third
/// selection of the move to it, and not before; its first two rollouts
/// start from it all the same (eager: from the child's state; lazy: the
/// caller is told to compute the child and not to attach it).
#[test]
fn children_join_the_graph_at_the_threshold() {
    use propel_runtime::mcts::{Graph, Leaf};
    let g = game("tictactoe.kif");
    for lazy in [false, true] {
        let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
        let s0 = m.initial_state().unwrap();
        let mut graph = Graph::new(&mut m, s0, 1000, 0.7, 5).unwrap();
        graph.set_expand_after(3);
        let mut path = Vec::new();
        // x's nine moves: UCB takes each once, then each a second time
        // (equal values, fewer visits first), then a third.
        for i in 0..27usize {
            let leaf = if lazy { graph.select_lazy(&mut m, &mut path) } else { graph.select(&mut m, &mut path) };
            let joins = i >= 18;
            match leaf.unwrap() {
                Leaf::Rollout(s) => {
                    assert!(!lazy, "lazy, iteration {i}");
                    assert_eq!(m.state_kif(&s).iter().filter(|f| f.contains(" x)")).count(), 1);
                }
                Leaf::Expand { parent, joint, attach } => {
                    assert!(lazy, "eager, iteration {i}");
                    assert_eq!(attach, joins, "iteration {i}");
                    if attach {
                        let moves: Vec<_> = joint.iter().map(|&j| m.move_from_index(j).unwrap()).collect();
                        let child = m.next_state(&parent, &moves).unwrap();
                        let mut legal = vec![Vec::new(), Vec::new()];
                        for (r, l) in legal.iter_mut().enumerate() {
                            let mut mv = Vec::new();
                            m.legal_moves(&child, r, &mut mv).unwrap();
                            l.extend(mv.iter().map(|&x| m.move_index(x).unwrap()));
                        }
                        graph
                            .attach(&mut m, &path, child, propel_runtime::mcts::graph::Outcome::Legal(&legal))
                            .unwrap();
                    }
                }
                Leaf::Known(_) => panic!("iteration {i}: nothing is known this early"),
            }
            graph.backprop(&path, &[0.5, 0.5]);
            let nodes = 1 + i.saturating_sub(17);
            assert_eq!(graph.live_nodes(), nodes.max(1), "lazy {lazy}, after iteration {i}");
        }
        let stats = graph.root_stats(0).unwrap();
        assert!(stats.visits.iter().all(|&v| v == 3), "{:?}", stats.visits);
        graph.check_visits().unwrap();
    }
}

/// A move proven to lose (o leaves x's three in a row open) gets no more
/// visits once proven, and is not the move played.
#[test]
fn proven_losses_are_passed_by() {
    use propel_runtime::mcts::{Graph, Leaf};
    let g = game("tictactoe.kif");
    let mut m = propnet_machine(&g, propel_compiler::propnet::passes::Pass::ALL);
    let s = play(&mut m, &[["(mark 1 1)", "noop"], ["noop", "(mark 2 2)"], ["(mark 1 2)", "noop"]]);
    let mut graph = Graph::new(&mut m, s, 10_000, 0.7, 3).unwrap();
    let mut path = Vec::new();
    let mut run = |graph: &mut Graph<_>, n: usize| {
        for _ in 0..n {
            match graph.select(&mut m, &mut path).unwrap() {
                Leaf::Known(v) => graph.backprop_known(&path, &v),
                // Rollouts say o loses whatever it plays: only the proofs
                // tell its moves apart.
                Leaf::Rollout(_) => graph.backprop(&path, &[1.0, 0.0]),
                Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
            }
        }
    };
    // Until every move but the block is proven to lose.
    run(&mut graph, 1);
    let mut before = graph.root_stats(1).unwrap();
    for _ in 0..1000 {
        if before.lost.iter().filter(|&&l| l).count() == before.moves.len() - 1 {
            break;
        }
        run(&mut graph, 1);
        before = graph.root_stats(1).unwrap();
    }
    assert_eq!(before.lost.iter().filter(|&&l| l).count(), before.moves.len() - 1, "every move but the block loses");
    run(&mut graph, 20);
    assert!(graph.root_solved().is_none(), "too few iterations to solve the draw");
    let after = graph.root_stats(1).unwrap();
    for i in 0..after.moves.len() {
        if after.lost[i] {
            assert_eq!(after.visits[i], before.visits[i], "a proven loss was visited again");
        }
    }
    let (mv, _, _) = graph.best(1).unwrap();
    assert_eq!(m.move_kif(mv), "(mark 1 3)");
}

/// The prover, with every rollout slowed to `ROLLOUT` (as the prover is on
/// a large game): the search must still stop near its deadline.
#[derive(Clone)]
struct Slow(Prover);

const ROLLOUT: Duration = Duration::from_millis(40);

impl StateMachine for Slow {
    type State = <Prover as StateMachine>::State;
    type Move = <Prover as StateMachine>::Move;
    fn roles(&self) -> &[String] {
        self.0.roles()
    }
    fn initial_state(&mut self) -> Result<Self::State, propel_runtime::MachineError> {
        self.0.initial_state()
    }
    fn is_terminal(&mut self, s: &Self::State) -> Result<bool, propel_runtime::MachineError> {
        self.0.is_terminal(s)
    }
    fn legal_moves(
        &mut self,
        s: &Self::State,
        role: usize,
        out: &mut Vec<Self::Move>,
    ) -> Result<(), propel_runtime::MachineError> {
        self.0.legal_moves(s, role, out)
    }
    fn next_state(
        &mut self,
        s: &Self::State,
        joint: &[Self::Move],
    ) -> Result<Self::State, propel_runtime::MachineError> {
        self.0.next_state(s, joint)
    }
    fn goal_values(
        &mut self,
        s: &Self::State,
        role: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), propel_runtime::MachineError> {
        self.0.goal_values(s, role, out)
    }
    fn state_kif(&mut self, s: &Self::State) -> Vec<String> {
        self.0.state_kif(s)
    }
    fn move_kif(&self, m: Self::Move) -> String {
        self.0.move_kif(m)
    }
}

impl Simulator for Slow {
    fn kind(&self) -> &'static str {
        "slow prover"
    }
    fn rollout(
        &mut self,
        s: &Self::State,
        rng: &mut propel_runtime::Rng,
        goals: &mut [f64],
    ) -> Result<u32, propel_runtime::MachineError> {
        std::thread::sleep(ROLLOUT);
        self.0.rollout(s, rng, goals)
    }
}

#[test]
fn slow_iterations_stop_at_the_deadline() {
    let g = game("connect4.kif");
    let mut m = Slow(Prover::new(g).unwrap());
    let s = m.initial_state().unwrap();
    let mut search = Search::new(m, s, config(1, Mode::Pipeline, 1000)).unwrap();
    let t = Instant::now();
    search.run(t + Duration::from_millis(100)).unwrap();
    // One iteration past the deadline at most (it checked only every 16
    // iterations once, 640 ms here).
    assert!(t.elapsed() < Duration::from_millis(100) + 4 * ROLLOUT, "{:?}", t.elapsed());
}

/// A move known to win at once (the analysis's `winning`) makes its child
/// when a node is expanded: the node with a win one move away is solved
/// by the selection that expands it, before any of its moves is tried.
/// Without the set the first selection tries one of x's five moves.
#[test]
fn winning_moves_solve_a_node_when_it_is_expanded() {
    use propel_runtime::mcts::{Graph, Leaf};
    let mut m = propnet_machine(&game("tictactoe.kif"), propel_compiler::propnet::passes::Pass::ALL);
    let s = play(&mut m, &X_WINS);
    let mut legal = Vec::new();
    m.legal_moves(&s, 0, &mut legal).unwrap();
    let win = *legal.iter().find(|&&l| m.move_kif(l) == "(mark 1 3)").unwrap();
    let win = m.move_index(win).unwrap();
    let solved_at_once = |winning: Option<Arc<[u32]>>, seed: u64, m: &mut _| {
        let mut g = Graph::new(m, s.clone(), 1000, 0.7, seed).unwrap();
        g.set_winning(winning);
        let mut path = Vec::new();
        let leaf = g.select(m, &mut path).unwrap();
        if let Leaf::Known(v) = &leaf {
            g.backprop_known(&path, v);
        }
        g.is_root_solved()
    };
    for seed in 0..12 {
        assert!(solved_at_once(Some(Arc::from([win])), seed, &mut m), "seed {seed}");
    }
    let unsolved = (0..12).filter(|&seed| !solved_at_once(None, seed, &mut m)).count();
    assert!(unsolved > 0, "without the winning moves some first selection tries another move");
    let root = {
        let mut g = Graph::new(&mut m, s.clone(), 1000, 0.7, 1).unwrap();
        g.set_winning(Some(Arc::from([win])));
        g.select(&mut m, &mut Vec::new()).unwrap();
        g.root_solved()
    };
    assert_eq!(root.as_deref(), Some(&[1.0, 0.0][..]), "x wins");
}

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
