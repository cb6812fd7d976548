//! Bottom-up evaluation of stratified Datalog with function terms: the
//! engine under both the reference prover (exact negation, one state at a
//! time) and the grounder (negation ignored: which atoms could ever hold).
//!
//! A [`Program`] holds the join plans of every stratum; a [`Db`] holds the
//! facts. Recursive strata run semi-naively: each round joins the rows
//! added in the previous round against everything known before it.

mod db;
mod join;
mod plan;

pub use db::{Db, Relation};

use crate::deadline::Deadline;
use crate::game::{Clause, Layer, RelId, Stratum};
use crate::names::describe;
use crate::term::{TermId, TermPool};
use plan::{EPat, KeyShape, Plan};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// How negative literals are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Negation {
    /// `(not p)` holds when `p` is absent (the relation is complete: it
    /// belongs to a lower stratum).
    Check,
    /// `(not p)` is assumed to hold: an over-approximation of what can be
    /// derived, used to find every atom that could ever be true.
    Ignore,
}

/// Why an evaluation stopped. `relation` is the relation's internal name
/// (rewrites make names such as `r@bf/s`); messages show it as written in
/// the file (`names::describe`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("more than {limit} facts derived ({} has {rows})", describe(relation))]
    TooManyFacts { relation: String, rows: usize, limit: usize },
    #[error("{} has more than {limit} rows", describe(relation))]
    TooManyRows { relation: String, limit: usize },
    #[error("one join derives {} more than {limit} times (duplicates included)", describe(relation))]
    TooManyDerivations { relation: String, limit: usize },
    #[error("rules build terms nested deeper than {} levels (in {})", crate::term::MAX_TERM_DEPTH, describe(relation))]
    TermTooDeep { relation: String },
    #[error("time limit reached while deriving {} ({rows} facts so far)", describe(relation))]
    Timeout { relation: String, rows: usize },
    #[error("more than {limit} join steps while deriving {} ({rows} facts so far)", describe(relation))]
    TooMuchWork { relation: String, rows: usize, limit: u64 },
}

impl EvalError {
    /// The relation named by the error (its internal name).
    pub fn relation(&self) -> &str {
        match self {
            EvalError::TooManyFacts { relation, .. }
            | EvalError::TooManyRows { relation, .. }
            | EvalError::TooManyDerivations { relation, .. }
            | EvalError::TermTooDeep { relation }
            | EvalError::Timeout { relation, .. }
            | EvalError::TooMuchWork { relation, .. } => relation,
        }
    }

    /// The error from a join, which knows neither the relation it derives
    /// nor the facts derived before it, with both filled in.
    fn named(self, name: impl FnOnce() -> String, facts: usize) -> EvalError {
        match self {
            EvalError::TermTooDeep { relation } if relation.is_empty() => EvalError::TermTooDeep { relation: name() },
            EvalError::Timeout { relation, rows } if relation.is_empty() => {
                EvalError::Timeout { relation: name(), rows: rows.max(facts) }
            }
            EvalError::TooMuchWork { relation, rows, limit } if relation.is_empty() => {
                EvalError::TooMuchWork { relation: name(), rows: rows.max(facts), limit }
            }
            e => e,
        }
    }
}

/// Work counted in join steps (candidate rows looked at): unlike a clock,
/// a limit on it stops an evaluation at the same point on a busy machine
/// as on a quiet one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steps {
    pub done: u64,
    pub limit: u64,
}

impl Steps {
    pub fn unlimited() -> Steps {
        Steps { done: 0, limit: u64::MAX }
    }

    pub fn limited(limit: u64) -> Steps {
        Steps { done: 0, limit }
    }
}

/// What a join looks at while it runs: the deadline, and the join steps
/// it counts against their limit.
pub struct Meter<'a> {
    pub deadline: &'a Deadline,
    pub steps: &'a mut Steps,
}

