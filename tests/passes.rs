//! Every propnet pass keeps the game's meaning: on every bundled game, the
//! network after each pass alone, and after the default pipeline, matches
//! the golden perft and plays the same traces as the prover.

use propel_compiler::propnet::passes::Pass;
use propel_runtime::Prover;
use propel_tests::{assert_traces_agree, bundled_games, check_perft, propnet_machine, read_perft, root};
use std::sync::Arc;

fn check(passes: &[Pass], label: &str) {
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        let what = format!("{name} after {label}");
        let mut net = propnet_machine(&game, passes);
        check_perft(&mut net, &golden, &what);
        let mut prover = Prover::new(game.clone()).unwrap();
        assert_traces_agree(&mut prover, &mut net, &[1, 2, 3, 4, 5], &what);
    }
}

#[test]
fn no_passes() {
    check(&[], "no pass");
}

#[test]
fn each_pass_alone() {
    for &p in Pass::EVERY {
        check(&[p], p.name());
    }
}

#[test]
fn default_pipeline() {
    check(Pass::DEFAULT, "all passes");
}
