//! Fluents that never change, read as the static relation of their
//! initial facts.
//!
//! Mummy maze keeps its walls in the state: `(init (wall 2 1 east))`, and
//! `(<= (next (wall ?x ?y ?z)) (true (wall ?x ?y ?z)))` is the only rule
//! that makes them. So every reachable state holds exactly the initial
//! walls, but grounding's relaxed model treats `(not (true (wall ?x ?y
//! north)))` as possibly true everywhere: its mummies walked off the board
//! along `succ` (up to 50, the step counter's) and mummymaze-modified's
//! model passed five million facts. Reading `(true (wall ...))` as a static
//! relation defined by the `init` rules of `wall` makes those negations
//! exact while grounding.
//!
//! A fluent family (a functor and its arity) is fixed when every `next`
//! rule that can make one of its facts is a frame rule, `(next P) ⇐ (true
//! P)` with the same pattern `P`, and one of them keeps every fact of the
//! family (its pattern is the functor over distinct variables). Then
//! `next` holds exactly what `true` holds, and by induction from the
//! initial state every reachable state holds the initial facts. The frame
//! rules stay, so the state still carries the facts; only other rules'
//! `true` literals are rewritten. Like the propnet's constant pass (bases
//! whose next is the base itself), this holds in states reached from the
//! initial one, which are the states a game is played in.

use crate::game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, Relation};
use crate::names::MARK;
use crate::symbol::Sym;
use rustc_hash::FxHashMap;

/// A fluent family: functor and arity (a constant fluent has arity 0).
type Family = (Sym, usize);

fn family(p: &Pat) -> Option<Family> {
    match p {
        Pat::Const(s) => Some((*s, 0)),
        Pat::App(f, args) => Some((*f, args.len())),
        Pat::Var(_) => None,
    }
}

/// The fluent argument of a `true`, `next` or `init` atom (validation
/// gives them one; a variable stands in for a missing one, which disables
/// the rewrite).
fn fluent(a: &AtomPat) -> &Pat {
    const NONE: &Pat = &Pat::Var(u32::MAX);
    a.args.first().unwrap_or(NONE)
}

/// `(next P) ⇐ (true P)`, nothing else in the body.
fn is_frame(c: &Clause) -> bool {
    matches!(c.body.as_slice(), [Lit::Pos(t)] if t.rel == RelId::TRUE && t.args == c.head.args)
}

/// Whether `p` is its family's functor over distinct variables.
fn keeps_all(p: &Pat) -> bool {
    match p {
        Pat::Const(_) => true,
        Pat::App(_, args) => {
            let mut seen = Vec::new();
            args.iter().all(|a| match a {
                Pat::Var(v) if !seen.contains(v) => {
                    seen.push(*v);
                    true
                }
                _ => false,
            })
        }
        Pat::Var(_) => false,
    }
}

/// The families that never change.
fn fixed_families(game: &Game) -> Vec<Family> {
    // For each family made by `next`: whether every rule is a frame rule,
    // and whether one keeps every fact.
    let mut made: FxHashMap<Family, (bool, bool)> = FxHashMap::default();
    for c in game.clauses.iter().filter(|c| c.head.rel == RelId::NEXT) {
        let p = fluent(&c.head);
        let Some(f) = family(p) else {
            // `(next ?x)` may make any fact: only the plain frame rule
            // `(next ?x) ⇐ (true ?x)` leaves every family as it was.
            if is_frame(c) {
                continue;
            }
            return Vec::new();
        };
        let e = made.entry(f).or_insert((true, false));
        e.0 &= is_frame(c);
        e.1 |= is_frame(c) && keeps_all(p);
    }
    // An `init` rule with a variable fluent could start any family.
    if game.clauses.iter().any(|c| c.head.rel == RelId::INIT && family(fluent(&c.head)).is_none()) {
        return Vec::new();
    }
    let mut out: Vec<Family> = made.into_iter().filter(|(_, (frame, all))| *frame && *all).map(|(f, _)| f).collect();
    out.sort_unstable();
    out
}