/// Limits on one evaluation: total facts derived, join steps and a deadline.
#[derive(Clone, Debug)]
pub struct Budget {
    pub max_facts: usize,
    /// Most rows one relation may reach.
    pub max_rows: usize,
    /// Most derivations (duplicates included) of one join.
    pub max_join: usize,
    /// Most join steps of one join.
    pub max_join_steps: u64,
    pub deadline: Deadline,
    /// Join steps since the last [`Budget::reset`], and their limit.
    pub steps: Steps,
    facts: usize,
    ticks: u32,
}

impl Budget {
    pub fn new(max_facts: usize, deadline: Deadline) -> Budget {
        Budget {
            max_facts,
            max_rows: usize::MAX,
            max_join: usize::MAX,
            max_join_steps: u64::MAX,
            deadline,
            steps: Steps::unlimited(),
            facts: 0,
            ticks: 0,
        }
    }

    pub fn unlimited() -> Budget {
        Budget::new(usize::MAX, Deadline::none())
    }

    /// The same budget with a limit on the rows of each relation.
    pub fn with_max_rows(mut self, max_rows: usize) -> Budget {
        self.max_rows = max_rows;
        self
    }

    /// The same budget with a limit on the derivations of one join.
    pub fn with_max_join(mut self, max_join: usize) -> Budget {
        self.max_join = max_join;
        self
    }

    /// The same budget with a limit on join steps.
    pub fn with_steps(mut self, steps: Steps) -> Budget {
        self.steps = steps;
        self
    }

    /// Facts derived so far under this budget.
    pub fn facts(&self) -> usize {
        self.facts
    }

    /// Starts counting facts again (join steps go on counting).
    pub fn reset(&mut self) {
        self.facts = 0;
    }
}

/// The plans of one stratum.
#[derive(Clone, Debug)]
pub struct StratumPlan {
    pub rels: Vec<RelId>,
    pub layer: Layer,
    pub recursive: bool,
    clauses: Vec<usize>,
    /// Made when the stratum first runs (see [`Program::eval_stratum`]).
    plans: Option<Plans>,
    /// For incremental evaluation: the relations read from other strata
    /// and how many rows each had at the last evaluation.
    watermarks: Option<Vec<(RelId, u32)>>,
    /// Plans reading only new rows of one input literal, by (clause, literal).
    input_plans: FxHashMap<(usize, usize), Plan>,
    /// Rows of the relations read from other strata when the plans were
    /// made; they are made again when those have grown much since.
    planned_rows: usize,
}

#[derive(Clone, Debug)]
struct Plans {
    full: Vec<Plan>,
    /// For recursive strata: one plan per (clause, recursive body literal),
    /// with that literal reading only the previous round's new rows.
    delta: Vec<Plan>,
}

/// Join plans for a set of clauses and their strata, and the database they
/// run on. Plans are made lazily, when a stratum first runs: by then the
/// relations it reads from lower strata are complete, and their sizes
/// guide the join order. The indexes the plans need are added to the
/// database as the plans are made, so a program and its database go
/// together (clone them together).
#[derive(Clone, Debug)]
pub struct Program {
    names: Vec<String>,
    /// Relations whose contents change with the state or the joint move.
    dynamic: Vec<bool>,
    /// Demand relations made by [`crate::magic`] (named `magic@...`).
    demand: Vec<bool>,
    clauses: Vec<Clause>,
    strata: Vec<StratumPlan>,
    /// How many strata define each relation (more than one when its
    /// clauses are split by constant head arguments).
    defining: Vec<u32>,
    clause_plans: Vec<Option<Plan>>,
}

/// Scratch space for evaluation, reusable across calls.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    lo: Vec<u32>,
    hi: Vec<u32>,
    out: Vec<TermId>,
    /// Derivations per relation (duplicates included) since the last reset.
    derived: Vec<u64>,
}

