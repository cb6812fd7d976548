//! Resolution of one clause: its literals taken in the cheapest order,
//! unified against tables and facts, its answers emitted.

use super::*;

impl TopDown {
    /// Solves the literals of clause `ci` left in `pending` under the
    /// bindings at `base`; each solution adds the head to table `sink`.
    pub(super) fn solve(
        &mut self,
        rules: &Rules,
        ci: u32,
        base: usize,
        pending: u64,
        sink: u32,
    ) -> Result<(), QueryError> {
        if self.done(sink) {
            return Ok(());
        }
        let c = &rules.clauses[ci as usize];
        if pending == 0 {
            return self.emit(rules, c, base, sink);
        }
        let rel_of_sink = self.table(sink).rel;
        self.tick(rules, rel_of_sink)?;
        let i = self.choose(rules, c, base, pending);
        let rest = pending & !(1u64 << i);
        match &c.body[i] {
            TLit::Distinct(x, y) | TLit::Same(x, y) => {
                let same = matches!(c.body[i], TLit::Same(..));
                let (Some(a), Some(b)) = (self.ground(x, base)?, self.ground(y, base)?) else {
                    return Err(unsafe_rule(rules, rel_of_sink));
                };
                if (a == b) == same {
                    self.solve(rules, ci, base, rest, sink)?;
                }
            }
            TLit::Neg(rel, args) => {
                let holds = if *rel == RelId::TRUE || *rel == RelId::DOES {
                    let Some(t) = self.ground(&args[0], base)? else { return Err(unsafe_rule(rules, rel_of_sink)) };
                    self.facts_of(*rel).set.contains(&t)
                } else {
                    let mut key = SmallVec::new();
                    for a in args.iter() {
                        match self.ground(a, base)? {
                            Some(t) => key.push(t),
                            None => return Err(unsafe_rule(rules, rel_of_sink)),
                        }
                    }
                    let t = self.call(rules, *rel, key)?;
                    self.table(t).found
                };
                if !holds {
                    self.solve(rules, ci, base, rest, sink)?;
                }
            }
            TLit::Pos(rel, args) if *rel == RelId::TRUE || *rel == RelId::DOES => {
                let facts = if *rel == RelId::TRUE { &self.facts } else { &self.moves };
                let (list, len) = match self.candidates(facts, &args[0], base) {
                    Candidates::None => return Ok(()),
                    Candidates::One(f) => {
                        let mark = self.trail.len();
                        if self.unify(&args[0], f, base) {
                            self.solve(rules, ci, base, rest, sink)?;
                        }
                        self.undo(mark);
                        return Ok(());
                    }
                    Candidates::List(l) => (l, facts.len(l)),
                };
                for k in 0..len {
                    let f = self.facts_of(*rel).lists[list as usize][k];
                    let mark = self.trail.len();
                    if self.unify(&args[0], f, base) {
                        self.solve(rules, ci, base, rest, sink)?;
                    }
                    self.undo(mark);
                    if self.done(sink) {
                        break;
                    }
                }
            }
            TLit::Pos(rel, args) => {
                let mut key: SmallVec<[TermId; 8]> = SmallVec::new();
                for a in args.iter() {
                    key.push(self.ground(a, base)?.unwrap_or(UNBOUND));
                }
                let t = self.call(rules, *rel, key)?;
                if self.table(t).boolean {
                    if self.table(t).found {
                        self.solve(rules, ci, base, rest, sink)?;
                    }
                    return Ok(());
                }
                let arity = args.len();
                let mut row: SmallVec<[TermId; 8]> = SmallVec::new();
                let mut k = 0;
                // The answers may grow while this runs (recursion): read by index.
                while (k + 1) * arity <= self.table(t).answers.len() && !self.done(sink) {
                    row.clear();
                    row.extend_from_slice(&self.table(t).answers[k * arity..(k + 1) * arity]);
                    k += 1;
                    let mark = self.trail.len();
                    if args.iter().zip(row.iter()).all(|(p, &a)| self.unify(p, a, base)) {
                        self.solve(rules, ci, base, rest, sink)?;
                    }
                    self.undo(mark);
                }
            }
        }
        Ok(())
    }

