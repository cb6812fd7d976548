//! The native machines (JIT and AOT library) against the reference: golden
//! perft and prover traces on every bundled game; the native playout
//! (whole game in generated code) against the standard path through the
//! machine interface, seed by seed; and a compiled library against the JIT.

use propel_compiler::lower::{game_hash, object, CodegenOptions, Machine};
use propel_compiler::propnet::passes::Pass;
use propel_runtime::build::{jit_machine, BuildOptions};
use propel_runtime::playout::{playout, PlayoutStats};
use propel_runtime::{NativeMachine, Prover, Rng, StateMachine};
use propel_tests::{assert_state_abi_round_trips, assert_traces_agree, bundled_games, check_perft, read_perft, root};
use std::sync::Arc;

fn jit(g: &std::path::Path) -> (Arc<propel_compiler::Game>, NativeMachine) {
    let game = Arc::new(propel_compiler::load_file(g).unwrap_or_else(|e| panic!("{e}")));
    let m = jit_machine(&game, &BuildOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", game.name)).machine;
    (game, m)
}

#[test]
fn jit_matches_golden_perft_and_prover_traces() {
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let (game, mut m) = jit(&g);
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        check_perft(&mut m, &golden, &format!("jit on {name}"));
        let mut prover = Prover::new(game).unwrap();
        assert_traces_agree(&mut prover, &mut m, &[1, 2, 3, 4, 5], &format!("jit on {name}"));
        assert_state_abi_round_trips(&mut m, &[1, 2], &format!("jit on {name}"));
    }
}

/// The native playout draws the same random numbers in the same order as
/// the standard loop (one per role per step, from sorted legal moves), so
/// each seed must give the same game: same length, same goals.
#[test]
fn native_playout_equals_standard_playout_seed_by_seed() {
    for g in bundled_games() {
        let (_, mut m) = jit(&g);
        let s0 = m.initial_state().unwrap();
        let roles = m.roles().len();
        let mut goals = Vec::new();
        let (mut fast_len, mut std_len) = (0u64, 0u64);
        for seed in 1..=300u64 {
            let n = m.native_playout(&s0, seed, 100_000, &mut goals).unwrap();
            let mut stats = PlayoutStats::default();
            let len = playout(&mut m, &mut Rng::new(seed), &mut stats).unwrap();
            assert_eq!(n as u64, len, "{}: seed {seed}: playout lengths differ", g.display());
            assert_eq!(goals.len(), roles, "{}: seed {seed}: goals of every role", g.display());
            for (r, &goal) in goals.iter().enumerate() {
                assert_eq!(goal.max(0) as u64, stats.goal_sums[r], "{}: seed {seed}: goal of role {r}", g.display());
            }
            fast_len += n as u64;
            std_len += len;
        }
        assert_eq!(fast_len, std_len);
    }
}