impl Scratch {
    /// Derivations per relation since the last reset.
    pub fn counts(&self) -> impl Iterator<Item = (RelId, u64)> + '_ {
        self.derived.iter().enumerate().map(|(r, &n)| (RelId(r as u32), n))
    }

    pub fn reset_counts(&mut self) {
        self.derived.iter_mut().for_each(|n| *n = 0);
    }
}

/// A join that takes more steps than this is logged (at debug) with its
/// plan: about a tenth of a second.
const SLOW_JOIN_STEPS: u64 = 200_000;

/// Assumed size of a relation whose contents are not known yet (it is
/// being computed in the stratum that is planned).
const UNKNOWN_ROWS: f64 = 64.0;
const UNKNOWN_DISTINCT: f64 = 8.0;

impl Program {
    /// `relations` gives every relation's name, arity and layer, indexed
    /// by `RelId`. Returns the program and its (empty) database.
    pub fn new(relations: Vec<(String, usize, Layer)>, clauses: &[Clause], strata: &[Stratum]) -> (Program, Db) {
        let dynamic: Vec<bool> = relations.iter().map(|r| r.2 != Layer::Static).collect();
        let demand: Vec<bool> = relations.iter().map(|r| r.0.starts_with(crate::magic::PREFIX)).collect();
        let (names, arities): (Vec<String>, Vec<usize>) = relations.into_iter().map(|(n, a, _)| (n, a)).unzip();
        let db = Db::new(arities.iter().map(|&a| Relation::new(a)).collect());
        let mut defining = vec![0u32; names.len()];
        for st in strata {
            for r in &st.rels {
                defining[r.index()] += 1;
            }
        }
        let strata = strata
            .iter()
            .map(|st| StratumPlan {
                rels: st.rels.clone(),
                layer: st.layer,
                recursive: st.recursive,
                clauses: st.clauses.clone(),
                plans: None,
                watermarks: None,
                input_plans: FxHashMap::default(),
                planned_rows: 0,
            })
            .collect();
        let prog = Program {
            dynamic,
            demand,
            names,
            clauses: clauses.to_vec(),
            strata,
            defining,
            clause_plans: vec![None; clauses.len()],
        };
        (prog, db)
    }

    pub fn strata(&self) -> &[StratumPlan] {
        &self.strata
    }

    pub fn relation_name(&self, r: RelId) -> &str {
        &self.names[r.index()]
    }

    /// Plans clause `ci` against the current contents of `db` (relations in
    /// `unknown` are treated as not computed yet) and adds the indexes the
    /// plan needs.
    fn plan(
        &self,
        ci: usize,
        delta: Option<usize>,
        unknown: &[RelId],
        db: &mut Db,
        pool: &mut TermPool,
        stats: &mut FxHashMap<(RelId, KeyShape), f64>,
    ) -> Plan {
        let dynamic = &self.dynamic;
        let demand = &self.demand;
        let db_ro: &Db = db;
        let mut estimate = |rel: RelId, key: &KeyShape, joined: bool, pool: &TermPool| -> f64 {
            // A demand (magic) relation guards a rewritten clause: join it
            // first, or the clause is computed for all arguments again. But
            // after another literal (a recursive call read as the delta),
            // joined on no argument it is a cross product with every row
            // demanded (merrills' `count_loop`: 2,600 demand rows scanned
            // for every new row); then it waits until a literal binds its
            // arguments.
            if demand[rel.index()] && (!joined || !key.is_empty()) {
                return 0.0;
            }
            // Relations of this stratum are not computed yet, and the
            // contents of state-dependent ones now (one state) say little
            // about later states.
            if unknown.contains(&rel) || dynamic[rel.index()] {
                if key.whole_row(db_ro.rel(rel).arity()) {
                    return 1.0;
                }
                return UNKNOWN_ROWS / UNKNOWN_DISTINCT.powi(key.paths.len() as i32);
            }
            // At least one row: an empty relation now may not stay empty.
            *stats.entry((rel, key.clone())).or_insert_with(|| db_ro.rel(rel).estimate(key, pool).max(1.0))
        };
        let mut plan = Plan::new(&self.clauses[ci], delta, pool, &mut estimate);
        for step in &mut plan.steps {
            if !step.key.is_empty() {
                step.index = Some(db.rel_mut(step.rel).index_for(&step.key, pool));
            }
        }
        plan
    }

