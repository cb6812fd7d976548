use super::exchange_value;

use super::{Graph, Leaf};
use crate::machine::StateMachine;
use crate::propnet::PropnetMachine;

/// The bundled tic-tac-toe after these turns (one move per role).
fn tictactoe(turns: &[[&str; 2]]) -> (PropnetMachine, crate::propnet::NetState) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../games/tictactoe.kif");
    let game = std::sync::Arc::new(propel_compiler::load_file(&root).expect("tictactoe"));
    let mut m = crate::build::prepare(&game, &crate::build::BuildOptions::default()).expect("built").propnet();
    let mut s = m.initial_state().unwrap();
    let mut legal = Vec::new();
    for turn in turns {
        let mut joint = Vec::new();
        for (r, want) in turn.iter().enumerate() {
            m.legal_moves(&s, r, &mut legal).unwrap();
            joint.push(*legal.iter().find(|&&l| m.move_kif(l) == *want).unwrap());
        }
        s = m.next_state(&s, &joint).unwrap();
    }
    (m, s)
}

/// Eager iterations (terminal children made on expansion, rollouts
/// valued as draws) until the root is solved.
fn solve_root(m: &mut PropnetMachine, graph: &mut Graph<PropnetMachine>) {
    graph.set_expand_terminal(true);
    let mut path = Vec::new();
    for _ in 0..10_000 {
        match graph.select(m, &mut path).unwrap() {
            Leaf::Known(v) => graph.backprop_known(&path, &v),
            Leaf::Rollout(_) => graph.backprop(&path, &[0.5, 0.5]),
            Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
        }
        if graph.is_root_solved() {
            return;
        }
    }
    panic!("not solved in 10,000 iterations");
}

/// A root solved from a terminal child keeps its winning move after a
/// full pool recycles that child (which nothing visits again).
#[test]
fn a_solved_root_keeps_its_move_when_the_proof_is_recycled() {
    // x has (1 1) and (1 2), o (2 1) and (2 2): x wins with (1 3).
    let (mut m, s) =
        tictactoe(&[["(mark 1 1)", "noop"], ["noop", "(mark 2 1)"], ["(mark 1 2)", "noop"], ["noop", "(mark 2 2)"]]);
    let mut graph = Graph::new(&mut m, s, 100, 0.7, 3).unwrap();
    solve_root(&mut m, &mut graph);
    assert_eq!(graph.root_solved().as_deref(), Some(&[1.0, 0.0][..]));
    let n = graph.get(graph.root).unwrap();
    let win = n.role(0)[n.proof as usize].child;
    assert!(graph.get(win).is_some_and(|c| c.terminal));
    // The other moves searched more before the win was found (as in a
    // real search), so the most visited move is not the win.
    let (proof, r) = (n.proof as usize, graph.root.idx as usize);
    for i in 0..graph.nodes[r].moves(0) {
        if i != proof {
            graph.nodes[r].edge_mut(0, i).unwrap().visits = 10;
        }
    }
    // Every node but the root recycled, as a full pool would.
    for i in 0..graph.nodes.len() as u32 {
        if i != graph.root.idx {
            graph.kill(i);
        }
    }
    assert!(graph.get(win).is_none());
    let (mv, value, _) = graph.best(0).unwrap();
    assert_eq!(m.move_kif(mv), "(mark 1 3)");
    assert_eq!(value, 1.0);
}

/// Where every move loses against best play (a proven loss), the root
/// plays the move the search visited most, not the first legal one.
#[test]
fn a_proven_loss_plays_the_most_visited_move() {
    // x has (1 1), (1 2) and (2 2), o (3 1) and (1 3): o to move cannot
    // stop both (3 2) and (3 3).
    let (mut m, s) = tictactoe(&[
        ["(mark 1 1)", "noop"],
        ["noop", "(mark 3 1)"],
        ["(mark 1 2)", "noop"],
        ["noop", "(mark 1 3)"],
        ["(mark 2 2)", "noop"],
    ]);
    let mut graph = Graph::new(&mut m, s, 1000, 0.7, 3).unwrap();
    solve_root(&mut m, &mut graph);
    assert_eq!(graph.root_solved().as_deref(), Some(&[1.0, 0.0][..]));
    let r = graph.root.idx as usize;
    let moves = graph.nodes[r].moves(1);
    assert!(moves > 1);
    for i in 0..moves {
        graph.nodes[r].edge_mut(1, i).unwrap().visits = if i == moves - 1 { 50 } else { 10 };
    }
    let (mv, value, visits) = graph.best(1).unwrap();
    assert_eq!((value, visits), (0.0, 50));
    assert_eq!(mv, graph.nodes[r].role(1)[moves - 1].mv);
    // The other role's one move carries the proven win.
    assert_eq!(graph.best(0).unwrap().1, 1.0);
}

