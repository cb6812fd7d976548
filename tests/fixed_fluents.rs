//! Fluents that only their frame rule keeps are read as static relations
//! while grounding (compiler/src/fixed.rs). The network built that way must
//! play the game exactly as the prover does on the rules as written.

use propel_runtime::perft::perft;
use propel_runtime::Prover;
use propel_tests::{assert_traces_agree, corpus_game, propnet_machine};
use std::sync::Arc;

/// A walker on a 4x4 board whose walls (the edges and two inner ones) are
/// kept in the state; `succ` runs on to 12 for the step counter, so that
/// grounding the rules as written lets the walker leave the board.
const WALLED: &str = "(role walker)
    (init (at 1 1)) (init (step 0))
    (init (wall 0 1 east)) (init (wall 0 2 east)) (init (wall 0 3 east)) (init (wall 0 4 east))
    (init (wall 4 1 east)) (init (wall 4 2 east)) (init (wall 4 3 east)) (init (wall 4 4 east))
    (init (wall 1 0 north)) (init (wall 2 0 north)) (init (wall 3 0 north)) (init (wall 4 0 north))
    (init (wall 1 4 north)) (init (wall 2 4 north)) (init (wall 3 4 north)) (init (wall 4 4 north))
    (init (wall 2 2 east)) (init (wall 3 1 north))
    (succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6) (succ 6 7) (succ 7 8)
    (succ 8 9) (succ 9 10) (succ 10 11) (succ 11 12)
    (dir north) (dir south) (dir east) (dir west)
    (<= (to ?x ?y north ?x ?y2) (true (at ?x ?y)) (succ ?y ?y2) (not (true (wall ?x ?y north))))
    (<= (to ?x ?y south ?x ?y2) (true (at ?x ?y)) (succ ?y2 ?y) (not (true (wall ?x ?y2 north))))
    (<= (to ?x ?y east ?x2 ?y) (true (at ?x ?y)) (succ ?x ?x2) (not (true (wall ?x ?y east))))
    (<= (to ?x ?y west ?x2 ?y) (true (at ?x ?y)) (succ ?x2 ?x) (not (true (wall ?x2 ?y east))))
    (<= (legal walker (go ?d)) (to ?x ?y ?d ?x2 ?y2))
    (<= (legal walker stay) (true (at ?x ?y)))
    (<= (next (at ?x2 ?y2)) (does walker (go ?d)) (to ?x ?y ?d ?x2 ?y2))
    (<= (next (at ?x ?y)) (does walker stay) (true (at ?x ?y)))
    (<= (next (wall ?x ?y ?d)) (true (wall ?x ?y ?d)))
    (<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
    (<= terminal (true (step 8)))
    (<= terminal (true (at 4 4)))
    (<= (goal walker 100) (true (at 4 4)))
    (<= (goal walker 0) (not (true (at 4 4))))";

fn agree(game: &Arc<propel_compiler::Game>, depth: usize) {
    let mut net = propnet_machine(game, propel_compiler::propnet::passes::Pass::DEFAULT);
    let mut prover = Prover::new(game.clone()).unwrap_or_else(|e| panic!("{e}"));
    let a = perft(&mut prover, depth, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let b = perft(&mut net, depth, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", a.lines), format!("{:?}", b.lines), "{}: perft", game.name);
    assert_traces_agree(&mut prover, &mut net, &[1, 2, 3], &game.name);
}

#[test]
fn a_maze_with_walls_in_the_state_agrees_with_the_prover() {
    let game = Arc::new(propel_compiler::load("walled.kif", WALLED).unwrap_or_else(|e| panic!("{e}")));
    assert!(propel_compiler::fixed::read_fixed_fluents(&game).is_some(), "the walls are fixed");
    agree(&game, 6);
}

#[test]
fn mummymaze_modified_builds_and_agrees_with_the_prover() {
    // Over the grounding budget (5M facts in 60 s) before its walls were
    // read from the initial state.
    let Some(game) = corpus_game("soar-ggp/mummymaze-modified.kif") else { return };
    agree(&game, 3);
}
