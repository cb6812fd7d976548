//! The top-down evaluator (`propel_compiler::topdown`) against the
//! bottom-up prover: in every state of seeded random games, the legal
//! moves, the terminal test and the goals read top-down are the prover's.

use propel_compiler::topdown::{Rules, TopDown};
use propel_compiler::{Game, RelId, TermId};
use propel_runtime::Rng;
use propel_runtime::{Prover, StateMachine};
use propel_tests::{bundled_games, corpus_game};
use std::sync::Arc;

/// Plays `games` random games of `game` on the prover (at most `plies`
/// each) and checks every state's legal moves, terminal test and goals on
/// the evaluator. Returns the states checked.
fn agrees(game: &Arc<Game>, games: u64, plies: usize) -> usize {
    let rules = Arc::new(Rules::new(game, &[]).unwrap());
    let mut td = TopDown::new(rules);
    let mut prover = Prover::new(game.clone()).unwrap();
    let roles = prover.roles().to_vec();
    let role_terms: Vec<TermId> = roles.iter().map(|r| td.term_from_kif(r).unwrap()).collect();
    let mut checked = 0;
    for seed in 0..games {
        let mut rng = Rng::new(seed + 1);
        let mut s = prover.initial_state().unwrap();
        for _ in 0..plies {
            let facts: Vec<TermId> = prover.state_kif(&s).iter().map(|f| td.term_from_kif(f).unwrap()).collect();
            td.set_state(&facts);
            checked += 1;
            let terminal = prover.is_terminal(&s).unwrap();
            assert_eq!(td.holds(RelId::TERMINAL, &[]).unwrap(), terminal, "{}: terminal", game.name);
            let mut joint = Vec::new();
            for (r, &rt) in role_terms.iter().enumerate() {
                let mut moves = Vec::new();
                prover.legal_moves(&s, r, &mut moves).unwrap();
                let mut want: Vec<String> = moves.iter().map(|&m| prover.move_kif(m)).collect();
                want.sort();
                let rows = td.answers(RelId::LEGAL, &[Some(rt), None]).unwrap();
                let mut got: Vec<String> = rows.iter().map(|row| td.pool_mut().to_kif(row[1], &game.symbols)).collect();
                got.sort();
                assert_eq!(got, want, "{}: legal moves of {} in {:?}", game.name, roles[r], prover.state_kif(&s));
                let mut goals = Vec::new();
                prover.goal_values(&s, r, &mut goals).unwrap_or_default();
                let rows = td.answers(RelId::GOAL, &[Some(rt), None]).unwrap();
                let mut got: Vec<u8> =
                    rows.iter().filter_map(|row| td.pool_mut().to_kif(row[1], &game.symbols).parse().ok()).collect();
                got.sort_unstable();
                got.dedup();
                assert_eq!(got, goals, "{}: goals of {}", game.name, roles[r]);
                if !moves.is_empty() {
                    joint.push(moves[rng.below(moves.len())]);
                }
            }
            if terminal || joint.len() < roles.len() {
                break;
            }
            s = prover.next_state(&s, &joint).unwrap();
        }
    }
    checked
}

#[test]
fn the_bundled_games_agree_with_the_prover() {
    for path in bundled_games() {
        let game = Arc::new(propel_compiler::load_file(&path).unwrap());
        let n = agrees(&game, 4, 200);
        assert!(n > 10, "{}: {n} states", game.name);
    }
}

/// Rules written for a top-down prover: chess's threat tests, with their
/// squares to ignore.
#[test]
fn chess_as_written_agrees_with_the_prover() {
    let Some(game) = corpus_game("base/chess.kif") else { return };
    agrees(&game, 2, 40);
}

