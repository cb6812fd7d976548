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

use crate::game::{Clause, Layer, RelId, Stratum};
use crate::term::{TermId, TermPool};
use plan::Plan;
use std::time::Instant;

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

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("more than {limit} facts derived (relation `{relation}` has {rows})")]
    TooManyFacts {
        relation: String,
        rows: usize,
        limit: usize,
    },
    #[error(
        "rules build terms nested deeper than {} levels (in `{relation}`)",
        crate::term::MAX_TERM_DEPTH
    )]
    TermTooDeep { relation: String },
    #[error("time limit reached while deriving `{relation}` ({rows} facts so far)")]
    Timeout { relation: String, rows: usize },
}

/// Limits on one evaluation: total facts derived and a deadline.
#[derive(Clone, Debug)]
pub struct Budget {
    pub max_facts: usize,
    pub deadline: Option<Instant>,
    facts: usize,
    ticks: u32,
}

impl Budget {
    pub fn new(max_facts: usize, deadline: Option<Instant>) -> Budget {
        Budget {
            max_facts,
            deadline,
            facts: 0,
            ticks: 0,
        }
    }

    pub fn unlimited() -> Budget {
        Budget::new(usize::MAX, None)
    }

    /// Facts derived so far under this budget.
    pub fn facts(&self) -> usize {
        self.facts
    }

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
    full: Vec<Plan>,
    /// For recursive strata: one plan per (clause, recursive body literal),
    /// with that literal reading only the previous round's new rows.
    delta: Vec<Plan>,
}

/// Compiled join plans for a set of clauses and their strata.
#[derive(Clone, Debug)]
pub struct Program {
    names: Vec<String>,
    arities: Vec<usize>,
    index_cols: Vec<Vec<Box<[usize]>>>,
    strata: Vec<StratumPlan>,
    clause_plans: Vec<Plan>,
}

/// Scratch space for evaluation, reusable across calls.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    lo: Vec<u32>,
    hi: Vec<u32>,
    out: Vec<TermId>,
}

impl Program {
    /// `relations` gives every relation's name and arity, indexed by `RelId`.
    pub fn new(
        relations: Vec<(String, usize)>,
        clauses: &[Clause],
        strata: &[Stratum],
        pool: &mut TermPool,
    ) -> Program {
        let (names, arities): (Vec<String>, Vec<usize>) = relations.into_iter().unzip();
        let mut prog = Program {
            index_cols: vec![Vec::new(); names.len()],
            names,
            arities,
            strata: Vec::new(),
            clause_plans: Vec::new(),
        };
        for st in strata {
            let mut full = Vec::new();
            let mut delta = Vec::new();
            for &ci in &st.clauses {
                let c = &clauses[ci];
                full.push(prog.register(Plan::new(c, None, pool)));
                if st.recursive {
                    for (bi, lit) in c.body.iter().enumerate() {
                        if let crate::game::Lit::Pos(a) = lit {
                            if st.rels.contains(&a.rel) {
                                delta.push(prog.register(Plan::new(c, Some(bi), pool)));
                            }
                        }
                    }
                }
            }
            prog.strata.push(StratumPlan {
                rels: st.rels.clone(),
                layer: st.layer,
                recursive: st.recursive,
                full,
                delta,
            });
        }
        for c in clauses {
            let p = prog.register(Plan::new(c, None, pool));
            prog.clause_plans.push(p);
        }
        prog
    }

    /// Gives each step of `plan` the index it needs, creating it if new.
    fn register(&mut self, mut plan: Plan) -> Plan {
        for step in &mut plan.steps {
            if step.key.is_empty() {
                continue;
            }
            let cols = &mut self.index_cols[step.rel.index()];
            let ix = match cols.iter().position(|c| *c == step.key) {
                Some(i) => i,
                None => {
                    cols.push(step.key.clone());
                    cols.len() - 1
                }
            };
            step.index = Some(ix);
        }
        plan
    }

