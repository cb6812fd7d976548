//! Selective magic sets: rewrite a game so that chosen relations are only
//! computed for the argument values their callers ask for.
//!
//! Many public games define helpers meant for a top-down prover, always
//! called with most arguments bound: chess's
//! `(threatened_with_capture ?owner ?cx ?cy ?x ?y ?ignorex ?ignorey)`,
//! sudoku's `exactlyFirst` over nine cells. Bottom-up, such a relation is
//! computed for every combination of its arguments (millions of facts per
//! state, or billions). The classic remedy is the magic-set
//! transformation: for a relation `r` called with arguments bound in the
//! pattern `a` (say `bbf`), a "magic" relation `magic@r@bbf` collects the
//! bound argument values that are actually asked for, and `r@bbf` is
//! computed from `r`'s rules only where its magic relation holds.
//!
//! Bindings come first from positive literals on static relations,
//! wherever they are written, then flow left to right through the rest of
//! the body (the order authors write for top-down provers); a negated call is treated as coming right
//! after the positive literal that binds its last variable, with every
//! argument bound. Only the
//! relations asked for are rewritten; a relation that some caller uses
//! with no argument bound is computed in full as before. The result is
//! stratified again; when it is not, there is no rewrite.

use crate::game::{AtomPat, Clause, Direction, Game, Layer, Lit, Pat, RelId, Relation, KEYWORD_RELATIONS};
use rustc_hash::FxHashMap;

pub use crate::names::PREFIX;

/// Which argument positions are bound.
type Adornment = Vec<bool>;

/// An adorned copy: the binding pattern, and the layer of the callers it
/// serves. Demand from rules that read `does` is kept apart from demand
/// from rules that read only the state (and those from static rules), so
/// that a state-layer relation such as `legal` never comes to depend on
/// the joint move through a shared magic relation.
type Copy = (Adornment, Layer);

fn adornment_name((a, layer): &Copy) -> String {
    let mut s: String = a.iter().map(|&b| if b { 'b' } else { 'f' }).collect();
    s.push_str(match layer {
        Layer::Static => "",
        Layer::State => "/s",
        Layer::Move => "/m",
    });
    s
}

fn pat_bound(p: &Pat, bound: &[bool]) -> bool {
    let mut all = true;
    p.for_each_var(&mut |v| all &= bound[v as usize]);
    all
}

fn bind(p: &Pat, bound: &mut [bool]) {
    p.for_each_var(&mut |v| bound[v as usize] = true);
}

