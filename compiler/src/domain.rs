//! Domains: for each position in a relation's atoms (an argument, or a
//! place inside a function term there), the constants it can hold,
//! found from the rules alone.
//!
//! The classic GGP domain analysis (ggp-base builds its propnet
//! from it): a variable ranges over the intersection of what its
//! positive body positions hold, and a head position holds the union over
//! the rules for it. `true` holds what `init` and `next` produce, `does`
//! what `legal` does. The result over-approximates every model and is
//! used only for estimates (how many instances a helper of variable
//! elimination will have), so it may stop early or cap a set: that costs
//! precision, never correctness.

use crate::game::{AtomPat, Game, Lit, Pat, RelId};
use crate::symbol::Sym;
use rustc_hash::{FxHashMap, FxHashSet};

/// A set this large counts as "many" and stops growing.
const CAP: usize = 4096;

/// Passes over the rules before the analysis stops (each pass carries
/// values from `next` to `true` once more; games settle in a few).
const MAX_PASSES: usize = 64;

/// A position: the argument index, then per nested function term its
/// functor and the argument index inside it.
type Path = Vec<u32>;

#[derive(Clone, Debug, Default)]
struct Dom {
    consts: FxHashSet<Sym>,
    /// Past [`CAP`] values.
    many: bool,
    /// Some rule puts a value here that is not a constant (a variable
    /// bound to function terms): nor is anything inside it counted.
    open: bool,
    /// Some rule puts a function term here (its arguments are positions
    /// of their own).
    terms: bool,
}

/// What a variable of one clause ranges over.
#[derive(Clone)]
enum Range {
    Consts(FxHashSet<Sym>),
    Many,
    Open,
}

/// The domains of a game's relations.
#[derive(Debug, Default)]
pub(crate) struct Domains {
    map: FxHashMap<(RelId, Path), Dom>,
    /// Sizes of the arguments of relations added after the analysis
    /// (variable elimination's helpers).
    columns: FxHashMap<RelId, Vec<Option<usize>>>,
}

/// Where a relation's atoms are read from: `true` for `init` and `next`,
/// `does` for `legal`.
fn canonical(rel: RelId) -> RelId {
    match rel {
        RelId::INIT | RelId::NEXT => RelId::TRUE,
        RelId::LEGAL => RelId::DOES,
        r => r,
    }
}

/// Calls `f(path, var)` for every variable occurrence in `a`.
fn for_each_var_path(a: &AtomPat, f: &mut impl FnMut(&[u32], u32)) {
    fn walk(p: &Pat, path: &mut Path, f: &mut impl FnMut(&[u32], u32)) {
        match p {
            Pat::Var(v) => f(path, *v),
            Pat::Const(_) => {}
            Pat::App(fun, args) => {
                for (i, q) in args.iter().enumerate() {
                    path.extend([fun.0, i as u32]);
                    walk(q, path, f);
                    path.truncate(path.len() - 2);
                }
            }
        }
    }
    let mut path = Vec::new();
    for (i, p) in a.args.iter().enumerate() {
        path.push(i as u32);
        walk(p, &mut path, f);
        path.pop();
    }
}

impl Domains {
    /// The domains of `game`'s relations.
    pub(crate) fn of(game: &Game) -> Domains {
        let mut d = Domains::default();
        for pass in 0..MAX_PASSES {
            let mut changed = false;
            // Facts give the same values every pass.
            for c in game.clauses.iter().filter(|c| pass == 0 || !c.body.is_empty()) {
                let ranges = d.ranges(&c.body);
                let rel = canonical(c.head.rel);
                let mut path = Vec::new();
                for (i, p) in c.head.args.iter().enumerate() {
                    path.push(i as u32);
                    changed |= d.add(rel, &mut path, p, &ranges);
                    path.pop();
                }
            }
            if !changed {
                break;
            }
        }
        d
    }

    /// How many values the position `path` of `rel`'s atoms holds, where
    /// that is a count of constants.
    pub(crate) fn size(&self, rel: RelId, path: &[u32]) -> Option<usize> {
        if let Some(cols) = self.columns.get(&rel) {
            return if path.len() == 1 { cols.get(path[0] as usize).copied().flatten() } else { None };
        }
        match self.lookup(rel, path) {
            Range::Consts(set) => Some(set.len()),
            Range::Many => Some(CAP),
            Range::Open => None,
        }
    }

    /// Records that relation `rel`, added after the analysis, holds
    /// `sizes[i]` values in argument `i`.
    pub(crate) fn set_columns(&mut self, rel: RelId, sizes: Vec<Option<usize>>) {
        self.columns.insert(rel, sizes);
    }

    /// What position `path` of `rel` holds. A position inside one where
    /// some rule puts an open value (`(next ?x)` with `?x` a whole state
    /// term) is open too.
    fn lookup(&self, rel: RelId, path: &[u32]) -> Range {
        let rel = canonical(rel);
        let mut k = 1;
        while k < path.len() {
            if self.map.get(&(rel, path[..k].to_vec())).is_some_and(|d| d.open) {
                return Range::Open;
            }
            k += 2;
        }
        match self.map.get(&(rel, path.to_vec())) {
            // Nothing derived here: no value.
            None => Range::Consts(FxHashSet::default()),
            Some(dom) if dom.open || dom.terms => Range::Open,
            Some(dom) if dom.many => Range::Many,
            Some(dom) => Range::Consts(dom.consts.clone()),
        }
    }

