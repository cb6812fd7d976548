//! Games whose goal or terminal logic is over the grounding budget are
//! built without it, and the machines answer those outputs from the rules
//! (`propel_compiler::lookup`, `propel_runtime::lookup`); rules over the
//! budget elsewhere are asked of the state as questions
//! (`propel_compiler::queries`). Either way the machines must agree with
//! the prover exactly.

use propel_compiler::lookup::Lookups;
use propel_runtime::build::{prepare, BuildOptions};
use propel_runtime::perft::perft;
use propel_runtime::trace::{trace, TraceStep};
use propel_runtime::{Prover, StateMachine};
use propel_tests::test_build_options;
use std::sync::Arc;

/// Two players fill four cells with digits; the first wins when all four
/// differ. `alldiff` is written as a top-down prover would call it (all
/// arguments bound): bottom up it is every permutation of four digits.
/// `TERMINAL` is replaced by an extra terminal rule (or nothing).
const GAME: &str = "
    (role x) (role o) (init (control x))
    (digit 1) (digit 2) (digit 3) (digit 4) (digit 5) (digit 6) (digit 7)
    (cell 1) (cell 2) (cell 3) (cell 4)
    (<= (filled ?c) (true (at ?c ?d)))
    (<= (legal ?r (put ?c ?d)) (true (control ?r)) (cell ?c) (digit ?d) (not (filled ?c)))
    (<= (legal x noop) (true (control o)))
    (<= (legal o noop) (true (control x)))
    (<= (next (at ?c ?d)) (does ?r (put ?c ?d)))
    (<= (next (at ?c ?d)) (true (at ?c ?d)))
    (<= (next (control o)) (true (control x)))
    (<= (next (control x)) (true (control o)))
    (<= (alldiff ?a ?b ?c ?d) (digit ?a) (digit ?b) (digit ?c) (digit ?d)
        (distinct ?a ?b) (distinct ?a ?c) (distinct ?a ?d) (distinct ?b ?c) (distinct ?b ?d) (distinct ?c ?d))
    (<= diverse (true (at 1 ?a)) (true (at 2 ?b)) (true (at 3 ?c)) (true (at 4 ?d)) (alldiff ?a ?b ?c ?d))
    (<= full (filled 1) (filled 2) (filled 3) (filled 4))
    (<= terminal full)
    TERMINAL
    (<= (goal x 100) diverse) (<= (goal x 0) (not diverse))
    (<= (goal o 0) diverse) (<= (goal o 100) (not diverse))";

/// A budget the rules as written exceed in `alldiff` (840 rows, more with
/// the demand for it) but legal moves and next states fit in.
fn options(lookups: bool) -> BuildOptions {
    let mut o = BuildOptions { lookups, ..test_build_options() };
    o.limits.max_atoms = 400;
    o
}

fn game(terminal: &str) -> Arc<propel_compiler::Game> {
    Arc::new(propel_compiler::validate::load("lookups.kif", GAME.replace("TERMINAL", terminal)).unwrap())
}

fn record<M: StateMachine>(m: &mut M, seed: u64) -> Vec<TraceStep> {
    let mut v = Vec::new();
    trace(m, seed, 50, &mut |s| v.push(s.clone())).unwrap();
    v
}

/// Perft to depth 3 and ten seeded traces of `m` against the prover's.
/// With the terminal test left to lookups, games end early at depth 3.
fn agrees<M: StateMachine>(m: &mut M, prover: &mut Prover, early_ends: bool) {
    let (a, b) = (perft(prover, 3, &mut |_| {}).unwrap(), perft(m, 3, &mut |_| {}).unwrap());
    assert_eq!(a.lines, b.lines);
    assert!(a.lines[3].nodes > 5_000 && (a.lines[3].terminal > 0) == early_ends, "{:?}", a.lines);
    for seed in 1..=10 {
        assert_eq!(record(prover, seed), record(m, seed), "trace seed {seed}");
    }
}

fn check(terminal: &str, expected: Lookups) {
    let g = game(terminal);
    let e = prepare(&g, &options(false)).err().expect("over the budget as written");
    assert!(e.to_string().contains("alldiff"), "{e}");
    let p = prepare(&g, &options(true)).unwrap();
    assert_eq!(p.lookups(), expected);
    let mut prover = Prover::new(g.clone()).unwrap();
    agrees(&mut p.lookup_machine(prover.clone()).unwrap(), &mut prover, expected.terminal);
    let (jit, _) = p.jit(&g.name).unwrap();
    agrees(&mut p.with_lookups(jit, prover.clone()).unwrap(), &mut prover, expected.terminal);
    // Whole games end, and end as the prover says.
    let mut m = p.lookup_machine(prover.clone()).unwrap();
    let s = m.initial_state().unwrap();
    let mut rng = propel_runtime::Rng::new(3);
    let mut goals = vec![0.0; 2];
    let n = propel_runtime::simulate::Simulator::rollout(&mut m, &s, &mut rng, &mut goals).unwrap();
    assert!((1..=8).contains(&n), "{n}");
    assert_eq!(goals[0] + goals[1], 100.0);
}

