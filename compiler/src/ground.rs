//! Grounding: which ground atoms can ever hold, and every rule instantiated
//! over them.
//!
//! 1. A relaxed fixpoint: the rules evaluated bottom-up with negation
//!    ignored, plus `true ⇐ init`, `true ⇐ next` and `does ⇐ legal`. What
//!    it derives over-approximates every atom that can hold in any
//!    reachable state (and every move that can be played).
//! 2. Instantiation: each clause an output needs is matched against that
//!    model; `distinct` is decided there and then, a negated atom that the
//!    model never derives is dropped (it always holds), the others stay as
//!    negations in the ground rule.
//!
//! Both steps run on the shared evaluator ([`crate::eval`]): semi-naive,
//! indexed, iterative. Budgets on atoms, rules and time give errors that
//! name the relation that exploded. When one does, the relations written
//! for top-down provers are rewritten with magic sets ([`crate::magic`])
//! and grounding starts again.

use crate::deadline::Deadline;
use crate::eval::{Budget, Db, EvalError, Meter, Negation, Program, Scratch, Steps};
use crate::game::{Clause, Game, Layer, Lit, Pat, RelId};
use crate::names::describe;
use crate::term::{TermId, TermPool, TooDeep};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A ground atom: a relation and its ground arguments.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroundAtom {
    pub rel: RelId,
    pub args: Box<[TermId]>,
}

/// Index of an atom in [`Grounded::atoms`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AtomId(pub u32);

/// One ground rule: `head ⇐ pos... ∧ ¬neg...`.
#[derive(Clone, Copy, Debug)]
pub struct GroundRule {
    pub head: AtomId,
    start: u32,
    npos: u32,
    nneg: u32,
}

/// Limits on grounding, and on the whole build it is part of.
#[derive(Clone, Debug)]
pub struct GroundLimits {
    /// Atoms in the relaxed model.
    pub max_atoms: usize,
    /// Ground rules.
    pub max_rules: usize,
    /// Time for the whole build: grounding (every attempt), the network,
    /// its passes, and with variable elimination both builds
    /// ([`crate::pipeline::compile`]).
    pub time: Duration,
    /// Raised by another thread to stop grounding at once (a match's
    /// abort); grounding then fails as if its time had run out.
    pub cancel: Option<Arc<AtomicBool>>,
    /// With variable elimination, keep the eliminated network whenever it
    /// builds, not only when it has at most a quarter of the edges (for
    /// measuring; [`crate::pipeline::compile`]).
    pub always_eliminate: bool,
}

impl Default for GroundLimits {
    fn default() -> Self {
        GroundLimits {
            max_atoms: 5_000_000,
            max_rules: 10_000_000,
            time: Duration::from_secs(60),
            cancel: None,
            always_eliminate: false,
        }
    }
}

impl GroundLimits {
    /// When a build started at `start` must stop.
    pub fn deadline(&self, start: Instant) -> Deadline {
        Deadline::at(start + self.time).with_cancel(self.cancel.clone())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroundError {
    #[error("grounding gave up: {0}")]
    Model(EvalError),
    #[error("grounding gave up: more than {limit} ground rules ({} has {count} instances)", describe(relation))]
    TooManyRules { relation: String, count: usize, limit: usize },
    #[error("grounding gave up: time limit reached while instantiating {} ({rules} rules so far)", describe(relation))]
    Timeout { relation: String, rules: usize },
    #[error(
        "grounding gave up: rules build terms nested deeper than {} levels (in {})",
        crate::term::MAX_TERM_DEPTH,
        describe(relation)
    )]
    TooDeep { relation: String },
}

impl GroundError {
    /// The relation named by the error (its internal name).
    pub fn relation(&self) -> &str {
        match self {
            GroundError::Model(e) => e.relation(),
            GroundError::TooManyRules { relation, .. }
            | GroundError::Timeout { relation, .. }
            | GroundError::TooDeep { relation } => relation,
        }
    }

