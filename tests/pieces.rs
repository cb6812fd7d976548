//! Fan-outs written into separate functions (`lower::emit`, `FANOUT_PIECE`)
//! behave as inline ones: with pieces of two updates, so that nearly every
//! component with readers calls pieces, every bundled game's JIT machine
//! (and its native playouts) matches the golden perft and the prover's
//! traces. Its own test binary: the piece size is set through the
//! environment, which the other tests must not see.

use propel_tests::jit_agrees_on_bundled_games;

#[test]
fn fan_out_pieces_keep_every_bundled_game() {
    // Set before any code generation in this binary reads it.
    std::env::set_var("PROPEL_FANOUT_PIECE", "2");
    jit_agrees_on_bundled_games("jit with fan-out pieces", |name, stats| {
        assert!(stats.functions > 20, "{name}: {} functions", stats.functions);
    });
}