#[test]
fn a_goal_over_the_budget_is_answered_by_the_rules() {
    check("", Lookups { goal: true, ..Default::default() });
}

#[test]
fn a_terminal_test_over_the_budget_is_answered_by_the_rules() {
    // Three different digits in the first three cells end the game too.
    let terminal = "(<= terminal (true (at 1 ?a)) (true (at 2 ?b)) (true (at 3 ?c)) (digit ?d) (alldiff ?a ?b ?c ?d))";
    check(terminal, Lookups { goal: true, terminal: true, ..Default::default() });
}

/// The same helper in `legal`: no lookup of a whole output can stand in
/// for it, but the rule's test, with its parameters bound, can be asked of
/// each state as a question (`propel_compiler::queries`): the network
/// keeps the rest of the rule as its guard.
#[test]
fn legal_moves_over_the_budget_ask_a_question_of_the_state() {
    let g = Arc::new(
        propel_compiler::validate::load(
            "lookups.kif",
            GAME.replace("TERMINAL", "").replace("(not (filled ?c)))", "(not (filled ?c)) (alldiff ?d ?e ?f ?g))"),
        )
        .unwrap(),
    );
    let e = prepare(&g, &options(false)).err().expect("over the budget as written");
    assert!(e.to_string().contains("alldiff"), "{e}");
    let p = prepare(&g, &options(true)).unwrap();
    assert!(p.lookups().questions && !p.lookups().goal, "{:?}", p.lookups());
    assert!(!p.net().queries.is_empty());
    let mut prover = Prover::new(g.clone()).unwrap();
    agrees(&mut p.lookup_machine(prover.clone()).unwrap(), &mut prover, false);
    // Native code does not answer questions, and says so.
    let Err(e) = p.jit(&g.name) else { panic!("native code for a network with questions") };
    assert!(e.to_string().contains("questions"), "{e}");
}

/// A question in a `next` rule, whose guard reads the move: x scores a
/// point for a digit that completes four different ones. Answers are asked
/// again once the move is set.
#[test]
fn a_question_whose_guard_reads_the_move_is_answered_after_the_move() {
    let scoring = "(<= (next (score ?d)) (does x (put 4 ?d)) (true (at 1 ?a)) (true (at 2 ?b)) (true (at 3 ?c)) (alldiff ?a ?b ?c ?d))
        (<= (next (score ?d)) (true (score ?d)))";
    let g = Arc::new(
        propel_compiler::validate::load(
            "lookups.kif",
            GAME.replace("TERMINAL", scoring).replace("(<= diverse (true (at 1 ?a)) (true (at 2 ?b)) (true (at 3 ?c)) (true (at 4 ?d)) (alldiff ?a ?b ?c ?d))", "(<= diverse (true (score ?d)))"),
        )
        .unwrap(),
    );
    assert!(prepare(&g, &options(false)).is_err(), "over the budget as written");
    let p = prepare(&g, &options(true)).unwrap();
    assert!(p.lookups().questions, "{:?}", p.lookups());
    let mut prover = Prover::new(g.clone()).unwrap();
    agrees(&mut p.lookup_machine(prover.clone()).unwrap(), &mut prover, false);
}

/// Chess as written (base/chess): over every grounding budget, it builds
/// with `threatened_with_capture` asked as a question, and agrees with the
/// prover on perft to depth 2 and on seeded traces.
#[test]
fn chess_as_written_builds_with_questions_and_agrees_with_the_prover() {
    let Some(g) = propel_tests::corpus_game("base/chess.kif") else { return };
    let p = prepare(&g, &BuildOptions { lookups: true, ..test_build_options() }).unwrap();
    assert!(p.lookups().questions && !p.lookups().goal && !p.lookups().terminal, "{:?}", p.lookups());
    assert_eq!(p.asked(), ["threatened_with_capture"]);
    let mut m = p.lookup_machine(Prover::new(g.clone()).unwrap()).unwrap();
    let mut prover = Prover::new(g.clone()).unwrap();
    let (a, b) = (perft(&mut prover, 2, &mut |_| {}).unwrap(), perft(&mut m, 2, &mut |_| {}).unwrap());
    assert_eq!(a.lines, b.lines);
    assert_eq!(a.lines[2].nodes, 400);
    for seed in 1..=2 {
        let mut want = Vec::new();
        trace(&mut prover, seed, 60, &mut |s| want.push(s.clone())).unwrap();
        let mut got = Vec::new();
        trace(&mut m, seed, 60, &mut |s| got.push(s.clone())).unwrap();
        assert_eq!(want, got, "trace seed {seed}");
    }
}