    /// The estimated number of values of variable `v` in a body: the
    /// smallest count among its positive positions.
    pub(crate) fn var_size(&self, body: &[Lit], v: u32) -> Option<usize> {
        let mut best: Option<usize> = None;
        for l in body {
            let Lit::Pos(a) = l else { continue };
            for_each_var_path(a, &mut |path, w| {
                if w == v {
                    if let Some(n) = self.size(a.rel, path) {
                        best = Some(best.map_or(n, |b| b.min(n)));
                    }
                }
            });
        }
        best
    }

    /// Each variable's range in a body: the intersection over its positive
    /// positions.
    fn ranges(&self, body: &[Lit]) -> FxHashMap<u32, Range> {
        let mut ranges: FxHashMap<u32, Range> = FxHashMap::default();
        for l in body {
            let Lit::Pos(a) = l else { continue };
            for_each_var_path(a, &mut |path, v| {
                let here = self.lookup(a.rel, path);
                let merged = match (ranges.remove(&v), here) {
                    (None, h) => h,
                    (Some(Range::Consts(a)), Range::Consts(b)) => Range::Consts(a.intersection(&b).copied().collect()),
                    (Some(Range::Consts(a)), _) | (Some(_), Range::Consts(a)) => Range::Consts(a),
                    (Some(Range::Many), _) | (Some(_), Range::Many) => Range::Many,
                    (Some(Range::Open), Range::Open) => Range::Open,
                };
                ranges.insert(v, merged);
            });
        }
        ranges
    }

    /// Adds what head pattern `p` at `path` of `rel` holds; whether that
    /// changed anything.
    fn add(&mut self, rel: RelId, path: &mut Path, p: &Pat, ranges: &FxHashMap<u32, Range>) -> bool {
        match p {
            Pat::App(fun, args) => {
                let dom = self.map.entry((rel, path.clone())).or_default();
                let mut changed = !dom.terms;
                dom.terms = true;
                for (i, q) in args.iter().enumerate() {
                    path.extend([fun.0, i as u32]);
                    changed |= self.add(rel, path, q, ranges);
                    path.truncate(path.len() - 2);
                }
                changed
            }
            Pat::Const(s) => self.insert(rel, path, std::iter::once(*s), false, false),
            Pat::Var(v) => match ranges.get(v) {
                Some(Range::Consts(set)) => self.insert(rel, path, set.iter().copied(), false, false),
                Some(Range::Many) => self.insert(rel, path, std::iter::empty(), true, false),
                // A variable bound to function terms (`(true ?x)`), or by
                // no positive literal (a fact with a variable).
                Some(Range::Open) | None => self.insert(rel, path, std::iter::empty(), false, true),
            },
        }
    }

    fn insert(&mut self, rel: RelId, path: &Path, consts: impl Iterator<Item = Sym>, many: bool, open: bool) -> bool {
        let dom = self.map.entry((rel, path.clone())).or_default();
        let before = (dom.consts.len(), dom.many, dom.open);
        dom.many |= many;
        dom.open |= open;
        if !dom.many {
            dom.consts.extend(consts);
            if dom.consts.len() > CAP {
                dom.many = true;
            }
        }
        if dom.many {
            dom.consts = FxHashSet::default();
        }
        before != (dom.consts.len(), dom.many, dom.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_holds_what_the_rules_can_put_there() {
        let text = "(role a) (role b) (num 1) (num 2) (num 3) (succ 1 2) (succ 2 3)
            (init (cell 1 blank)) (<= (legal ?r (mark ?n)) (role ?r) (num ?n))
            (<= (next (cell ?n ?r)) (does ?r (mark ?n)))
            (<= (next (cell ?m blank)) (true (cell ?n blank)) (succ ?n ?m))
            (<= (bigger ?m) (succ ?n ?m) (num ?n))
            (<= terminal (true (cell 3 a))) (<= (goal ?r 0) (role ?r))";
        let g = crate::validate::load("t.kif", text).unwrap();
        let d = Domains::of(&g);
        let cell = g.symbols.get("cell").unwrap().0;
        let mark = g.symbols.get("mark").unwrap().0;
        // `true`: a cell number from `legal` (three), a mark `a`, `b` or `blank`.
        assert_eq!(d.size(RelId::TRUE, &[0, cell, 0]), Some(3));
        assert_eq!(d.size(RelId::TRUE, &[0, cell, 1]), Some(3));
        assert_eq!(d.size(RelId::DOES, &[1, mark, 0]), Some(3));
        assert_eq!(d.size(RelId::DOES, &[0]), Some(2));
        // `bigger`: the second column of `succ` met with `num`'s.
        let bigger = g.relations.iter().position(|r| g.symbols.name(r.name) == "bigger").unwrap();
        assert_eq!(d.size(RelId(bigger as u32), &[0]), Some(2));
        // A whole state term is not a count of constants.
        assert_eq!(d.size(RelId::TRUE, &[0]), None);
    }
}