/// For one clause under a head adornment: for each body literal on a
/// rewritten relation, its adornment and the body positions (positive
/// literals, and filters whose variables those bind) that pass it bindings.
fn sips(
    c: &Clause,
    head: Option<&Adornment>,
    rewritten: &[bool],
    fixed: &[bool],
) -> Vec<Option<(Adornment, Vec<usize>)>> {
    let mut bound = vec![false; c.var_names.len()];
    if let Some(a) = head {
        for (p, &b) in c.head.args.iter().zip(a) {
            if b {
                bind(p, &mut bound);
            }
        }
    }
    let filters_ready = |upto: &[usize], bound: &[bool]| -> Vec<usize> {
        let mut v: Vec<usize> = upto.to_vec();
        for (i, l) in c.body.iter().enumerate() {
            if let Lit::Distinct(x, y) | Lit::Same(x, y) = l {
                if pat_bound(x, bound) && pat_bound(y, bound) {
                    v.push(i);
                }
            }
        }
        v.sort_unstable();
        v
    };
    let mut out = vec![None; c.body.len()];
    let mut before: Vec<usize> = Vec::new();
    // A negated call is checked with every argument bound. Its demand
    // comes from the positive literals up to the one that binds its last
    // variable: a superset of the instances checked, and no dependency on
    // the literals after it (amazons' `openPath` is defined by
    // `(not (occupied ?x2 ?y2))` and then a recursive `openPath`: with that
    // call in the demand for `occupied`, the rewrite was not stratified).
    let negs_ready = |out: &mut Vec<Option<(Adornment, Vec<usize>)>>, before: &[usize], bound: &[bool]| {
        for (i, l) in c.body.iter().enumerate() {
            if let Lit::Neg(a) = l {
                if rewritten[a.rel.index()] && out[i].is_none() && a.args.iter().all(|p| pat_bound(p, bound)) {
                    out[i] = Some((vec![true; a.args.len()], filters_ready(before, bound)));
                }
            }
        }
    };
    // Static tests with a constant argument pass their bindings first,
    // wherever they are written: they are derived once and in full, and a
    // body is a conjunction, so every instance that holds satisfies them
    // anyway. alexChess's `pinned` calls `(between ?l ?m ?r ?dir)` before
    // `(istype ?l king)` and `(istype ?r rook)`: read left to right,
    // `between` was asked for with nothing bound (3.2M instances). Static
    // literals without a constant (`(succ ?m ?n)`) stay where they are
    // written: they bind every pair, and a call after them would be asked
    // for at each (a path length bound by `succ` before the recursive call:
    // 9.4M join steps against 228k).
    let constant = |p: &Pat| {
        let mut vars = false;
        p.for_each_var(&mut |_| vars = true);
        !vars
    };
    let early = |a: &AtomPat| fixed[a.rel.index()] && !rewritten[a.rel.index()] && a.args.iter().any(constant);
    for (i, l) in c.body.iter().enumerate() {
        if let Lit::Pos(a) = l {
            if early(a) {
                for p in a.args.iter() {
                    bind(p, &mut bound);
                }
                before.push(i);
            }
        }
    }
    negs_ready(&mut out, &before, &bound);
    for (i, l) in c.body.iter().enumerate() {
        if let Lit::Pos(a) = l {
            if early(a) {
                continue;
            }
            if rewritten[a.rel.index()] {
                let ad: Adornment = a.args.iter().map(|p| pat_bound(p, &bound)).collect();
                out[i] = Some((ad, filters_ready(&before, &bound)));
            }
            for p in a.args.iter() {
                bind(p, &mut bound);
            }
            before.push(i);
            negs_ready(&mut out, &before, &bound);
        }
    }
    out
}

/// `rels` and every relation that uses them, directly or through others:
/// the relations through which bindings can reach `rels`.
pub fn with_callers(game: &Game, rels: &[RelId]) -> Vec<RelId> {
    game.reachable(rels, Direction::Callers, |_| true)
}

