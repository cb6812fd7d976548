//! Projection of local variables, before grounding.
//!
//! A positive body literal whose variables partly occur nowhere else in its
//! clause (not in the head, not in another literal) only asks whether *some*
//! value of those variables matches. Amazons' next-state rule
//! `(next (location ?x ?y ?s)) ⇐ (true (location ?x ?y ?s)) ∧
//! (does ?p (play ?x1 ?y1 ?x2 ?y2 ?x3 ?y3)) ∧ (distinctCell ?x ?y ?x1 ?y1)`
//! grounds to one rule per cell and per move (hundreds of thousands of
//! moves) although it only needs the moved queen's square. Such a literal
//! is replaced by a helper relation over its shared variables,
//! `(next~1 ?p ?x1 ?y1) ⇐ (does ?p (play ?x1 ?y1 ?x2 ?y2 ?x3 ?y3))`, which
//! grounds to one OR per square. The meaning is unchanged (an existential
//! over the local variables), and no clause grounds to more instances than
//! before.

use crate::game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, Relation};
use rustc_hash::FxHashMap;

/// Separates a helper's name from the relation whose clause it came from.
pub const MARK: char = '~';

fn vars_of(l: &Lit, out: &mut Vec<u32>) {
    let mut push = |v| out.push(v);
    match l {
        Lit::Pos(a) | Lit::Neg(a) => a.args.iter().for_each(|p| p.for_each_var(&mut push)),
        Lit::Distinct(x, y) | Lit::Same(x, y) => {
            x.for_each_var(&mut push);
            y.for_each_var(&mut push);
        }
    }
}

/// Renumbers a pattern's variables in order of first occurrence (so that
/// equal literal lists share one helper).
fn canonical(p: &Pat, map: &mut Vec<u32>) -> Pat {
    match p {
        Pat::Var(v) => {
            let k = match map.iter().position(|from| from == v) {
                Some(k) => k,
                None => {
                    map.push(*v);
                    map.len() - 1
                }
            };
            Pat::Var(k as u32)
        }
        Pat::Const(s) => Pat::Const(*s),
        Pat::App(f, args) => Pat::App(*f, args.iter().map(|a| canonical(a, map)).collect()),
    }
}

fn canonical_lit(l: &Lit, map: &mut Vec<u32>) -> Lit {
    let atom = |a: &AtomPat, map: &mut Vec<u32>| AtomPat {
        rel: a.rel,
        args: a.args.iter().map(|p| canonical(p, map)).collect(),
    };
    match l {
        Lit::Pos(a) => Lit::Pos(atom(a, map)),
        Lit::Neg(a) => Lit::Neg(atom(a, map)),
        Lit::Distinct(x, y) => Lit::Distinct(canonical(x, map), canonical(y, map)),
        Lit::Same(x, y) => Lit::Same(canonical(x, map), canonical(y, map)),
    }
}

fn lit_vars(l: &Lit) -> Vec<u32> {
    let mut v = Vec::new();
    vars_of(l, &mut v);
    v.sort_unstable();
    v.dedup();
    v
}

/// The rewritten game under construction: helper relations are shared
/// between clauses when their literals and interface are equal.
struct Rewrite<'g> {
    game: &'g Game,
    symbols: crate::symbol::SymbolTable,
    relations: Vec<Relation>,
    helpers: FxHashMap<(Vec<Lit>, Vec<u32>), RelId>,
    extra: Vec<Clause>,
}

