//! Unfolding into clauses with a ground head (`terminal`, `(goal white
//! 100)`, propositions such as sudoku's `emptyCellExists`).
//!
//! Such a clause needs one match of its body, and the evaluator stops its
//! join at the first ([`crate::eval`]). That helps little when the body is
//! one call of a state relation computed in full beforehand: sudoku's
//! `terminal` asks `(not emptyCellExists)`, `emptyCellExists` asks
//! `(emptyCell ?i ?j)`, and bottom-up every empty cell is found (729
//! negated lookups a state) where a top-down prover stops at the first.
//! Replacing such a call by the called relation's clauses (unfolding)
//! lets the early stop reach into their bodies, and the query no longer
//! needs the called relation at all.
//!
//! Only state- or move-dependent relations are unfolded (static ones are
//! computed once and looked up), and only non-recursive ones with few
//! clauses; the clauses of the unfolded relation stay for its other
//! callers.

use crate::game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, KEYWORD_RELATIONS};
use crate::symbol::Sym;

/// Most clauses a relation may have to be unfolded.
const MAX_DEFINITIONS: usize = 4;
/// Most clauses one ground-head clause may become.
const MAX_CLAUSES: usize = 8;
/// Most body literals of an unfolded clause.
const MAX_BODY: usize = 64;
/// Rounds of unfolding (each unfolds one call per clause).
const MAX_ROUNDS: usize = 4;

/// `game` with calls of small non-recursive state relations in clauses
/// with a ground head replaced by those relations' clauses; None when
/// nothing was unfolded.
pub fn unfold_ground_heads(game: &Game) -> Option<Game> {
    let nrel = game.relations.len();
    let mut recursive = vec![false; nrel];
    for st in game.strata.iter().filter(|st| st.recursive) {
        for r in &st.rels {
            recursive[r.index()] = true;
        }
    }
    let mut defs: Vec<Vec<usize>> = vec![Vec::new(); nrel];
    for (i, c) in game.clauses.iter().enumerate() {
        defs[c.head.rel.index()].push(i);
    }
    let unfoldable = |r: RelId| {
        r.index() >= KEYWORD_RELATIONS.len()
            && game.relations[r.index()].layer != Layer::Static
            && !recursive[r.index()]
            && !defs[r.index()].is_empty()
            && defs[r.index()].len() <= MAX_DEFINITIONS
    };
    let needed = game.needed_relations();
    let mut changed = false;
    let mut clauses = Vec::with_capacity(game.clauses.len());
    for c in &game.clauses {
        let ground = c.head.args.iter().all(|a| !has_var(a));
        if !needed[c.head.rel.index()] || !ground {
            clauses.push(c.clone());
            continue;
        }
        let mut work = vec![c.clone()];
        for _ in 0..MAX_ROUNDS {
            let mut next = Vec::new();
            let mut any = false;
            for w in &work {
                let call = w.body.iter().position(|l| matches!(l, Lit::Pos(a) if unfoldable(a.rel)));
                match call {
                    None => next.push(w.clone()),
                    Some(i) => {
                        any = true;
                        let Lit::Pos(a) = &w.body[i] else { unreachable!("found above") };
                        next.extend(defs[a.rel.index()].iter().filter_map(|&d| unfold_at(w, i, &game.clauses[d])));
                    }
                }
            }
            if !any || next.len() > MAX_CLAUSES || next.iter().any(|c| c.body.len() > MAX_BODY) {
                break;
            }
            work = next;
            changed = true;
        }
        clauses.extend(work);
    }
    if !changed {
        return None;
    }
    let relations = game.relations.clone();
    crate::strata::rewritten(game, game.symbols.clone(), relations, clauses, game.warnings.clone()).ok()
}

