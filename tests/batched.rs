//! Native code compiled in many small batches (as a very large network is,
//! to bound memory) gives the golden perft and the prover's traces on every
//! bundled game. Its own test binary: the batch size is set through the
//! environment, which the other tests must not see.

use propel_runtime::build::{jit_machine, PropnetOptions};
use propel_runtime::Prover;
use propel_tests::{assert_traces_agree, bundled_games, check_perft, read_perft, root};
use std::sync::Arc;

#[test]
fn jit_compiled_in_small_batches_matches_golden_perft() {
    // The only test in this binary: set before anything reads it.
    std::env::set_var("PROPEL_BATCH_INSTS", "2000");
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let mut m = jit_machine(&game, &PropnetOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}")).machine;
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        check_perft(&mut m, &golden, &format!("batched jit on {name}"));
        assert_traces_agree(&mut Prover::new(game).unwrap(), &mut m, &[1, 2], &format!("batched jit on {name}"));
    }
}