/// Iterations from the bundled tic-tac-toe's initial state, every
/// rollout valued as a draw.
fn searched(iterations: usize) -> (PropnetMachine, Graph<PropnetMachine>) {
    let (mut m, s) = tictactoe(&[]);
    let mut graph = Graph::new(&mut m, s, 10_000, 0.7, 3).unwrap();
    graph.set_settle(true);
    let mut path = Vec::new();
    for _ in 0..iterations {
        match graph.select(&mut m, &mut path).unwrap() {
            Leaf::Known(v) => graph.backprop_known(&path, &v),
            Leaf::Rollout(_) => graph.backprop(&path, &[0.5, 0.5]),
            Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
        }
    }
    (m, graph)
}

/// With settled children passed by, a move whose child is solved is
/// not selected while another is open, and is once every other move is
/// a proven loss; at the root, the best solved child is played where
/// it is worth more than the most visited move's mean.
#[test]
fn settled_moves_wait_while_a_move_is_open() {
    let (_, mut graph) = searched(300);
    let r = graph.root;
    let k = graph.nodes[r.idx as usize].moves(0);
    assert_eq!(k, 9);
    let most = (0..k).max_by_key(|&i| graph.nodes[r.idx as usize].role(0)[i].visits).unwrap();
    // The best mean by far: off, UCB takes it at once.
    let e = graph.nodes[r.idx as usize].edge_mut(0, most).unwrap();
    (e.settled, e.sum) = (true, e.visits as f64);
    for _ in 0..200 {
        assert_ne!(graph.ucb(r, 0) as usize, most);
    }
    for i in (0..k).filter(|&i| i != most) {
        graph.nodes[r.idx as usize].edge_mut(0, i).unwrap().lost = true;
    }
    assert_eq!(graph.ucb(r, 0) as usize, most);
    // Off, the settled move is an ordinary one.
    graph.set_settle(false);
    for i in 0..k {
        graph.nodes[r.idx as usize].edge_mut(0, i).unwrap().lost = false;
    }
    assert_eq!(graph.ucb(r, 0) as usize, most);
    // The best solved child is played over a most visited move worth less.
    graph.set_settle(true);
    let e = graph.nodes[r.idx as usize].edge_mut(0, most).unwrap();
    e.sum = 0.5 * e.visits as f64;
    let other = (most + 1) % k;
    graph.nodes[r.idx as usize].floor = (0.9, other as u16);
    let (mv, value, _) = graph.best(0).unwrap();
    assert_eq!((mv, value), (graph.nodes[r.idx as usize].role(0)[other].mv, 0.9));
    graph.nodes[r.idx as usize].floor = (0.1, other as u16);
    assert_eq!(graph.best(0).unwrap().0, graph.nodes[r.idx as usize].role(0)[most].mv);
}

