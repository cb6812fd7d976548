//! Every bundled game has a golden perft file, and the reference prover
//! reproduces it.

use propel_runtime::Prover;
use propel_tests::{bundled_games, check_perft, read_perft, root};
use std::sync::Arc;

#[test]
fn every_bundled_game_has_a_golden_file() {
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        assert!(root().join("tests/perft").join(format!("{name}.perft")).is_file(), "no golden perft for {name}");
    }
}

#[test]
fn prover_matches_golden_perft() {
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let mut prover = Prover::new(game).unwrap_or_else(|e| panic!("{name}: {e}"));
        let depth = check_perft(&mut prover, &golden, &format!("prover on {name}"));
        eprintln!("{name}: prover perft checked to depth {depth}");
    }
}