    fn plan_stratum(&mut self, si: usize, db: &mut Db, pool: &mut TermPool) {
        let mut stats = FxHashMap::default();
        let st = &self.strata[si];
        let mut full = Vec::new();
        let mut delta = Vec::new();
        for &ci in &st.clauses {
            full.push(self.plan(ci, None, &st.rels, db, pool, &mut stats));
            if st.recursive {
                for (bi, lit) in self.clauses[ci].body.iter().enumerate() {
                    if let crate::game::Lit::Pos(a) = lit {
                        if st.rels.contains(&a.rel) {
                            delta.push(self.plan(ci, Some(bi), &st.rels, db, pool, &mut stats));
                        }
                    }
                }
            }
        }
        self.strata[si].plans = Some(Plans { full, delta });
    }

    /// Evaluates stratum `si` to its fixpoint, adding the derived facts to `db`.
    pub fn eval_stratum(
        &mut self,
        si: usize,
        db: &mut Db,
        pool: &mut TermPool,
        neg: Negation,
        budget: &mut Budget,
        scratch: &mut Scratch,
    ) -> Result<(), EvalError> {
        if self.strata[si].plans.is_none() {
            self.plan_stratum(si, db, pool);
        }
        let st = &self.strata[si];
        let Some(plans) = &st.plans else { unreachable!("planned above") };
        let nrel = self.names.len();
        if scratch.lo.len() < nrel {
            scratch.lo.resize(nrel, 0);
            scratch.hi.resize(nrel, 0);
            scratch.derived.resize(nrel, 0);
        }
        if st.recursive {
            for &r in &st.rels {
                scratch.lo[r.index()] = db.rel(r).len() as u32;
            }
        }
        let all = |_: usize| (0u32, u32::MAX);
        for plan in &plans.full {
            self.fire(plan, db, pool, &all, neg, budget, &mut scratch.out)?;
            scratch.derived[plan.head_rel.index()] += (scratch.out.len() / plan.head.len().max(1)) as u64;
        }
        self.fixpoint(si, db, pool, neg, budget, scratch)
    }

    /// For a recursive stratum whose rows from `scratch.lo` on are new:
    /// semi-naive rounds until nothing new is derived.
    fn fixpoint(
        &self,
        si: usize,
        db: &mut Db,
        pool: &mut TermPool,
        neg: Negation,
        budget: &mut Budget,
        scratch: &mut Scratch,
    ) -> Result<(), EvalError> {
        let st = &self.strata[si];
        let Some(plans) = &st.plans else { unreachable!("planned before") };
        if !st.recursive {
            return Ok(());
        }
        // Each round joins the rows added by the previous one (`lo..hi`)
        // with the rows known before it (`..hi`).
        loop {
            let mut grew = false;
            for &r in &st.rels {
                let len = db.rel(r).len() as u32;
                grew |= len > scratch.lo[r.index()];
                scratch.hi[r.index()] = len;
            }
            if !grew {
                return Ok(());
            }
            for plan in &plans.delta {
                let (lo, hi) = (&scratch.lo, &scratch.hi);
                let ranges = |depth: usize| {
                    let step = &plan.steps[depth];
                    let r = step.rel.index();
                    if step.delta {
                        (lo[r], hi[r])
                    } else if st.rels.contains(&step.rel) {
                        (0, hi[r])
                    } else {
                        (0, u32::MAX)
                    }
                };
                let mut out = std::mem::take(&mut scratch.out);
                let res = self.fire(plan, db, pool, &ranges, neg, budget, &mut out);
                scratch.derived[plan.head_rel.index()] += (out.len() / plan.head.len().max(1)) as u64;
                scratch.out = out;
                res?;
            }
            for &r in &st.rels {
                scratch.lo[r.index()] = scratch.hi[r.index()];
            }
        }
    }