    /// Whether the time ran out (or the build was cancelled), rather than
    /// a size limit.
    pub fn is_timeout(&self) -> bool {
        matches!(self, GroundError::Timeout { .. } | GroundError::Model(EvalError::Timeout { .. }))
    }
}

/// A grounded game.
pub struct Grounded {
    /// The rules that were grounded (the game itself, or its magic-set
    /// rewrite when that was needed).
    pub game: Arc<Game>,
    pub pool: TermPool,
    pub atoms: Vec<GroundAtom>,
    pub rules: Vec<GroundRule>,
    lits: Vec<AtomId>,
    index: FxHashMap<(RelId, Box<[TermId]>), AtomId>,
    /// Relations rewritten for demand before grounding succeeded.
    pub demand: Vec<String>,
    /// Atoms in the relaxed model (all relations).
    pub model_atoms: usize,
    /// Grounding attempts it took (the last one succeeded).
    pub attempts: u32,
    pub seconds: f64,
}

impl Grounded {
    /// The share of the ground rules' literals in rules whose head
    /// relation is, by [`crate::project::base_name`], one of `names`.
    pub fn literal_share(&self, names: &[String]) -> f64 {
        let game = &self.game;
        let mut of_rel: FxHashMap<RelId, bool> = FxHashMap::default();
        let (mut total, mut part) = (0usize, 0usize);
        for r in &self.rules {
            let rel = self.atoms[r.head.0 as usize].rel;
            let hit = *of_rel.entry(rel).or_insert_with(|| {
                let base = crate::project::base_name(game.rel_name(rel));
                names.iter().any(|n| n == base)
            });
            let n = (r.npos + r.nneg) as usize;
            total += n;
            if hit {
                part += n;
            }
        }
        if total == 0 {
            0.0
        } else {
            part as f64 / total as f64
        }
    }

    /// How many body literals the ground rules hold in all.
    pub fn literals(&self) -> usize {
        self.lits.len()
    }

    pub fn pos(&self, r: &GroundRule) -> &[AtomId] {
        &self.lits[r.start as usize..(r.start + r.npos) as usize]
    }

    pub fn neg(&self, r: &GroundRule) -> &[AtomId] {
        let s = (r.start + r.npos) as usize;
        &self.lits[s..s + r.nneg as usize]
    }

    pub fn atom(&self, a: AtomId) -> &GroundAtom {
        &self.atoms[a.0 as usize]
    }

    pub fn find(&self, rel: RelId, args: &[TermId]) -> Option<AtomId> {
        self.index.get(&(rel, Box::from(args))).copied()
    }

    /// Canonical KIF of an atom's arguments, as `true`/`does` use them: the
    /// single argument of a unary relation, `(rel args...)` otherwise.
    pub fn atom_kif(&self, a: AtomId) -> String {
        let at = self.atom(a);
        let syms = &self.game.symbols;
        let mut s = String::new();
        if at.args.is_empty() {
            s.push_str(self.game.rel_name(at.rel));
        } else {
            s.push('(');
            s.push_str(self.game.rel_name(at.rel));
            for &t in at.args.iter() {
                s.push(' ');
                self.pool.write_kif(t, syms, &mut s);
            }
            s.push(')');
        }
        s
    }

    fn intern(&mut self, rel: RelId, args: &[TermId]) -> AtomId {
        if let Some(&a) = self.index.get(&(rel, Box::from(args))) {
            return a;
        }
        let id = AtomId(self.atoms.len() as u32);
        self.atoms.push(GroundAtom { rel, args: args.into() });
        self.index.insert((rel, args.into()), id);
        id
    }
}

/// A pattern's ground term under `bind` (every variable bound).
fn instantiate(pool: &mut TermPool, p: &Pat, bind: &[TermId]) -> Result<TermId, TooDeep> {
    match p {
        Pat::Var(v) => Ok(bind[*v as usize]),
        Pat::Const(s) => Ok(pool.constant(*s)),
        Pat::App(f, args) => {
            let mut ids: SmallVec<[TermId; 8]> = SmallVec::with_capacity(args.len());
            for a in args.iter() {
                ids.push(instantiate(pool, a, bind)?);
            }
            pool.app(*f, &ids)
        }
    }
}

