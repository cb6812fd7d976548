//! Join plans: the order in which a clause's positive literals are matched,
//! which parts of the arguments each lookup uses as its index key (whole
//! columns, or bound parts inside function terms such as `?x` and `?y` in
//! `(true (cell ?x ?y ?p))`), and where the
//! negations and `distinct`s are checked (as soon as their variables are
//! bound).

use crate::game::{Clause, Lit, Pat, RelId};
use crate::symbol::Sym;
use crate::term::{TermId, TermPool};
use smallvec::SmallVec;

/// A position inside a row: the column, then argument indices inside
/// nested function terms.
pub(crate) type Path = SmallVec<[u8; 4]>;

/// What an index is keyed on: the terms at `paths` of rows whose terms at
/// the `guards` paths are function terms with the given functor and arity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct KeyShape {
    pub(crate) paths: Box<[Path]>,
    pub(crate) guards: Box<[(Path, Sym, u32)]>,
}

impl KeyShape {
    /// The key a literal's arguments give when the variables in `bound`
    /// are bound: every bound argument, and inside a partly bound function
    /// term every bound part.
    pub(crate) fn of(args: &[EPat], bound: &[bool]) -> KeyShape {
        fn walk(p: &EPat, path: &mut Path, bound: &[bool], paths: &mut Vec<Path>, guards: &mut Vec<(Path, Sym, u32)>) {
            if p.bound_by(bound) {
                paths.push(path.clone());
            } else if let EPat::App(f, sub) = p {
                guards.push((path.clone(), *f, sub.len() as u32));
                for (i, s) in sub.iter().enumerate() {
                    path.push(i as u8);
                    walk(s, path, bound, paths, guards);
                    path.pop();
                }
            }
        }
        let mut paths = Vec::new();
        let mut guards = Vec::new();
        for (c, a) in args.iter().enumerate() {
            let mut path: Path = SmallVec::from_slice(&[c as u8]);
            walk(a, &mut path, bound, &mut paths, &mut guards);
        }
        if paths.is_empty() {
            guards.clear();
        }
        KeyShape { paths: paths.into(), guards: guards.into() }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Whether every column is bound as a whole (a membership test).
    pub(crate) fn whole_row(&self, arity: usize) -> bool {
        self.paths.len() == arity && self.paths.iter().all(|p| p.len() == 1)
    }
}

/// The sub-pattern of `args` at `path` (the path follows function terms
/// of the pattern, as [`KeyShape::of`] built it).
pub(crate) fn pat_at<'a>(args: &'a [EPat], path: &[u8]) -> &'a EPat {
    let mut p = &args[path[0] as usize];
    for &i in &path[1..] {
        match p {
            EPat::App(_, sub) => p = &sub[i as usize],
            _ => unreachable!("key paths follow function terms of the pattern"),
        }
    }
    p
}

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

    pub(crate) fn bound_by(&self, bound: &[bool]) -> bool {
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
    /// What is bound on entry: the index key.
    pub(crate) key: KeyShape,
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
    /// The head has no variables (`terminal`, `(goal white 100)`): one
    /// match of the body derives all the clause can, so the join stops
    /// at the first.
    pub(crate) ground_head: bool,
    pub(crate) nvars: usize,
    /// Filters without variables, checked before anything else.
    pub(crate) pre: Vec<Filter>,
    pub(crate) steps: Vec<Step>,
}

impl Plan {
    /// Orders the clause's positive literals greedily: next comes the
    /// literal with the fewest expected matches given the variables bound
    /// so far (`estimate(rel, bound_columns, anything_bound)`); ties go to
    /// the literal with more bound arguments, then to the written order.
    /// `delta` puts that body literal first and marks it as reading only
    /// new rows.
    pub(crate) fn new(
        clause: &Clause,
        delta: Option<usize>,
        pool: &mut TermPool,
        estimate: &mut dyn FnMut(RelId, &KeyShape, bool, &TermPool) -> f64,
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
                        let key = KeyShape::of(&p.2, &bound);
                        let cost = estimate(p.1, &key, !steps.is_empty(), pool);
                        if cost < best_cost.0 || (cost == best_cost.0 && key.paths.len() > best_cost.1) {
                            best = k;
                            best_cost = (cost, key.paths.len());
                        }
                    }
                    best
                }
            };
            let (body_index, rel, args) = positives.remove(pick);
            let key = KeyShape::of(&args, &bound);
            for a in args.iter() {
                a.for_each_var(&mut |v| bound[v as usize] = true);
            }
            let filters = take_ready(&mut pending, &bound);
            steps.push(Step { rel, args, key, index: None, delta: Some(body_index) == delta, filters });
        }
        // Safety guarantees every filter's variables are bound by now.
        debug_assert!(pending.iter().all(Option::is_none));
        let head: Box<[EPat]> = clause.head.args.iter().map(|a| EPat::compile(a, pool)).collect();
        let ground_head = head.iter().all(|a| matches!(a, EPat::Ground(_)));
        Plan { head_rel: clause.head.rel, head, ground_head, nvars, pre, steps }
    }
}
