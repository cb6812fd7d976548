//! ORs over one role's moves set from a table (`lower::moves`) behave as
//! fan-out: with the table taken for every role that has such an OR
//! (`move-table=1`), every bundled game's JIT machine matches the golden
//! perft and the prover's traces; and chiaras `bandl10`, whose code was
//! nearly all such fan-out, takes the table by default and agrees with the
//! prover.

use propel_compiler::lower::CodegenOptions;
use propel_runtime::perft::perft;
use propel_runtime::Prover;
use propel_tests::{assert_traces_agree, corpus_game, jit_agrees_on_bundled_games, jit_machine};

#[test]
fn move_tables_agree_with_the_prover() {
    let options = CodegenOptions { move_table_edges: 1, ..Default::default() };
    jit_agrees_on_bundled_games("jit with move tables", &options, |_, _| {});
}

#[test]
fn bandl10_moves_come_from_a_table() {
    let Some(game) = corpus_game("chiaras-gdlfolder/bandl10.kif") else { return };
    let (mut jit, stats) = jit_machine(&game);
    // As fan-out, 590,818 updates; the table leaves the rest of the network.
    assert!(stats.updates < 10_000, "{} updates", stats.updates);
    let mut prover = Prover::new(game).unwrap_or_else(|e| panic!("{e}"));
    let want = perft(&mut prover, 1, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let got = perft(&mut jit, 1, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.lines, want.lines);
    assert_traces_agree(&mut prover, &mut jit, &[1, 2], "bandl10 jit");
}