/// Relations at least this large when grounding fails may be rewritten.
pub const REWRITE_ROWS: usize = 20_000;

/// Where an attempt stops while a rewrite could still follow it.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    /// Rows of one relation of the relaxed model.
    rows: usize,
    /// Join steps of one join (candidate rows looked at): gt_two_thirds_4p's
    /// `total` looked at 210M to derive 205k rows (401 distinct), 12 s of
    /// a first attempt that the eliminated rules then replaced anyway, and
    /// stanford-iggp reversi's `totalcount` 55M. In the corpus no attempt
    /// that finished took more than 11M in one join (196M in all: so the
    /// limit is per join). Counted, not timed: the same on a busy machine.
    join_steps: u64,
    /// Join steps of the whole relaxed model. This, not a share of the
    /// clock, is what stops a slow attempt, so that an attempt stops at the
    /// same point on a busy machine as on a quiet one: alexChess.v1's
    /// finishes after 196M join steps, 11 s on a quiet 2-core machine, and
    /// ran past its 14.4 s share of the clock (40% of the first build's
    /// 60%) with both cores busy.
    steps: u64,
}

const ATTEMPT: Attempt = Attempt { rows: 250_000, join_steps: 50_000_000, steps: 400_000_000 };

/// Share of the time a non-last attempt may use: a backstop behind
/// [`Attempt::steps`] (which comes first on a quiet machine, at about 22 s
/// of a 60 s budget) for the work after the model, which is not counted.
const ATTEMPT_SHARE: f64 = 0.75;

/// Grounds `game`'s rules as they are, rewriting relations for demand
/// when one explodes; stops when `deadline` passes. (The pipeline applies
/// projection, [`crate::project::project_locals`], before.)
///
/// While a rewrite could still follow, an attempt stops after 400M join
/// steps in all (counted, so at the same point on a busy machine; or
/// after 75% of the time there was at the start). When it fails, the
/// relation named by a size error and the large relations of the relaxed
/// model (at least [`REWRITE_ROWS`] rows) are offered to the magic-set
/// rewrite (with their callers). The last attempt gets all the time left.
pub fn ground(game: &Arc<Game>, limits: &GroundLimits, deadline: &Deadline) -> Result<Grounded, GroundError> {
    ground_attempts(game, limits, deadline, ATTEMPT, None, &Learned::default())
}

/// What one grounding of a game learned for the groundings of the same
/// game that follow (its eliminated rules, a build with questions): the
/// relations whose demand rewrite asked for about as much as the
/// relations in full, by name as written. Later groundings do not try
/// their rewrite again: on the chess family that attempt takes 9-16 s
/// each time before it is undone.
#[derive(Debug, Default)]
pub struct Learned {
    hopeless: std::cell::RefCell<Vec<String>>,
}

impl Learned {
    fn add(&self, names: impl Iterator<Item = String>) {
        let mut h = self.hopeless.borrow_mut();
        for n in names {
            if !h.contains(&n) {
                h.push(n);
            }
        }
    }

    /// The relations of `game` learned hopeless.
    fn of(&self, game: &Game) -> Vec<RelId> {
        self.hopeless.borrow().iter().filter_map(|n| game.relation_by_name(n)).collect()
    }
}

/// [`ground`], starting from what earlier groundings of the game learned,
/// and adding what this one learns.
pub fn ground_learning(
    game: &Arc<Game>,
    limits: &GroundLimits,
    deadline: &Deadline,
    learned: &Learned,
) -> Result<Grounded, GroundError> {
    ground_attempts(game, limits, deadline, ATTEMPT, None, learned)
}