    /// The next literal to solve: a cheap test whose variables are bound
    /// (`distinct`, `true`, a static relation), else the first in the
    /// rule's order that is positive or has its variables bound.
    pub(super) fn choose(&self, rules: &Rules, c: &TClause, base: usize, pending: u64) -> usize {
        let bound = |i: usize| c.vars[i].iter().all(|&v| self.binds[base + v as usize] != UNBOUND);
        let mut first = None;
        let mut bits = pending;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let b = bound(i);
            let cheap = match &c.body[i] {
                TLit::Distinct(..) | TLit::Same(..) => true,
                TLit::Pos(r, _) | TLit::Neg(r, _) => *r == RelId::TRUE || rules.layer[r.index()] == Layer::Static,
            };
            if b && cheap {
                return i;
            }
            if first.is_none() && (b || matches!(c.body[i], TLit::Pos(..))) {
                first = Some(i);
            }
        }
        first.unwrap_or(pending.trailing_zeros() as usize)
    }

    pub(super) fn emit(&mut self, rules: &Rules, c: &TClause, base: usize, sink: u32) -> Result<(), QueryError> {
        let rel = self.table(sink).rel;
        if self.table(sink).boolean {
            let tab = self.table_mut(sink);
            if !tab.found {
                tab.found = true;
                self.added += 1;
            }
            return Ok(());
        }
        let mut row: SmallVec<[TermId; 8]> = SmallVec::new();
        for p in c.head.iter() {
            match self.ground(p, base)? {
                Some(t) => row.push(t),
                None => return Err(unsafe_rule(rules, rel)),
            }
        }
        let tab = self.table_mut(sink);
        if tab.seen.insert(row.clone()) {
            tab.answers.extend_from_slice(&row);
            self.added += 1;
        }
        Ok(())
    }

    /// The facts that may match `p`: the fact itself when `p` is ground,
    /// else the shortest list of its functor or of a bound argument.
    pub(super) fn candidates(&self, facts: &Facts, p: &TPat, base: usize) -> Candidates {
        let one = |t: TermId| if facts.set.contains(&t) { Candidates::One(t) } else { Candidates::None };
        match p {
            TPat::Ground(t) => one(*t),
            TPat::Var(v) => match self.binds[base + *v as usize] {
                UNBOUND => Candidates::List(0),
                t => one(t),
            },
            TPat::App(f, args) => {
                let Some(&first) = facts.by_functor.get(f) else { return Candidates::None };
                let mut best = first;
                for (i, a) in args.iter().enumerate() {
                    let Some(t) = self.ground_existing(a, base) else { continue };
                    match facts.by_arg.get(&(*f, i as u32, t)) {
                        Some(&l) if facts.len(l) < facts.len(best) => best = l,
                        Some(_) => {}
                        None => return Candidates::None,
                    }
                }
                Candidates::List(best)
            }
        }
    }

    /// The state's facts, or the move's (`does`).
    pub(super) fn facts_of(&self, rel: RelId) -> &Facts {
        if rel == RelId::DOES {
            &self.moves
        } else {
            &self.facts
        }
    }

    /// `p` as an existing ground term, when its variables are bound and
    /// it was ever built (a term never built is in no fact).
    pub(super) fn ground_existing(&self, p: &TPat, base: usize) -> Option<TermId> {
        match p {
            TPat::Var(v) => Some(self.binds[base + *v as usize]).filter(|&t| t != UNBOUND),
            TPat::Ground(t) => Some(*t),
            TPat::App(f, args) => {
                let mut ids: SmallVec<[TermId; 8]> = SmallVec::new();
                for a in args.iter() {
                    ids.push(self.ground_existing(a, base)?);
                }
                self.pool.find(*f, &ids)
            }
        }
    }

    /// `p` under the bindings, built if new; `None` when a variable is free.
    pub(super) fn ground(&mut self, p: &TPat, base: usize) -> Result<Option<TermId>, QueryError> {
        Ok(match p {
            TPat::Var(v) => Some(self.binds[base + *v as usize]).filter(|&t| t != UNBOUND),
            TPat::Ground(t) => Some(*t),
            TPat::App(f, args) => {
                let mut ids: SmallVec<[TermId; 8]> = SmallVec::new();
                for a in args.iter() {
                    match self.ground(a, base)? {
                        Some(t) => ids.push(t),
                        None => return Ok(None),
                    }
                }
                let t = self.pool.app(*f, &ids);
                Some(t.map_err(|TooDeep| QueryError::TermTooDeep { relation: self.rules.symbols.name(*f).into() })?)
            }
        })
    }

    pub(super) fn unify(&mut self, p: &TPat, t: TermId, base: usize) -> bool {
        match p {
            TPat::Var(v) => {
                let slot = base + *v as usize;
                match self.binds[slot] {
                    UNBOUND => {
                        self.binds[slot] = t;
                        self.trail.push(slot as u32);
                        true
                    }
                    b => b == t,
                }
            }
            TPat::Ground(g) => *g == t,
            TPat::App(f, args) => {
                if self.pool.functor(t) != *f || self.pool.args(t).len() != args.len() {
                    return false;
                }
                for (k, a) in args.iter().enumerate() {
                    let sub = self.pool.args(t)[k];
                    if !self.unify(a, sub, base) {
                        return false;
                    }
                }
                true
            }
        }
    }

    pub(super) fn undo(&mut self, mark: usize) {
        for &slot in &self.trail[mark..] {
            self.binds[slot as usize] = UNBOUND;
        }
        self.trail.truncate(mark);
    }
}
