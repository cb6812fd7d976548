//! Projection and group splitting before grounding (compiler/src/project.rs)
//! must not change a game's meaning: the prover on the rewritten rules
//! matches the golden perft of every bundled game, and a corpus game that
//! only grounds after the rewrite gives the same perft and traces as the
//! prover on the rules as written. Variable elimination (step 3) likewise,
//! on a game written here to need it and on the corpus's quarto.

use propel_compiler::project::{eliminate_locals, project_locals};
use propel_runtime::perft::perft;
use propel_runtime::{Prover, StateMachine};
use propel_tests::{
    assert_traces_agree, bundled_games, check_perft, corpus_game, propnet_machine, read_perft, root,
    test_build_options, test_limits,
};
use std::sync::Arc;

#[test]
fn the_prover_on_projected_rules_keeps_perft() {
    let mut rewritten = 0;
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}"));
        let Some(p) = project_locals(&game) else {
            eprintln!("{name}: nothing to project");
            continue;
        };
        rewritten += 1;
        eprintln!("{name}: {} helper relations", p.relations.len() - game.relations.len());
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        let mut prover = Prover::new(Arc::new(p)).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_perft(&mut prover, &golden, &format!("prover on projected {name}"));
    }
    // Most bundled games have a literal with variables of its own.
    assert!(rewritten >= 4, "only {rewritten} bundled games were rewritten");
}

