//! Budgets that hold: rule sets built to explode stop within 10% of their
//! time limit (plus a small constant for the process being descheduled on a
//! busy machine), with an error naming the relation and a count; size
//! limits name the relation as written in the file.

use propel_compiler::ground::GroundLimits;
use propel_compiler::pipeline::compile;
use propel_compiler::propnet::passes::Pass;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Paths of length four in a complete graph on `n` nodes: `n^2` facts
/// for `q`, found among `n^5` candidate bindings (3.2e11 for n = 200), so
/// the join runs far beyond any test's time without deriving much.
fn paths(n: usize) -> Arc<propel_compiler::Game> {
    let nodes: String = (0..n).map(|i| format!("(n {i}) ")).collect();
    let text = format!(
        "(role r) (init (c 0)) {nodes}
         (<= (e ?x ?y) (n ?x) (n ?y))
         (<= (q ?a ?f) (e ?a ?b) (e ?b ?c) (e ?c ?d) (e ?d ?f))
         (<= (legal r (go ?a)) (true (c ?a)) (q ?a ?f))
         (<= (next (c ?a)) (does r (go ?a)))
         (<= terminal (true (c 1))) (goal r 100)"
    );
    Arc::new(propel_compiler::load("explode.kif", text).expect("valid"))
}

/// The slack a stop may take beyond 10% of the limit: one check interval
/// and the process waiting for a core on a loaded machine.
const SLACK: Duration = Duration::from_millis(300);

#[test]
fn a_build_stops_within_its_time_limit() {
    let game = paths(200);
    let time = Duration::from_secs(2);
    // Sizes unlimited: only the clock can stop it.
    let limits =
        GroundLimits { max_atoms: usize::MAX, max_rules: usize::MAX, time, cancel: None, always_eliminate: false };
    let t = Instant::now();
    let e = compile(&game, &limits, Pass::DEFAULT).err().expect("cannot finish in 2 s");
    let took = t.elapsed();
    assert!(e.is_timeout(), "{e}");
    assert!(took <= time.mul_f64(1.1) + SLACK, "stopped after {took:?} with a limit of {time:?}");
    assert!(took >= time.mul_f64(0.9), "stopped early, after {took:?}: {e}");
    let text = e.to_string();
    // The relation being derived when the time ran out, and a count.
    assert!(text.contains("time limit") && (text.contains("`q`") || text.contains("`e`")), "{text}");
    assert!(text.contains("so far"), "{text}");
}

#[test]
fn a_size_limit_names_the_relation_and_its_count() {
    // The same game with 50 nodes: 2,500 paths, 312M candidates; with a
    // model of at most 1,000 atoms the limit is the size, not the clock.
    let game = paths(50);
    let limits = GroundLimits { max_atoms: 1_000, time: Duration::from_secs(30), ..Default::default() };
    let t = Instant::now();
    let e = compile(&game, &limits, Pass::DEFAULT).err().expect("over 1,000 atoms");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(!e.is_timeout(), "{e}");
    let text = e.to_string();
    assert!(text.contains("more than 1000"), "{text}");
    // Named as written in the file, whatever rewrite was tried.
    assert!(!text.contains('@') && !text.contains('~'), "{text}");
}

#[test]
fn repeated_derivations_count_once_against_the_size_limit() {
    // `r` holds 100 rows but its one join derives each of them 1,999
    // times (with every other `m` fact: `distinct` keeps `?b` in the
    // join): about 200,000 derivations against a model of at most 20,000
    // atoms, which needs about 2,500 (`n`, `m`, `r`, the bridges). What is
    // derived again is not held, so it builds.
    let n: String = (0..100).map(|i| format!("(n {i}) ")).collect();
    let m: String = (0..2000).map(|i| format!("(m {i}) ")).collect();
    let text = format!(
        "(role p) (init (c 0)) {n} {m}
         (<= (r ?a) (true (c 0)) (n ?a) (m ?b) (distinct ?a ?b))
         (<= (legal p (go ?a)) (true (c 0)) (r ?a))
         (<= (next (c ?a)) (does p (go ?a)))
         (<= terminal (true (c 1))) (goal p 100)"
    );
    let game = Arc::new(propel_compiler::load("repeats.kif", text).expect("valid"));
    let limits = GroundLimits { max_atoms: 20_000, time: Duration::from_secs(30), ..Default::default() };
    let compiled = compile(&game, &limits, Pass::DEFAULT).expect("100 distinct rows fit in 20,000 atoms");
    assert_eq!(compiled.net.inputs.len(), 100);
    // With room for the facts but not for `r`, the error names it.
    let limits = GroundLimits { max_atoms: 2_150, time: Duration::from_secs(30), ..Default::default() };
    let e = compile(&game, &limits, Pass::DEFAULT).err().expect("over 2,150 atoms");
    assert!(e.to_string().contains("more than 2150 facts derived (`r` has"), "{e}");
}

/// A pass over a large network gives up when the deadline passes: the
/// build stopped 60 s late in `constants` on gt_two_thirds_6p (6.4M
/// components, a cycle of a million gates) before passes looked at the
/// clock inside. Here the deadline has passed before the pass starts, and
/// every pass must notice it within its first few thousand components.
#[test]
fn a_pass_stops_at_its_deadline() {
    use propel_compiler::propnet::passes::{apply_until, Pass};
    use propel_compiler::Deadline;
    let limits = GroundLimits { time: Duration::from_secs(600), ..Default::default() };
    // 8,100 moves over 90 numbers: as many legal gates, no passes yet.
    let game = {
        let nodes: String = (0..90).map(|i| format!("(n {i}) ")).collect();
        let text = format!(
            "(role r) (init (c 0)) {nodes}
             (<= (legal r (go ?a ?b)) (true (c ?a)) (n ?a) (n ?b))
             (<= (next (c ?b)) (does r (go ?a ?b)))
             (<= terminal (true (c 1))) (goal r 100)"
        );
        Arc::new(propel_compiler::load("wide.kif", text).expect("valid"))
    };
    let net = compile(&game, &limits, &[]).expect("builds").net;
    assert!(net.len() > 8_000, "{} components", net.len());
    let past = Deadline::at(Instant::now() - Duration::from_millis(1));
    for p in [Pass::Constants, Pass::Dedup, Pass::Flatten, Pass::Factor, Pass::Complement, Pass::NotFold] {
        assert!(apply_until(net.clone(), p, &past).is_none(), "{} ran past its deadline", p.name());
        assert!(apply_until(net.clone(), p, &Deadline::none()).is_some(), "{}", p.name());
    }
}