impl Rewrite<'_> {
    /// The helper `h(interface) ⇐ lits` (from clause `c`), as a literal.
    fn helper(&mut self, c: &Clause, lits: &[Lit], interface: &[u32]) -> Lit {
        let mut map = Vec::new();
        let key_lits: Vec<Lit> = lits.iter().map(|l| canonical_lit(l, &mut map)).collect();
        let key_iface: Vec<u32> =
            interface.iter().map(|v| map.iter().position(|m| m == v).unwrap_or(0) as u32).collect();
        let args: Box<[Pat]> = interface.iter().map(|&v| Pat::Var(v)).collect();
        let next_id = RelId(self.relations.len() as u32);
        let rel = *self.helpers.entry((key_lits, key_iface)).or_insert(next_id);
        if rel == next_id {
            let name = format!("{}{MARK}{}", self.game.rel_name(c.head.rel), self.helpers.len());
            tracing::debug!(helper = name, literals = lits.len(), arity = interface.len(), "projection");
            // Layers are computed again once every clause is in place; this
            // one serves `split_groups` until then.
            let layer = self.layer(lits);
            self.relations.push(Relation {
                name: self.symbols.intern(&name),
                arity: interface.len(),
                layer,
                defined: true,
            });
            self.extra.push(Clause {
                head: AtomPat { rel, args: args.clone() },
                body: lits.to_vec(),
                var_names: c.var_names.clone(),
                loc: c.loc.clone(),
            });
        }
        Lit::Pos(AtomPat { rel, args })
    }

    /// The highest layer of the relations `lits` read.
    fn layer(&self, lits: &[Lit]) -> Layer {
        lits.iter()
            .filter_map(|l| match l {
                Lit::Pos(a) | Lit::Neg(a) => Some(self.relations[a.rel.index()].layer),
                _ => None,
            })
            .max()
            .unwrap_or(Layer::Static)
    }

    /// Step 1: each positive literal with variables of its own keeps only
    /// the shared ones.
    fn project_literals(&mut self, c: &Clause, head_vars: &[u32]) -> Vec<Lit> {
        let vars: Vec<Vec<u32>> = c.body.iter().map(lit_vars).collect();
        let mut body = c.body.clone();
        for (i, l) in c.body.iter().enumerate() {
            if !matches!(l, Lit::Pos(_)) {
                continue;
            }
            let elsewhere =
                |v: u32| head_vars.contains(&v) || vars.iter().enumerate().any(|(j, vs)| j != i && vs.contains(&v));
            let shared = first_occurrence(l, |v| elsewhere(v));
            if shared.len() < vars[i].len() {
                body[i] = self.helper(c, std::slice::from_ref(l), &shared);
            }
        }
        body
    }

    /// Step 2: literals linked only through variables outside the head form
    /// independent groups (chess's "a move that touches neither this cell
    /// nor ..." beside `(true (cell ?x ?y ?p))`); a group of several
    /// literals becomes one helper over the head variables it uses.
    fn split_groups(&mut self, c: &Clause, head_vars: &[u32], body: Vec<Lit>) -> Vec<Lit> {
        let vars: Vec<Vec<u32>> = body.iter().map(lit_vars).collect();
        let mut group: Vec<usize> = (0..body.len()).collect();
        fn find(g: &mut [usize], i: usize) -> usize {
            let mut r = i;
            while g[r] != r {
                r = g[r];
            }
            g[i] = r;
            r
        }
        for i in 0..body.len() {
            for j in i + 1..body.len() {
                if vars[i].iter().any(|v| !head_vars.contains(v) && vars[j].contains(v)) {
                    let (a, b) = (find(&mut group, i), find(&mut group, j));
                    group[a] = b;
                }
            }
        }
        let roots: Vec<usize> = (0..body.len()).map(|i| find(&mut group, i)).collect();
        let mut distinct_roots = roots.clone();
        distinct_roots.sort_unstable();
        distinct_roots.dedup();
        // Each group: its literal indices and whether it reads the state or move.
        let groups: Vec<(Vec<usize>, bool)> = distinct_roots
            .iter()
            .map(|&r| {
                let members: Vec<usize> = (0..body.len()).filter(|&i| roots[i] == r).collect();
                let lits: Vec<Lit> = members.iter().map(|&i| body[i].clone()).collect();
                let dynamic = self.layer(&lits) != Layer::Static;
                (members, dynamic)
            })
            .collect();
        // Splitting pays where two groups that change with the state or
        // the move would multiply; static literals only filter, and alone a
        // group would lose their filtering (alexChess's `between`).
        if groups.iter().filter(|g| g.1).count() < 2 {
            return body;
        }
        let mut out = Vec::new();
        for (members, dynamic) in groups {
            let lits: Vec<Lit> = members.iter().map(|&i| body[i].clone()).collect();
            // A group is its own safe clause when its positive literals bind
            // every variable of its negations and (in)equalities.
            let bound: Vec<u32> =
                members.iter().filter(|&&i| matches!(body[i], Lit::Pos(_))).flat_map(|&i| vars[i].clone()).collect();
            let safe = members.iter().all(|&i| vars[i].iter().all(|v| bound.contains(v)));
            if members.len() < 2 || !safe || !dynamic {
                out.extend(lits);
                continue;
            }
            let mut iface: Vec<u32> = Vec::new();
            for l in &lits {
                for v in first_occurrence(l, |v| head_vars.contains(&v)) {
                    if !iface.contains(&v) {
                        iface.push(v);
                    }
                }
            }
            out.push(self.helper(c, &lits, &iface));
        }
        out
    }
}