    /// Evaluates stratum `si` again after relations it reads from other
    /// strata gained rows (never lost any: for monotone evaluation such as
    /// grounding's relaxed model). The first call evaluates it in full;
    /// later calls join only the rows added since (semi-naive across
    /// calls). Returns whether the stratum derived anything new.
    pub fn eval_stratum_incremental(
        &mut self,
        si: usize,
        db: &mut Db,
        pool: &mut TermPool,
        neg: Negation,
        budget: &mut Budget,
        scratch: &mut Scratch,
    ) -> Result<bool, EvalError> {
        let before: usize = self.strata[si].rels.iter().map(|&r| db.rel(r).len()).sum();
        if self.strata[si].watermarks.is_none() {
            self.eval_stratum(si, db, pool, neg, budget, scratch)?;
            let st = &self.strata[si];
            // A relation split by constant head arguments (`(v 1)` reading
            // `(v 2)`) is defined in several strata: rows another stratum
            // adds to it later are new input here too.
            let own = |r: RelId| st.rels.contains(&r) && self.defining[r.index()] == 1;
            let mut inputs: Vec<RelId> = Vec::new();
            for &ci in &st.clauses {
                for l in &self.clauses[ci].body {
                    if let crate::game::Lit::Pos(a) = l {
                        if !own(a.rel) && !inputs.contains(&a.rel) {
                            inputs.push(a.rel);
                        }
                    }
                }
            }
            let marks: Vec<(RelId, u32)> = inputs.into_iter().map(|r| (r, db.rel(r).len() as u32)).collect();
            self.strata[si].planned_rows = marks.iter().map(|&(_, n)| n as usize).sum();
            self.strata[si].watermarks = Some(marks);
            let after: usize = self.strata[si].rels.iter().map(|&r| db.rel(r).len()).sum();
            return Ok(after > before);
        }
        let marks = self.strata[si].watermarks.clone().unwrap_or_default();
        let grown: Vec<(RelId, u32)> = marks.iter().copied().filter(|&(r, w)| db.rel(r).len() as u32 > w).collect();
        if grown.is_empty() {
            return Ok(false);
        }
        // Join orders chosen on small inputs can be disastrous on large
        // ones: plan again when the inputs have grown fourfold.
        let rows: usize = marks.iter().map(|&(r, _)| db.rel(r).len()).sum();
        if rows > 4 * self.strata[si].planned_rows.max(16) {
            self.plan_stratum(si, db, pool);
            self.strata[si].input_plans.clear();
            self.strata[si].planned_rows = rows;
        }
        let nrel = self.names.len();
        if scratch.lo.len() < nrel {
            scratch.lo.resize(nrel, 0);
            scratch.hi.resize(nrel, 0);
            scratch.derived.resize(nrel, 0);
        }
        for &r in &self.strata[si].rels {
            scratch.lo[r.index()] = db.rel(r).len() as u32;
        }
        // One plan per (clause, literal on a grown input), that literal
        // reading only its new rows.
        let clauses = self.strata[si].clauses.clone();
        for ci in clauses {
            for (bi, lit) in self.clauses[ci].body.iter().enumerate() {
                let crate::game::Lit::Pos(a) = lit else { continue };
                let Some(&(_, mark)) = grown.iter().find(|(r, _)| *r == a.rel) else { continue };
                let key = (ci, bi);
                if !self.strata[si].input_plans.contains_key(&key) {
                    let rels = self.strata[si].rels.clone();
                    let plan = self.plan(ci, Some(bi), &rels, db, pool, &mut FxHashMap::default());
                    self.strata[si].input_plans.insert(key, plan);
                }
                let plan = &self.strata[si].input_plans[&key];
                let ranges = |depth: usize| if plan.steps[depth].delta { (mark, u32::MAX) } else { (0, u32::MAX) };
                let mut out = std::mem::take(&mut scratch.out);
                let res = self.fire(plan, db, pool, &ranges, neg, budget, &mut out);
                scratch.out = out;
                res?;
            }
        }
        self.fixpoint(si, db, pool, neg, budget, scratch)?;
        let marks = marks.into_iter().map(|(r, _)| (r, db.rel(r).len() as u32)).collect();
        self.strata[si].watermarks = Some(marks);
        let after: usize = self.strata[si].rels.iter().map(|&r| db.rel(r).len()).sum();
        Ok(after > before)
    }

