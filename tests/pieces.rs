//! Fan-outs written into separate functions (`lower::emit`, `FANOUT_PIECE`)
//! behave as inline ones: with pieces of two updates, so that nearly every
//! component with readers calls pieces, every bundled game's JIT machine
//! (and its native playouts) matches the golden perft and the prover's
//! traces. The same holds for engines compiled as bulk code (no
//! optimiser, single-pass allocator, block-local copies), which only
//! networks over `engine-opt-updates` get by default, and for engines
//! that propagate from tables (`lower::tables`), which networks over
//! `engine-table-updates` get.

use propel_compiler::lower::CodegenOptions;
use propel_tests::jit_agrees_on_bundled_games;

#[test]
fn fan_out_pieces_keep_every_bundled_game() {
    let options = CodegenOptions { fanout_piece: 2, ..Default::default() };
    jit_agrees_on_bundled_games("jit with fan-out pieces", &options, |name, stats| {
        assert!(stats.functions > 20, "{name}: {} functions", stats.functions);
    });
}

#[test]
fn bulk_engines_keep_every_bundled_game() {
    let options = CodegenOptions { engine_opt_updates: 0, ..Default::default() };
    jit_agrees_on_bundled_games("jit with bulk engines", &options, |_, _| {});
}

#[test]
fn table_engines_keep_every_bundled_game() {
    let options = CodegenOptions { engine_table_updates: 0, ..Default::default() };
    jit_agrees_on_bundled_games("jit with table engines", &options, |_, _| {});
}
