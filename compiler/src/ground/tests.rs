use super::*;

fn ground_now(game: &Arc<Game>, limits: &GroundLimits) -> Result<Grounded, GroundError> {
    ground(game, limits, &limits.deadline(Instant::now()))
}

#[test]
fn grounds_a_small_game() {
    let game = Arc::new(
        crate::load(
            "t.kif",
            "(role r) (n 1) (n 2) (init (at 1))
             (<= (legal r (go ?y)) (true (at ?x)) (n ?y) (distinct ?x ?y))
             (<= (next (at ?y)) (does r (go ?y)))
             (<= terminal (true (at 2)) (not (true (at 1)))) (goal r 100)",
        )
        .unwrap(),
    );
    let g = ground_now(&game, &GroundLimits::default()).unwrap();
    let trues: Vec<String> = g
        .atoms
        .iter()
        .enumerate()
        .filter(|(_, a)| a.rel == RelId::TRUE)
        .map(|(i, _)| g.atom_kif(AtomId(i as u32)))
        .collect();
    assert_eq!(trues.len(), 2, "{trues:?}");
    // legal(r, go 2) from at 1 and legal(r, go 1) from at 2: distinct decided.
    let legal = g.rules.iter().filter(|r| g.atom(r.head).rel == RelId::LEGAL).count();
    assert_eq!(legal, 2);
    // terminal keeps its negation: (at 1) is in the model.
    let t = g.rules.iter().find(|r| g.atom(r.head).rel == RelId::TERMINAL).unwrap();
    assert_eq!(g.neg(t).len(), 1);
}

#[test]
fn a_relation_split_over_strata_feeds_later_rounds() {
    // `(v 1)` reads `(v 2)`: one relation, two strata (split by the
    // constant). `(v 2)` is found only in the second round, once `true`
    // holds the initial state; the stratum of `(v 1)` must see it then,
    // or `(next (b 0))` and the base `(b 0)` go missing (a random game
    // found this: the propnet never reached `(b 0)`).
    let game = Arc::new(
        crate::load(
            "t.kif",
            "(role r) (init (b 1)) (<= terminal (true (b 0))) (<= (legal ?r noop) (role ?r))
             (<= (goal ?r 0) (role ?r)) (<= (next (b 0)) (v 1))
             (<= (v 2) (true (b 1))) (<= (v 1) (v 2) (not (true (b 0))))",
        )
        .unwrap(),
    );
    let g = ground_now(&game, &GroundLimits::default()).unwrap();
    let heads: Vec<String> = g.rules.iter().map(|r| g.atom_kif(r.head)).collect();
    assert!(heads.iter().any(|h| h == "(next (b 0))"), "{heads:?}");
    let net = crate::propnet::from_ground(&g).unwrap();
    let mut bases: Vec<&str> = net.bases.iter().map(|b| b.name.as_str()).collect();
    bases.sort_unstable();
    assert_eq!(bases, ["(b 0)", "(b 1)"]);
}

#[test]
fn budget_errors_name_the_relation() {
    // A counter without bound: the state grows forever.
    let game = Arc::new(
        crate::load(
            "t.kif",
            "(role r) (init (c 0)) (<= (legal r go) (true (c ?x)))
             (<= (next (c (s ?x))) (true (c ?x))) (<= terminal (true (c 0))) (goal r 1)",
        )
        .unwrap(),
    );
    let e = ground_now(&game, &GroundLimits::default()).err().expect("unbounded");
    assert!(e.to_string().contains("deeper"), "{e}");
    // A helper only called with bound arguments is grounded on demand.
    let game = Arc::new(
        crate::load(
            "t.kif",
            "(role r) (init (c 0)) (n 0) (<= (n (s ?x)) (n ?x))
             (<= (legal r go) (true (c ?x)) (n ?x))
             (<= (next (c ?x)) (true (c ?x))) (<= terminal (true (c 0))) (goal r 1)",
        )
        .unwrap(),
    );
    let g = ground_now(&game, &GroundLimits { max_atoms: 10_000, ..Default::default() }).unwrap();
    assert_eq!(g.demand, ["n"]);
}

