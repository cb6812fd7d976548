//! Validation: from a syntax tree to a [`Game`], or an error that says which
//! rule of GDL the description breaks and where.
//!
//! Checks, in order: fixed arities (relations and function symbols), GDL-II
//! features, roles, keyword placement, rule safety (after `or` is expanded),
//! stratified negation, what `legal`/`goal`/`terminal`/`init` may depend on,
//! and that the relations a game needs are defined.

use crate::ast::{Atom, Description, Literal, Rule, Term};
use crate::error::{ErrorKind, GdlError};
use crate::game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, Relation, Stratum, KEYWORD_RELATIONS};
use crate::normal::{dnf, Leaf, MAX_DISJUNCTS};
use crate::source::{Source, Span};
use crate::symbol::{Sym, SymbolTable};
use rustc_hash::FxHashMap;

/// Reads, parses and validates a game description.
pub fn load(name: &str, text: impl Into<Vec<u8>>) -> Result<Game, GdlError> {
    let src = Source::new(name, text);
    let mut syms = SymbolTable::new();
    let desc = crate::syntax::parse(&src, &mut syms)?;
    validate(&src, &desc, syms)
}

/// Reads a game from a file. Errors name the file.
pub fn load_file(path: &std::path::Path) -> Result<Game, GdlError> {
    let name = path.display().to_string();
    let text = std::fs::read(path).map_err(|e| GdlError::in_file(&name, ErrorKind::Io(e.to_string())))?;
    load(&name, text)
}

struct Validator<'a> {
    src: &'a Source,
    syms: &'a SymbolTable,
    rel_ids: FxHashMap<Sym, RelId>,
    relations: Vec<Relation>,
    /// Where each relation was first used (None for unused keywords).
    rel_first: Vec<Option<Span>>,
    /// Whether some rule's body reads each relation.
    rel_read: Vec<bool>,
    /// Arities of function symbols where a term stands for a state fact
    /// (the argument of `true`, `init`, `next`, `base`) or a move (the
    /// second argument of `does`, `legal`, `input`), and the first use.
    /// Within each of these two kinds a symbol has one arity.
    fn_arity: FxHashMap<(Sym, Position), (usize, Span)>,
    /// Every arity a function symbol is used with, and its first use.
    fn_uses: FxHashMap<Sym, Vec<(usize, Span, Position)>>,
    warnings: Vec<String>,
}

pub fn validate(src: &Source, desc: &Description, syms: SymbolTable) -> Result<Game, GdlError> {
    let mut v = Validator {
        src,
        syms: &syms,
        rel_ids: FxHashMap::default(),
        relations: Vec::new(),
        rel_first: Vec::new(),
        rel_read: Vec::new(),
        fn_arity: FxHashMap::default(),
        fn_uses: FxHashMap::default(),
        warnings: desc.warnings.clone(),
    };
    for (name, arity) in KEYWORD_RELATIONS {
        v.rel_ids.insert(name, RelId(v.relations.len() as u32));
        v.relations.push(Relation { name, arity, layer: Layer::Static, defined: false });
        v.rel_first.push(None);
        v.rel_read.push(false);
    }
    let rules = v.usable_rules(desc);
    for rule in &rules {
        v.declare_atom(&rule.head)?;
        v.walk_body(&rule.body)?;
    }
    v.warn_mixed_arities();
    v.check_gdl_ii(&rules)?;
    let roles = v.roles(&rules)?;
    v.check_placement(&rules)?;
    let clauses = v.clauses(&rules)?;
    for c in &clauses {
        v.relations[c.head.rel.index()].defined = true;
    }
    let strata = v.stratify(&clauses)?;
    v.check_dependencies(&clauses)?;
    v.check_required(&roles)?;
    let Validator { relations, warnings, .. } = v;
    Ok(Game {
        name: src.name.clone(),
        symbols: syms,
        roles,
        relations,
        clauses,
        strata,
        source_rules: desc.rules.len(),
        warnings,
        queries: Vec::new(),
    })
}