    /// An empty database with the relations and indexes this program uses.
    pub fn new_db(&self) -> Db {
        Db::new(
            self.arities
                .iter()
                .zip(&self.index_cols)
                .map(|(&a, ix)| Relation::new(a, ix))
                .collect(),
        )
    }

    pub fn strata(&self) -> &[StratumPlan] {
        &self.strata
    }

    pub fn relation_name(&self, r: RelId) -> &str {
        &self.names[r.index()]
    }

    /// Evaluates stratum `si` to its fixpoint, adding the derived facts to `db`.
    pub fn eval_stratum(
        &self,
        si: usize,
        db: &mut Db,
        pool: &mut TermPool,
        neg: Negation,
        budget: &mut Budget,
        scratch: &mut Scratch,
    ) -> Result<(), EvalError> {
        let st = &self.strata[si];
        if scratch.lo.len() < self.arities.len() {
            scratch.lo.resize(self.arities.len(), 0);
            scratch.hi.resize(self.arities.len(), 0);
        }
        if st.recursive {
            for &r in &st.rels {
                scratch.lo[r.index()] = db.rel(r).len() as u32;
            }
        }
        let all = |_: usize| (0u32, u32::MAX);
        for plan in &st.full {
            self.fire(plan, db, pool, &all, neg, budget, &mut scratch.out)?;
        }
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
            for plan in &st.delta {
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
                scratch.out = out;
                res?;
            }
            for &r in &st.rels {
                scratch.lo[r.index()] = scratch.hi[r.index()];
            }
        }
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
        let name = || self.names[plan.head_rel.index()].clone();
        let arity = plan.head.len();
        {
            let db_ref: &Db = db;
            join::run(plan, db_ref, pool, ranges, neg, &mut |pool, bind| {
                for a in plan.head.iter() {
                    let t = join::build(pool, a, bind)
                        .map_err(|_| EvalError::TermTooDeep { relation: name() })?;
                    out.push(t);
                }
                if arity == 0 {
                    // Mark a derivation of a proposition with a dummy cell.
                    out.push(join::UNBOUND);
                }
                // Rows still in the buffer count too: one join alone can
                // produce a cross product far beyond the budget.
                if budget.facts + out.len() / arity.max(1) > budget.max_facts {
                    return Err(EvalError::TooManyFacts {
                        relation: name(),
                        rows: out.len() / arity.max(1),
                        limit: budget.max_facts,
                    });
                }
                budget.ticks = budget.ticks.wrapping_add(1);
                if budget.ticks % 4096 == 0 {
                    if let Some(d) = budget.deadline {
                        if Instant::now() > d {
                            return Err(EvalError::Timeout {
                                relation: name(),
                                rows: budget.facts,
                            });
                        }
                    }
                }
                Ok(())
            })
            .map_err(|e| match e {
                EvalError::TermTooDeep { .. } => EvalError::TermTooDeep { relation: name() },
                e => e,
            })?;
        }
        let rel = db.rel_mut(plan.head_rel);
        let width = arity.max(1);
        for chunk in out.chunks(width) {
            if rel.insert(&chunk[..arity]) {
                budget.facts += 1;
                if budget.facts > budget.max_facts {
                    return Err(EvalError::TooManyFacts {
                        relation: name(),
                        rows: rel.len(),
                        limit: budget.max_facts,
                    });
                }
            }
        }
        Ok(())
    }

    /// Calls `f` with the bindings of every match of clause `ci`'s body
    /// against `db` (all rows visible). Used to instantiate rules.
    pub fn for_each_match<F>(
        &self,
        ci: usize,
        db: &Db,
        pool: &mut TermPool,
        neg: Negation,
        f: &mut F,
    ) -> Result<(), EvalError>
    where
        F: FnMut(&mut TermPool, &[TermId]) -> Result<(), EvalError>,
    {
        let all = |_: usize| (0u32, u32::MAX);
        join::run(&self.clause_plans[ci], db, pool, &all, neg, f)
    }
}