/// `rels` and the state- and move-dependent relations they use, directly
/// or through others: what a demand for `rels` reaches. Once `r` is
/// computed only where asked, the helpers it calls with bound arguments
/// are asked for only those arguments too; computed in full they would
/// undo the gain. Chess's `threatened_with_capture` calls
/// `bishop_move_ig`, which calls `clear_diagonal_ne_ig`: on demand too,
/// the prover's perft to depth 2 went from 18.8 s to 2.3 s of CPU time.
/// Static relations are derived once, so they are left as they are.
///
/// A view of the state (rules that read only `true` and static
/// relations) used outside the set is left as it is: computed in full it
/// costs little, while on demand it would share its demand between the set
/// and its other callers, and every query that reads those would compute
/// the set's demand too. Amazons' `emptyCell`, on demand for
/// `queenMoveIgnoring` (legal moves), made the terminal test
/// (`legalMove`, through `emptyCell`) compute the arrow-shot relations as
/// well: 115 ms per state where the legal moves take 10 ms. Shared helpers
/// that are not views stay on demand (chess's `clear_row`, also used by
/// the rook's moves: computed in full, perft 37% slower).
pub fn with_callees(game: &Game, rels: &[RelId]) -> Vec<RelId> {
    let n = game.relations.len();
    let mut callers: Vec<Vec<RelId>> = vec![Vec::new(); n];
    // The `base`/`input` hints call relations too, but are never evaluated.
    let needed = game.needed_relations();
    for c in game.clauses.iter().filter(|c| needed[c.head.rel.index()]) {
        for l in &c.body {
            if let Lit::Pos(a) | Lit::Neg(a) = l {
                callers[a.rel.index()].push(c.head.rel);
            }
        }
    }
    let mut inside = vec![false; n];
    rels.iter().for_each(|r| inside[r.index()] = true);
    let helper = |d: usize| d >= KEYWORD_RELATIONS.len() && game.relations[d].layer != Layer::Static;
    let mut view = vec![true; n];
    for c in &game.clauses {
        let reads_derived = c.body.iter().any(|l| match l {
            Lit::Pos(a) | Lit::Neg(a) => a.rel != RelId::TRUE && game.relations[a.rel.index()].layer != Layer::Static,
            _ => false,
        });
        if reads_derived {
            view[c.head.rel.index()] = false;
        }
    }
    loop {
        let mut grew = false;
        for d in 0..n {
            if inside[d] || !helper(d) {
                continue;
            }
            let called = callers[d].iter().any(|c| inside[c.index()]);
            let private = callers[d].iter().all(|c| inside[c.index()] || c.index() == d);
            if called && (private || !view[d]) {
                inside[d] = true;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    (0..n).filter(|&d| inside[d]).map(|d| RelId(d as u32)).collect()
}

/// The result of [`demand_transform`].
pub struct Rewritten {
    pub game: Game,
    /// The relations that were rewritten (a subset of those asked for).
    pub relations: Vec<RelId>,
}

/// Rewrites `game` so that the relations in `wanted` are computed on
/// demand. Returns None when none of them can be (every one is used with
/// no argument bound somewhere, or is an output), or when the result
/// would not be stratified.
pub fn demand_transform(game: &Game, wanted: &[RelId]) -> Option<Rewritten> {
    let nrel = game.relations.len();
    // Only clauses some output needs take part (not the `base`/`input` hints).
    let needed = game.needed_relations();
    let source: Vec<&Clause> = game.clauses.iter().filter(|c| needed[c.head.rel.index()]).collect();
    let mut by_head: Vec<Vec<usize>> = vec![Vec::new(); nrel];
    for (i, c) in source.iter().enumerate() {
        by_head[c.head.rel.index()].push(i);
    }
    // A question's relation stays as it is: the network reads it by name
    // (`crate::queries`), and its rules are a guard, not a helper to call.
    let rewritable =
        |r: usize| r >= KEYWORD_RELATIONS.len() && !by_head[r].is_empty() && game.query_of(RelId(r as u32)).is_none();
    let fixed: Vec<bool> = game.relations.iter().map(|r| r.layer == Layer::Static).collect();
    let mut rewritten = vec![false; nrel];
    for &r in wanted {
        if rewritable(r.index()) {
            rewritten[r.index()] = true;
        }
    }
    // Find the adornments in use. A rewritten relation called with no
    // argument bound passes the demand up to its caller (which is then
    // rewritten too) or, when the caller cannot be, is computed in full.
    // A relation once computed in full stays so: passing the demand up to
    // it again would undo that every other round (alexChess: `legal2` is
    // called free by `legal`, and its helper free by `legal2`), and the
    // rewrite would give up when the rounds ran out.
    let mut refused = vec![false; nrel];
    let mut rounds = 0;
    let adornments: Vec<Vec<Copy>> = loop {
        rounds += 1;
        if rounds > 4 * nrel + 4 {
            return None;
        }
        let mut adorns: Vec<Vec<Copy>> = vec![Vec::new(); nrel];
        let mut free_callers: Vec<Vec<RelId>> = vec![Vec::new(); nrel];
        let mut queue: Vec<(RelId, Copy)> = Vec::new();
        let mut visit = |c: &Clause,
                         head: Option<&Adornment>,
                         ctx: Layer,
                         adorns: &mut Vec<Vec<Copy>>,
                         queue: &mut Vec<(RelId, Copy)>| {
            for (i, s) in sips(c, head, &rewritten, &fixed).into_iter().enumerate() {
                let Some((ad, _)) = s else { continue };
                let (Lit::Pos(a) | Lit::Neg(a)) = &c.body[i] else { continue };
                let copy = (ad, ctx);
                if !copy.0.contains(&true) {
                    free_callers[a.rel.index()].push(c.head.rel);
                } else if !adorns[a.rel.index()].contains(&copy) {
                    adorns[a.rel.index()].push(copy.clone());
                    queue.push((a.rel, copy));
                }
            }
        };
        for c in source.iter().filter(|c| !rewritten[c.head.rel.index()]) {
            visit(c, None, game.relations[c.head.rel.index()].layer, &mut adorns, &mut queue);
        }
        while let Some((r, (ad, ctx))) = queue.pop() {
            for &ci in &by_head[r.index()] {
                visit(source[ci], Some(&ad), ctx, &mut adorns, &mut queue);
            }
        }
        let mut changed = false;
        for r in 0..nrel {
            if !rewritten[r] || free_callers[r].is_empty() {
                continue;
            }
            changed = true;
            let callers = &free_callers[r];
            if callers.iter().all(|c| rewritable(c.index()) && !rewritten[c.index()] && !refused[c.index()]) {
                for c in callers {
                    rewritten[c.index()] = true;
                }
            } else {
                rewritten[r] = false;
                refused[r] = true;
            }
        }
        if !changed {
            break adorns;
        }
    };
    if !rewritten.contains(&true) {
        return None;
    }

    let mut symbols = game.symbols.clone();
    let mut relations: Vec<Relation> = game.relations.clone();
    let mut adorned: FxHashMap<(RelId, Copy), RelId> = FxHashMap::default();
    let mut magic: FxHashMap<(RelId, Copy), RelId> = FxHashMap::default();
    for (r, ads) in adornments.iter().enumerate() {
        if !rewritten[r] {
            continue;
        }
        let base = game.symbols.name(game.relations[r].name).to_string();
        for ad in ads {
            let an = adornment_name(ad);
            let id = RelId(relations.len() as u32);
            relations.push(Relation {
                name: symbols.intern(&format!("{base}@{an}")),
                arity: ad.0.len(),
                layer: game.relations[r].layer,
                defined: true,
            });
            adorned.insert((RelId(r as u32), ad.clone()), id);
            let mid = RelId(relations.len() as u32);
            relations.push(Relation {
                name: symbols.intern(&format!("{PREFIX}{base}@{an}")),
                arity: ad.0.iter().filter(|&&b| b).count(),
                layer: game.relations[r].layer,
                defined: true,
            });
            magic.insert((RelId(r as u32), ad.clone()), mid);
        }
    }
    let bound_args = |args: &[Pat], ad: &Adornment| -> Box<[Pat]> {
        args.iter().zip(ad).filter(|(_, &b)| b).map(|(p, _)| p.clone()).collect()
    };

    let mut clauses = Vec::new();
    for &c in &source {
        let heads: Vec<Option<Copy>> = if rewritten[c.head.rel.index()] {
            adornments[c.head.rel.index()].iter().cloned().map(Some).collect()
        } else {
            vec![None]
        };
        for head_copy in heads {
            let ctx = match &head_copy {
                Some((_, ctx)) => *ctx,
                None => game.relations[c.head.rel.index()].layer,
            };
            let s = sips(c, head_copy.as_ref().map(|h| &h.0), &rewritten, &fixed);
            let copy_of = |rel: RelId, ad: &Adornment| (rel, (ad.clone(), ctx));
            // Body literals with rewritten relations renamed.
            let body: Vec<Lit> = c
                .body
                .iter()
                .zip(&s)
                .map(|(l, s)| match (l, s) {
                    (Lit::Pos(a), Some((ad, _))) => {
                        Lit::Pos(AtomPat { rel: adorned[&copy_of(a.rel, ad)], args: a.args.clone() })
                    }
                    (Lit::Neg(a), Some((ad, _))) => {
                        Lit::Neg(AtomPat { rel: adorned[&copy_of(a.rel, ad)], args: a.args.clone() })
                    }
                    (l, _) => l.clone(),
                })
                .collect();
            let guard = head_copy.as_ref().map(|h| {
                Lit::Pos(AtomPat { rel: magic[&(c.head.rel, h.clone())], args: bound_args(&c.head.args, &h.0) })
            });
            let head = match &head_copy {
                Some(h) => AtomPat { rel: adorned[&(c.head.rel, h.clone())], args: c.head.args.clone() },
                None => c.head.clone(),
            };
            // One magic clause per rewritten call: the demand it makes.
            for (i, s) in s.iter().enumerate() {
                let Some((ad, prefix)) = s else { continue };
                let (Lit::Pos(a) | Lit::Neg(a)) = &c.body[i] else { continue };
                let mut mbody: Vec<Lit> = guard.iter().cloned().collect();
                mbody.extend(prefix.iter().map(|&j| body[j].clone()));
                clauses.push(Clause {
                    head: AtomPat { rel: magic[&copy_of(a.rel, ad)], args: bound_args(&a.args, ad) },
                    body: mbody,
                    var_names: c.var_names.clone(),
                    loc: c.loc.clone(),
                });
            }
            let mut full_body: Vec<Lit> = guard.into_iter().collect();
            full_body.extend(body);
            clauses.push(Clause { head, body: full_body, var_names: c.var_names.clone(), loc: c.loc.clone() });
        }
    }
    let kept: Vec<RelId> = (0..nrel).filter(|&r| rewritten[r]).map(|r| RelId(r as u32)).collect();
    let names: Vec<&str> = kept.iter().map(|&r| game.rel_name(r)).collect();
    let mut warnings = game.warnings.clone();
    warnings.push(format!("computed on demand (magic sets): {}", names.join(", ")));
    match crate::strata::rewritten(game, symbols, relations, clauses, warnings) {
        Ok(game) => Some(Rewritten { game, relations: kept }),
        Err(u) => {
            tracing::debug!(relations = ?names, cycle = ?u.cycle, "magic sets: the rewrite is not stratified");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    #[test]
    fn rewrites_a_bound_helper_and_keeps_meaning_of_outputs() {
        // `near` is only called with its first argument bound.
        let g = load(
            "t.kif",
            "(role r) (n 1) (n 2) (n 3) (succ 1 2) (succ 2 3) (init (at 1))
             (<= (near ?x ?y) (n ?x) (n ?y) (succ ?x ?y))
             (<= (legal r (go ?y)) (true (at ?x)) (near ?x ?y))
             (<= (next (at ?y)) (does r (go ?y)))
             (<= terminal (true (at 3))) (goal r 100)",
        )
        .unwrap();
        let near = g.relation_by_name("near").unwrap();
        let rw = demand_transform(&g, &[near]).expect("rewritable");
        assert_eq!(rw.relations, vec![near]);
        assert!(rw.game.relation_by_name("near@bf/s").is_some());
        assert!(rw.game.relation_by_name("magic@near@bf/s").is_some());
        // `near` itself is no longer computed.
        assert!(!rw.game.relations[near.index()].defined);
    }

    #[test]
    fn demand_reaches_the_state_helpers_a_relation_calls() {
        let g = load(
            "t.kif",
            "(role r) (n 1) (n 2) (init (at 1))
             (<= (near ?x ?y) (n ?x) (n ?y) (free ?y))
             (<= (free ?y) (true (at ?z)) (n ?y) (distinct ?y ?z))
             (<= (legal r (go ?y)) (true (at ?x)) (near ?x ?y))
             (<= (next (at ?y)) (does r (go ?y)))
             (<= terminal (true (at 2))) (goal r 100)",
        )
        .unwrap();
        let rel = |n: &str| g.relation_by_name(n).unwrap();
        // `free` reads the state; `n` is static and stays as it is.
        assert_eq!(with_callees(&g, &[rel("near")]), vec![rel("near"), rel("free")]);
        let rw = demand_transform(&g, &with_callers(&g, &with_callees(&g, &[rel("near")]))).expect("rewritable");
        assert!(rw.relations.contains(&rel("free")), "{:?}", rw.relations);
    }

    #[test]
    fn a_state_view_shared_with_other_callers_is_left_in_full() {
        // `free` (a view of the state) is read by `near` and by `stuck`,
        // which the terminal test reads: on demand for `near`, the
        // terminal test would compute `near`'s demand too. `path` (no
        // view: it reads `free`) is shared as well, but stays on demand.
        let g = load(
            "t.kif",
            "(role r) (n 1) (n 2) (succ 1 2) (init (at 1))
             (<= (free ?y) (true (at ?z)) (n ?y) (distinct ?y ?z))
             (<= (path ?x ?y) (succ ?x ?y) (free ?y))
             (<= (path ?x ?z) (succ ?x ?y) (free ?y) (path ?y ?z))
             (<= (near ?x ?y) (n ?x) (free ?y) (path ?x ?y))
             (<= stuck (not (free 1)) (not (free 2)) (path 1 2))
             (<= (legal r (go ?y)) (true (at ?x)) (near ?x ?y))
             (<= (next (at ?y)) (does r (go ?y)))
             (<= terminal stuck) (goal r 100)",
        )
        .unwrap();
        let rel = |n: &str| g.relation_by_name(n).unwrap();
        assert_eq!(with_callees(&g, &[rel("near")]), vec![rel("path"), rel("near")]);
    }

    #[test]
    fn a_negated_call_before_a_recursive_one_can_be_rewritten() {
        // Amazons' `openPath`: the demand for `occupied` must not wait for
        // the recursive call after it, or the rewrite is not stratified.
        let g = load(
            "t.kif",
            "(role r) (init (at 1)) (step 1 2) (step 2 3) (step 3 4)
             (<= (occupied ?y) (true (at ?y)))
             (<= (path ?x ?y) (step ?x ?y) (not (occupied ?y)))
             (<= (path ?x ?z) (step ?x ?y) (not (occupied ?y)) (path ?y ?z))
             (<= (legal r (go ?y)) (true (at ?x)) (path ?x ?y))
             (<= (next (at ?y)) (does r (go ?y)))
             (<= terminal (true (at 4))) (goal r 100)",
        )
        .unwrap();
        let rel = |n: &str| g.relation_by_name(n).unwrap();
        let wanted = with_callers(&g, &with_callees(&g, &[rel("path")]));
        let rw = demand_transform(&g, &wanted).expect("stratified");
        assert!(rw.relations.contains(&rel("path")) && rw.relations.contains(&rel("occupied")), "{:?}", rw.relations);
    }

    #[test]
    fn a_relation_used_unbound_is_not_rewritten() {
        let g = load(
            "t.kif",
            "(role r) (n 1) (init (at 1)) (<= (h ?x) (n ?x))
             (<= (legal r go) (h ?x)) (<= (next (at 1)) (true (at 1)))
             (<= terminal (true (at 2))) (goal r 100)",
        )
        .unwrap();
        let h = g.relation_by_name("h").unwrap();
        assert!(demand_transform(&g, &[h]).is_none());
    }

    /// `c1` asks for `r` at the values of `?x`; `c2` and `legal` call
    /// their helpers with nothing bound.
    fn chain(c1: &str) -> Game {
        let text = format!(
            "(role p) (num 1) (num 2) (num 3) (kind 1 small) (kind 2 small) (kind 3 big) (init (at 1))
             (<= (legal p (go ?x)) (c2 ?x))
             (<= (c2 ?x) (c1 ?x))
             {c1}
             (<= (r ?x) (true (at ?x)))
             (<= (next (at ?x)) (does p (go ?x)))
             (<= terminal (true (at 3))) (goal p 100)"
        );
        load("t.kif", text).unwrap()
    }

    #[test]
    fn a_relation_computed_in_full_is_not_asked_to_pass_demand_up_again() {
        // `c2` must stay in full (its caller is `legal`), and then `c1`
        // (called free by `c2`). Passing the demand up to `c2` again, as
        // the rewrite once did, undid that every other round until the
        // rounds ran out and nothing was rewritten.
        let g = chain("(<= (c1 ?x) (num ?x) (r ?x))");
        let r = g.relation_by_name("r").unwrap();
        let rw = demand_transform(&g, &with_callers(&g, &[r])).expect("r on demand");
        assert_eq!(rw.relations, vec![r]);
        assert!(rw.game.relation_by_name("r@b/s").is_some());
    }

    #[test]
    fn static_relations_bind_arguments_wherever_they_are_written() {
        // `r` comes first, but `kind` (a constant argument) binds `?x` for it.
        let g = chain("(<= (c1 ?x) (r ?x) (kind ?x small))");
        let r = g.relation_by_name("r").unwrap();
        let rw = demand_transform(&g, &with_callers(&g, &[r])).expect("r on demand");
        assert_eq!(rw.relations, vec![r]);
        assert!(rw.game.relation_by_name("r@b/s").is_some());
        let magic = rw.game.relation_by_name("magic@r@b/s").unwrap();
        let demand: Vec<&Clause> = rw.game.clauses.iter().filter(|c| c.head.rel == magic).collect();
        assert_eq!(demand.len(), 1);
        let kind = rw.game.relation_by_name("kind").unwrap();
        assert!(matches!(&demand[0].body[..], [Lit::Pos(a)] if a.rel == kind), "demand from `kind` alone");
    }
}