#[test]
fn a_game_that_grounds_only_after_projection_agrees_with_the_prover() {
    // Tetris's `line` rule once derived five million facts.
    let Some(game) = corpus_game("benderng-testdata/Tetris.kif") else { return };
    let mut net = propnet_machine(&game, propel_compiler::propnet::passes::Pass::DEFAULT);
    let mut prover = Prover::new(game.clone()).unwrap_or_else(|e| panic!("{e}"));
    let a = perft(&mut prover, 2, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let b = perft(&mut net, 2, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", a.lines), format!("{:?}", b.lines));
    assert_traces_agree(&mut prover, &mut net, &[1, 2], "Tetris: prover vs propnet");
}

/// Three in a row of pieces that share an attribute (quarto's line test on
/// a 3x3 board with eight pieces of three two-valued attributes): `same`
/// is a union of cross products, which step 3 unfolds and takes apart.
const TRIO: &str = "(role x) (role o)
    (piece a000) (piece a001) (piece a010) (piece a011) (piece a100) (piece a101) (piece a110) (piece a111)
    (attr 1 a000 0) (attr 2 a000 0) (attr 3 a000 0) (attr 1 a001 0) (attr 2 a001 0) (attr 3 a001 1)
    (attr 1 a010 0) (attr 2 a010 1) (attr 3 a010 0) (attr 1 a011 0) (attr 2 a011 1) (attr 3 a011 1)
    (attr 1 a100 1) (attr 2 a100 0) (attr 3 a100 0) (attr 1 a101 1) (attr 2 a101 0) (attr 3 a101 1)
    (attr 1 a110 1) (attr 2 a110 1) (attr 3 a110 0) (attr 1 a111 1) (attr 2 a111 1) (attr 3 a111 1)
    (bit 1) (bit 2) (bit 3) (index 1) (index 2) (index 3)
    (<= (init (free ?p)) (piece ?p))
    (<= (init (cell ?i ?j empty)) (index ?i) (index ?j))
    (init (control x))
    (<= (legal ?r (place ?p ?i ?j)) (true (control ?r)) (true (free ?p)) (true (cell ?i ?j empty)))
    (<= (legal ?r noop) (role ?r) (not (true (control ?r))))
    (<= (placed ?i ?j) (does ?r (place ?p ?i ?j)))
    (<= (used ?p) (does ?r (place ?p ?i ?j)))
    (<= (next (cell ?i ?j ?p)) (does ?r (place ?p ?i ?j)))
    (<= (next (cell ?i ?j ?s)) (true (cell ?i ?j ?s)) (not (placed ?i ?j)))
    (<= (next (free ?p)) (true (free ?p)) (not (used ?p)))
    (<= (next (control x)) (true (control o)))
    (<= (next (control o)) (true (control x)))
    (<= (next (last ?r)) (true (control ?r)))
    (<= (same ?p1 ?p2 ?p3) (bit ?b) (attr ?b ?p1 ?v) (attr ?b ?p2 ?v) (attr ?b ?p3 ?v))
    (<= line (index ?i) (true (cell ?i 1 ?p1)) (true (cell ?i 2 ?p2)) (true (cell ?i 3 ?p3)) (same ?p1 ?p2 ?p3))
    (<= line (index ?j) (true (cell 1 ?j ?p1)) (true (cell 2 ?j ?p2)) (true (cell 3 ?j ?p3)) (same ?p1 ?p2 ?p3))
    (<= line (true (cell 1 1 ?p1)) (true (cell 2 2 ?p2)) (true (cell 3 3 ?p3)) (same ?p1 ?p2 ?p3))
    (<= line (true (cell 1 3 ?p1)) (true (cell 2 2 ?p2)) (true (cell 3 1 ?p3)) (same ?p1 ?p2 ?p3))
    (<= open (true (cell ?i ?j empty)))
    (<= terminal line)
    (<= terminal (not open))
    (<= (goal ?r 100) line (true (last ?r)))
    (<= (goal ?r 0) line (role ?r) (not (true (last ?r))))
    (<= (goal ?r 50) (not line) (role ?r))";

#[test]
fn eliminated_rules_keep_the_game() {
    let game = Arc::new(propel_compiler::validate::load("trio.kif", TRIO).unwrap_or_else(|e| panic!("{e}")));
    let e = eliminate_locals(&game).expect("step 3 to rewrite the line test").game;
    let helpers = e.relations.len() - game.relations.len();
    assert!(helpers >= 4, "only {helpers} helper relations");
    let eliminated = Arc::new(e);
    let mut prover = Prover::new(game.clone()).unwrap_or_else(|e| panic!("{e}"));
    let mut on_eliminated = Prover::new(eliminated.clone()).unwrap_or_else(|e| panic!("{e}"));
    let a = perft(&mut prover, 3, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let b = perft(&mut on_eliminated, 3, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", a.lines), format!("{:?}", b.lines));
    // The propnets from both sets of rules, against the prover; the
    // eliminated one is the smaller.
    let passes = propel_compiler::propnet::passes::Pass::DEFAULT;
    let limits = test_limits();
    let plain = propel_compiler::pipeline::compile(&game, &limits, &[]).unwrap_or_else(|e| panic!("{e}"));
    let small = propel_compiler::pipeline::compile(&eliminated, &limits, &[]).unwrap_or_else(|e| panic!("{e}"));
    let (p, s) = (plain.net.counts().edges, small.net.counts().edges);
    assert!(2 * s < p, "eliminated {s} edges, as written {p}");
    let seeds: Vec<u64> = (1..=12).collect();
    let mut net = propnet_machine(&eliminated, passes);
    let n = perft(&mut net, 3, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", a.lines), format!("{:?}", n.lines), "trio: eliminated propnet perft");
    assert_traces_agree(&mut prover, &mut net, &seeds, "trio: prover vs eliminated propnet");
    let mut net = propnet_machine(&game, passes);
    assert_traces_agree(&mut prover, &mut net, &seeds, "trio: prover vs propnet");
}

#[test]
fn quarto_is_built_from_eliminated_rules_and_agrees_with_the_prover() {
    let Some(game) = corpus_game("base/quarto.kif") else { return };
    let passes = propel_compiler::propnet::passes::Pass::DEFAULT;
    let c = propel_compiler::pipeline::compile(&game, &test_limits(), passes).unwrap_or_else(|e| panic!("{e}"));
    // As written: 99,042 components and 564,430 edges. Its rules as
    // written ground to 118 times the eliminated rules' literals: that
    // network is not built at all (`pipeline::DECISIVE_LITERALS`).
    assert!(c.net.counts().edges < 20_000, "{:?}", c.net.counts());
    assert!(c.eliminated);
    assert!(c.report[0].stage.contains("as written") && c.report[0].stage.contains("not built"), "{:?}", c.report[0]);
    let mut net = propnet_machine(&game, passes);
    let mut prover = Prover::new(game.clone()).unwrap_or_else(|e| panic!("{e}"));
    let a = perft(&mut prover, 2, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let n = perft(&mut net, 2, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", a.lines), format!("{:?}", n.lines), "quarto: propnet perft");
    assert_traces_agree(&mut prover, &mut net, &[1, 2, 3, 4], "quarto: prover vs propnet");
}

#[test]
fn racer_native_code_comes_from_the_eliminated_network() {
    let Some(game) = corpus_game("base/racer.kif") else { return };
    let p = propel_runtime::build::prepare(&game, &test_build_options()).unwrap_or_else(|e| panic!("{e}"));
    // The interpreter keeps racer as written (the eliminated network has
    // 39% of the edges and ran it 2.4x slower); native code takes it.
    let (plain, native) = (p.net().counts().edges, p.native_net().counts().edges);
    assert!(native * 10 <= plain * 6, "native {native} edges, interpreter {plain}");
    assert_eq!(p.lower_machine().engines[0].counts().edges, native);
    let (mut jit, _) = p.jit(&game.name).unwrap_or_else(|e| panic!("{e}"));
    let mut prover = Prover::new(game.clone()).unwrap_or_else(|e| panic!("{e}"));
    let a = perft(&mut prover, 1, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let j = perft(&mut jit, 1, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", a.lines), format!("{:?}", j.lines), "racer: jit perft");
    assert_traces_agree(&mut prover, &mut jit, &[1, 2], "racer: prover vs jit");
    // The hybrid walks its tree on the interpreter's network and plays
    // rollouts on the native one: the same states and moves must mean the
    // same to both. A random game on both, state by state.
    let mut net = p.propnet();
    let mut rng = propel_runtime::Rng::new(7);
    let (mut s, mut t) = (net.initial_state().unwrap(), jit.initial_state().unwrap());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for step in 0..40 {
        assert_eq!(s, t, "racer: states differ at step {step}");
        if net.is_terminal(&s).unwrap() {
            break;
        }
        let mut joint = Vec::new();
        for r in 0..net.roles().len() {
            net.legal_moves(&s, r, &mut a).unwrap();
            jit.legal_moves(&t, r, &mut b).unwrap();
            assert_eq!(a, b, "racer: legal moves differ at step {step}");
            joint.push(a[rng.below(a.len())]);
        }
        s = net.next_state(&s, &joint).unwrap();
        t = jit.next_state(&t, &joint).unwrap();
    }
}

#[test]
fn two_thirds_6p_builds_eliminated_after_a_slice_of_the_unlimited_attempt() {
    // `total` as written sums every combination of six bids: the last
    // grounding attempt runs out its slice, the eliminated rules build
    // into 606 edges, and the rules as written get no more time
    // (`pipeline::ELIMINATED_FIRST_EDGES`).
    let Some(game) = corpus_game("base/gt_two_thirds_6p.kif") else { return };
    // The slice is a share of the limit: 30 s of 200 s here, against 9 s
    // of the default 60 s (the eliminated build takes 3 s in a release
    // build, and several times that in a debug one).
    let limits = propel_compiler::ground::GroundLimits { time: std::time::Duration::from_secs(200), ..test_limits() };
    let opts = propel_runtime::build::BuildOptions { limits, ..test_build_options() };
    let p = propel_runtime::build::prepare(&game, &opts).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.net().counts().edges < 1_000, "{:?}", p.net().counts());
    assert!(p.report()[0].stage.contains("stopped at the slice"), "{:?}", p.report()[0]);
    assert!(p.report()[1].stage.contains("eliminated"), "{:?}", p.report()[1]);
    let mut net = p.propnet();
    let mut prover = Prover::new(game.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_traces_agree(&mut prover, &mut net, &[1, 2, 3], "gt_two_thirds_6p: prover vs propnet");
}