/// `game` with the positive calls of relation `r` replaced by `r`'s
/// clauses, in every clause but `r`'s own; None when `r` is not a small
/// non-recursive state relation or no call could be unfolded. A clause
/// whose unfolding would grow past the limits keeps its calls; negative
/// calls stay too, so `r`'s clauses stay for them.
///
/// For the prover: a relation derived in full every state, whose callers
/// look up only a few of its rows (chess_200's `notPinnedUnlessInDir`,
/// 1,024 rows a state for the few pieces that can move), costs less
/// asked inside each caller.
pub fn unfold_calls(game: &Game, r: RelId) -> Option<Game> {
    let recursive = game.strata.iter().any(|st| st.recursive && st.rels.contains(&r));
    let defs: Vec<&Clause> = game.clauses.iter().filter(|c| c.head.rel == r).collect();
    if r.index() < KEYWORD_RELATIONS.len()
        || game.relations[r.index()].layer == Layer::Static
        || recursive
        || defs.is_empty()
        || defs.len() > MAX_DEFINITIONS
    {
        return None;
    }
    let calls = |c: &Clause| c.body.iter().position(|l| matches!(l, Lit::Pos(a) if a.rel == r));
    let mut changed = false;
    let mut clauses = Vec::with_capacity(game.clauses.len());
    for c in &game.clauses {
        if c.head.rel == r || calls(c).is_none() {
            clauses.push(c.clone());
            continue;
        }
        let mut work = vec![c.clone()];
        let mut done = false;
        for _ in 0..MAX_ROUNDS {
            let mut next = Vec::new();
            for w in &work {
                match calls(w) {
                    None => next.push(w.clone()),
                    Some(i) => next.extend(defs.iter().filter_map(|d| unfold_at(w, i, d))),
                }
            }
            if next.len() > MAX_CLAUSES || next.iter().any(|c| c.body.len() > MAX_BODY) {
                break;
            }
            work = next;
            if work.iter().all(|w| calls(w).is_none()) {
                done = true;
                break;
            }
        }
        if done {
            clauses.extend(work);
            changed = true;
        } else {
            clauses.push(c.clone());
        }
    }
    if !changed {
        return None;
    }
    let relations = game.relations.clone();
    crate::strata::rewritten(game, game.symbols.clone(), relations, clauses, game.warnings.clone()).ok()
}

fn has_var(p: &Pat) -> bool {
    let mut any = false;
    p.for_each_var(&mut |_| any = true);
    any
}

/// Clause `w` with its body literal `i` (a positive call) replaced by the
/// body of `def`, under the most general unifier of the call and `def`'s
/// head; None when they do not unify or the result would not be safe.
fn unfold_at(w: &Clause, i: usize, def: &Clause) -> Option<Clause> {
    let Lit::Pos(call) = &w.body[i] else { return None };
    let off = w.var_names.len() as u32;
    let shift = |p: &Pat| rename(p, &mut |v| v + off);
    let mut subst: Vec<Option<Pat>> = vec![None; w.var_names.len() + def.var_names.len()];
    for (x, y) in call.args.iter().zip(def.head.args.iter()) {
        if !unify(x, &shift(y), &mut subst) {
            return None;
        }
    }
    let shift_lit = |l: &Lit| map_lit(l, &mut |p| shift(p));
    let body: Vec<Lit> = w.body[..i]
        .iter()
        .cloned()
        .chain(def.body.iter().map(shift_lit))
        .chain(w.body[i + 1..].iter().cloned())
        .map(|l| map_lit(&l, &mut |p| resolve(p, &subst)))
        .collect();
    let head = AtomPat { rel: w.head.rel, args: w.head.args.iter().map(|p| resolve(p, &subst)).collect() };
    // Number the variables left afresh, in order of appearance.
    let names: Vec<Sym> = w.var_names.iter().chain(def.var_names.iter()).copied().collect();
    let mut fresh: Vec<Option<u32>> = vec![None; names.len()];
    let mut var_names = Vec::new();
    let mut number = |v: u32| {
        *fresh[v as usize].get_or_insert_with(|| {
            var_names.push(names[v as usize]);
            (var_names.len() - 1) as u32
        })
    };
    let mut renumbered = Vec::with_capacity(body.len());
    for l in &body {
        renumbered.push(map_lit(l, &mut |p| rename(p, &mut number)));
    }
    let head = AtomPat { rel: head.rel, args: head.args.iter().map(|p| rename(p, &mut number)).collect() };
    let clause = Clause { head, body: renumbered, var_names, loc: w.loc.clone() };
    safe(&clause).then_some(clause)
}