#[test]
fn a_rewrite_whose_demand_is_as_large_is_undone() {
    // `legal` asks for `pair` (state-dependent: a static relation is
    // not rewritten for an attempt's row limit) at every pair of
    // numbers: its demand is the whole relation, and the rewrite holds it twice (the calls and
    // the answers), over the atom limit where the rules as written fit.
    let nums: String = (0..60).map(|i| format!("(num {i}) ")).collect();
    let text = format!(
        "(role r) (init (c 0)) {nums}
         (<= (pair ?x ?y) (true (c 0)) (num ?x) (num ?y))
         (<= (legal r go) (true (c 0)) (num ?a) (num ?b) (pair ?a ?b))
         (<= (next (c ?x)) (true (c ?x))) (<= terminal (true (c 1))) (goal r 1)"
    );
    let game = Arc::new(crate::load("t.kif", text.as_str()).unwrap());
    let limits = GroundLimits { max_atoms: 5_000, ..Default::default() };
    let g = ground_attempts(
        &game,
        &limits,
        &limits.deadline(Instant::now()),
        Attempt { rows: 2_000, ..ATTEMPT },
        None,
        &Learned::default(),
    )
    .expect("the rules as written fit");
    assert!(g.demand.is_empty(), "{:?}", g.demand);
    assert_eq!(g.atoms.iter().filter(|a| a.rel == game.relation_by_name("pair").unwrap()).count(), 3_600);
}

#[test]
fn a_rewrite_undone_once_is_not_tried_by_the_next_grounding_of_the_game() {
    let nums: String = (0..60).map(|i| format!("(num {i}) ")).collect();
    let text = format!(
        "(role r) (init (c 0)) {nums}
         (<= (pair ?x ?y) (true (c 0)) (num ?x) (num ?y))
         (<= (legal r go) (true (c 0)) (num ?a) (num ?b) (pair ?a ?b))
         (<= (next (c ?x)) (true (c ?x))) (<= terminal (true (c 1))) (goal r 1)"
    );
    let game = Arc::new(crate::load("t.kif", text.as_str()).unwrap());
    let limits = GroundLimits { max_atoms: 5_000, ..Default::default() };
    let attempt = Attempt { rows: 2_000, ..ATTEMPT };
    let learned = Learned::default();
    let run = |learned: &Learned| {
        ground_attempts(&game, &limits, &limits.deadline(Instant::now()), attempt, None, learned).expect("fits")
    };
    let first = run(&learned);
    assert!(learned.hopeless.borrow().iter().any(|n| n == "pair"), "{:?}", learned.hopeless.borrow());
    // The second grounding starts with `pair` undone: it builds the
    // same atoms without trying (and undoing) the rewrite again.
    let second = run(&learned);
    assert_eq!(second.atoms.len(), first.atoms.len());
    assert!(second.attempts < first.attempts, "{} then {} attempts", first.attempts, second.attempts);
    assert!(learned.of(&game).contains(&game.relation_by_name("pair").unwrap()));
}

#[test]
fn an_attempt_stops_at_a_join_that_looks_at_too_many_rows() {
    // `near` looks at all 60 x 60 pairs of numbers for the 178 that
    // are not `far` apart: the first attempt stops at that join,
    // naming it; the last attempt, with no limits of its own, builds it.
    let nums: String = (0..60).map(|i| format!("(num {i}) ")).collect();
    let far: String = (0..60i32)
        .flat_map(|i| (0..60i32).filter(move |j| (i - j).abs() > 1).map(move |j| format!("(far {i} {j}) ")))
        .collect();
    let text = format!(
        "(role r) (init (c 0)) {nums} {far}
         (<= (near ?x ?y) (true (c 0)) (num ?x) (num ?y) (not (far ?x ?y)))
         (<= (legal r (go ?x ?y)) (near ?x ?y))
         (<= (next (c 1)) (does r (go ?x ?y))) (<= terminal (true (c 1))) (goal r 1)"
    );
    let game = Arc::new(crate::load("t.kif", text.as_str()).unwrap());
    let limits = GroundLimits::default();
    let deadline = limits.deadline(Instant::now());
    let attempt = Attempt { rows: usize::MAX, join_steps: 2_000, steps: u64::MAX };
    let stopped = ground_once(&game, &limits, deadline.clone(), Some(attempt)).err().map(|(e, _)| e);
    assert!(
        matches!(&stopped, Some(GroundError::Model(EvalError::TooMuchWork { relation, limit: 2_000, .. })) if relation == "near"),
        "{stopped:?}"
    );
    let g = ground_attempts(&game, &limits, &deadline, attempt, None, &Learned::default())
        .expect("the last attempt has no join limit");
    assert_eq!(g.atoms.iter().filter(|a| a.rel == RelId::LEGAL).count(), 178);
}