/// A value backed up through a node whose chooser has secured more
/// (its best solved child) reaches the node above lifted to that.
#[test]
fn values_are_lifted_to_what_the_chooser_has_secured() {
    let (mut m, mut graph) = searched(300);
    let mut path = Vec::new();
    let leaf = graph.select(&mut m, &mut path).unwrap();
    assert!(matches!(leaf, Leaf::Rollout(_)));
    assert!(path.len() >= 2, "the search is two plies deep");
    // o chooses at the second node; say it has a draw secured there.
    let below = path[1].node;
    graph.nodes[below.idx as usize].floor = (0.5, 0);
    let root_edge = |g: &Graph<PropnetMachine>| {
        let n = g.get(g.root).unwrap();
        n.role(0)[path[0].moves[0] as usize].sum
    };
    let before = root_edge(&graph);
    // x wins the rollout: o's 0 is lifted to its draw on the way up.
    graph.backprop(&path, &[1.0, 0.0]);
    assert!((root_edge(&graph) - before - 0.5).abs() < 1e-9);
    // Off, the value goes up as it is.
    graph.set_settle(false);
    let before = root_edge(&graph);
    graph.backprop(&path, &[1.0, 0.0]);
    assert!((root_edge(&graph) - before - 1.0).abs() < 1e-9);
}

#[test]
fn an_exchange_is_valued_where_it_ends() {
    let nan = (f32::NAN, f32::NAN);
    let even = (0.0, 32.0);
    // White (role 0) takes a pawn: 16 against 15.
    let up = (1.0 / 31.0, 31.0);
    // ... and black takes one back: 15 against 15.
    let back = (0.0, 30.0);
    // The node after the capture does not end it; the one after the
    // quiet reply does, in white's favour (the logistic of a quarter
    // of the material times the share won: about 0.56).
    let path = [even, even, up, up, up];
    assert_eq!(exchange_value(&path, 2), None);
    let h = exchange_value(&path, 3).expect("the exchange ends at node 3");
    assert!((h - 1.0 / (1.0 + (-(31.0 / 4.0) / 31.0f64).exp())).abs() < 1e-6, "{h}");
    assert_eq!(exchange_value(&path, 4), None, "node 4 ends no exchange");
    // Taken and taken back: the exchange ends even, and moves nothing.
    assert_eq!(exchange_value(&[even, up, back, back], 3), None);
    // Black takes one more: measured against the node before the
    // whole exchange, black is a pawn up.
    let down = (-1.0 / 29.0, 29.0);
    let h = exchange_value(&[even, up, back, down, down], 4).expect("the exchange ends at node 4");
    assert!(h < 0.5, "{h}");
    // Unknown material (a recycled node) ends nothing; nor does an
    // exchange without a quiet move after it.
    assert_eq!(exchange_value(&[even, nan, up, up], 3), None);
    assert_eq!(exchange_value(&[even, up, back], 2), None);
    assert_eq!(exchange_value(&[even], 0), None);
}

#[test]
fn rave_ranks_untried_moves_by_their_samples() {
    use super::select::{rave_shift, rave_untried};
    use super::UNTRIED;
    // No samples: above everything, as without RAVE.
    assert_eq!(rave_untried(0, 0.0), UNTRIED);
    // Few samples still put an untried move first ...
    assert!(rave_untried(1, 0.0) > 5.0);
    // ... many rank it by them: a move whose rollouts won goes before
    // a tried move (4 visits, mean 0.6, exploration 0.7 sqrt(ln 50) /
    // 2), and one whose rollouts lost waits behind it.
    let good = rave_untried(40, 36.0);
    let bad = rave_untried(40, 4.0);
    let tried = 0.6 + 0.7 * 50f64.ln().sqrt() / 2.0;
    assert!(good > tried && tried > bad, "{good} {tried} {bad}");
    // A tried move: many samples at its own mean leave its mean alone
    // and cut its exploration towards a seventh; none change nothing.
    let shift = rave_shift(10.0, 0.5, 0.3, 1000.0, 0.5, 0.05);
    assert!(shift < 0.0 && shift > -0.3 * 6.0 / 7.0, "{shift}");
    assert_eq!(rave_shift(10.0, 0.5, 0.3, 0.0, 0.0, 0.05), 0.0);
    // Samples that won lift a move that lost.
    assert!(rave_shift(3.0, 0.0, 0.3, 100.0, 0.9, 0.05) > 0.3);
}

#[test]
fn ln_is_close_to_the_library() {
    for x in (1..100_000u32).chain([1 << 20, 123_456_789, u32::MAX]) {
        let x = x as f64;
        assert!((super::ln(x) - x.ln()).abs() < 1e-7, "{x}: {} vs {}", super::ln(x), x.ln());
    }
}
