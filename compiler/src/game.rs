//! A validated game: rules in disjunctive normal form, relations with fixed
//! arities, and the strata (dependency order) to evaluate them in.

use crate::source::Loc;
use crate::symbol::{Sym, SymbolTable};

/// Index of a relation in [`Game::relations`]. The GDL keyword relations
/// have fixed ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelId(pub u32);

impl RelId {
    pub const ROLE: RelId = RelId(0);
    pub const INIT: RelId = RelId(1);
    pub const TRUE: RelId = RelId(2);
    pub const NEXT: RelId = RelId(3);
    pub const LEGAL: RelId = RelId(4);
    pub const DOES: RelId = RelId(5);
    pub const GOAL: RelId = RelId(6);
    pub const TERMINAL: RelId = RelId(7);
    pub const BASE: RelId = RelId(8);
    pub const INPUT: RelId = RelId(9);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The keyword relations, in `RelId` order, with their arities.
pub(crate) const KEYWORD_RELATIONS: [(Sym, usize); 10] = [
    (Sym::ROLE, 1),
    (Sym::INIT, 1),
    (Sym::TRUE, 1),
    (Sym::NEXT, 1),
    (Sym::LEGAL, 2),
    (Sym::DOES, 2),
    (Sym::GOAL, 2),
    (Sym::TERMINAL, 0),
    (Sym::BASE, 1),
    (Sym::INPUT, 2),
];

/// What a relation's truth depends on: nothing but the rules (`Static`),
/// the current state (`State`: uses `true`), or also the joint move
/// (`Move`: uses `does`). Ordered: a relation's layer is the highest layer
/// of what it uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    Static,
    State,
    Move,
}

/// Which way [`Game::reachable`] follows rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Callees,
    Callers,
}

#[derive(Clone, Debug)]
pub struct Relation {
    pub name: Sym,
    pub arity: usize,
    pub layer: Layer,
    /// Whether any clause has this relation as its head.
    pub defined: bool,
}

/// A term pattern in a clause; variables are numbered per clause.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pat {
    Var(u32),
    Const(Sym),
    App(Sym, Box<[Pat]>),
}