/// [`ground`] whose last attempt (the one without a row limit) first gets
/// `slice` of time only; when that runs out, `on_slow()` decides whether
/// it runs again with all the time left (true) or grounding stops there
/// (false, with the timeout).
pub fn ground_unless_slow(
    game: &Arc<Game>,
    limits: &GroundLimits,
    deadline: &Deadline,
    slice: Duration,
    on_slow: &mut dyn FnMut() -> bool,
    learned: &Learned,
) -> Result<Grounded, GroundError> {
    ground_attempts(game, limits, deadline, ATTEMPT, Some((slice, on_slow)), learned)
}

/// [`ground_unless_slow`] with attempts stopped at `attempt` (tests use
/// small models).
fn ground_attempts(
    game: &Arc<Game>,
    limits: &GroundLimits,
    deadline: &Deadline,
    attempt: Attempt,
    mut slow: Option<(Duration, &mut dyn FnMut() -> bool)>,
    learned: &Learned,
) -> Result<Grounded, GroundError> {
    let start = Instant::now();
    let share = deadline.time().map(|t| t.saturating_duration_since(start).mul_f64(ATTEMPT_SHARE));
    let mut demand: Vec<RelId> = Vec::new();
    let mut undone: Vec<RelId> = learned.of(game);
    let mut attempts = 0u32;
    // The relations the current rewrite computes on demand (`demand`,
    // their callers, and what the rewrite passed demand up to).
    let mut covered: Vec<RelId> = Vec::new();
    let mut current = game.clone();
    let mut last_chance = false;
    // Whether the current attempt is the last one cut to its slice.
    let mut sliced = false;
    loop {
        let now = Instant::now();
        let attempt_deadline = match (share, &slow) {
            (Some(share), _) if !last_chance => deadline.min(now + share),
            (_, Some((slice, _))) if sliced => deadline.min(now + *slice),
            _ => deadline.clone(),
        };
        attempts += 1;
        let (e, largest) = match ground_once(&current, limits, attempt_deadline, (!last_chance).then_some(attempt)) {
            Ok(mut g) => {
                g.demand = demand.iter().map(|&r| game.rel_name(r).to_string()).collect();
                g.seconds = start.elapsed().as_secs_f64();
                g.attempts = attempts;
                return Ok(g);
            }
            Err(failure) => failure,
        };
        tracing::debug!(error = %e, "grounding: attempt failed");
        if sliced && e.is_timeout() && !deadline.passed() {
            sliced = false;
            if let Some((_, on_slow)) = slow.take() {
                if on_slow() {
                    continue;
                }
            }
            return Err(e);
        }
        // The last chance ends it. (A static relation left in full for the
        // attempts' row limit that then passes the build's own limits is
        // not rewritten then: on mummymaze1p that spent the first build's
        // whole share, 35 s, where giving up took 1.4 s.)
        if last_chance || deadline.passed() || matches!(e, GroundError::TooDeep { .. }) {
            return Err(e);
        }
        let base_of = |name: &str| -> Option<RelId> {
            let name = name.strip_prefix(crate::magic::PREFIX).unwrap_or(name);
            game.relation_by_name(name.split('@').next().unwrap_or(name))
        };
        // A static relation is computed once and read as constants; asked
        // for from state-dependent callers, its rewrite depends on the
        // state and becomes part of the network. So it is rewritten only
        // when it cannot be computed in full (the build's own limits), not
        // for passing an attempt's row limit: gt_two_thirds_6p's static
        // `absDiff` (250k rows) rewritten that way made 6.4M components.
        let whole_budget = matches!(
            e,
            GroundError::Model(EvalError::TooManyFacts { .. } | EvalError::TermTooDeep { .. })
                | GroundError::TooManyRules { .. }
        );
        let is_static = |r: RelId| game.relations[r.index()].layer == Layer::Static;
        let tried = |r: RelId, demand: &[RelId], covered: &[RelId], undone: &[RelId]| {
            demand.contains(&r) || covered.contains(&r) || undone.contains(&r)
        };
        // A rewrite whose demand alone passes the attempt's size or time
        // limit asks for about as much as the relations in full
        // (gt_two_thirds' `sum` of every pair of bids). Rewrites pass
        // demand on to their callers and callees, so every relation the
        // rewrite covers is undone and none is tried again: what follows
        // runs on the rules as written.
        let demanded = e.relation().starts_with(crate::magic::PREFIX).then(|| base_of(e.relation())).flatten();
        if demanded.is_some_and(|r| covered.contains(&r)) {
            tracing::info!(relations = ?covered.iter().map(|&r| game.rel_name(r)).collect::<Vec<_>>(),
                "grounding: demand as large as the relations: computing them in full again");
            undone.append(&mut covered);
            undone.append(&mut demand);
            learned.add(undone.iter().map(|&r| crate::names::base_name(game.rel_name(r)).to_string()));
            current = game.clone();
        }
        // A join that looked at too many rows (`ATTEMPT.join_steps`) is
        // treated as a timeout: its relation is not offered by name (on
        // stanford-iggp reversi the rewrite of `totalcount` took the same
        // join steps again), the large relations are.
        let mut candidates: Vec<String> = Vec::new();
        if matches!(
            e,
            GroundError::Model(
                EvalError::TooManyFacts { .. }
                    | EvalError::TooManyRows { .. }
                    | EvalError::TooManyDerivations { .. }
                    | EvalError::TermTooDeep { .. }
            ) | GroundError::TooManyRules { .. }
        ) {
            candidates.push(e.relation().to_string());
        }
        candidates.extend(largest.into_iter().filter(|(n, _)| *n >= REWRITE_ROWS).map(|(_, r)| r));
        let mut rewritten = false;
        for name in candidates.iter().filter(|n| !n.starts_with(crate::magic::PREFIX)) {
            let Some(r) = base_of(name) else { continue };
            if tried(r, &demand, &covered, &undone) {
                continue;
            }
            if is_static(r) && !whole_budget {
                tracing::debug!(relation = game.rel_name(r), "grounding: static, computed in full");
                continue;
            }
            demand.push(r);
            match crate::magic::demand_transform(game, &crate::magic::with_callers(game, &demand)) {
                // A rewrite that would bring back a relation undone before
                // is not made.
                Some(rw) if rw.relations.contains(&r) && !rw.relations.iter().any(|x| undone.contains(x)) => {
                    tracing::info!(relation = game.rel_name(r), "grounding: computing on demand");
                    covered = rw.relations.clone();
                    current = Arc::new(rw.game);
                    rewritten = true;
                    break;
                }
                _ => {
                    tracing::debug!(relation = game.rel_name(r), "grounding: no rewrite computes it on demand");
                    demand.pop();
                }
            }
        }
        if !rewritten {
            // Nothing more to rewrite: one last try with all the time left
            // (first cut to a slice when asked).
            last_chance = true;
            sliced = slow.is_some();
        }
    }
}

