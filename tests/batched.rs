//! Native code cut into many small pieces, as a very large network is:
//! compile batches of 2,000 IR instructions (so the engines' bodies are
//! built in many batches and the goal network in many chunks).

use propel_compiler::lower::Machine;
use propel_compiler::propnet::passes::{specialise, split_goals, Pass};
use propel_compiler::propnet::{Evaluator, Leaves, Propnet};
use propel_runtime::propnet::{NetState, PropnetMachine, Topology};
use propel_runtime::{NativeMachine, Prover, StateMachine};
use propel_tests::{assert_state_abi_round_trips, assert_traces_agree, bundled_games, check_perft, read_perft, root};
use std::sync::Arc;

/// JIT code for `m`, as a machine over `net`'s bases and inputs.
fn native(m: &Machine<'_>, net: &Propnet, name: &str) -> NativeMachine {
    let options = propel_compiler::lower::CodegenOptions { batch_insts: 2000, ..Default::default() };
    let code = propel_compiler::lower::jit(m, name, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let native = propel_runtime::NativeCode::from_jit(code).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(native.base_names().len(), net.bases.len());
    NativeMachine::new(Arc::new(native))
}

/// Every bundled game as a split network (two engines, specialised on its
/// first base, whatever the measured gain) with its goal logic in a
/// separate network that both engines share: golden perft and the prover's
/// traces.
#[test]
fn split_engines_with_a_goal_network_in_small_batches() {
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let c = propel_compiler::pipeline::compile(&game, &Default::default(), Pass::ALL).unwrap();
        let (net, goal_net) = match c.goal_net {
            Some(goal_net) => (c.net, goal_net),
            None => split_goals(c.net),
        };
        let (off, on) = (specialise(&net, 0, false), specialise(&net, 0, true));
        let m = Machine { engines: vec![&off, &on], split: Some(0), goal_net: Some(&goal_net), lanes: Some(&net) };
        let mut jit = native(&m, &net, &name);
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        check_perft(&mut jit, &golden, &format!("split jit on {name}"));
        assert_traces_agree(&mut Prover::new(game).unwrap(), &mut jit, &[1, 2, 3], &format!("split jit on {name}"));
        // Stepping moves the state between the two engines.
        assert_state_abi_round_trips(&mut jit, &[1, 2], &format!("split jit on {name}"));
    }
}

/// The goal network, both as the interpreter's flat gate program and as
/// generated code (in chunks of straight-line logic, a cycle iterated to
/// its least fixed point), gives the reference evaluator's goals on every
/// state of a game whose goal logic was split off and has a cycle (ten
/// bases, so bits past the first byte of the state are read too).
#[test]
fn goal_networks_match_the_reference_on_every_state() {
    let mut src = String::from(
        "(role a) (role b) (init (c 1))
        (<= (next (c ?x)) (true (c ?x)) (does a w))
        (<= (next (c ?y)) (true (c ?x)) (succ ?x ?y) (does b w))
        (<= (legal ?r w) (role ?r)) (<= terminal (true (c 10)))
        (<= (goal a 100) (true (c 9)) (not (true (c 2))))
        (<= (goal a 0) (not (goal a 100)))
        (<= (goal b 50) (or (true (c 2)) (true (c 10))))
        (<= (goal b 0) (not (true (c 2))) (not (true (c 10))))
        (<= (r ?x) (true (c ?x))) (<= (r 1) (r 10)) (<= (r 10) (r 1))
        (<= (goal b 10) (r 1) (true (c 5)))",
    );
    for i in 1..10 {
        src.push_str(&format!(" (succ {i} {})", i + 1));
    }
    let game = Arc::new(propel_compiler::validate::load("goals", src).expect("valid"));
    let c = propel_compiler::pipeline::compile(&game, &Default::default(), &[]).expect("builds");
    let (net, goal_net) = split_goals(c.net.clone());
    let n = net.bases.len();
    assert!(n >= 10 && goal_net.cycles().len() == 1, "the test needs ten bases and a cycle in the goal network");
    let m = Machine { engines: vec![&net], split: None, goal_net: Some(&goal_net), lanes: None };
    let mut jit = native(&m, &net, "goals");
    let mut interpreted = PropnetMachine::new(Arc::new(Topology::new(&net, Some(goal_net.clone()))));
    let order = Evaluator::new(&goal_net);
    for s in 0..(1u64 << n) {
        let bases: Vec<bool> = (0..n).map(|i| s >> i & 1 == 1).collect();
        let mut reference = Vec::new();
        let inputs = vec![false; goal_net.inputs.len()];
        order.eval(&goal_net, &Leaves { bases: &bases, inputs: &inputs, answers: &[] }, &mut reference);
        let state = NetState::from_bits(vec![s]);
        for role in 0..2 {
            let mut want: Vec<u8> = goal_net
                .goals
                .iter()
                .filter(|g| g.role as usize == role && reference[g.comp as usize])
                .map(|g| g.value)
                .collect();
            want.sort_unstable();
            want.dedup();
            let mut got = Vec::new();
            jit.goal_values(&state, role, &mut got).unwrap();
            assert_eq!(got, want, "native code: state {s:b}, role {role}");
            interpreted.goal_values(&state, role, &mut got).unwrap();
            assert_eq!(got, want, "interpreter: state {s:b}, role {role}");
        }
    }
}
