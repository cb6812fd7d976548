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
//!
//! The same idea over groups of literals is variable elimination (step 3):
//! quarto's line test `(row) ⇐ (true (cell 1 ?y ?p1)) ∧ … ∧ (true (cell 4
//! ?y ?p4)) ∧ (set ?p1 ?p2 ?p3 ?p4)`, with `set` ("the four pieces share an
//! attribute bit") unfolded into it, asks for each row, bit and value
//! whether each cell holds *some* piece with that bit: four ORs of eight
//! cells and an AND, where the rule as written grounds to 27,120 ANDs of
//! four cells per line.

use crate::domain::Domains;
use crate::game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, Relation, KEYWORD_RELATIONS};
use rustc_hash::FxHashMap;

pub use crate::names::{base_name, MARK};

/// The rewritten game under construction: helper relations are shared
/// between clauses when their literals and interface are equal.
struct Rewrite {
    symbols: crate::symbol::SymbolTable,
    relations: Vec<Relation>,
    helpers: FxHashMap<(Vec<Lit>, Vec<u32>), RelId>,
    extra: Vec<Clause>,
    /// Names of the relations whose rules step 3 (or unfolding) changed.
    touched: Vec<String>,
    /// How many values each argument position takes (step 3's estimates).
    domains: Domains,
}

/// The values assumed for a variable whose domain is not a count of
/// constants.
const UNKNOWN_DOMAIN: f64 = 64.0;

impl Rewrite {
    /// Records that the rules of relation `name` changed.
    fn touch(&mut self, name: String) {
        if !self.touched.contains(&name) {
            self.touched.push(name);
        }
    }