/// The relaxed program: the game's clauses without their negative
/// literals on relations that depend on the state (clause `i` is game
/// clause `i`), in the game's strata. A static relation is the same in
/// every state and is computed exactly (its rules can only negate static
/// relations, of lower strata), so its negation is kept: without it a
/// counter bounded by `(not (max ?n))` runs to the end of `succ`, and
/// every rule built on it with it. Static relations are planned by their
/// real sizes; state-dependent ones grow round by round, so they are
/// planned with neutral estimates.
fn relaxed(game: &Game) -> (Vec<Clause>, Vec<(String, usize, Layer)>) {
    let clauses: Vec<Clause> = game
        .clauses
        .iter()
        .map(|c| Clause {
            head: c.head.clone(),
            body: c
                .body
                .iter()
                .filter(|l| !matches!(l, Lit::Neg(a) if game.relations[a.rel.index()].layer != Layer::Static))
                .cloned()
                .collect(),
            var_names: c.var_names.clone(),
            loc: c.loc.clone(),
        })
        .collect();
    let rels = game.relations.iter().map(|r| (game.symbols.name(r.name).to_string(), r.arity, r.layer)).collect();
    (clauses, rels)
}

/// Copies the rows of unary `from` into unary `to`; true if any was new.
fn bridge(db: &mut Db, pool: &TermPool, from: RelId, to: RelId) -> bool {
    let rows: Vec<Vec<TermId>> = db.rel(from).rows().map(|r| r.to_vec()).collect();
    let mut added = false;
    for r in rows {
        added |= db.rel_mut(to).insert(&r, pool);
    }
    added
}

