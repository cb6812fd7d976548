//! Projection and group splitting before grounding (compiler/src/project.rs)
//! must not change a game's meaning: the prover on the rewritten rules
//! matches the golden perft of every bundled game, and a corpus game that
//! only grounds after the rewrite gives the same perft and traces as the
//! prover on the rules as written.

use propel_compiler::project::project_locals;
use propel_runtime::perft::perft;
use propel_runtime::Prover;
use propel_tests::{assert_traces_agree, bundled_games, check_perft, corpus_dir, propnet_machine, read_perft, root};
use std::sync::Arc;

#[test]
fn the_prover_on_projected_rules_keeps_perft() {
    let mut rewritten = 0;
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}"));
        let Some(p) = project_locals(&game) else {
            eprintln!("{name}: nothing to project");
            continue;
        };
        rewritten += 1;
        eprintln!("{name}: {} helper relations", p.relations.len() - game.relations.len());
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        let mut prover = Prover::new(Arc::new(p)).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_perft(&mut prover, &golden, &format!("prover on projected {name}"));
    }
    // Most bundled games have a literal with variables of its own.
    assert!(rewritten >= 4, "only {rewritten} bundled games were rewritten");
}

#[test]
fn a_game_that_grounds_only_after_projection_agrees_with_the_prover() {
    let Some(dir) = corpus_dir() else {
        eprintln!("SKIPPED: ../shared/games not found");
        return;
    };
    // Tetris's `line` rule once derived five million facts.
    let path = dir.join("benderng-testdata/Tetris.kif");
    if !path.exists() {
        eprintln!("SKIPPED: {} not found", path.display());
        return;
    }
    let game = Arc::new(propel_compiler::load_file(&path).unwrap_or_else(|e| panic!("{e}")));
    let mut net = propnet_machine(&game, propel_compiler::propnet::passes::Pass::ALL);
    let mut prover = Prover::new(game.clone()).unwrap_or_else(|e| panic!("{e}"));
    let a = perft(&mut prover, 2, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let b = perft(&mut net, 2, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", a.lines), format!("{:?}", b.lines));
    assert_traces_agree(&mut prover, &mut net, &[1, 2], "Tetris: prover vs propnet");
}
