//! The search engines on positions with known answers: an immediate win is
//! found and the position solved, tic-tac-toe is solved to a draw, the node
//! pool stays within its bound, and every mode answers a legal move.

mod heuristics;
mod lanes;

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

fn jit(g: &Arc<propel_compiler::Game>) -> propel_runtime::NativeMachine {
    propel_runtime::build::jit_machine(g, &Default::default()).unwrap().machine
}

fn hybrid(g: &Arc<propel_compiler::Game>) -> propel_runtime::Hybrid {
    let p = propel_runtime::build::prepare(g, &Default::default()).unwrap();
    let (native, _) = p.jit(&g.name).unwrap();
    propel_runtime::Hybrid::new(p.propnet(), native)
}

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