/// One grounding attempt. On failure, also the largest relations of the
/// relaxed model (the likely culprits), largest first.
fn ground_once(
    game: &Arc<Game>,
    limits: &GroundLimits,
    deadline: Deadline,
    attempt: Option<Attempt>,
) -> Result<Grounded, (GroundError, Vec<(usize, String)>)> {
    let (clauses, rels) = relaxed(game);
    let (mut program, mut db) = Program::new(rels, &clauses, &game.strata);
    let mut pool = TermPool::new();
    let mut budget = Budget::new(limits.max_atoms, deadline.clone());
    if let Some(a) = attempt {
        budget.max_rows = a.rows;
        budget.max_join_steps = a.join_steps;
        budget.steps = Steps::limited(a.steps);
    }
    let mut scratch = Scratch::default();
    // Rounds: every stratum in dependency order (each re-run only on what
    // its inputs gained since its last run), then `true ⇐ init, next` and
    // `does ⇐ legal`; until those add nothing.
    // Strata no output needs (helpers of the `base`/`input` hints, unused
    // relations) are never evaluated.
    let needed = game.needed_relations();
    let wanted: Vec<usize> = (0..program.strata().len())
        .filter(|&si| {
            program.strata()[si].rels.iter().any(|r| needed[r.index()] || *r == RelId::TRUE || *r == RelId::DOES)
        })
        .collect();
    loop {
        for &si in &wanted {
            if let Err(e) =
                program.eval_stratum_incremental(si, &mut db, &mut pool, Negation::Check, &mut budget, &mut scratch)
            {
                let mut sizes: Vec<(usize, &str)> =
                    db.relations().map(|(r, rel)| (rel.len(), program.relation_name(r))).filter(|x| x.0 > 0).collect();
                sizes.sort_unstable_by(|a, b| b.cmp(a));
                let top: Vec<String> = sizes.iter().take(5).map(|(n, r)| format!("{r} {n}")).collect();
                tracing::info!(
                    steps = budget.steps.done,
                    last = attempt.is_none(),
                    "relaxed model when grounding stopped, largest relations: {}",
                    top.join(", ")
                );
                return Err((GroundError::Model(e), sizes.iter().take(8).map(|&(n, r)| (n, r.to_string())).collect()));
            }
        }
        let mut added = bridge(&mut db, &pool, RelId::INIT, RelId::TRUE);
        added |= bridge(&mut db, &pool, RelId::NEXT, RelId::TRUE);
        let legal: Vec<Vec<TermId>> = db.rel(RelId::LEGAL).rows().map(|r| r.to_vec()).collect();
        for r in legal {
            added |= db.rel_mut(RelId::DOES).insert(&r, &pool);
        }
        if !added {
            break;
        }
        if deadline.passed() {
            let e = EvalError::Timeout { relation: "true".into(), rows: db.total_rows() };
            return Err((GroundError::Model(e), Vec::new()));
        }
    }
    let model_atoms = db.total_rows();
    tracing::debug!(
        steps = budget.steps.done,
        atoms = model_atoms,
        last = attempt.is_none(),
        "grounding: relaxed model done"
    );
    let mut g = Grounded {
        game: game.clone(),
        pool,
        atoms: Vec::new(),
        rules: Vec::new(),
        lits: Vec::new(),
        index: FxHashMap::default(),
        demand: Vec::new(),
        model_atoms,
        attempts: 1,
        seconds: 0.0,
    };
    // The state and move atoms exist even if no rule mentions them.
    for rel in [RelId::TRUE, RelId::DOES] {
        let rows: Vec<Vec<TermId>> = db.rel(rel).rows().map(|r| r.to_vec()).collect();
        for r in rows {
            g.intern(rel, &r);
        }
    }
    let needed = game.needed_relations();
    for (ci, c) in game.clauses.iter().enumerate() {
        if !needed[c.head.rel.index()] {
            continue;
        }
        instantiate_clause(&mut g, &mut program, &mut db, ci, c, limits, &deadline).map_err(|e| (e, Vec::new()))?;
    }
    Ok(g)
}