/// Every variable occurs in a positive literal (what the evaluator needs
/// to bind it before negations and `distinct`s read it).
fn safe(c: &Clause) -> bool {
    let mut bound = vec![false; c.var_names.len()];
    for l in &c.body {
        if let Lit::Pos(a) = l {
            a.args.iter().for_each(|p| p.for_each_var(&mut |v| bound[v as usize] = true));
        }
    }
    let mut ok = true;
    let mut check = |p: &Pat| p.for_each_var(&mut |v| ok &= bound[v as usize]);
    c.head.args.iter().for_each(&mut check);
    for l in &c.body {
        match l {
            Lit::Pos(_) => {}
            Lit::Neg(a) => a.args.iter().for_each(&mut check),
            Lit::Distinct(x, y) | Lit::Same(x, y) => {
                check(x);
                check(y);
            }
        }
    }
    ok
}

fn map_lit(l: &Lit, f: &mut dyn FnMut(&Pat) -> Pat) -> Lit {
    let mut atom = |a: &AtomPat| AtomPat { rel: a.rel, args: a.args.iter().map(&mut *f).collect() };
    match l {
        Lit::Pos(a) => Lit::Pos(atom(a)),
        Lit::Neg(a) => Lit::Neg(atom(a)),
        Lit::Distinct(x, y) => {
            let x = f(x);
            Lit::Distinct(x, f(y))
        }
        Lit::Same(x, y) => {
            let x = f(x);
            Lit::Same(x, f(y))
        }
    }
}

fn rename(p: &Pat, f: &mut dyn FnMut(u32) -> u32) -> Pat {
    match p {
        Pat::Var(v) => Pat::Var(f(*v)),
        Pat::Const(s) => Pat::Const(*s),
        Pat::App(g, args) => Pat::App(*g, args.iter().map(|a| rename(a, f)).collect()),
    }
}

/// `p` with bound variables followed until an unbound variable or a
/// function term (one level).
fn shallow<'a>(mut p: &'a Pat, subst: &'a [Option<Pat>]) -> &'a Pat {
    while let Pat::Var(v) = p {
        match &subst[*v as usize] {
            Some(t) => p = t,
            None => break,
        }
    }
    p
}

/// `p` with every bound variable replaced, all the way down.
fn resolve(p: &Pat, subst: &[Option<Pat>]) -> Pat {
    match shallow(p, subst) {
        Pat::App(g, args) => Pat::App(*g, args.iter().map(|a| resolve(a, subst)).collect()),
        t => t.clone(),
    }
}

fn occurs(v: u32, p: &Pat, subst: &[Option<Pat>]) -> bool {
    match shallow(p, subst) {
        Pat::Var(w) => *w == v,
        Pat::Const(_) => false,
        Pat::App(_, args) => args.iter().any(|a| occurs(v, a, subst)),
    }
}

