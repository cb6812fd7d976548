//! Recursion grounds to cycles in the propnet, and a cycle must not keep
//! itself true once its outside support is gone (least fixed point).
//! In games/firewall.kif, walls form a cycle linked to the left edge by
//! one wall; bombing that wall must make every `reach` on the cycle false,
//! which shows as the builder's flare moves disappearing.

use propel_compiler::propnet::passes::Pass;
use propel_runtime::{Prover, StateMachine};
use propel_tests::{propnet_machine, root};
use std::sync::Arc;

/// Plays `script` (one move per role, as KIF) and returns every role's
/// legal moves (as KIF, sorted) before each step.
fn play<M: StateMachine>(m: &mut M, script: &[[&str; 2]]) -> Vec<Vec<Vec<String>>> {
    let mut s = m.initial_state().unwrap();
    let mut seen = Vec::new();
    let mut moves = Vec::new();
    for joint in script {
        let mut legal = Vec::new();
        let mut chosen = Vec::new();
        for (r, want) in joint.iter().enumerate() {
            m.legal_moves(&s, r, &mut moves).unwrap();
            let mut names: Vec<(String, M::Move)> = moves.iter().map(|&mv| (m.move_kif(mv), mv)).collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            let found = names.iter().find(|(k, _)| k == want).unwrap_or_else(|| panic!("{want} not legal: {names:?}"));
            chosen.push(found.1);
            legal.push(names.into_iter().map(|(k, _)| k).collect());
        }
        seen.push(legal);
        s = m.next_state(&s, &chosen).unwrap();
    }
    let mut legal = Vec::new();
    for r in 0..2 {
        m.legal_moves(&s, r, &mut moves).unwrap();
        let mut names: Vec<String> = moves.iter().map(|&mv| m.move_kif(mv)).collect();
        names.sort();
        legal.push(names);
    }
    seen.push(legal);
    seen
}

const SCRIPT: &[[&str; 2]] = &[
    ["(build 1 1)", "wait"],
    ["wait", "(burn 4 4)"],
    ["(build 2 1)", "wait"],
    ["wait", "(burn 4 3)"],
    ["(build 2 2)", "wait"],
    ["wait", "(burn 1 4)"],
    ["(build 3 1)", "wait"],
    ["wait", "(burn 2 4)"],
    // (2,1) (3,1) (3,2) (2,2) now form a cycle, linked to the edge by (1,1).
    ["(build 3 2)", "wait"],
    ["wait", "(bomb 1 1)"],
];

fn flares(legal: &[Vec<String>]) -> usize {
    legal[0].iter().filter(|m| m.starts_with("(flare")).count()
}

#[test]
fn support_removed_from_a_cycle() {
    let game = Arc::new(propel_compiler::load_file(&root().join("games/firewall.kif")).unwrap());
    let mut prover = Prover::new(game.clone()).unwrap();
    let expected = play(&mut prover, SCRIPT);
    // The prover (bottom-up, no cycles) is the reference: flares while the
    // cycle is linked, none after the bomb.
    assert_eq!(flares(&expected[8]), 1, "{:?}", expected[8]);
    assert_eq!(flares(&expected[10]), 0, "{:?}", expected[10]);
    for passes in [&[][..], Pass::ALL] {
        let mut net = propnet_machine(&game, passes);
        let got = play(&mut net, SCRIPT);
        assert_eq!(got, expected, "propnet with passes {passes:?}");
    }
}