    /// Runs one plan and inserts the heads it derives.
    #[allow(clippy::too_many_arguments)]
    fn fire(
        &self,
        plan: &Plan,
        db: &mut Db,
        pool: &mut TermPool,
        ranges: join::Ranges<'_>,
        neg: Negation,
        budget: &mut Budget,
        out: &mut Vec<TermId>,
    ) -> Result<(), EvalError> {
        out.clear();
        // A ground head already derived can gain nothing from its body.
        if plan.ground_head {
            let row: SmallVec<[TermId; 8]> =
                plan.head.iter().map(|a| if let EPat::Ground(t) = a { *t } else { join::UNBOUND }).collect();
            if db.rel(plan.head_rel).contains(&row) {
                return Ok(());
            }
        }
        // Slow joins are found by their join steps, not timed: debug logs
        // are on for the match files whatever the console shows, and two
        // clock reads a join were 8% of the prover's perft on
        // ticTacToeParallel.
        let steps_before = budget.steps.done;
        let name = || self.names[plan.head_rel.index()].clone();
        let arity = plan.head.len();
        {
            let db_ref: &Db = db;
            let facts_before = budget.facts;
            let (deadline, steps) = (&budget.deadline, &mut budget.steps);
            let (max_facts, max_join, max_rows, ticks) =
                (budget.max_facts, budget.max_join, budget.max_rows, &mut budget.ticks);
            // One join's own limit on steps, within the evaluation's.
            let mut join_steps =
                Steps { done: steps.done, limit: steps.limit.min(steps.done.saturating_add(budget.max_join_steps)) };
            let head_rows = db_ref.rel(plan.head_rel);
            // Derivations buffered before the buffer is next compacted.
            let mut compact_at = 0usize;
            let ran = join::run(
                plan,
                db_ref,
                pool,
                ranges,
                neg,
                plan.ground_head,
                Meter { deadline, steps: &mut join_steps },
                &mut |pool, bind| {
                    for a in plan.head.iter() {
                        let t = join::build(pool, a, bind).map_err(|_| EvalError::TermTooDeep { relation: name() })?;
                        out.push(t);
                    }
                    if arity == 0 {
                        // Mark a derivation of a proposition with a dummy cell.
                        out.push(join::UNBOUND);
                    }
                    // Rows still in the buffer count too: one join alone can
                    // produce a cross product far beyond the budget. Against
                    // the room left (facts budget and row limit) only
                    // distinct new rows count: a demand relation asked for
                    // along every path to it derives the same rows many
                    // times. Past the room the buffer is compacted, next
                    // when it holds the room or twice what was left
                    // (amortised O(1) a derivation, at most twice the room
                    // held). `max_join` bounds work, so it counts repeats.
                    let width = arity.max(1);
                    let n = out.len() / width;
                    if n > max_join {
                        return Err(EvalError::TooManyDerivations { relation: name(), limit: max_join });
                    }
                    // The row limit applies while a rewrite may follow.
                    let facts_room = max_facts.saturating_sub(facts_before);
                    let room = facts_room.min(max_rows.saturating_sub(head_rows.len()));
                    if n > room && n >= compact_at {
                        compact_new_rows(out, width, |row| arity > 0 && head_rows.contains(row));
                        let left = out.len() / width;
                        if left > facts_room {
                            return Err(EvalError::TooManyFacts {
                                relation: name(),
                                rows: head_rows.len() + left,
                                limit: max_facts,
                            });
                        }
                        if left > room {
                            return Err(EvalError::TooManyRows { relation: name(), limit: max_rows });
                        }
                        compact_at = room.max(2 * left);
                    }
                    *ticks = ticks.wrapping_add(1);
                    if ticks.is_multiple_of(4096) && deadline.passed() {
                        return Err(EvalError::Timeout { relation: name(), rows: facts_before });
                    }
                    Ok(())
                },
            );
            steps.done = join_steps.done;
            ran.map_err(|e| e.named(name, facts_before))?;
        }
        let width = arity.max(1);
        let took = budget.steps.done - steps_before;
        if took > SLOW_JOIN_STEPS {
            let steps: Vec<String> = plan
                .steps
                .iter()
                .map(|st| format!("{}{:?}{}", self.names[st.rel.index()], st.key, if st.delta { "Δ" } else { "" }))
                .collect();
            tracing::debug!(
                "slow join for `{}` ({} join steps, {} derivations): {}",
                name(),
                took,
                out.len() / width,
                steps.join(" ⋈ ")
            );
        }
        if out.len() / width > 20_000 {
            tracing::debug!(relation = %name(), derivations = out.len() / width, "many derivations in one join");
        }
        let rel = db.rel_mut(plan.head_rel);
        for (k, chunk) in out.chunks(width).enumerate() {
            // Inserting millions of rows takes a while too.
            if k % 65536 == 65535 && budget.deadline.passed() {
                return Err(EvalError::Timeout { relation: name(), rows: budget.facts });
            }
            if rel.insert(&chunk[..arity], pool) {
                budget.facts += 1;
                if budget.facts > budget.max_facts {
                    return Err(EvalError::TooManyFacts { relation: name(), rows: rel.len(), limit: budget.max_facts });
                }
                if rel.len() > budget.max_rows {
                    return Err(EvalError::TooManyRows { relation: name(), limit: budget.max_rows });
                }
            }
        }
        Ok(())
    }

