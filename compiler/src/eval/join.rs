//! The join executor: runs one plan as nested loops over index probes, with
//! an explicit frame stack (no recursion over the body) and a binding trail.

use super::db::{hash_terms, Db, Relation, NO_ROW};
use super::plan::{pat_at, EPat, Filter, Plan};
use super::{EvalError, Meter, Negation};
use crate::term::{TermId, TermPool, TooDeep};
use smallvec::SmallVec;

pub(crate) const UNBOUND: TermId = TermId(u32::MAX);

/// Row range a step may read: `[lo, hi)`, `hi == u32::MAX` meaning all rows.
pub(crate) type Ranges<'a> = &'a dyn Fn(usize) -> (u32, u32);

enum Cands<'a> {
    Range {
        next: u32,
        end: u32,
    },
    /// An index chain, walked from the newest row down; rows at or above
    /// `hi` are skipped, the walk ends below `lo`.
    Chain {
        rel: &'a Relation,
        ix: usize,
        row: u32,
        lo: u32,
        hi: u32,
    },
}

impl Cands<'_> {
    fn next(&mut self) -> Option<u32> {
        match self {
            Cands::Range { next, end } => (*next < *end).then(|| {
                *next += 1;
                *next - 1
            }),
            Cands::Chain { rel, ix, row, lo, hi } => loop {
                if *row == NO_ROW || *row < *lo {
                    return None;
                }
                let r = *row;
                *row = rel.chain_prev(*ix, r);
                if r < *hi {
                    return Some(r);
                }
            },
        }
    }
}

struct Frame<'a> {
    cands: Cands<'a>,
    mark: usize,
}

fn match_pat(pool: &TermPool, p: &EPat, t: TermId, bind: &mut [TermId], trail: &mut Vec<u32>) -> bool {
    match p {
        EPat::Var(v) => {
            let slot = &mut bind[*v as usize];
            if *slot == UNBOUND {
                *slot = t;
                trail.push(*v);
                true
            } else {
                *slot == t
            }
        }
        EPat::Ground(g) => *g == t,
        EPat::App(f, args) => {
            if pool.functor(t) != *f {
                return false;
            }
            let targs = pool.args(t);
            targs.len() == args.len() && args.iter().zip(targs).all(|(a, &ta)| match_pat(pool, a, ta, bind, trail))
        }
    }
}

/// The ground term a bound pattern stands for, if it exists in the pool
/// (a term that was never built cannot be in any relation).
pub(crate) fn find(pool: &TermPool, p: &EPat, bind: &[TermId]) -> Option<TermId> {
    match p {
        EPat::Var(v) => Some(bind[*v as usize]),
        EPat::Ground(g) => Some(*g),
        EPat::App(f, args) => {
            let ids: SmallVec<[TermId; 8]> = args.iter().map(|a| find(pool, a, bind)).collect::<Option<_>>()?;
            pool.find(*f, &ids)
        }
    }
}

/// The ground term a bound pattern stands for, built if needed.
pub(crate) fn build(pool: &mut TermPool, p: &EPat, bind: &[TermId]) -> Result<TermId, TooDeep> {
    match p {
        EPat::Var(v) => Ok(bind[*v as usize]),
        EPat::Ground(g) => Ok(*g),
        EPat::App(f, args) => {
            let mut ids: SmallVec<[TermId; 8]> = SmallVec::with_capacity(args.len());
            for a in args.iter() {
                ids.push(build(pool, a, bind)?);
            }
            pool.app(*f, &ids)
        }
    }
}

fn passes(f: &Filter, db: &Db, pool: &mut TermPool, bind: &[TermId], neg: Negation) -> Result<bool, TooDeep> {
    Ok(match f {
        Filter::Neg(rel, args) => {
            if neg == Negation::Ignore {
                return Ok(true);
            }
            let ids: Option<SmallVec<[TermId; 8]>> = args.iter().map(|a| find(pool, a, bind)).collect();
            match ids {
                Some(ids) => !db.rel(*rel).contains(&ids),
                None => true,
            }
        }
        Filter::Distinct(a, b) => build(pool, a, bind)? != build(pool, b, bind)?,
        Filter::Same(a, b) => build(pool, a, bind)? == build(pool, b, bind)?,
    })
}

/// Calls `emit` with the variable bindings of every match of `plan`'s body,
/// or (`once`) of the first match only.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<F>(
    plan: &Plan,
    db: &Db,
    pool: &mut TermPool,
    ranges: Ranges<'_>,
    neg: Negation,
    once: bool,
    meter: Meter<'_>,
    emit: &mut F,
) -> Result<(), EvalError>
where
    F: FnMut(&mut TermPool, &[TermId]) -> Result<(), EvalError>,
{
    // A join can run long without deriving anything: look at the clock
    // every so many candidate rows too.
    let mut ticks = 0u32;
    let deep = |_| EvalError::TermTooDeep { relation: String::new() };
    let mut bind = vec![UNBOUND; plan.nvars];
    let mut trail: Vec<u32> = Vec::new();
    for f in &plan.pre {
        if !passes(f, db, pool, &bind, neg).map_err(deep)? {
            return Ok(());
        }
    }
    if plan.steps.is_empty() {
        return emit(pool, &bind);
    }
    let open = |depth: usize, pool: &TermPool, bind: &[TermId], mark: usize| -> Frame<'_> {
        let step = &plan.steps[depth];
        let rel = db.rel(step.rel);
        let (lo, hi) = ranges(depth);
        let hi = hi.min(rel.len() as u32);
        let cands = match step.index {
            None => Cands::Range { next: lo, end: hi },
            Some(ix) => {
                let key: Option<SmallVec<[TermId; 8]>> =
                    step.key.paths.iter().map(|p| find(pool, pat_at(&step.args, p), bind)).collect();
                let row = match key {
                    None => NO_ROW,
                    Some(key) => rel.probe(ix, hash_terms(key.iter().copied())),
                };
                Cands::Chain { rel, ix, row, lo, hi }
            }
        };
        Frame { cands, mark }
    };
    let mut frames: Vec<Frame<'_>> = Vec::with_capacity(plan.steps.len());
    frames.push(open(0, pool, &bind, 0));
    while !frames.is_empty() {
        let depth = frames.len() - 1;
        let frame = &mut frames[depth];
        let step = &plan.steps[depth];
        while trail.len() > frame.mark {
            if let Some(v) = trail.pop() {
                bind[v as usize] = UNBOUND;
            }
        }
        let Some(r) = frame.cands.next() else {
            frames.pop();
            continue;
        };
        meter.steps.done += 1;
        if meter.steps.done > meter.steps.limit {
            return Err(EvalError::TooMuchWork { relation: String::new(), rows: 0, limit: meter.steps.limit });
        }
        ticks = ticks.wrapping_add(1);
        if ticks.is_multiple_of(16384) && meter.deadline.passed() {
            return Err(EvalError::Timeout { relation: String::new(), rows: 0 });
        }
        let row = db.rel(step.rel).row(r as usize);
        if !step.args.iter().zip(row).all(|(a, &t)| match_pat(pool, a, t, &mut bind, &mut trail)) {
            continue;
        }
        let mut ok = true;
        for f in &step.filters {
            if !passes(f, db, pool, &bind, neg).map_err(deep)? {
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        if depth + 1 == plan.steps.len() {
            emit(pool, &bind)?;
            if once {
                return Ok(());
            }
        } else {
            let mark = trail.len();
            let next = open(depth + 1, pool, &bind, mark);
            frames.push(next);
        }
    }
    Ok(())
}