fn args_of(p: &Pat) -> Box<[Pat]> {
    match p {
        Pat::App(_, args) => args.clone(),
        _ => Box::new([]),
    }
}

/// `game` with the `true` literals of fixed fluents read from a static
/// relation of their initial facts, or `None` when no fluent is fixed (or
/// no rule reads one).
pub fn read_fixed_fluents(game: &Game) -> Option<Game> {
    let families = fixed_families(game);
    if families.is_empty() {
        return None;
    }
    let mut symbols = game.symbols.clone();
    let mut relations = game.relations.clone();
    let mut static_rel: FxHashMap<Family, RelId> = FxHashMap::default();
    for &(f, arity) in &families {
        // Named after the fluent, so that messages and the pipeline's
        // bookkeeping (`names::base_name`) see `wall`, not `init`.
        let base = format!("{}{MARK}init", game.symbols.name(f));
        let mut name = base.clone();
        let mut k = 1;
        while symbols.get(&name).is_some() {
            name = format!("{base}{MARK}{k}");
            k += 1;
        }
        let sym = symbols.intern(&name);
        static_rel.insert((f, arity), RelId(relations.len() as u32));
        relations.push(Relation { name: sym, arity, layer: Layer::Static, defined: true });
    }
    // The static relation's atom for a fluent of a fixed family.
    let static_atom = |p: &Pat| -> Option<AtomPat> {
        let rel = *static_rel.get(&family(p)?)?;
        Some(AtomPat { rel, args: args_of(p) })
    };
    let rewrite_atom = |a: &AtomPat| if a.rel == RelId::TRUE { static_atom(fluent(a)) } else { None };
    let mut clauses = Vec::with_capacity(game.clauses.len() + 16);
    let mut rewritten = 0;
    for c in &game.clauses {
        if c.head.rel == RelId::NEXT && is_frame(c) {
            clauses.push(c.clone());
            continue;
        }
        let body: Vec<Lit> = c
            .body
            .iter()
            .map(|l| match l {
                Lit::Pos(a) => rewrite_atom(a).map_or_else(|| l.clone(), Lit::Pos),
                Lit::Neg(a) => rewrite_atom(a).map_or_else(|| l.clone(), Lit::Neg),
                _ => l.clone(),
            })
            .collect();
        rewritten += body.iter().zip(&c.body).filter(|(a, b)| a != b).count();
        clauses.push(Clause { body, ..c.clone() });
        // The initial facts of a fixed family define its static relation.
        if c.head.rel == RelId::INIT {
            if let Some(head) = static_atom(fluent(&c.head)) {
                clauses.push(Clause { head, ..c.clone() });
            }
        }
    }
    if rewritten == 0 {
        return None;
    }
    tracing::debug!(
        fluents = ?families.iter().map(|&(f, _)| game.symbols.name(f)).collect::<Vec<_>>(),
        literals = rewritten,
        "fixed fluents read as static relations"
    );
    match crate::strata::rewritten(game, symbols, relations, clauses, game.warnings.clone()) {
        Ok(g) => Some(g),
        Err(u) => {
            // Static relations add no cycle; kept for safety.
            tracing::debug!(cycle = ?u.cycle, "fixed fluents: the rewritten rules are not stratified");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ground::{ground, GroundLimits};
    use std::sync::Arc;
    use std::time::Instant;

    /// A walker on squares 1..3 of a line, with walls at 0 and 3 kept in
    /// the state (a walker on a wall cannot go up); `succ` runs on to 20 for the step counter.
    const MAZE: &str = "(role r) (init (at 2)) (init (wall 3)) (init (wall 0)) (init (step 0))
        (succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6) (succ 6 7) (succ 7 8)
        (succ 8 9) (succ 9 10) (succ 10 11) (succ 11 12) (succ 12 13) (succ 13 14) (succ 14 15)
        (succ 15 16) (succ 16 17) (succ 17 18) (succ 18 19) (succ 19 20)
        (<= (legal r up) (true (at ?x)) (not (true (wall ?x))))
        (<= (legal r down) (true (at ?x)) (succ ?y ?x) (not (true (wall ?y))))
        (legal r stay)
        (<= (next (at ?y)) (does r up) (true (at ?x)) (succ ?x ?y) (not (true (wall ?x))))
        (<= (next (at ?y)) (does r down) (true (at ?x)) (succ ?y ?x) (not (true (wall ?y))))
        (<= (next (at ?x)) (does r stay) (true (at ?x)))
        (<= (next (wall ?x)) (true (wall ?x)))
        (<= (next (step ?y)) (true (step ?x)) (succ ?x ?y))
        (<= terminal (true (step 5)))
        (goal r 100)";

    fn load(text: &str) -> Arc<Game> {
        Arc::new(crate::validate::load("t.kif", text).unwrap())
    }

    fn positions(game: &Arc<Game>) -> usize {
        let limits = GroundLimits::default();
        let g = ground(game, &limits, &limits.deadline(Instant::now())).unwrap();
        (0..g.atoms.len())
            .filter(|&i| g.atoms[i].rel == RelId::TRUE && g.atom_kif(crate::ground::AtomId(i as u32)).contains("at "))
            .count()
    }

    #[test]
    fn a_fluent_only_kept_by_its_frame_rule_is_read_from_its_initial_facts() {
        let game = load(MAZE);
        let fixed = read_fixed_fluents(&game).expect("walls are fixed");
        let wall = fixed.relation_by_name("wall~init").expect("the static relation of the walls");
        assert_eq!(fixed.relation(wall).layer, Layer::Static);
        // Every `true (wall ...)` but the frame rule's reads the relation.
        let reads = |g: &Game, rel: RelId| {
            g.clauses
                .iter()
                .flat_map(|c| &c.body)
                .filter(|l| matches!(l, Lit::Pos(a) | Lit::Neg(a) if a.rel == rel))
                .count()
        };
        assert_eq!(reads(&fixed, wall), 4);
        // The counter changes, so `step` stays a fluent.
        assert!(fixed.relation_by_name("step~init").is_none());
        // As written, the relaxed model walks off the board along `succ`
        // (every negated wall possibly true); read from the initial
        // facts, the walls keep it on squares 1 to 3.
        assert_eq!(positions(&game), 21);
        assert_eq!(positions(&Arc::new(fixed)), 3);
    }

    #[test]
    fn a_fluent_that_another_rule_makes_is_not_fixed() {
        let text = MAZE.replace("(legal r stay)", "(legal r stay) (legal r build)")
            + " (<= (next (wall ?x)) (does r build) (true (at ?x)))";
        assert!(read_fixed_fluents(&load(&text)).is_none());
        // A frame rule over part of the family keeps only that part.
        let text = MAZE.replace("(<= (next (wall ?x)) (true (wall ?x)))", "(<= (next (wall 3)) (true (wall 3)))");
        assert!(read_fixed_fluents(&load(&text)).is_none());
        // `(next ?x)` with a body other than the frame could make walls.
        let text = MAZE.to_string() + " (<= (next ?x) (true (at 1)) (true ?x))";
        assert!(read_fixed_fluents(&load(&text)).is_none());
        // So could `(init ?x)`: the walls would not be the `init (wall ...)`
        // facts alone.
        let text = MAZE.to_string() + " (start (wall 1)) (<= (init ?x) (start ?x))";
        assert!(read_fixed_fluents(&load(&text)).is_none());
    }

    #[test]
    fn the_plain_frame_rule_over_every_fluent_leaves_them_fixed() {
        let text = MAZE.to_string() + " (<= (next ?x) (true ?x))";
        let fixed = read_fixed_fluents(&load(&text)).expect("walls are still fixed");
        assert!(fixed.relation_by_name("wall~init").is_some());
    }
}