fn instantiate_clause(
    g: &mut Grounded,
    program: &mut Program,
    db: &mut Db,
    ci: usize,
    c: &Clause,
    limits: &GroundLimits,
    deadline: &Deadline,
) -> Result<(), GroundError> {
    let game = g.game.clone();
    let relation = || g_name(&game, c.head.rel);
    let nvars = c.var_names.len();
    let mut bindings: Vec<TermId> = Vec::new();
    let mut count = 0usize;
    let mut overflow = false;
    let max_rules = limits.max_rules.saturating_sub(g.rules.len());
    let g_rules = g.rules.len();
    let mut steps = Steps::unlimited();
    let meter = Meter { deadline, steps: &mut steps };
    program
        .for_each_match(ci, db, &mut g.pool, Negation::Check, meter, &mut |_, bind| {
            bindings.extend_from_slice(&bind[..nvars]);
            count += 1;
            if count > max_rules {
                overflow = true;
                return Err(EvalError::Timeout { relation: String::new(), rows: 0 });
            }
            Ok(())
        })
        .map_err(|e| match e {
            _ if overflow => GroundError::TooManyRules { relation: relation(), count, limit: limits.max_rules },
            EvalError::Timeout { .. } => GroundError::Timeout { relation: relation(), rules: g_rules },
            e => GroundError::Model(e),
        })?;
    let deep = |_| GroundError::TooDeep { relation: relation() };
    let mut args: SmallVec<[TermId; 8]> = SmallVec::new();
    let mut pos: SmallVec<[AtomId; 16]> = SmallVec::new();
    let mut neg: SmallVec<[AtomId; 8]> = SmallVec::new();
    for k in 0..count {
        if k % 4096 == 0 && deadline.passed() {
            return Err(GroundError::Timeout { relation: relation(), rules: g.rules.len() });
        }
        let bind = &bindings[k * nvars..(k + 1) * nvars];
        pos.clear();
        neg.clear();
        for l in &c.body {
            match l {
                Lit::Pos(a) => {
                    args.clear();
                    for p in a.args.iter() {
                        args.push(instantiate(&mut g.pool, p, bind).map_err(deep)?);
                    }
                    pos.push(g.intern(a.rel, &args));
                }
                Lit::Neg(a) => {
                    args.clear();
                    for p in a.args.iter() {
                        args.push(instantiate(&mut g.pool, p, bind).map_err(deep)?);
                    }
                    // An atom the relaxed model never derives is never true:
                    // its negation always holds.
                    if db.rel(a.rel).contains(&args) {
                        neg.push(g.intern(a.rel, &args));
                    }
                }
                // Decided by the join already.
                Lit::Distinct(..) | Lit::Same(..) => {}
            }
        }
        args.clear();
        for p in c.head.args.iter() {
            args.push(instantiate(&mut g.pool, p, bind).map_err(deep)?);
        }
        let head = g.intern(c.head.rel, &args);
        pos.sort_unstable();
        pos.dedup();
        neg.sort_unstable();
        neg.dedup();
        let start = g.lits.len() as u32;
        g.lits.extend_from_slice(&pos);
        g.lits.extend_from_slice(&neg);
        g.rules.push(GroundRule { head, start, npos: pos.len() as u32, nneg: neg.len() as u32 });
    }
    Ok(())
}

fn g_name(game: &Game, r: RelId) -> String {
    game.rel_name(r).to_string()
}

#[cfg(test)]
mod tests;