/// Recursion that meets itself: reachability over a graph with cycles,
/// asked with the first argument bound and free.
#[test]
fn recursion_through_cycles_reaches_its_fixpoint() {
    let text = "
        (role r) (init (at a))
        (edge a b) (edge b c) (edge c a) (edge c d) (edge e f)
        (<= (reach ?x ?y) (edge ?x ?y))
        (<= (reach ?x ?z) (reach ?x ?y) (edge ?y ?z))
        (<= (near ?x ?y) (reach ?x ?y) (reach ?y ?x))
        (<= (legal r (go ?y)) (true (at ?x)) (reach ?x ?y) (not (near ?x ?y)))
        (<= (legal r stay) (true (at ?x)) (near ?x ?x))
        (<= (next (at ?y)) (does r (go ?y)))
        (<= (next (at ?x)) (does r stay) (true (at ?x)))
        (<= terminal (true (at d)))
        (goal r 100)";
    let game = Arc::new(propel_compiler::validate::load("reach.kif", text).unwrap());
    assert!(agrees(&game, 20, 30) > 20);
}

/// The machine on the evaluator (`--machine topdown`), moves included:
/// the same perft and seeded traces as the prover on every bundled game.
#[test]
fn the_top_down_machine_plays_the_bundled_games_as_the_prover_does() {
    use propel_runtime::perft::perft;
    use propel_runtime::topdown::TopDownMachine;
    use propel_runtime::trace::trace;
    for path in bundled_games() {
        let game = Arc::new(propel_compiler::load_file(&path).unwrap());
        let mut prover = Prover::new(game.clone()).unwrap();
        let mut m = TopDownMachine::new(game.clone()).unwrap();
        let (a, b) = (perft(&mut prover, 2, &mut |_| {}).unwrap(), perft(&mut m, 2, &mut |_| {}).unwrap());
        assert_eq!(a.lines, b.lines, "{}", game.name);
        for seed in 1..=3 {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            trace(&mut prover, seed, 300, &mut |s| x.push(s.clone())).unwrap();
            trace(&mut m, seed, 300, &mut |s| y.push(s.clone())).unwrap();
            assert_eq!(x, y, "{} seed {seed}", game.name);
        }
    }
}

/// A rule longer than the evaluator's mask of literals (64) runs as a
/// chain of parts, its negations after the literals that bind them.
#[test]
fn a_rule_of_seventy_literals_is_evaluated_in_parts() {
    let tests: String = (1..=68).map(|i| format!(" (not (true (off {i})))")).collect();
    let text = format!(
        "(role r) (init (at 1)) (n 1) (n 2) (n 3)
         (<= (legal r (go ?y)) (true (at ?x)) (n ?y) (distinct ?x ?y){tests})
         (<= (next (at ?y)) (does r (go ?y)))
         (<= (next (off ?y)) (does r (go ?y)) (true (at 3)))
         (<= terminal (true (off 2)))
         (goal r 100)"
    );
    let game = Arc::new(propel_compiler::validate::load("long.kif", text).unwrap());
    assert!(game.clauses.iter().any(|c| c.body.len() > 64));
    assert!(agrees(&game, 10, 30) > 20);
}

/// Recursion 5,000 calls deep (a counter written for a top-down prover),
/// asked on a thread with a 2 MiB stack: about 1,300 calls fit there, the
/// evaluator grows its stack on the heap instead of overflowing.
#[test]
fn deep_recursion_grows_the_stack_instead_of_overflowing() {
    let n = 5000;
    let succ: String = (0..n).map(|i| format!(" (succ {i} {})", i + 1)).collect();
    let text = format!(
        "(role r) (init (at 0)){succ}
         (<= (less ?x ?y) (succ ?x ?y))
         (<= (less ?x ?z) (succ ?x ?y) (less ?y ?z))
         (<= (legal r (go ?y)) (true (at ?x)) (less ?x {n}) (succ ?x ?y))
         (<= (next (at ?y)) (does r (go ?y)))
         (<= terminal (true (at 3)))
         (goal r 100)"
    );
    let game = Arc::new(propel_compiler::validate::load("deep.kif", text).unwrap());
    let moves = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            use propel_runtime::topdown::TopDownMachine;
            let mut m = TopDownMachine::new(game).unwrap();
            let s = m.initial_state().unwrap();
            let mut v = Vec::new();
            m.legal_moves(&s, 0, &mut v).unwrap();
            v.into_iter().map(|mv| m.move_kif(mv)).collect::<Vec<_>>()
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(moves, ["(go 1)"]);
}