    /// The helper `h(interface) ⇐ lits` (from clause `c`), as a literal.
    fn helper(&mut self, c: &Clause, lits: &[Lit], interface: &[u32]) -> Lit {
        let mut map = Vec::new();
        let key_lits: Vec<Lit> = lits.iter().map(|l| l.renumbered(&mut map)).collect();
        let key_iface: Vec<u32> =
            interface.iter().map(|v| map.iter().position(|m| m == v).unwrap_or(0) as u32).collect();
        let args: Box<[Pat]> = interface.iter().map(|&v| Pat::Var(v)).collect();
        let next_id = RelId(self.relations.len() as u32);
        let rel = *self.helpers.entry((key_lits, key_iface)).or_insert(next_id);
        if rel == next_id {
            // The clause may be a helper's own: name it after the relation it came from.
            let from = base_name(self.symbols.name(self.relations[c.head.rel.index()].name));
            let name = format!("{from}{MARK}{}", self.helpers.len());
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
            let sizes = interface.iter().map(|&v| self.domains.var_size(lits, v)).collect();
            self.domains.set_columns(rel, sizes);
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
        let vars: Vec<Vec<u32>> = c.body.iter().map(Lit::vars).collect();
        let mut body = c.body.clone();
        for (i, l) in c.body.iter().enumerate() {
            if !matches!(l, Lit::Pos(_)) {
                continue;
            }
            let elsewhere =
                |v: u32| head_vars.contains(&v) || vars.iter().enumerate().any(|(j, vs)| j != i && vs.contains(&v));
            let shared = first_occurrence(l, elsewhere);
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
        let vars: Vec<Vec<u32>> = body.iter().map(Lit::vars).collect();
        let mut group: Vec<usize> = (0..body.len()).collect();
        for i in 0..body.len() {
            for j in i + 1..body.len() {
                if vars[i].iter().any(|v| !head_vars.contains(v) && vars[j].contains(v)) {
                    let (a, b) = (root(&mut group, i), root(&mut group, j));
                    group[a] = b;
                }
            }
        }
        let roots: Vec<usize> = (0..body.len()).map(|i| root(&mut group, i)).collect();
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
            let iface = interface(&lits, |v| head_vars.contains(&v));
            out.push(self.helper(c, &lits, &iface));
        }
        out
    }

    /// Step 3: variable elimination. For a variable `v` outside the head,
    /// the literals that mention it become one helper over their variables
    /// that are also used elsewhere, when some variable elsewhere does not
    /// meet them (so that their instances no longer multiply with its
    /// values). The variable whose helper has the fewest instances goes
    /// first (estimated from each variable's [`Domains`]), as in greedy
    /// elimination orders: eliminating quarto's row index first would make
    /// a helper over four pieces, 16^4 instances. The domains must count
    /// values of rule-defined relations and state terms too: with every
    /// such variable at one default size, six-player two-thirds
    /// eliminated a closeness score first and joined every guess and
    /// lower score with every score (8.4M instances), where its players
    /// go first (six each).
    fn eliminate(&mut self, c: &Clause, head_vars: &[u32], mut body: Vec<Lit>) -> Vec<Lit> {
        loop {
            let vars: Vec<Vec<u32>> = body.iter().map(Lit::vars).collect();
            let domain = |v: u32| self.domains.var_size(&body, v).map_or(UNKNOWN_DOMAIN, |n| n as f64);
            let mut locals: Vec<u32> = vars.iter().flatten().copied().filter(|v| !head_vars.contains(v)).collect();
            locals.sort_unstable();
            locals.dedup();
            let mut best: Option<(f64, Vec<usize>, Vec<u32>)> = None;
            for &v in &locals {
                let members: Vec<usize> = (0..body.len()).filter(|&i| vars[i].contains(&v)).collect();
                let inside: Vec<u32> = members.iter().flat_map(|&i| vars[i].iter().copied()).collect();
                let outside: Vec<u32> = (0..body.len())
                    .filter(|i| !members.contains(i))
                    .flat_map(|i| vars[i].iter().copied())
                    .chain(head_vars.iter().copied())
                    .collect();
                if outside.iter().all(|w| inside.contains(w)) {
                    continue;
                }
                let bound: Vec<u32> = members
                    .iter()
                    .filter(|&&i| matches!(body[i], Lit::Pos(_)))
                    .flat_map(|&i| vars[i].iter().copied())
                    .collect();
                if !inside.iter().all(|w| bound.contains(w)) {
                    continue;
                }
                let lits: Vec<Lit> = members.iter().map(|&i| body[i].clone()).collect();
                // Static literals only filter; grounding joins them anyway.
                if self.layer(&lits) == Layer::Static {
                    continue;
                }
                let iface = interface(&lits, |w| outside.contains(&w));
                let cost: f64 = iface.iter().map(|&w| domain(w)).product();
                if best.as_ref().is_none_or(|(b, _, _)| cost < *b) {
                    best = Some((cost, members, iface));
                }
            }
            let Some((_, members, iface)) = best else { return body };
            let lits: Vec<Lit> = members.iter().map(|&i| body[i].clone()).collect();
            let helper = self.helper(c, &lits, &iface);
            let from = base_name(self.symbols.name(self.relations[c.head.rel.index()].name)).to_string();
            self.touch(from);
            let mut out = Vec::with_capacity(body.len() + 1 - members.len());
            for (i, l) in body.into_iter().enumerate() {
                if i == members[0] {
                    out.push(helper.clone());
                } else if !members.contains(&i) {
                    out.push(l);
                }
            }
            body = out;
        }
    }
}

/// Relations to unfold into the rules that use them: defined by one rule,
/// not recursive, with distinct variables as arguments, and whose body,
/// once its local variables are fixed, falls apart into groups over
/// disjoint arguments. Such a relation is a union of cross products
/// (quarto's `set`: per bit and value, any four of the eight pieces that
/// have it); unfolded, each argument meets the literals that bind it in the
/// caller, and step 3 takes the product apart.
fn unfoldable(game: &Game) -> Vec<Option<usize>> {
    let mut by_head: Vec<Vec<usize>> = vec![Vec::new(); game.relations.len()];
    for (i, c) in game.clauses.iter().enumerate() {
        by_head[c.head.rel.index()].push(i);
    }
    let recursive: Vec<bool> = {
        let mut r = vec![false; game.relations.len()];
        for s in game.strata.iter().filter(|s| s.recursive) {
            for rel in &s.rels {
                r[rel.index()] = true;
            }
        }
        r
    };
    (0..game.relations.len())
        .map(|r| {
            let [ci] = by_head[r][..] else { return None };
            let c = &game.clauses[ci];
            if r < KEYWORD_RELATIONS.len() || recursive[r] || c.body.len() < 2 || c.body.len() > MAX_UNFOLD {
                return None;
            }
            let mut args: Vec<u32> = Vec::new();
            for p in c.head.args.iter() {
                match p {
                    Pat::Var(v) if !args.contains(v) => args.push(*v),
                    _ => return None,
                }
            }
            // Union the arguments each literal mentions; count the groups.
            let mut group: Vec<usize> = (0..args.len()).collect();
            let mut local = false;
            for l in &c.body {
                let vs = l.vars();
                local |= vs.iter().any(|v| !args.contains(v));
                let mine: Vec<usize> = vs.iter().filter_map(|v| args.iter().position(|a| a == v)).collect();
                for w in mine.windows(2) {
                    let (a, b) = (root(&mut group, w[0]), root(&mut group, w[1]));
                    group[a] = b;
                }
            }
            let mut roots: Vec<usize> = (0..args.len()).map(|i| root(&mut group, i)).collect();
            roots.sort_unstable();
            roots.dedup();
            (local && roots.len() >= 2).then_some(ci)
        })
        .collect()
}

/// Most body literals of a relation [`unfoldable`] unfolds.
const MAX_UNFOLD: usize = 16;

/// Union-find: the representative of `i`'s set (paths shortened).
fn root(g: &mut [usize], i: usize) -> usize {
    let mut r = i;
    while g[r] != r {
        r = g[r];
    }
    g[i] = r;
    r
}

/// `p` with callee variables replaced: `map[v]` for variable `v`.
fn subst(p: &Pat, map: &[Pat]) -> Pat {
    match p {
        Pat::Var(v) => map[*v as usize].clone(),
        Pat::Const(s) => Pat::Const(*s),
        Pat::App(f, args) => Pat::App(*f, args.iter().map(|a| subst(a, map)).collect()),
    }
}

fn subst_lit(l: &Lit, map: &[Pat]) -> Lit {
    let atom = |a: &AtomPat| AtomPat { rel: a.rel, args: a.args.iter().map(|p| subst(p, map)).collect() };
    match l {
        Lit::Pos(a) => Lit::Pos(atom(a)),
        Lit::Neg(a) => Lit::Neg(atom(a)),
        Lit::Distinct(x, y) => Lit::Distinct(subst(x, map), subst(y, map)),
        Lit::Same(x, y) => Lit::Same(subst(x, map), subst(y, map)),
    }
}

/// `c` with its positive uses of [`unfoldable`] relations replaced by their
/// bodies (their local variables renamed apart), a few levels deep.
fn unfold(game: &Game, rules: &[Option<usize>], c: &Clause) -> Option<Clause> {
    let mut out = c.clone();
    let mut changed = false;
    for _ in 0..3 {
        let mut body = Vec::with_capacity(out.body.len());
        let mut again = false;
        for l in &out.body {
            let callee = match l {
                Lit::Pos(a) => rules[a.rel.index()].map(|ci| (a, &game.clauses[ci])),
                _ => None,
            };
            let Some((a, def)) = callee else {
                body.push(l.clone());
                continue;
            };
            let base = out.var_names.len() as u32;
            let mut map: Vec<Pat> = (0..def.var_names.len() as u32).map(|v| Pat::Var(base + v)).collect();
            for (p, arg) in def.head.args.iter().zip(a.args.iter()) {
                if let Pat::Var(v) = p {
                    map[*v as usize] = arg.clone();
                }
            }
            out.var_names.extend(def.var_names.iter().copied());
            body.extend(def.body.iter().map(|l| subst_lit(l, &map)));
            again = true;
        }
        out.body = body;
        changed |= again;
        if !again || out.body.len() > 4 * MAX_UNFOLD {
            break;
        }
    }
    changed.then_some(out)
}

/// The variables of `lits` that satisfy `keep`, in order of first
/// occurrence: a helper's arguments.
fn interface(lits: &[Lit], keep: impl Fn(u32) -> bool) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for l in lits {
        for v in first_occurrence(l, &keep) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// The variables of `l` that satisfy `keep`, in order of first occurrence.
fn first_occurrence(l: &Lit, keep: impl Fn(u32) -> bool) -> Vec<u32> {
    let mut all = Vec::new();
    l.for_each_var(&mut |v| all.push(v));
    let mut out = Vec::new();
    for v in all {
        if keep(v) && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The game with local variables projected out and independent literal
/// groups split off (steps 1 and 2), or `None` when there was nothing to
/// do.
pub fn project_locals(game: &Game) -> Option<Game> {
    rewrite(game, false).map(|(g, _)| g)
}

/// The game rewritten by steps 1 and 2 and variable elimination (step 3,
/// with decomposable relations unfolded first), or `None` when step 3
/// changes nothing beyond [`project_locals`].
pub fn eliminate_locals(game: &Game) -> Option<Eliminated> {
    rewrite(game, true).map(|(game, touched)| Eliminated { game, touched })
}

/// [`eliminate_locals`]' result.
pub struct Eliminated {
    pub game: Game,
    /// The relations whose rules changed, by [`base_name`].
    pub touched: Vec<String>,
}

fn rewrite(game: &Game, eliminate: bool) -> Option<(Game, Vec<String>)> {
    let mut rw = Rewrite {
        symbols: game.symbols.clone(),
        relations: game.relations.clone(),
        helpers: FxHashMap::default(),
        extra: Vec::new(),
        touched: Vec::new(),
        // Only step 3 estimates sizes.
        domains: if eliminate { Domains::of(game) } else { Domains::default() },
    };
    let rules = if eliminate { unfoldable(game) } else { vec![None; game.relations.len()] };
    let mut clauses: Vec<Clause> = Vec::with_capacity(game.clauses.len());
    for c in &game.clauses {
        let owned;
        let c = match unfold(game, &rules, c) {
            Some(u) => {
                rw.touch(base_name(game.rel_name(c.head.rel)).to_string());
                owned = u;
                &owned
            }
            None => c,
        };
        if c.body.len() < 2 {
            clauses.push(c.clone());
            continue;
        }
        let mut head_vars = Vec::new();
        c.head.args.iter().for_each(|p| p.for_each_var(&mut |v| head_vars.push(v)));
        let body = rw.project_literals(c, &head_vars);
        let body = rw.split_groups(c, &head_vars, body);
        let body = if eliminate { rw.eliminate(c, &head_vars, body) } else { body };
        clauses.push(Clause { head: c.head.clone(), body, var_names: c.var_names.clone(), loc: c.loc.clone() });
    }
    // Helpers are rules too: a group split off in step 2 (racer's
    // position, speed and track test) may itself take elimination.
    let mut k = 0;
    while eliminate && k < rw.extra.len() {
        let c = rw.extra[k].clone();
        let mut head_vars = Vec::new();
        c.head.args.iter().for_each(|p| p.for_each_var(&mut |v| head_vars.push(v)));
        rw.extra[k].body = rw.eliminate(&c, &head_vars, c.body.clone());
        k += 1;
    }
    // Step 3 reports only what it changed beyond steps 1 and 2.
    if (eliminate && rw.touched.is_empty()) || (!eliminate && rw.extra.is_empty()) {
        return None;
    }
    let Rewrite { symbols, relations, extra, touched, .. } = rw;
    clauses.extend(extra);
    // Helpers add no negation of their own; should stratification still
    // fail, grounding uses the game as written.
    match crate::strata::rewritten(game, symbols, relations, clauses, game.warnings.clone()) {
        Ok(g) => Some((g, touched)),
        Err(u) => {
            tracing::debug!(cycle = ?u.cycle, "projection: the rewritten rules are not stratified");
            None
        }
    }
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
    fn the_variable_with_the_fewer_values_goes_first_whatever_defines_them() {
        // `?x` takes 3 values and `?y` 100, both known only through the
        // state (`legal` → `does` → `next` → `true`). Eliminating `?y`
        // leaves a helper over (?x, ?z); eliminating `?x` one over (?y, ?w).
        let nums: String = (1..=100).map(|i| format!("(wide {i}) ")).collect();
        let text = format!(
            "(role r) (few 1) (few 2) (few 3) {nums}
            (<= (legal r (go ?x ?y)) (few ?x) (wide ?y))
            (<= (next (at ?x ?y)) (does r (go ?x ?y)))
            (<= (next (on ?y ?x)) (does r (go ?x ?y)))
            (<= (next (near ?x ?x)) (does r (go ?x ?y)))
            (<= (seen ?z ?w) (true (at ?x ?y)) (true (on ?y ?z)) (true (near ?x ?w)))
            (<= terminal (seen 1 1))
            (<= (goal r 0) (true (at 1 1)))"
        );
        let g = crate::validate::load("t.kif", text).unwrap();
        let e = eliminate_locals(&g).expect("a variable to eliminate");
        let shown: Vec<String> = e.game.clauses.iter().map(|c| clause_text(&e.game, c)).collect();
        let helper = e.game.clauses.iter().find(|c| e.game.rel_name(c.head.rel).starts_with("seen~")).unwrap();
        assert_eq!(clause_text(&e.game, helper), "seen~1/2 <= true/1, true/1", "{shown:?}");
        // The helper joins `at` with `on` (over ?x ?y ?z), not with `near`
        // (as when every state variable counted 64 values).
        let on = g.symbols.get("on").unwrap();
        let reads_on =
            helper.body.iter().any(|l| matches!(l, Lit::Pos(a) if matches!(&a.args[0], Pat::App(f, _) if *f == on)));
        assert!(reads_on, "{shown:?}");
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