#[test]
fn an_attempt_stops_at_its_work_not_its_clock() {
    // Three joins of the same size, each under the per-join limit, add
    // up past the attempt's: the attempt stops on the count (whatever
    // the clock says: the deadline is far), and the last one, with no
    // such limit, finishes.
    let nums: String = (0..30).map(|i| format!("(num {i}) ")).collect();
    let text = format!(
        "(role r) (init (c 0)) {nums}
         (<= (p1 ?x ?y) (true (c 0)) (num ?x) (num ?y))
         (<= (p2 ?x ?y) (p1 ?x ?y) (num ?x))
         (<= (p3 ?x ?y) (p2 ?x ?y) (num ?y))
         (<= (legal r (go ?x ?y)) (p3 ?x ?y))
         (<= (next (c 1)) (does r (go ?x ?y))) (<= terminal (true (c 1))) (goal r 1)"
    );
    let game = Arc::new(crate::load("t.kif", text.as_str()).unwrap());
    let limits = GroundLimits::default();
    let deadline = limits.deadline(Instant::now());
    let each = |steps| {
        let attempt = Attempt { rows: usize::MAX, join_steps: u64::MAX, steps };
        ground_once(&game, &limits, deadline.clone(), Some(attempt)).err().map(|(e, _)| e)
    };
    assert!(each(u64::MAX).is_none(), "the rules ground");
    let stopped = each(2_000);
    assert!(matches!(&stopped, Some(GroundError::Model(EvalError::TooMuchWork { limit: 2_000, .. }))), "{stopped:?}");
    let attempt = Attempt { rows: usize::MAX, join_steps: 1_500, steps: 2_000 };
    let g = ground_attempts(&game, &limits, &deadline, attempt, None, &Learned::default())
        .expect("the last attempt has no step limit");
    assert_eq!(g.atoms.iter().filter(|a| a.rel == RelId::LEGAL).count(), 900);
}

#[test]
fn a_static_negation_bounds_the_relaxed_model() {
    // urmAdd's line numbers: a counter up to `(max 10)` over a `succ`
    // of 200 numbers. Ignoring the negation, `line` would run to 200,
    // and the moves with it (200^2 instead of 10^2).
    let succ: String = (0..200).map(|i| format!("(succ {i} {}) ", i + 1)).collect();
    let text = format!(
        "(role r) (init (c 0)) (max 10) (line 1) {succ}
         (<= (line ?m) (line ?n) (not (max ?n)) (succ ?n ?m))
         (<= (legal r (jump ?x ?y)) (true (c 0)) (line ?x) (line ?y))
         (<= (next (c ?x)) (does r (jump ?x ?y)))
         (<= terminal (true (c 5)) (not (line 11))) (goal r 1)"
    );
    let game = Arc::new(crate::load("t.kif", text.as_str()).unwrap());
    let g = ground_now(&game, &GroundLimits::default()).unwrap();
    let count = |rel: RelId| g.atoms.iter().filter(|a| a.rel == rel).count();
    assert_eq!(count(RelId::LEGAL), 100);
    assert_eq!(count(RelId::TRUE), 11);
    // `(line 11)` is never derived: its negation holds, so the terminal
    // rule has no negative literal left.
    let t = g.rules.iter().find(|r| g.atom(r.head).rel == RelId::TERMINAL).unwrap();
    assert_eq!(g.neg(t).len(), 0);
}

#[test]
fn a_raised_cancel_flag_stops_grounding() {
    // 200^3 legal moves: over the size limits, after a while.
    let nums: String = (0..200).map(|i| format!("(num {i}) ")).collect();
    let text = format!(
        "(role r) (init (c 0)) {nums}
         (<= (legal r (go ?x ?y ?z)) (num ?x) (num ?y) (num ?z))
         (<= (next (c ?x)) (true (c ?x))) (<= terminal (true (c 1))) (goal r 1)"
    );
    let game = Arc::new(crate::load("t.kif", text.as_str()).unwrap());
    let flag = Arc::new(AtomicBool::new(true));
    let limits = GroundLimits { cancel: Some(flag), ..Default::default() };
    let t = Instant::now();
    let e = ground_now(&game, &limits).err().expect("cancelled");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(e.to_string().contains("time limit"), "{e}");
}
