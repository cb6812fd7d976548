//! Join plans: the order in which a clause's positive literals are matched,
//! which columns each lookup uses as its index key, and where the
//! negations and `distinct`s are checked (as soon as their variables are
//! bound).

use crate::game::{Clause, Lit, Pat, RelId};
use crate::symbol::Sym;
use crate::term::{TermId, TermPool};

/// A pattern with its ground parts already interned.
#[derive(Clone, Debug)]
pub(crate) enum EPat {
    Var(u32),
    Ground(TermId),
    /// A function term with at least one variable inside.
    App(Sym, Box<[EPat]>),
}

impl EPat {
    pub(crate) fn compile(p: &Pat, pool: &mut TermPool) -> EPat {
        match p {
            Pat::Var(v) => EPat::Var(*v),
            Pat::Const(s) => EPat::Ground(pool.constant(*s)),
            Pat::App(f, args) => {
                let args: Box<[EPat]> = args.iter().map(|a| EPat::compile(a, pool)).collect();
                if args.iter().all(|a| matches!(a, EPat::Ground(_))) {
                    let ids: Vec<TermId> =
                        args.iter().map(|a| if let EPat::Ground(t) = a { *t } else { unreachable!() }).collect();
                    // A ground term deeper than the limit cannot be written in a
                    // file (the reader limits nesting), so this cannot fail.
                    match pool.app(*f, &ids) {
                        Ok(t) => EPat::Ground(t),
                        Err(_) => EPat::App(*f, args),
                    }
                } else {
                    EPat::App(*f, args)
                }
            }
        }
    }

    pub(crate) fn for_each_var(&self, f: &mut impl FnMut(u32)) {
        match self {
            EPat::Var(v) => f(*v),
            EPat::Ground(_) => {}
            EPat::App(_, args) => args.iter().for_each(|a| a.for_each_var(f)),
        }
    }

    fn bound_by(&self, bound: &[bool]) -> bool {
        let mut all = true;
        self.for_each_var(&mut |v| all &= bound[v as usize]);
        all
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Filter {
    Neg(RelId, Box<[EPat]>),
    Distinct(EPat, EPat),
    Same(EPat, EPat),
}

impl Filter {
    fn for_each_var(&self, f: &mut impl FnMut(u32)) {
        match self {
            Filter::Neg(_, args) => args.iter().for_each(|a| a.for_each_var(f)),
            Filter::Distinct(a, b) | Filter::Same(a, b) => {
                a.for_each_var(f);
                b.for_each_var(f);
            }
        }
    }
}

/// One positive literal in join order.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub(crate) rel: RelId,
    pub(crate) args: Box<[EPat]>,
    /// Argument positions fully bound on entry: the index key.
    pub(crate) key: Box<[usize]>,
    /// Which index of the relation serves `key` (set when the plan is
    /// registered with its program); None when `key` is empty.
    pub(crate) index: Option<usize>,
    /// Reads only the rows added in the previous round (semi-naive).
    pub(crate) delta: bool,
    /// Checked once this step has matched.
    pub(crate) filters: Vec<Filter>,
}

#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) head_rel: RelId,
    pub(crate) head: Box<[EPat]>,
    pub(crate) nvars: usize,
    /// Filters without variables, checked before anything else.
    pub(crate) pre: Vec<Filter>,
    pub(crate) steps: Vec<Step>,
}

impl Plan {
    /// Orders the clause's positive literals greedily: next comes the
    /// literal with the fewest expected matches given the variables bound
    /// so far (`estimate(rel, bound_columns)`); ties go to the literal with
    /// more bound arguments, then to the written order. `delta` puts that
    /// body literal first and marks it as reading only new rows.
    pub(crate) fn new(
        clause: &Clause,
        delta: Option<usize>,
        pool: &mut TermPool,
        estimate: &mut dyn FnMut(RelId, &[usize]) -> f64,
    ) -> Plan {
        let nvars = clause.var_names.len();
        let mut positives: Vec<(usize, RelId, Box<[EPat]>)> = Vec::new();
        let mut filters: Vec<Filter> = Vec::new();
        for (i, lit) in clause.body.iter().enumerate() {
            let compile = |args: &[Pat], pool: &mut TermPool| -> Box<[EPat]> {
                args.iter().map(|a| EPat::compile(a, pool)).collect()
            };
            match lit {
                Lit::Pos(a) => positives.push((i, a.rel, compile(&a.args, pool))),
                Lit::Neg(a) => filters.push(Filter::Neg(a.rel, compile(&a.args, pool))),
                Lit::Distinct(x, y) => filters.push(Filter::Distinct(EPat::compile(x, pool), EPat::compile(y, pool))),
                Lit::Same(x, y) => filters.push(Filter::Same(EPat::compile(x, pool), EPat::compile(y, pool))),
            }
        }
        let mut bound = vec![false; nvars];
        let mut pending: Vec<Option<Filter>> = filters.into_iter().map(Some).collect();
        let take_ready = |pending: &mut Vec<Option<Filter>>, bound: &[bool]| -> Vec<Filter> {
            let mut ready = Vec::new();
            for slot in pending.iter_mut() {
                let ok = slot.as_ref().is_some_and(|f| {
                    let mut all = true;
                    f.for_each_var(&mut |v| all &= bound[v as usize]);
                    all
                });
                if ok {
                    ready.extend(slot.take());
                }
            }
            ready
        };
        let pre = take_ready(&mut pending, &bound);
        let mut steps = Vec::with_capacity(positives.len());
        while !positives.is_empty() {
            let pick = match delta.and_then(|d| positives.iter().position(|p| p.0 == d)) {
                Some(p) if steps.is_empty() => p,
                _ => {
                    let mut best = 0;
                    let mut best_cost = (f64::INFINITY, 0usize);
                    for (k, p) in positives.iter().enumerate() {
                        let key: Vec<usize> = (0..p.2.len()).filter(|&i| p.2[i].bound_by(&bound)).collect();
                        // A partly bound function term still filters.
                        let partial = p.2.iter().filter(|a| matches!(a, EPat::App(..)) && !a.bound_by(&bound)).count();
                        let cost = estimate(p.1, &key) * 0.5f64.powi(partial as i32);
                        if cost < best_cost.0 || (cost == best_cost.0 && key.len() > best_cost.1) {
                            best = k;
                            best_cost = (cost, key.len());
                        }
                    }
                    best
                }
            };
            let (body_index, rel, args) = positives.remove(pick);
            let key: Box<[usize]> = (0..args.len()).filter(|&i| args[i].bound_by(&bound)).collect();
            for a in args.iter() {
                a.for_each_var(&mut |v| bound[v as usize] = true);
            }
            let filters = take_ready(&mut pending, &bound);
            steps.push(Step { rel, args, key, index: None, delta: Some(body_index) == delta, filters });
        }
        // Safety guarantees every filter's variables are bound by now.
        debug_assert!(pending.iter().all(Option::is_none));
        let head = clause.head.args.iter().map(|a| EPat::compile(a, pool)).collect();
        Plan { head_rel: clause.head.rel, head, nvars, pre, steps }
    }
}
