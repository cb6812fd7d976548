use super::*;
use crate::rng::Rng;

fn tictactoe() -> Prover {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../games/tictactoe.kif");
    Prover::new(Arc::new(propel_compiler::load_file(&path).expect("bundled game"))).expect("prover")
}

/// A fill-the-grid game on 50x50 cells: `terminal` when no cell is
/// empty, asked through a proposition.
fn grid() -> Prover {
    let index: String = (1..=50).map(|i| format!("(index {i}) ")).collect();
    let text = format!(
        "(role p) {index} (init (filled 1 1))
         (<= (empty ?x ?y) (index ?x) (index ?y) (not (true (filled ?x ?y))))
         (<= (legal p (fill ?x ?y)) (empty ?x ?y))
         (<= (next (filled ?x ?y)) (does p (fill ?x ?y)))
         (<= (next (filled ?x ?y)) (true (filled ?x ?y)))
         (<= open (empty ?x ?y))
         (<= terminal (not open))
         (<= (goal p 100) (true (filled 50 50)))
         (<= (goal p 0) (not (true (filled 50 50))))"
    );
    Prover::new(Arc::new(propel_compiler::load("grid.kif", text).expect("valid"))).expect("prover")
}

#[test]
fn an_existence_question_stops_at_the_first_answer() {
    let mut p = grid();
    let s0 = p.initial_state().expect("initial state");
    let mut moves = Vec::new();
    p.legal_moves(&s0, 0, &mut moves).expect("legal");
    assert_eq!(moves.len(), 2499);
    let s1 = p.next_state(&s0, &[moves[0]]).expect("next");
    let before = p.budget.steps.done;
    assert!(!p.is_terminal(&s1).expect("terminal"));
    // `open` is unfolded into `(index ?x) (index ?y) (not (true ...))`
    // and stops at the first empty cell: not 2,500 cells looked at.
    let steps = p.budget.steps.done - before;
    assert!(steps < 100, "{steps} join steps for `terminal`");
    p.legal_moves(&s1, 0, &mut moves).expect("legal");
    assert_eq!(moves.len(), 2498);
}

/// A token on a ring of 100 cells; `free` (every cell and direction
/// not blocked: 1,000 rows a state) is asked only for the token's cell.
const FREE: &str = "(role p) (init (at 0)) (init (blocked 5))
    (<= (free ?x ?d) (cell ?x) (dir ?d) (not (true (blocked ?x))))
    (<= (free ?x ?d) (true (at ?x)) (wall ?d))
    (<= (legal p (go ?d)) (true (at ?x)) (dir ?d) (free ?x ?d))
    (<= (next (at ?y)) (true (at ?x)) (does p (go ?d)) (step ?x ?d ?y))
    (<= (next (blocked ?x)) (true (blocked ?x)))
    (<= (next (blocked ?x)) (true (at ?x)))
    (<= terminal (true (at 99)))
    (goal p 100)";

#[test]
fn a_relation_derived_in_full_for_a_few_lookups_is_unfolded_into_its_callers() {
    let cells: String = (0..100).map(|i| format!("(cell {i}) ")).collect();
    let dirs: String = (0..10).map(|d| format!("(dir {d}) ")).collect();
    let steps: String =
        (0..100).flat_map(|x| (0..10).map(move |d| format!("(step {x} {d} {}) ", (x + d + 1) % 100))).collect();
    let text = format!("{FREE} {cells} {dirs} {steps} (wall 0)");
    let game = Arc::new(propel_compiler::load("free.kif", text).expect("valid"));
    let free = game.relation_by_name("free").expect("free");
    let mut unfolded = Prover::new(game.clone()).expect("prover");
    let legal_calls_free = unfolded.game.clauses.iter().any(|c| {
        c.head.rel == RelId::LEGAL && c.body.iter().any(|l| matches!(l, propel_compiler::Lit::Pos(a) if a.rel == free))
    });
    assert!(!legal_calls_free, "`free` was not unfolded into `legal`");
    // The same tree as the rules as written (no sample game: built as is).
    let mut written = Prover::with_work_limit(game, MAX_FACTS_PER_STATE, u64::MAX, Deadline::none()).expect("prover");
    let a = crate::perft::perft(&mut unfolded, 4, &mut |_| {}).expect("perft");
    let b = crate::perft::perft(&mut written, 4, &mut |_| {}).expect("perft");
    assert_eq!(a.lines, b.lines);
    assert!(a.lines[4].nodes > 1000, "{:?}", a.lines);
}

#[test]
fn a_demand_relation_is_joined_on_its_arguments() {
    // `dist` computed on demand from node 0 along a line of 300 open
    // nodes: the rewritten recursive rule reads new `dist` rows first;
    // joined there on no argument, the demand relation (300 rows) was
    // scanned for every new row: 13.7M join steps to build the prover,
    // 228k when it waits for `link` to bind its argument.
    let n = 300;
    let nodes: String = (0..n).map(|i| format!("(node {i}) (init (open {i})) ")).collect();
    let links: String = (1..n).map(|i| format!("(link {} {i}) (succ {} {i}) ", i - 1, i - 1)).collect();
    let text = format!(
        "(role p) {nodes} {links}
         (<= (dist ?x ?x 0) (node ?x))
         (<= (dist ?x ?z ?n) (link ?x ?y) (true (open ?y)) (dist ?y ?z ?m) (succ ?m ?n))
         (<= (legal p (go ?z)) (dist 0 ?z ?n))
         (<= (next (open ?x)) (true (open ?x)) (not (does p (go ?x))))
         (<= terminal (not (true (open 1))))
         (goal p 100)"
    );
    let game = propel_compiler::load("line.kif", text).expect("valid");
    let dist = game.relation_by_name("dist").expect("dist");
    let rw = propel_compiler::magic::demand_transform(&game, &[dist]).expect("rewritten");
    let mut p = Prover::new(Arc::new(rw.game)).expect("prover");
    let s0 = p.initial_state().expect("initial state");
    let mut moves = Vec::new();
    p.legal_moves(&s0, 0, &mut moves).expect("legal");
    assert_eq!(moves.len(), n);
    assert!(p.build_steps() < 1_000_000, "{} join steps", p.build_steps());
}

#[test]
fn kif_reads_back_states_and_moves() {
    let mut p = tictactoe();
    let mut rng = Rng::new(3);
    let mut s = p.initial_state().expect("initial state");
    let mut moves = Vec::new();
    while !p.is_terminal(&s).expect("terminal") {
        let facts = p.state_kif(&s);
        assert_eq!(p.state_from_kif(&facts).expect("facts read back"), s);
        let mut joint = Vec::new();
        for r in 0..2 {
            p.legal_moves(&s, r, &mut moves).expect("legal");
            let m = moves[rng.below(moves.len())];
            assert_eq!(p.term_from_kif(&p.move_kif(m)).expect("move read back"), m);
            joint.push(m);
        }
        s = p.next_state(&s, &joint).expect("next");
    }
    assert_eq!(p.term_from_kif("( MARK 1\t1 )").ok(), p.term_from_kif("(mark 1 1)").ok());
}

#[test]
fn kif_errors() {
    let mut p = tictactoe();
    for bad in ["(mark 1 1", "mark 1", "(mark 1 1))", "(zork 1)", "()", "((mark) 1)", ""] {
        assert!(p.term_from_kif(bad).is_err(), "{bad:?} read as a term");
    }
}