impl Pat {
    pub fn for_each_var(&self, f: &mut impl FnMut(u32)) {
        match self {
            Pat::Var(v) => f(*v),
            Pat::Const(_) => {}
            Pat::App(_, args) => args.iter().for_each(|a| a.for_each_var(f)),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AtomPat {
    pub rel: RelId,
    pub args: Box<[Pat]>,
}

/// A body literal after normalisation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lit {
    Pos(AtomPat),
    Neg(AtomPat),
    /// `(distinct a b)`.
    Distinct(Pat, Pat),
    /// `(not (distinct a b))`: the terms are equal.
    Same(Pat, Pat),
}

impl Pat {
    /// This pattern with its variables renumbered in order of first
    /// occurrence, continuing `map` (old numbers by new): equal patterns up
    /// to naming come out equal.
    pub(crate) fn renumbered(&self, map: &mut Vec<u32>) -> Pat {
        match self {
            Pat::Var(v) => Pat::Var(match map.iter().position(|from| from == v) {
                Some(k) => k as u32,
                None => {
                    map.push(*v);
                    map.len() as u32 - 1
                }
            }),
            Pat::Const(s) => Pat::Const(*s),
            Pat::App(f, args) => Pat::App(*f, args.iter().map(|a| a.renumbered(map)).collect()),
        }
    }
}

impl Lit {
    pub fn for_each_var(&self, f: &mut impl FnMut(u32)) {
        match self {
            Lit::Pos(a) | Lit::Neg(a) => a.args.iter().for_each(|p| p.for_each_var(f)),
            Lit::Distinct(x, y) | Lit::Same(x, y) => {
                x.for_each_var(f);
                y.for_each_var(f);
            }
        }
    }

    /// The literal's variables, sorted, each once.
    pub fn vars(&self) -> Vec<u32> {
        let mut v = Vec::new();
        self.for_each_var(&mut |x| v.push(x));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// [`Pat::renumbered`] over the literal's patterns.
    pub(crate) fn renumbered(&self, map: &mut Vec<u32>) -> Lit {
        let atom = |a: &AtomPat, map: &mut Vec<u32>| AtomPat {
            rel: a.rel,
            args: a.args.iter().map(|p| p.renumbered(map)).collect(),
        };
        match self {
            Lit::Pos(a) => Lit::Pos(atom(a, map)),
            Lit::Neg(a) => Lit::Neg(atom(a, map)),
            Lit::Distinct(x, y) => Lit::Distinct(x.renumbered(map), y.renumbered(map)),
            Lit::Same(x, y) => Lit::Same(x.renumbered(map), y.renumbered(map)),
        }
    }
}

/// One conjunctive rule. A source rule with `or` becomes several clauses.
#[derive(Clone, Debug)]
pub struct Clause {
    pub head: AtomPat,
    pub body: Vec<Lit>,
    /// Variable names, indexed by the numbers used in the patterns.
    pub var_names: Vec<Sym>,
    /// Where the source rule starts.
    pub loc: Loc,
}

/// A strongly connected set of relations, evaluated together.
#[derive(Clone, Debug)]
pub struct Stratum {
    pub rels: Vec<RelId>,
    /// Indices into [`Game::clauses`] of the clauses defining `rels`.
    pub clauses: Vec<usize>,
    /// Whether some relation here depends on itself (needs a fixpoint).
    pub recursive: bool,
    pub layer: Layer,
}

/// A game that passed validation.
#[derive(Clone, Debug)]
pub struct Game {
    /// The file name, for messages.
    pub name: String,
    pub symbols: SymbolTable,
    /// Role names, in declaration order.
    pub roles: Vec<Sym>,
    pub relations: Vec<Relation>,
    pub clauses: Vec<Clause>,
    /// Every relation's stratum, dependencies first.
    pub strata: Vec<Stratum>,
    /// Number of rules and facts in the source (before `or` was expanded).
    pub source_rules: usize,
    /// Things worth knowing that do not make the game invalid.
    pub warnings: Vec<String>,
    /// Relations whose truth also needs a question answered on the state
    /// ([`crate::queries`]); none in a game as written.
    pub queries: Vec<crate::queries::Query>,
}

impl Game {
    pub fn relation(&self, r: RelId) -> &Relation {
        &self.relations[r.index()]
    }

    pub fn rel_name(&self, r: RelId) -> &str {
        self.symbols.name(self.relations[r.index()].name)
    }

    pub fn relation_by_name(&self, name: &str) -> Option<RelId> {
        let s = self.symbols.get(name)?;
        self.relations.iter().position(|r| r.name == s).map(|i| RelId(i as u32))
    }

    /// Which relations the game's outputs (`init`, `legal`, `next`,
    /// `goal`, `terminal`, `role`) depend on. The others (unused helper
    /// relations, and the `base`/`input` hints) need never be evaluated.
    pub fn needed_relations(&self) -> Vec<bool> {
        self.needed_by(&[RelId::ROLE, RelId::INIT, RelId::LEGAL, RelId::NEXT, RelId::GOAL, RelId::TERMINAL])
    }

    /// Which relations `roots` depend on (through positive or negative
    /// literals), the roots included.
    pub fn needed_by(&self, roots: &[RelId]) -> Vec<bool> {
        let mut needed = vec![false; self.relations.len()];
        for r in self.reachable(roots, Direction::Callees, |_| true) {
            needed[r.index()] = true;
        }
        needed
    }

    /// `roots` and every relation reached from them by following rule
    /// bodies (`Callees`: the relations a rule's body uses; `Callers`: the
    /// heads of the rules that use a relation), through positive and
    /// negative literals, entering only relations `enter` accepts (the
    /// roots always). Sorted.
    pub fn reachable(&self, roots: &[RelId], dir: Direction, enter: impl Fn(RelId) -> bool) -> Vec<RelId> {
        let mut next: Vec<Vec<RelId>> = vec![Vec::new(); self.relations.len()];
        for c in &self.clauses {
            for l in &c.body {
                if let Lit::Pos(a) | Lit::Neg(a) = l {
                    match dir {
                        Direction::Callees => next[c.head.rel.index()].push(a.rel),
                        Direction::Callers => next[a.rel.index()].push(c.head.rel),
                    }
                }
            }
        }
        let mut seen = vec![false; self.relations.len()];
        let mut stack = roots.to_vec();
        let mut out = Vec::new();
        while let Some(r) = stack.pop() {
            if std::mem::replace(&mut seen[r.index()], true) {
                continue;
            }
            out.push(r);
            stack.extend(next[r.index()].iter().copied().filter(|&d| !seen[d.index()] && enter(d)));
        }
        out.sort_unstable();
        out
    }

    /// The question relation `r` stands for, when it is one.
    pub fn query_of(&self, r: RelId) -> Option<usize> {
        self.queries.iter().position(|q| q.rel == r)
    }

    pub fn role_names(&self) -> Vec<String> {
        self.roles.iter().map(|&r| self.symbols.name(r).to_string()).collect()
    }
}
