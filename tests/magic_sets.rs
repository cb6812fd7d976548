//! The demand (magic-set) rewrite must not change a game's meaning: with
//! every helper relation rewritten, the prover still matches the golden
//! perft of every bundled game.

use propel_compiler::magic::demand_transform;
use propel_compiler::RelId;
use propel_runtime::Prover;
use propel_tests::{bundled_games, check_perft, read_perft, root};
use std::sync::Arc;

#[test]
fn rewriting_every_relation_keeps_perft() {
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}"));
        let all: Vec<RelId> = (0..game.relations.len() as u32).map(RelId).collect();
        let Some(rw) = demand_transform(&game, &all) else {
            eprintln!("{name}: nothing to rewrite");
            continue;
        };
        let names: Vec<&str> = rw.relations.iter().map(|&r| game.rel_name(r)).collect();
        eprintln!("{name}: rewritten {names:?}");
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        let mut prover = Prover::new(Arc::new(rw.game)).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_perft(&mut prover, &golden, &format!("rewritten prover on {name}"));
    }
}