/// The variables of `l` that satisfy `keep`, in order of first occurrence.
fn first_occurrence(l: &Lit, keep: impl Fn(u32) -> bool) -> Vec<u32> {
    let mut all = Vec::new();
    vars_of(l, &mut all);
    let mut out = Vec::new();
    for v in all {
        if keep(v) && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The game with local variables projected out and independent literal
/// groups split off, or `None` when there was nothing to do.
pub fn project_locals(game: &Game) -> Option<Game> {
    let mut rw = Rewrite {
        game,
        symbols: game.symbols.clone(),
        relations: game.relations.clone(),
        helpers: FxHashMap::default(),
        extra: Vec::new(),
    };
    let mut clauses: Vec<Clause> = Vec::with_capacity(game.clauses.len());
    for c in &game.clauses {
        if c.body.len() < 2 {
            clauses.push(c.clone());
            continue;
        }
        let mut head_vars = Vec::new();
        c.head.args.iter().for_each(|p| p.for_each_var(&mut |v| head_vars.push(v)));
        let body = rw.project_literals(c, &head_vars);
        let body = rw.split_groups(c, &head_vars, body);
        clauses.push(Clause { head: c.head.clone(), body, var_names: c.var_names.clone(), loc: c.loc.clone() });
    }
    if rw.extra.is_empty() {
        return None;
    }
    let Rewrite { symbols, relations, extra, .. } = rw;
    clauses.extend(extra);
    // Helpers add no negation of their own; should stratification still
    // fail, grounding uses the game as written.
    game.rewritten(symbols, relations, clauses, game.warnings.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clause_text(g: &Game, c: &Clause) -> String {
        let lit = |l: &Lit| match l {
            Lit::Pos(a) => format!("{}/{}", g.rel_name(a.rel), a.args.len()),
            Lit::Neg(a) => format!("not {}/{}", g.rel_name(a.rel), a.args.len()),
            Lit::Distinct(..) => "distinct".into(),
            Lit::Same(..) => "same".into(),
        };
        format!(
            "{}/{} <= {}",
            g.rel_name(c.head.rel),
            c.head.args.len(),
            c.body.iter().map(lit).collect::<Vec<_>>().join(", ")
        )
    }

    #[test]
    fn projects_a_move_onto_the_variables_the_rule_uses() {
        let text = "(role a) (role b) (init (p 1)) (init (p 2)) (num 1) (num 2)
            (<= (legal ?r (go ?x ?y)) (role ?r) (num ?x) (num ?y))
            (<= (next (p ?x)) (true (p ?x)) (does ?r (go ?y ?z)) (distinct ?x ?y))
            (<= (next (p ?y)) (does ?r (go ?y ?z)))
            (<= terminal (true (p 3)))
            (<= (goal ?r 0) (role ?r))";
        let g = crate::validate::load("t.kif", text).unwrap();
        let p = project_locals(&g).expect("a local variable to project");
        let shown: Vec<String> = p.clauses.iter().map(|c| clause_text(&p, c)).collect();
        assert!(shown.contains(&"next/1 <= true/1, next~1/1, distinct".to_string()), "{shown:?}");
        assert!(shown.contains(&"next~1/1 <= does/2".to_string()), "{shown:?}");
        // A rule with one literal keeps it.
        assert!(shown.contains(&"next/1 <= does/2".to_string()), "{shown:?}");
        assert_eq!(p.relations.len(), g.relations.len() + 1);
    }

    #[test]
    fn splits_off_a_group_linked_only_outside_the_head() {
        let text = "(role a) (init (cell 1 x)) (init (cell 2 x)) (num 1) (num 2) (apart 1 2) (apart 2 1)
            (<= (legal a (move ?m ?n)) (num ?m) (num ?n))
            (<= (blocked ?m ?n) (true (cell ?m ?n)))
            (<= (next (cell ?x ?p)) (true (cell ?x ?p)) (does ?r (move ?m ?n)) (not (blocked ?m ?n)) (apart ?x ?m))
            (<= terminal (true (cell 3 x)))
            (<= (goal a 0) (true (cell 1 x)))";
        let g = crate::validate::load("t.kif", text).unwrap();
        let p = project_locals(&g).expect("a group to split off");
        let shown: Vec<String> = p.clauses.iter().map(|c| clause_text(&p, c)).collect();
        assert!(shown.contains(&"next~1/2 <= does/2".to_string()), "{shown:?}");
        assert!(shown.contains(&"next~2/1 <= next~1/2, not blocked/2, apart/2".to_string()), "{shown:?}");
        assert!(shown.contains(&"next/1 <= true/1, next~2/1".to_string()), "{shown:?}");
    }

    #[test]
    fn a_group_whose_negation_needs_the_head_stays() {
        // `(distinct ?x ?m)` needs ?x, bound only by `true` outside the group.
        let text = "(role a) (init (cell 1 x)) (num 1) (num 2)
            (<= (legal a (move ?m ?n)) (num ?m) (num ?n))
            (<= (next (cell ?x ?p)) (true (cell ?x ?p)) (does a (move ?m ?n)) (distinct ?x ?m))
            (<= terminal (true (cell 3 x)))
            (<= (goal a 0) (true (cell 1 x)))";
        let g = crate::validate::load("t.kif", text).unwrap();
        let p = project_locals(&g).expect("the move's ?n to project");
        let shown: Vec<String> = p.clauses.iter().map(|c| clause_text(&p, c)).collect();
        assert!(shown.contains(&"next/1 <= true/1, next~1/1, distinct".to_string()), "{shown:?}");
    }

    #[test]
    fn a_game_without_local_variables_is_left_alone() {
        let text = "(role a) (init (p 1))
            (<= (legal a (go ?x)) (true (p ?x)))
            (<= (next (p ?x)) (does a (go ?x)) (true (p ?x)))
            (<= terminal (true (p 2)))
            (<= (goal a 0) (true (p 1)))";
        let g = crate::validate::load("t.kif", text).unwrap();
        assert!(project_locals(&g).is_none());
    }
}