/// Extends `subst` to unify `x` and `y`; false when they cannot be (the
/// occurs check included: GDL terms are finite).
fn unify(x: &Pat, y: &Pat, subst: &mut Vec<Option<Pat>>) -> bool {
    let (x, y) = (shallow(x, subst).clone(), shallow(y, subst).clone());
    match (&x, &y) {
        (Pat::Var(a), Pat::Var(b)) if a == b => true,
        (Pat::Var(a), t) | (t, Pat::Var(a)) => {
            if occurs(*a, t, subst) {
                return false;
            }
            subst[*a as usize] = Some(t.clone());
            true
        }
        (Pat::Const(a), Pat::Const(b)) => a == b,
        (Pat::App(f, xs), Pat::App(g, ys)) => {
            f == g && xs.len() == ys.len() && xs.iter().zip(ys.iter()).all(|(a, b)| unify(a, b, subst))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    fn clauses_of<'a>(g: &'a Game, name: &str) -> Vec<&'a Clause> {
        let r = g.relation_by_name(name).expect("relation");
        g.clauses.iter().filter(|c| c.head.rel == r).collect()
    }

    #[test]
    fn unfolds_every_positive_call_of_a_relation_and_keeps_it_for_negative_ones() {
        let g = load(
            "t.kif",
            "(role p) (index 1) (index 2) (init (mark 1)) (init (wall 2))
             (<= (free ?i) (index ?i) (not (true (mark ?i))))
             (<= (free ?i) (true (wall ?i)))
             (<= (legal p (fill ?i)) (index ?i) (free ?i))
             (<= (next (mark ?i)) (does p (fill ?i)))
             (<= (next (mark ?i)) (true (mark ?i)))
             (<= (reach ?i) (free ?i))
             (<= (reach ?j) (reach ?i) (index ?j) (free ?j))
             (<= terminal (not (free 2)))
             (<= (goal p 100) (reach 2))",
        )
        .expect("valid");
        let free = g.relation_by_name("free").expect("free");
        let u = unfold_calls(&g, free).expect("unfolded");
        let calls_free = |c: &&Clause| c.body.iter().any(|l| matches!(l, Lit::Pos(a) if a.rel == free));
        // One clause per clause of `free`, in `legal` and both of `reach`.
        assert_eq!(clauses_of(&u, "legal").len(), 2);
        assert_eq!(clauses_of(&u, "reach").len(), 4);
        assert!(!u.clauses.iter().filter(|c| c.head.rel != free).any(|c| calls_free(&c)));
        // `terminal` asks `(not (free 2))`: `free` keeps its clauses.
        assert_eq!(clauses_of(&u, "free").len(), 2);
        // A recursive relation is not unfolded.
        let reach = g.relation_by_name("reach").expect("reach");
        assert!(unfold_calls(&g, reach).is_none());
    }

    #[test]
    fn unfolds_a_state_helper_into_a_proposition() {
        let g = load(
            "t.kif",
            "(role p) (index 1) (index 2) (init (mark 1))
             (<= (empty ?i) (index ?i) (not (true (mark ?i))))
             (<= (legal p (fill ?i)) (empty ?i))
             (<= (next (mark ?i)) (does p (fill ?i)))
             (<= (next (mark ?i)) (true (mark ?i)))
             (<= open (empty ?i))
             (<= terminal (not open))
             (<= (goal p 100) (true (mark 2)))",
        )
        .expect("valid");
        let u = unfold_ground_heads(&g).expect("unfolded");
        let open = clauses_of(&u, "open");
        assert_eq!(open.len(), 1);
        let empty = u.relation_by_name("empty").expect("empty");
        assert!(open[0].body.iter().all(|l| !matches!(l, Lit::Pos(a) | Lit::Neg(a) if a.rel == empty)));
        assert_eq!(open[0].body.len(), 2, "(index ?i) (not (true (mark ?i)))");
        // `empty` keeps its clause for `legal`.
        assert_eq!(clauses_of(&u, "empty").len(), 1);
    }

    #[test]
    fn unifies_arguments_and_drops_alternatives_that_cannot_match() {
        let g = load(
            "t.kif",
            "(role p) (init (at a)) (init (at b))
             (<= (near ?x b) (true (at ?x)))
             (<= (near ?x c) (true (at ?x)) (true (at c)))
             (<= (legal p go) (true (at a)))
             (<= (next (at ?x)) (true (at ?x)))
             (<= terminal (near a b))
             (<= (goal p 0) (true (at a)))",
        )
        .expect("valid");
        let u = unfold_ground_heads(&g).expect("unfolded");
        let t = clauses_of(&u, "terminal");
        assert_eq!(t.len(), 1, "the `c` alternative cannot match `(near a b)`");
        assert!(t[0].var_names.is_empty(), "?x is bound to a");
        assert!(matches!(&t[0].body[0], Lit::Pos(a) if a.rel == RelId::TRUE));
    }

    #[test]
    fn leaves_static_and_recursive_relations() {
        let g = load(
            "t.kif",
            "(role p) (succ 1 2) (succ 2 3) (init (at 1))
             (<= (less ?x ?y) (succ ?x ?y))
             (<= (less ?x ?z) (succ ?x ?y) (less ?y ?z))
             (<= (reach ?x) (true (at ?x)))
             (<= (reach ?y) (reach ?x) (succ ?x ?y))
             (<= (legal p go) (less 1 3))
             (<= (next (at ?x)) (true (at ?x)))
             (<= terminal (reach 3))
             (<= (goal p 0) (less 1 2))",
        )
        .expect("valid");
        assert!(unfold_ground_heads(&g).is_none());
    }
}