/// Where a function term occurs, for its arity: a state fact, a move,
/// or anywhere else (inside another term, an argument of a relation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Position {
    Fact,
    Move,
    Inside,
}

fn is_hint(rel: Sym) -> bool {
    matches!(rel, Sym::BASE | Sym::INPUT)
}

impl Validator<'_> {
    /// The rules to validate: all, except `base`/`input` rules when some of
    /// them do not have the standard form (they are only hints, and older
    /// files use other forms of them).
    fn usable_rules<'d>(&mut self, desc: &'d Description) -> Vec<&'d Rule> {
        let malformed = desc
            .rules
            .iter()
            .find(|r| is_hint(r.head.rel) && r.head.args.len() != if r.head.rel == Sym::BASE { 1 } else { 2 });
        match malformed {
            Some(r) => {
                self.warnings.push(format!(
                    "`base`/`input` rules ignored: the one at {} does not have the standard form",
                    self.at(r.head.span)
                ));
                desc.rules.iter().filter(|r| !is_hint(r.head.rel)).collect()
            }
            None => desc.rules.iter().collect(),
        }
    }

    fn err(&self, span: Span, kind: ErrorKind) -> GdlError {
        GdlError::at(self.src.loc(span), kind)
    }

    fn at(&self, span: Span) -> String {
        let (l, c) = self.src.line_col(span.start);
        format!("{l}:{c}")
    }

    fn name(&self, s: Sym) -> &str {
        self.syms.name(s)
    }

    fn rel(&self, s: Sym) -> RelId {
        self.rel_ids[&s]
    }

    /// Registers a relation use and checks its arity.
    fn declare_atom(&mut self, a: &Atom) -> Result<(), GdlError> {
        let arity = a.args.len();
        match self.rel_ids.get(&a.rel) {
            Some(&id) => {
                let r = &self.relations[id.index()];
                if r.arity != arity {
                    let msg = if id.index() < KEYWORD_RELATIONS.len() {
                        format!("`{}` takes {} argument(s), found {}", self.name(a.rel), r.arity, arity)
                    } else {
                        let first = self.rel_first[id.index()].map(|s| self.at(s)).unwrap_or_default();
                        format!(
                            "relation `{}` is used with {} argument(s) here but with {} at {}",
                            self.name(a.rel),
                            arity,
                            r.arity,
                            first
                        )
                    };
                    return Err(self.err(a.span, ErrorKind::Arity(msg)));
                }
                if self.rel_first[id.index()].is_none() {
                    self.rel_first[id.index()] = Some(a.span);
                }
            }
            None => {
                let id = RelId(self.relations.len() as u32);
                self.rel_ids.insert(a.rel, id);
                self.relations.push(Relation { name: a.rel, arity, layer: Layer::Static, defined: false });
                self.rel_first.push(Some(a.span));
                self.rel_read.push(false);
            }
        }
        for (i, t) in a.args.iter().enumerate() {
            let position = match (a.rel, i) {
                (Sym::TRUE | Sym::INIT | Sym::NEXT | Sym::BASE, 0) => Position::Fact,
                (Sym::DOES | Sym::LEGAL | Sym::INPUT, 1) => Position::Move,
                _ => Position::Inside,
            };
            self.declare_term(t, position)?;
        }
        Ok(())
    }

    /// Registers a function term's arity. Function symbols and relations
    /// are different namespaces in GDL, and terms with different numbers
    /// of arguments are different terms, so only two state facts (or two
    /// moves) with one symbol must agree: `(cell 1 1 x)` as a fact and
    /// `(cell 1 1)` inside another term are both clear.
    fn declare_term(&mut self, t: &Term, position: Position) -> Result<(), GdlError> {
        if let Term::App(f, args, span) = t {
            if position != Position::Inside {
                match self.fn_arity.get(&(*f, position)) {
                    Some(&(n, first)) if n != args.len() => {
                        let what = if position == Position::Fact { "state fact" } else { "move" };
                        let msg = format!(
                            "function `{}` is used with {} argument(s) here but with {} at {} (both as a {what})",
                            self.name(*f),
                            args.len(),
                            n,
                            self.at(first)
                        );
                        return Err(self.err(*span, ErrorKind::Arity(msg)));
                    }
                    Some(_) => {}
                    None => {
                        self.fn_arity.insert((*f, position), (args.len(), *span));
                    }
                }
            }
            let uses = self.fn_uses.entry(*f).or_default();
            if !uses.iter().any(|u| u.0 == args.len()) {
                uses.push((args.len(), *span, position));
            }
            for a in args {
                self.declare_term(a, Position::Inside)?;
            }
        }
        Ok(())
    }

    /// A warning for each function symbol used with several arities (in
    /// positions where that is allowed).
    fn warn_mixed_arities(&mut self) {
        let mut mixed: Vec<(Span, String)> = Vec::new();
        for (f, uses) in &self.fn_uses {
            if uses.len() < 2 {
                continue;
            }
            let list: Vec<String> = uses
                .iter()
                .map(|(n, span, pos)| {
                    let role = match pos {
                        Position::Fact => " as a state fact",
                        Position::Move => " as a move",
                        Position::Inside => "",
                    };
                    format!("{n} at {}{role}", self.at(*span))
                })
                .collect();
            let msg = format!(
                "function `{}` is used with different numbers of arguments ({}): they are taken as different terms",
                self.name(*f),
                list.join(", ")
            );
            mixed.push((uses[0].1, msg));
        }
        mixed.sort_by_key(|m| (m.0.start, m.0.end));
        self.warnings.extend(mixed.into_iter().map(|m| m.1));
    }

    fn walk_body(&mut self, body: &[Literal]) -> Result<(), GdlError> {
        for l in body {
            match l {
                Literal::Atom(a) => {
                    self.declare_atom(a)?;
                    if let Some(&id) = self.rel_ids.get(&a.rel) {
                        self.rel_read[id.index()] = true;
                    }
                }
                Literal::Not(inner, _) => self.walk_body(std::slice::from_ref(inner))?,
                Literal::Distinct(x, y, _) => {
                    self.declare_term(x, Position::Inside)?;
                    self.declare_term(y, Position::Inside)?;
                }
                Literal::Or(ls, _) | Literal::And(ls, _) => self.walk_body(ls)?,
            }
        }
        Ok(())
    }

    fn check_gdl_ii(&self, rules: &[&Rule]) -> Result<(), GdlError> {
        if let Some(&id) = self.rel_ids.get(&Sym::SEES) {
            let span = self.rel_first[id.index()].unwrap_or_default();
            return Err(self.err(span, ErrorKind::GdlII("the game uses `sees` (imperfect information)".into())));
        }
        for r in rules {
            if r.head.rel == Sym::ROLE {
                if let [Term::Const(Sym::RANDOM, span)] = r.head.args[..] {
                    return Err(self.err(span, ErrorKind::GdlII("the role `random` is GDL-II's chance player".into())));
                }
            }
        }
        Ok(())
    }

    fn roles(&self, rules: &[&Rule]) -> Result<Vec<Sym>, GdlError> {
        let mut roles: Vec<Sym> = Vec::new();
        for r in rules.iter().filter(|r| r.head.rel == Sym::ROLE) {
            if !r.body.is_empty() {
                return Err(self.err(r.span, ErrorKind::Placement("roles must be given as facts, not rules".into())));
            }
            match r.head.args[..] {
                [Term::Const(s, span)] => {
                    if roles.contains(&s) {
                        let msg = format!("role `{}` is declared twice", self.name(s));
                        return Err(self.err(span, ErrorKind::Placement(msg)));
                    }
                    roles.push(s);
                }
                _ => return Err(self.err(r.head.span, ErrorKind::Placement("a role must be a constant".into()))),
            }
        }
        Ok(roles)
    }

    fn check_placement(&self, rules: &[&Rule]) -> Result<(), GdlError> {
        fn body_atoms<'a>(ls: &'a [Literal], out: &mut Vec<&'a Atom>) {
            for l in ls {
                match l {
                    Literal::Atom(a) => out.push(a),
                    Literal::Not(inner, _) => body_atoms(std::slice::from_ref(inner), out),
                    Literal::Distinct(..) => {}
                    Literal::Or(ls, _) | Literal::And(ls, _) => body_atoms(ls, out),
                }
            }
        }
        let mut atoms = Vec::new();
        for r in rules {
            if matches!(r.head.rel, Sym::TRUE | Sym::DOES) {
                let msg = format!("`{}` cannot be the head of a rule", self.name(r.head.rel));
                return Err(self.err(r.head.span, ErrorKind::Placement(msg)));
            }
            atoms.clear();
            body_atoms(&r.body, &mut atoms);
            for a in &atoms {
                if matches!(a.rel, Sym::INIT | Sym::NEXT) {
                    let msg = format!("`{}` cannot appear in a rule body", self.name(a.rel));
                    return Err(self.err(a.span, ErrorKind::Placement(msg)));
                }
            }
        }
        Ok(())
    }

    /// Expands every rule into clauses and checks their safety.
    fn clauses(&mut self, rules: &[&Rule]) -> Result<Vec<Clause>, GdlError> {
        let mut out = Vec::new();
        for rule in rules {
            let conjs = dnf(&rule.body).map_err(|span| {
                let msg = format!("this rule expands into more than {MAX_DISJUNCTS} alternatives (too many `or`)");
                self.err(span, ErrorKind::TooLarge(msg))
            })?;
            let branches = conjs.len();
            for conj in conjs {
                match self.clause(rule, &conj, branches > 1) {
                    Ok(c) => out.push(c),
                    // An unsafe hint is dropped, not fatal: hints are optional.
                    Err(e) if is_hint(rule.head.rel) => {
                        self.warnings.push(format!("`{}` rule ignored: {}", self.name(rule.head.rel), e.kind));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(out)
    }

    fn clause(&self, rule: &Rule, conj: &[Leaf<'_>], branched: bool) -> Result<Clause, GdlError> {
        // Variables bound by positive literals.
        let mut bound: Vec<Sym> = Vec::new();
        for leaf in conj {
            if let Leaf::Pos(a) = leaf {
                a.for_each_var(&mut |v, _| {
                    if !bound.contains(&v) {
                        bound.push(v)
                    }
                });
            }
        }
        let mut unsafe_var: Option<(Sym, Span, &str)> = None;
        let mut check = |v: Sym, span: Span, place: &'static str| {
            if unsafe_var.is_none() && !bound.contains(&v) {
                unsafe_var = Some((v, span, place));
            }
        };
        rule.head.for_each_var(&mut |v, s| check(v, s, "the head"));
        for leaf in conj {
            match leaf {
                Leaf::Pos(_) => {}
                Leaf::Neg(a) => a.for_each_var(&mut |v, s| check(v, s, "a `not`")),
                Leaf::Distinct(x, y) | Leaf::Same(x, y) => {
                    x.for_each_var(&mut |v, s| check(v, s, "a `distinct`"));
                    y.for_each_var(&mut |v, s| check(v, s, "a `distinct`"));
                }
            }
        }
        if let Some((v, span, place)) = unsafe_var {
            let branch = if branched { " (in one branch of its `or`)" } else { "" };
            let msg = format!(
                "variable ?{} in {place} does not occur in any positive literal of the rule body{branch}",
                self.name(v)
            );
            return Err(self.err(span, ErrorKind::Unsafe(msg)));
        }
        let mut vars = VarNumbering { names: bound };
        let head = self.atom_pat(&rule.head, &mut vars);
        let body = conj
            .iter()
            .map(|leaf| match leaf {
                Leaf::Pos(a) => Lit::Pos(self.atom_pat(a, &mut vars)),
                Leaf::Neg(a) => Lit::Neg(self.atom_pat(a, &mut vars)),
                Leaf::Distinct(x, y) => Lit::Distinct(vars.pat(x), vars.pat(y)),
                Leaf::Same(x, y) => Lit::Same(vars.pat(x), vars.pat(y)),
            })
            .collect();
        Ok(Clause { head, body, var_names: vars.names, loc: self.src.loc(rule.span) })
    }

    fn atom_pat(&self, a: &Atom, vars: &mut VarNumbering) -> AtomPat {
        AtomPat { rel: self.rel(a.rel), args: a.args.iter().map(|t| vars.pat(t)).collect() }
    }

    /// Orders the clauses into strata (see [`crate::strata`]) and turns a
    /// cycle through `not` into an error naming the relations on it.
    fn stratify(&mut self, clauses: &[Clause]) -> Result<Vec<Stratum>, GdlError> {
        crate::strata::set_layers(&mut self.relations, clauses, &[]);
        crate::strata::stratify(&self.relations, clauses).map_err(|u| {
            let name = |r: RelId| self.name(self.relations[r.index()].name);
            let cycle: Vec<&str> = u.cycle.iter().map(|&r| name(r)).collect();
            let (head, neg) = (name(u.head), name(u.neg));
            let msg = format!(
                "`{head}` is defined using `(not ({neg} ...))`, but `{neg}` depends on `{head}` again (relations on the cycle: {})",
                cycle.join(", ")
            );
            GdlError::at(clauses[u.clause].loc.clone(), ErrorKind::Unstratified(msg))
        })
    }

    /// `legal`, `goal`, `terminal` and `init` may not depend on `does`;
    /// `init` may not depend on `true` either.
    fn check_dependencies(&self, clauses: &[Clause]) -> Result<(), GdlError> {
        for (rel, limit) in [
            (RelId::LEGAL, Layer::State),
            (RelId::GOAL, Layer::State),
            (RelId::TERMINAL, Layer::State),
            (RelId::INIT, Layer::Static),
        ] {
            let layer = self.relations[rel.index()].layer;
            if layer <= limit {
                continue;
            }
            let target = if layer == Layer::Move { RelId::DOES } else { RelId::TRUE };
            let (path, loc) = self.dependency_path(clauses, rel, target);
            let msg = format!(
                "`{}` must not depend on `{}`, but it does: {}",
                self.name(self.relations[rel.index()].name),
                self.name(self.relations[target.index()].name),
                path
            );
            let kind = ErrorKind::Placement(msg);
            return Err(match loc {
                Some(loc) => GdlError::at(loc, kind),
                None => GdlError::in_file(&self.src.name, kind),
            });
        }
        Ok(())
    }

    /// A shortest chain of relations from `from` to `to`, and the location
    /// of the first rule on it.
    fn dependency_path(&self, clauses: &[Clause], from: RelId, to: RelId) -> (String, Option<crate::source::Loc>) {
        let n = self.relations.len();
        let mut parent: Vec<Option<(RelId, usize)>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut queue = std::collections::VecDeque::from([from]);
        seen[from.index()] = true;
        while let Some(r) = queue.pop_front() {
            if r == to {
                break;
            }
            for (ci, c) in clauses.iter().enumerate().filter(|(_, c)| c.head.rel == r) {
                for l in &c.body {
                    if let Lit::Pos(a) | Lit::Neg(a) = l {
                        if !seen[a.rel.index()] {
                            seen[a.rel.index()] = true;
                            parent[a.rel.index()] = Some((r, ci));
                            queue.push_back(a.rel);
                        }
                    }
                }
            }
        }
        let mut chain = vec![to];
        let mut first_clause = None;
        let mut cur = to;
        while let Some((p, ci)) = parent[cur.index()] {
            chain.push(p);
            first_clause = Some(ci);
            cur = p;
        }
        chain.reverse();
        let names: Vec<&str> = chain.iter().map(|r| self.name(self.relations[r.index()].name)).collect();
        (names.join(" -> "), first_clause.map(|ci| clauses[ci].loc.clone()))
    }

    fn check_required(&mut self, roles: &[Sym]) -> Result<(), GdlError> {
        if roles.is_empty() {
            return Err(GdlError::in_file(&self.src.name, ErrorKind::Missing("the game declares no `role`".into())));
        }
        for rel in [RelId::LEGAL, RelId::GOAL, RelId::TERMINAL] {
            if !self.relations[rel.index()].defined {
                let msg = format!("the game has no `{}` rules", self.name(self.relations[rel.index()].name));
                return Err(GdlError::in_file(&self.src.name, ErrorKind::Missing(msg)));
            }
        }
        if !self.relations[RelId::INIT.index()].defined {
            self.warnings.push("no `init` facts: the initial state is empty".into());
        }
        // A keyword misspelt is the commonest GDL mistake: a relation read
        // but never defined, or defined but never read.
        for (i, r) in self.relations.iter().enumerate().skip(KEYWORD_RELATIONS.len()) {
            let at = self.rel_first[i].map(|s| self.at(s)).unwrap_or_default();
            let hint = self.keyword_like(r.name).map(|k| format!("; did you mean `{k}`?")).unwrap_or_default();
            if !r.defined {
                self.warnings.push(format!(
                    "relation `{}` is never defined, so it is always false (first used at {at}){hint}",
                    self.name(r.name)
                ));
            } else if !self.rel_read[i] {
                self.warnings.push(format!(
                    "relation `{}` is defined (first at {at}) but no rule reads it{hint}",
                    self.name(r.name)
                ));
            }
        }
        Ok(())
    }

    /// The keyword relation `name` is one or two edits away from (a
    /// misspelling), for names of four letters or more.
    fn keyword_like(&self, name: Sym) -> Option<&str> {
        let name = self.name(name);
        if name.chars().count() < 4 {
            return None;
        }
        KEYWORD_RELATIONS.iter().map(|&(k, _)| self.name(k)).find(|k| edit_distance(name, k) <= 2)
    }
}

/// Levenshtein distance between two short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Numbers a clause's variables: positive-literal variables first, in order
/// of appearance (which is every variable, since the clause is safe).
struct VarNumbering {
    names: Vec<Sym>,
}

impl VarNumbering {
    fn pat(&mut self, t: &Term) -> Pat {
        match t {
            Term::Const(s, _) => Pat::Const(*s),
            Term::Var(v, _) => Pat::Var(match self.names.iter().position(|n| n == v) {
                Some(i) => i as u32,
                None => {
                    self.names.push(*v);
                    self.names.len() as u32 - 1
                }
            }),
            Term::App(f, args, _) => Pat::App(*f, args.iter().map(|a| self.pat(a)).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINI: &str = "(role a) (init p) (<= (legal a go) (true p)) (<= (next q) (does a go)) \
                        (<= terminal (true q)) (goal a 100)";

    fn load_str(text: &str) -> Result<Game, GdlError> {
        load("t.kif", text)
    }

    fn category(text: &str) -> &'static str {
        match load_str(text) {
            Ok(_) => "valid",
            Err(e) => e.kind.category(),
        }
    }

    #[test]
    fn minimal_game_is_valid() {
        let g = load_str(MINI).unwrap();
        assert_eq!(g.role_names(), ["a"]);
        assert_eq!(g.relation(RelId::LEGAL).layer, Layer::State);
        assert_eq!(g.relation(RelId::NEXT).layer, Layer::Move);
        assert_eq!(g.relation(RelId::INIT).layer, Layer::Static);
    }

    #[test]
    fn arities_must_agree() {
        assert_eq!(category(&format!("{MINI} (p a) (p a b)")), "arity");
        assert_eq!(category(&format!("{MINI} (legal a)")), "arity");
        assert_eq!(category(&format!("{MINI} (<= (next q r s) (true p))")), "arity");
        // Two state facts, or two moves, with one symbol.
        assert_eq!(category(&format!("{MINI} (init (f a)) (<= (next (f a b)) (true p))")), "arity");
        assert_eq!(category(&format!("{MINI} (legal a (go 1)) (legal a (go 1 2))")), "arity");
        let e = load_str(&format!("{MINI} (init (f a)) (<= (next (f a b)) (true p))")).unwrap_err();
        assert!(e.to_string().contains("both as a state fact"), "{e}");
    }

    #[test]
    fn function_terms_of_different_arities_elsewhere_are_different_terms() {
        // `cell` has three arguments as a state fact and two inside
        // `member`'s argument: the meaning is clear.
        let text = format!(
            "{MINI} (init (cell 1 1 b)) (<= (next (cell ?x ?y ?v)) (true (cell ?x ?y ?v)))
             (member (cell 1 1) (list)) (<= (h ?x) (true (cell ?x ?y ?v)) (member (cell ?x ?y) ?l))
             (p (f a)) (p (f a b))"
        );
        let g = load_str(&text).unwrap();
        let w: Vec<&String> = g.warnings.iter().filter(|w| w.contains("different numbers of arguments")).collect();
        assert_eq!(w.len(), 2, "{:?}", g.warnings);
        assert!(w.iter().any(|w| w.contains("`cell`") && w.contains("as a state fact")), "{w:?}");
        // A state fact and a move are different terms too.
        assert_eq!(category(&format!("{MINI} (init (mark 1 1 x)) (legal a (mark 1 1))")), "valid");
    }

    #[test]
    fn unsafe_rules_are_refused() {
        assert_eq!(category(&format!("{MINI} (<= (p ?x) (true q))")), "unsafe");
        assert_eq!(category(&format!("{MINI} (<= (p) (true q) (not (r ?x)))")), "unsafe");
        assert_eq!(category(&format!("{MINI} (<= (p) (true q) (distinct ?x a))")), "unsafe");
        assert_eq!(category(&format!("{MINI} (<= (p ?x) (or (r ?x) (true q)))")), "unsafe");
        assert_eq!(category(&format!("{MINI} (r 1) (<= (p ?x) (or (r ?x) (r ?x)))")), "valid");
        let e = load_str(&format!("{MINI}\n(<= (p ?x) (true q))")).unwrap_err();
        assert!(e.to_string().contains("?x"), "{e}");
        assert_eq!(e.loc.unwrap().line, 2);
    }

    #[test]
    fn negation_must_be_stratified() {
        let e = load_str(&format!("{MINI} (<= (p) (true q) (not (s))) (<= (s) (p))")).unwrap_err();
        assert_eq!(e.kind.category(), "unstratified");
        assert!(e.to_string().contains("p, s") || e.to_string().contains("s, p"), "{e}");
        // Recursion without negation is fine, and so is negation of a lower stratum.
        assert_eq!(category(&format!("{MINI} (e 1 2) (<= (r ?x ?y) (e ?x ?y)) (<= (r ?x ?z) (r ?x ?y) (e ?y ?z)) (<= (n ?x) (e ?x ?y) (not (r ?y ?x)))")), "valid");
    }

    #[test]
    fn keyword_placement() {
        assert_eq!(category(&format!("{MINI} (<= (true z) (true p))")), "placement");
        assert_eq!(category(&format!("{MINI} (<= (p) (next q))")), "placement");
        assert_eq!(category(&format!("{MINI} (<= (legal a stop) (does a go))")), "placement");
        assert_eq!(category(&format!("{MINI} (<= (h) (does a go)) (<= (goal a 0) (h))")), "placement");
        assert_eq!(category(&format!("{MINI} (<= (init z) (true p))")), "placement");
        let e = load_str(&format!("{MINI} (<= (h) (does a go)) (<= terminal (h))")).unwrap_err();
        assert!(e.to_string().contains("terminal -> h -> does"), "{e}");
    }

    #[test]
    fn misspelt_keywords_are_named() {
        // `legl` defined and never read; `ture` read and never defined.
        let g = load_str(&format!("{MINI} (legl a stay) (<= (h) (ture p)) (<= terminal (h))")).unwrap();
        let has = |s: &str| g.warnings.iter().any(|w| w.contains(s));
        assert!(has("relation `legl` is defined (first at 1:"), "{:?}", g.warnings);
        assert!(has("no rule reads it; did you mean `legal`?"), "{:?}", g.warnings);
        assert!(has("relation `ture` is never defined") && has("did you mean `true`?"), "{:?}", g.warnings);
        // A helper that is read draws nothing; one that is not, no hint.
        let g = load_str(&format!("{MINI} (helper p) (<= (legal a stay) (helper p)) (unused q)")).unwrap();
        assert!(g.warnings.iter().all(|w| !w.contains("`helper`")), "{:?}", g.warnings);
        assert!(
            g.warnings.iter().any(|w| w.ends_with("no rule reads it") && w.contains("`unused`")),
            "{:?}",
            g.warnings
        );
        assert_eq!(edit_distance("terminl", "terminal"), 1);
        assert_eq!(edit_distance("goal", "legal"), 3);
    }

    #[test]
    fn required_relations_and_gdl_ii() {
        assert_eq!(category("(role a) (init p) (<= terminal (true p)) (goal a 1)"), "missing");
        assert_eq!(category("(init p) (legal a b) (<= terminal (true p)) (goal a 1)"), "missing");
        assert_eq!(category(&format!("{MINI} (<= (sees a p) (true p))")), "gdl-ii");
        assert_eq!(category(&format!("{MINI} (role random)")), "gdl-ii");
        let g = load_str("(role a) (legal a go) (<= terminal (true p)) (goal a 1)").unwrap();
        assert!(g.warnings.iter().any(|w| w.contains("initial state is empty")));
    }

    #[test]
    fn strata_put_dependencies_first() {
        let g = load_str(&format!(
            "{MINI} (e 1 2) (<= (r ?x) (e ?x ?y)) (<= (s ?x) (r ?x) (not (t ?x))) (<= (t ?x) (e ?x ?x))"
        ))
        .unwrap();
        let pos = |name: &str| {
            let r = g.relation_by_name(name).unwrap();
            g.strata.iter().position(|s| s.rels.contains(&r)).unwrap()
        };
        assert!(pos("e") < pos("r") && pos("r") < pos("s") && pos("t") < pos("s"));
    }

    #[test]
    fn instance_split_stratification() {
        // The puzzle idiom: goal 100 is the negation of goal 0.
        let g = load_str(
            "(role r) (init p) (<= (legal r go) (true p)) (<= (next p) (true p)) (<= terminal (true p)) \
                          (<= (goal r 0) (true q)) (<= (goal r 100) (not (goal r 0)))",
        );
        assert!(g.is_ok(), "{:?}", g.err());
        // But a real cycle through `not` on the same instance is refused.
        let e = load_str(
            "(role r) (init p) (<= (legal r go) (true p)) (<= (next p) (true p)) (<= terminal (true p)) \
                          (<= (goal r 0) (not (goal ?x 100)) (role ?x)) (<= (goal r 100) (not (goal r 0)))",
        );
        assert_eq!(e.unwrap_err().kind.category(), "unstratified");
    }

    #[test]
    fn malformed_hints_are_ignored() {
        let g = load_str(&format!("{MINI} (base control (player x o)) (<= (base (cell ?x)) (true p))")).unwrap();
        assert!(g.warnings.iter().any(|w| w.contains("ignored")), "{:?}", g.warnings);
        let g = load_str(&format!("{MINI} (<= (base (cell ?x)) (true p)) (base p)")).unwrap();
        assert!(g.warnings.iter().any(|w| w.contains("ignored")), "{:?}", g.warnings);
    }
}