    /// Calls `f` with the bindings of every match of clause `ci`'s body
    /// against `db` (all rows visible). Used to instantiate rules.
    pub fn for_each_match<F>(
        &mut self,
        ci: usize,
        db: &mut Db,
        pool: &mut TermPool,
        neg: Negation,
        meter: Meter<'_>,
        f: &mut F,
    ) -> Result<(), EvalError>
    where
        F: FnMut(&mut TermPool, &[TermId]) -> Result<(), EvalError>,
    {
        if self.clause_plans[ci].is_none() {
            let plan = self.plan(ci, None, &[], db, pool, &mut FxHashMap::default());
            self.clause_plans[ci] = Some(plan);
        }
        let Some(plan) = &self.clause_plans[ci] else { unreachable!("planned above") };
        let all = |_: usize| (0u32, u32::MAX);
        join::run(plan, db, pool, &all, neg, false, meter, f)
    }
}

/// Drops from `out` (rows of `width` terms) the rows `known` already holds
/// and every repeat, keeping the first of each in order.
fn compact_new_rows(out: &mut Vec<TermId>, width: usize, known: impl Fn(&[TermId]) -> bool) {
    let mut seen: rustc_hash::FxHashSet<&[TermId]> = rustc_hash::FxHashSet::default();
    let mut keep: Vec<bool> = Vec::with_capacity(out.len() / width);
    for row in out.chunks(width) {
        keep.push(!known(row) && seen.insert(row));
    }
    drop(seen);
    let mut w = 0;
    for (i, k) in keep.into_iter().enumerate() {
        if k {
            out.copy_within(i * width..(i + 1) * width, w * width);
            w += 1;
        }
    }
    out.truncate(w * width);
}