/// Where the interpreter's goal program reads the goals (large goal
/// networks), they are the goals the generated code gives: base/reversi's
/// split-off goal network, read by the program and by the code.
#[test]
fn goal_program_gives_the_goals_of_the_code() {
    let Some(game) = propel_tests::corpus_game("base/reversi.kif") else { return };
    let c = propel_compiler::pipeline::compile(&game, &propel_tests::test_limits(), Pass::ALL).unwrap();
    assert!(c.goal_net.is_some(), "reversi's goals are no longer split off: pick another game");
    let make = |min: usize| {
        let m = Machine { engines: vec![&c.net], split: None, goal_net: c.goal_net.as_ref(), lanes: None };
        let code = propel_compiler::lower::jit(&m, "reversi", &CodegenOptions::default()).unwrap();
        let code = propel_runtime::NativeCode::from_jit(code).unwrap().with_goal_net(c.goal_net.as_ref(), min);
        NativeMachine::new(Arc::new(code))
    };
    let (mut code, mut program) = (make(usize::MAX), make(0));
    assert!(!code.code().goals_interpreted() && program.code().goals_interpreted());
    let s0 = code.initial_state().unwrap();
    let (mut a, mut b, mut va, mut vb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for seed in 1..=20u64 {
        let n = code.native_playout(&s0, seed, 100_000, &mut a).unwrap();
        assert_eq!(program.native_playout(&s0, seed, 100_000, &mut b).unwrap(), n, "seed {seed}");
        assert_eq!(a, b, "seed {seed}: goals");
        let end = code.current_state();
        for role in 0..2 {
            code.goal_values(&end, role, &mut va).unwrap();
            program.goal_values(&end, role, &mut vb).unwrap();
            assert_eq!(va, vb, "seed {seed}: role {role}'s goal values");
        }
    }
}

/// A clone is a fresh instance with the same settings.
#[test]
fn a_clone_keeps_the_machine_settings() {
    let (_, mut m) = jit(&root().join("games/breakthrough.kif"));
    assert!(m.batches_on_lanes());
    m.set_batch_lanes(false);
    m.set_win_first(&[3, 5]);
    let c = m.clone();
    assert!(!c.batches_on_lanes());
    assert_eq!(c.win_first_moves(), &[3, 5]);
}

/// Writes `game` as a library with the system C compiler; None (and a
/// note) when there is no `cc`.
fn library(game: &Arc<propel_compiler::Game>, text: &[u8], dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let c = propel_compiler::pipeline::compile(game, &Default::default(), propel_compiler::propnet::passes::Pass::ALL)
        .unwrap();
    let m = Machine { engines: vec![&c.net], split: None, goal_net: c.goal_net.as_ref(), lanes: Some(&c.net) };
    let (bytes, _, _) = object(&m, &game_hash(text), &Default::default()).unwrap();
    let obj = dir.join("g.o");
    std::fs::write(&obj, bytes).unwrap();
    let so = dir.join("g.so");
    match std::process::Command::new("cc").arg("-shared").arg("-o").arg(&so).arg(&obj).status() {
        Ok(s) if s.success() => {
            propel_abi::file::seal(&so, &game_hash(text)).unwrap();
            Some(so)
        }
        _ => {
            propel_tests::skip("no working `cc` to link a library");
            None
        }
    }
}

#[test]
fn library_plays_like_the_jit_and_refuses_other_games() {
    let dir = std::env::temp_dir().join(format!("propel-native-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["tictactoe", "breakthrough", "firewall"] {
        let path = root().join(format!("games/{name}.kif"));
        let text = std::fs::read(&path).unwrap();
        let (game, mut j) = jit(&path);
        let Some(so) = library(&game, &text, &dir) else { return };
        let code = propel_runtime::aot::load(&so, Some(&game_hash(&text))).unwrap_or_else(|e| panic!("{e}"));
        let mut a = NativeMachine::new(Arc::new(code));
        let mut prover = Prover::new(game).unwrap();
        assert_traces_agree(&mut prover, &mut a, &[1, 2, 3], &format!("library for {name}"));
        assert_state_abi_round_trips(&mut a, &[1, 2], &format!("library for {name}"));
        let (s0, t0) = (a.initial_state().unwrap(), j.initial_state().unwrap());
        assert_eq!(s0, t0);
        let (mut ga, mut gj) = (Vec::new(), Vec::new());
        for seed in 1..=100 {
            let na = a.native_playout(&s0, seed, 100_000, &mut ga).unwrap();
            let nj = j.native_playout(&t0, seed, 100_000, &mut gj).unwrap();
            assert_eq!((na, &ga), (nj, &gj), "{name}: seed {seed}");
        }
        // Bit-parallel playouts: the same code, so the same games.
        assert!(a.has_lanes(), "{name}: the library has lane code");
        let (mut la, mut lj) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
        a.lane_playouts(&s0, 200, 5, 100_000, &mut la.0, &mut la.1).unwrap();
        j.lane_playouts(&t0, 200, 5, 100_000, &mut lj.0, &mut lj.1).unwrap();
        assert_eq!(la, lj, "{name}: lane playouts");
        // The same library refused for another game text.
        let err = propel_runtime::aot::load(&so, Some("0000000000000000")).expect_err("stale library refused");
        assert!(err.to_string().contains("stale"), "{err}");
        std::fs::remove_file(&so).ok();
    }
    // Not a Propel library at all.
    let bogus = dir.join("bogus.so");
    std::fs::write(&bogus, b"not a shared object").unwrap();
    assert!(propel_runtime::aot::load(&bogus, None).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

/// The hybrid machine (tree on the interpreted propnet, rollouts on the
/// JIT) shares states and moves between its two halves: its perft is the
/// golden one, and lane batches from a state reached through the tree half
/// give the same mean goals as playouts on the interpreted propnet from
/// that state, within sampling error.
#[test]
fn hybrid_machine_matches_golden_perft_and_its_rollouts_agree() {
    use propel_runtime::build::prepare;
    use propel_runtime::simulate::Simulator;
    use propel_runtime::Hybrid;
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let p = prepare(&game, &BuildOptions::default()).unwrap();
        let (native, _) = p.jit(&game.name).unwrap();
        let mut h = Hybrid::new(p.propnet(), native);
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        check_perft(&mut h, &golden, &format!("hybrid on {name}"));
        // A state two joint moves in, reached through the tree half.
        let mut s = h.initial_state().unwrap();
        let roles = h.roles().len();
        for _ in 0..2 {
            if h.is_terminal(&s).unwrap() {
                break;
            }
            let mut joint = Vec::new();
            for r in 0..roles {
                let mut moves = Vec::new();
                h.legal_moves(&s, r, &mut moves).unwrap();
                joint.push(*moves.last().unwrap());
            }
            s = h.next_state(&s, &joint).unwrap();
        }
        if h.is_terminal(&s).unwrap() {
            continue;
        }
        let n = 2048u32;
        let (mut batched, mut single) = (vec![0.0; roles], vec![0.0; roles]);
        let mut rng = Rng::new(7);
        let mut done = 0;
        while done < n {
            done += h.rollouts(&s, 64, &mut rng, &mut batched, &|| false).unwrap();
        }
        // Playouts on a separate interpreted propnet: the lanes must read
        // the tree half's state the same way.
        let mut tree = p.propnet();
        let mut stats = PlayoutStats::default();
        for _ in 0..n {
            propel_runtime::playout::playout_from(&mut tree, s.clone(), &mut rng, &mut stats).unwrap();
        }
        for (sum, &g) in single.iter_mut().zip(&stats.goal_sums) {
            *sum = g as f64 / 100.0;
        }
        for r in 0..roles {
            let (a, b) = (batched[r] / done as f64, single[r] / n as f64);
            // Goals are in [0, 1]: the difference of two means of n draws
            // has a standard error of at most sqrt(2 * 0.25 / n).
            let se = (0.5 / n as f64).sqrt();
            assert!((a - b).abs() < 5.0 * se, "{name}: role {r}: lanes {a:.3}, propnet {b:.3}");
        }
    }
}

/// A library file that was cut short, altered, is of another format or is
/// not a Propel library at all gets an error naming the problem: never a
/// crash (the checks come before `dlopen`, which would fault on a
/// truncated file or run corrupted code).
#[test]
fn damaged_and_foreign_libraries_are_refused() {
    let dir = std::env::temp_dir().join(format!("propel-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = root().join("games/tictactoe.kif");
    let text = std::fs::read(&path).unwrap();
    let game = Arc::new(propel_compiler::load_file(&path).unwrap());
    let Some(so) = library(&game, &text, &dir) else { return };
    let good = std::fs::read(&so).unwrap();
    let hash = game_hash(&text);
    assert!(propel_runtime::aot::load(&so, Some(&hash)).is_ok());
    let bad = dir.join("bad.so");
    let refused = |bytes: &[u8], what: &str| -> String {
        std::fs::write(&bad, bytes).unwrap();
        match propel_runtime::aot::load(&bad, Some(&hash)) {
            Ok(_) => panic!("{what}: loaded"),
            Err(e) => e.to_string(),
        }
    };
    let n = good.len();
    for cut in [0, 10, 63, 64, 1000, n / 3, n / 2, n - 200, n - 65, n - 64, n - 1] {
        let e = refused(&good[..cut], &format!("cut at {cut} of {n}"));
        assert!(["truncated", "damaged", "not a shared object"].iter().any(|w| e.contains(w)), "cut at {cut}: {e}");
    }
    // One byte altered anywhere: the checksum (or the trailer's own
    // fields) no longer hold.
    for k in 0..97 {
        let at = k * (n - 1) / 96;
        let mut b = good.clone();
        b[at] ^= 0x5a;
        let e = refused(&b, &format!("byte {at} of {n} altered"));
        assert!(!e.is_empty());
    }
    // Of an older format (no trailer; the metadata says 5).
    let mut old = good[..n - propel_abi::file::TRAILER_LEN].to_vec();
    let mark = b"{\"format\":6";
    let at = old.windows(mark.len()).position(|w| w == mark).expect("the metadata is in the file");
    old[at + mark.len() - 1] = b'5';
    let e = refused(&old, "format 5");
    assert!(e.contains("another version of Propel (library format 5"), "{e}");
    // Not ours: a text, an object file, a folder.
    assert!(refused(b"not a library", "text").contains("not a shared object"));
    let obj = {
        let c =
            propel_compiler::pipeline::compile(&game, &Default::default(), propel_compiler::propnet::passes::Pass::ALL)
                .unwrap();
        let m = Machine { engines: vec![&c.net], split: None, goal_net: c.goal_net.as_ref(), lanes: None };
        object(&m, &hash, &Default::default()).unwrap().0
    };
    assert!(refused(&obj, "object file").contains("not a shared object"));
    let e = propel_runtime::aot::load(&dir, None).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("not a regular file"), "{e}");
    // A whole, sealed shared object that `dlopen` still refuses (a library
    // it needs is gone): the loader's own reason is given.
    std::fs::write(dir.join("dep.c"), "int propel_test_dep(void) { return 1; }\n").unwrap();
    std::fs::write(dir.join("x.c"), "int propel_test_dep(void);\nint x(void) { return propel_test_dep(); }\n").unwrap();
    let cc = |args: &[&str]| std::process::Command::new("cc").current_dir(&dir).args(args).status().unwrap().success();
    assert!(cc(&["-shared", "-fPIC", "-o", "libpropeldep.so", "dep.c"]));
    assert!(cc(&["-shared", "-fPIC", "-o", "x.so", "x.c", "-L.", "-lpropeldep"]));
    propel_abi::file::seal(&dir.join("x.so"), &hash).unwrap();
    std::fs::remove_file(dir.join("libpropeldep.so")).unwrap();
    let e = propel_runtime::aot::load(&dir.join("x.so"), Some(&hash)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("cannot load the library: dlopen failed: ") && e.contains("libpropeldep.so"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Bad joint moves and foreign states get typed errors naming the role and
/// the move, the same from the propnet and the JIT.
#[test]
fn machine_errors_are_typed() {
    use propel_runtime::MachineError;
    fn check<M: StateMachine>(m: &mut M, what: &str) {
        let s = m.initial_state().unwrap();
        let roles = m.roles().to_vec();
        let mut joint = Vec::new();
        let mut moves = Vec::new();
        for r in 0..roles.len() {
            m.legal_moves(&s, r, &mut moves).unwrap();
            joint.push(moves[0]);
        }
        assert_eq!(m.next_state(&s, &joint[1..]), Err(MachineError::BadJoint { roles: 2 }), "{what}");
        let swapped = [joint[1], joint[0]];
        let want = MachineError::IllegalMove { role: roles[0].clone(), mv: m.move_kif(joint[1]) };
        assert_eq!(m.next_state(&s, &swapped), Err(want.clone()), "{what}");
        assert!(want.to_string().contains(&roles[0]), "{what}: {want}");
        assert_eq!(m.legal_moves(&s, 2, &mut moves).unwrap_err(), MachineError::NoRole { role: 2, roles: 2 }, "{what}");
    }
    let g = root().join("games/tictactoe.kif");
    let (game, mut jit) = jit(&g);
    check(&mut jit, "jit");
    let mut net = propel_tests::propnet_machine(&game, propel_compiler::propnet::passes::Pass::ALL);
    check(&mut net, "propnet");
    let other = jit_machine(
        &Arc::new(propel_compiler::load_file(&root().join("games/connect4.kif")).unwrap()),
        &BuildOptions::default(),
    )
    .unwrap()
    .machine
    .initial_state()
    .unwrap();
    assert_eq!(jit.is_terminal(&other), Err(MachineError::WrongGame));
}

/// A goal value above 100 is kept in the network (a relaxed model may
/// admit one that play never reaches: sancho arithmetic), and every
/// machine reports one that holds as the prover does: an error. Here
/// `(go 2)` reaches 150 and `(go 3)` 102; `(go 1)` is a plain 50.
#[test]
fn goal_values_above_100_are_errors_on_every_machine() {
    use propel_runtime::MachineError;
    let text = "(role p) (init (c 0))
        (<= (legal p (go ?x)) (true (c 0)) (num ?x)) (num 1) (num 2) (num 3)
        (<= (next (c ?x)) (does p (go ?x)))
        (<= terminal (not (true (c 0))))
        (<= (goal p 0) (true (c 0))) (<= (goal p 50) (true (c 1)))
        (<= (goal p 150) (true (c 2))) (<= (goal p 102) (true (c 3)))";
    let game = Arc::new(propel_compiler::load("big-goals.kif", text).unwrap());
    let bad = |value: &str| MachineError::BadGoal { role: "p".into(), value: value.into() };
    fn after<M: StateMachine>(m: &mut M, x: usize) -> M::State {
        let s = m.initial_state().unwrap();
        let mut moves = Vec::new();
        m.legal_moves(&s, 0, &mut moves).unwrap();
        let mv = *moves.iter().find(|&&mv| m.move_kif(mv) == format!("(go {x})")).unwrap();
        m.next_state(&s, &[mv]).unwrap()
    }
    fn goals<M: StateMachine>(m: &mut M, x: usize) -> Result<Vec<u8>, MachineError> {
        let s = after(m, x);
        let mut v = Vec::new();
        m.goal_values(&s, 0, &mut v).map(|_| v)
    }
    let mut prover = Prover::new(game.clone()).unwrap();
    let mut net = propel_tests::propnet_machine(&game, Pass::ALL);
    let mut jit = jit_machine(&game, &BuildOptions::default()).unwrap().machine;
    for (x, exact, masked) in [(2, "150", "127 or more"), (3, "102", "102")] {
        assert_eq!(goals(&mut prover, x), Err(bad(exact)), "prover, go {x}");
        assert_eq!(goals(&mut net, x), Err(bad(exact)), "propnet, go {x}");
        assert_eq!(goals(&mut jit, x), Err(bad(masked)), "jit, go {x}");
    }
    assert_eq!(goals(&mut prover, 1), Ok(vec![50]));
    assert_eq!(goals(&mut net, 1), Ok(vec![50]));
    assert_eq!(goals(&mut jit, 1), Ok(vec![50]));
    // Whole playouts in generated code and on the lanes: the ones that
    // end at 50 give 50, and a run that ends at a bad value fails.
    let s0 = jit.initial_state().unwrap();
    let (mut fine, mut failed) = (0, 0);
    let mut g = Vec::new();
    for seed in 1..=30 {
        match jit.native_playout(&s0, seed, 100, &mut g) {
            Ok(_) => {
                assert_eq!(g, [50], "seed {seed}");
                fine += 1;
            }
            Err(e) => {
                assert!(matches!(&e, MachineError::BadGoal { role, .. } if role == "p"), "seed {seed}: {e}");
                failed += 1;
            }
        }
    }
    assert!(fine > 0 && failed > 0, "{fine} and {failed}");
    let (mut lg, mut ll) = (Vec::new(), Vec::new());
    let e = jit.lane_playouts(&s0, 200, 1, 100, &mut lg, &mut ll).unwrap_err();
    assert!(matches!(&e, MachineError::BadGoal { role, .. } if role == "p"), "{e}");
}
