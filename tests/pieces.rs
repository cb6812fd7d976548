//! Fan-outs written into separate functions (`lower::emit`, `FANOUT_PIECE`)
//! behave as inline ones: with pieces of two updates, so that nearly every
//! component with readers calls pieces, every bundled game's JIT machine
//! (and its native playouts) matches the golden perft and the prover's
//! traces. Its own test binary: the piece size is set through the
//! environment, which the other tests must not see.

use propel_compiler::lower::Machine;
use propel_compiler::propnet::passes::Pass;
use propel_runtime::build::native_code;
use propel_runtime::{NativeMachine, Prover};
use propel_tests::{assert_traces_agree, bundled_games, check_perft, read_perft, root};
use std::sync::Arc;

#[test]
fn fan_out_pieces_keep_every_bundled_game() {
    // Set before any code generation in this binary reads it.
    std::env::set_var("PROPEL_FANOUT_PIECE", "2");
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let c = propel_compiler::pipeline::compile(&game, &Default::default(), Pass::ALL).unwrap();
        let m = Machine { engines: vec![&c.net], split: None, goal_net: c.goal_net.as_ref(), lanes: None };
        let code = propel_compiler::lower::jit(&m, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(code.stats.functions > 20, "{name}: {} functions", code.stats.functions);
        let (fns, layout) = (code.fns, code.layout.clone());
        let mut jit = NativeMachine::new(Arc::new(native_code(&c.net, fns, layout, Box::new(code))));
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        check_perft(&mut jit, &golden, &format!("jit with fan-out pieces on {name}"));
        let mut prover = Prover::new(game).unwrap();
        assert_traces_agree(&mut prover, &mut jit, &[1, 2, 3], &format!("jit with fan-out pieces on {name}"));
    }
}
