//! Questions the network asks of the state: the parts of rules that the
//! grounder cannot expand.
//!
//! Chess as written tests every move for the king's safety with
//! `(not (threatened_with_capture ?player ?x ?y ?kx ?ky ?u ?v))`: "would
//! the king on (kx, ky) be attacked once the piece from (u, v) captures on
//! (x, y)?". A top-down prover asks it for the thirty moves of the
//! position; ground, it is an OR of fifty attacks for every move and every
//! square the king might stand on, and grounding gives up at millions of
//! facts. Such a relation `R` (named by the grounding error) is kept out
//! of the network:
//!
//! - In each rule that reads `R`, the *residual* is the `R` literals plus
//!   every literal linked to them through variables outside the head
//!   (the king's square and the king piece above), except those that read
//!   the move. The rest of the rule must bind every variable the residual
//!   shares with it (its *parameters*: player, move squares).
//! - The residual becomes a relation `Q(params)`, defined by the rest of
//!   the rule (`Q(params) ⇐ rest`: where the rule could hold at all, its
//!   *guard*), and the rule reads `Q(params)` in its place. The network
//!   builds each ground `Q` as `guard ∧ answer`, where `answer` is a
//!   *query component* whose value the machine computes on the state by
//!   evaluating the residual top-down ([`crate::topdown`]) whenever the
//!   guard holds. Where the guard is false the answer is never read.
//! - Rules with the same residual share one `Q`, whose guard is then the
//!   OR of their rests.
//!
//! The meaning is unchanged: `rest ∧ Q(params)` is `rest ∧ (rests ∨ ...)
//! ∧ residual`, which is `rest ∧ residual`. A residual may read the state
//! and static relations, not the move: its answer is a function of the
//! state alone.

use crate::game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, Relation};
use crate::names::MARK;
use crate::topdown::Question;
use rustc_hash::FxHashMap;

/// A relation of the rewritten game that stands for a question: its rules
/// are the guard, its answer the question's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub rel: RelId,
    /// The residual, over the game's own relations, with the relation's
    /// arguments as its parameters.
    pub question: Question,
}

/// Why relations could not be kept out of the network as questions.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("`{relation}` depends on the move (`does`): its answer is not a function of the state")]
    ReadsMoves { relation: String },
    #[error("a rule of `{head}` reads `{relation}` with a variable the rest of the rule does not bind")]
    Unbound { head: String, relation: String },
    #[error("no rule reads `{relation}` outside its own rules")]
    Unread { relation: String },
    #[error("the rules are not stratified once `{relation}` is asked as a question")]
    Unstratified { relation: String },
}

/// The relation to ask as a question after grounding failed with
/// `error`: the one the error names, as written in the file, when it
/// depends on the state (not on the move), is no output and no question
/// already. `None` otherwise.
pub fn for_failure(game: &Game, error: &crate::ground::GroundError) -> Option<RelId> {
    let rel = game.relation_by_name(crate::names::base_name(error.relation()))?;
    let keyword = rel.index() < crate::game::KEYWORD_RELATIONS.len();
    let layer = game.relation(rel).layer;
    (!keyword && layer != Layer::Move && game.query_of(rel).is_none()).then_some(rel)
}

fn on_move_layer(l: &Lit, moves: &[bool]) -> bool {
    matches!(l, Lit::Pos(a) | Lit::Neg(a) if moves[a.rel.index()])
}

/// The residual of clause `c` for `asked`: the indices of its literals,
/// and its parameters (sorted). `None` when no literal reads `asked`.
fn residual_of(c: &Clause, asked: &[bool], moves: &[bool]) -> Option<(Vec<usize>, Vec<u32>)> {
    let reads = |l: &Lit| matches!(l, Lit::Pos(a) | Lit::Neg(a) if asked[a.rel.index()]);
    // A literal that reads the move stays in the rule: the variables it
    // shares with the residual become parameters, bound by the move.
    let on_move = |l: &Lit| on_move_layer(l, moves);
    if !c.body.iter().any(reads) {
        return None;
    }
    let mut head = Vec::new();
    c.head.args.iter().for_each(|p| p.for_each_var(&mut |v| head.push(v)));
    let vars: Vec<Vec<u32>> = c.body.iter().map(Lit::vars).collect();
    let mut inside: Vec<bool> = c.body.iter().map(reads).collect();
    loop {
        let local: Vec<u32> = (0..c.body.len())
            .filter(|&i| inside[i])
            .flat_map(|i| vars[i].iter().copied())
            .filter(|v| !head.contains(v))
            .collect();
        let mut grew = false;
        for i in 0..c.body.len() {
            if !inside[i] && !on_move(&c.body[i]) && vars[i].iter().any(|v| local.contains(v)) {
                inside[i] = true;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    let members: Vec<usize> = (0..c.body.len()).filter(|&i| inside[i]).collect();
    let outside: Vec<u32> = (0..c.body.len()).filter(|&i| !inside[i]).flat_map(|i| vars[i].clone()).collect();
    let mut params: Vec<u32> = members
        .iter()
        .flat_map(|&i| vars[i].iter().copied())
        .filter(|v| head.contains(v) || outside.contains(v))
        .collect();
    params.sort_unstable();
    params.dedup();
    Some((members, params))
}

/// `game` with the rules that read any of `rels` split into a guard and a
/// question (see the module's comment). The relations' own rules stay
/// (the questions evaluate them); what only they read is no longer needed
/// by the network.
pub fn residual(game: &Game, rels: &[RelId]) -> Result<Game, Refused> {
    let mut asked = vec![false; game.relations.len()];
    rels.iter().for_each(|r| asked[r.index()] = true);
    let moves: Vec<bool> =
        (0..game.relations.len()).map(|r| r == RelId::DOES.index() || game.relations[r].layer == Layer::Move).collect();
    let name = |r: RelId| crate::names::base_name(game.rel_name(r)).to_string();
    let mut symbols = game.symbols.clone();
    let mut relations = game.relations.clone();
    let mut queries = game.queries.clone();
    let mut shared: FxHashMap<(Vec<Lit>, usize), RelId> = FxHashMap::default();
    let mut clauses = Vec::with_capacity(game.clauses.len());
    let mut read = false;
    for c in &game.clauses {
        let found = if asked[c.head.rel.index()] { None } else { residual_of(c, &asked, &moves) };
        let Some((members, params)) = found else {
            clauses.push(c.clone());
            continue;
        };
        read = true;
        let first = members.iter().find_map(|&i| match &c.body[i] {
            Lit::Pos(a) | Lit::Neg(a) if asked[a.rel.index()] => Some(a.rel),
            _ => None,
        });
        let what = first.map_or_else(String::new, name);
        // The residual reads only the state: no `does`, no relation that
        // reads it.
        if members.iter().any(|&i| on_move_layer(&c.body[i], &moves)) {
            return Err(Refused::ReadsMoves { relation: what });
        }
        // The rest binds every parameter with a positive literal.
        let rest: Vec<Lit> = (0..c.body.len()).filter(|i| !members.contains(i)).map(|i| c.body[i].clone()).collect();
        let bound: Vec<u32> = rest.iter().filter(|l| matches!(l, Lit::Pos(_))).flat_map(Lit::vars).collect();
        if params.iter().any(|v| !bound.contains(v)) {
            return Err(Refused::Unbound { head: game.rel_name(c.head.rel).to_string(), relation: what });
        }
        // Canonical form: parameters first, then the residual's other
        // variables in order of appearance.
        let mut map: Vec<u32> = params.clone();
        let body: Vec<Lit> = members.iter().map(|&i| c.body[i].renumbered(&mut map)).collect();
        let key = (body.clone(), params.len());
        let q = match shared.get(&key) {
            Some(&q) => q,
            None => {
                let q = RelId(relations.len() as u32);
                let mut k = queries.len();
                let sym = loop {
                    let n = format!("{what}{MARK}q{k}");
                    if symbols.get(&n).is_none() {
                        break symbols.intern(&n);
                    }
                    k += 1;
                };
                relations.push(Relation { name: sym, arity: params.len(), layer: Layer::State, defined: true });
                let question = Question { body, params: (0..params.len() as u32).collect(), nvars: map.len() };
                queries.push(Query { rel: q, question });
                shared.insert(key, q);
                q
            }
        };
        let q_atom = AtomPat { rel: q, args: params.iter().map(|&v| Pat::Var(v)).collect() };
        // The guard: the rest of the rule.
        clauses.push(Clause {
            head: q_atom.clone(),
            body: rest.clone(),
            var_names: c.var_names.clone(),
            loc: c.loc.clone(),
        });
        // The rule, reading the question where its residual was.
        let at = members[0];
        let mut body = Vec::with_capacity(rest.len() + 1);
        for (i, l) in c.body.iter().enumerate() {
            if i == at {
                body.push(Lit::Pos(q_atom.clone()));
            }
            if !members.contains(&i) {
                body.push(l.clone());
            }
        }
        clauses.push(Clause { head: c.head.clone(), body, var_names: c.var_names.clone(), loc: c.loc.clone() });
    }
    if !read {
        let relation = rels.first().map_or_else(String::new, |&r| name(r));
        return Err(Refused::Unread { relation });
    }
    let relation = rels.first().map_or_else(String::new, |&r| name(r));
    // The new questions' relations read the state (their layers come from
    // the game's `queries`), though a guard may read nothing.
    let with = Game { queries, symbols: symbols.clone(), relations: relations.clone(), ..game.clone() };
    crate::strata::rewritten(&with, symbols, relations, clauses, game.warnings.clone())
        .map_err(|_| Refused::Unstratified { relation })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::load;

    const GAME: &str = "
        (role a) (init (at 1)) (init (king 3)) (n 1) (n 2) (n 3)
        (<= (legal a (go ?x ?y)) (true (at ?x)) (n ?y) (true (king ?k)) (not (attacked ?y ?k)))
        (<= (legal a wait) (true (at ?x)))
        (<= (attacked ?y ?k) (n ?y) (n ?k) (distinct ?y ?k))
        (<= (next (at ?y)) (does a (go ?x ?y)))
        (<= terminal (true (at 3)))
        (goal a 100)";

    #[test]
    fn a_residual_takes_what_only_it_binds_and_becomes_a_guarded_relation() {
        let g = load("t.kif", GAME).unwrap();
        let attacked = g.relation_by_name("attacked").unwrap();
        let r = residual(&g, &[attacked]).unwrap();
        assert_eq!(r.queries.len(), 1);
        let q = &r.queries[0];
        // `(true (king ?k))` is linked to `attacked` through ?k, outside
        // the head: it goes with it. The parameter is ?y.
        assert_eq!(q.question.body.len(), 2);
        assert_eq!(q.question.params, vec![0]);
        assert_eq!(r.rel_name(q.rel), "attacked~q0");
        assert_eq!(r.relation(q.rel).layer, Layer::State);
        // The legal rule reads the question instead; its guard is the rest.
        let legal: Vec<&Clause> = r.clauses.iter().filter(|c| c.head.rel == RelId::LEGAL).collect();
        assert!(legal.iter().any(|c| c.body.iter().any(|l| matches!(l, Lit::Pos(a) if a.rel == q.rel))));
        assert!(r.clauses.iter().all(|c| c.body.iter().all(|l| !matches!(l, Lit::Neg(a) if a.rel == attacked))));
        let guard: Vec<&Clause> = r.clauses.iter().filter(|c| c.head.rel == q.rel).collect();
        assert_eq!(guard.len(), 1);
        assert_eq!(guard[0].body.len(), 2);
        // `attacked` keeps its rules (the question reads them), but the
        // network no longer needs it.
        assert!(r.clauses.iter().any(|c| c.head.rel == attacked));
        assert!(!r.needed_by(&[RelId::LEGAL])[attacked.index()]);
    }

    #[test]
    fn a_move_literal_linked_to_the_residual_stays_in_the_rule() {
        let text = "(role a) (init (c 1)) (n 1) (n 2) (n 3)
            (<= (legal a (go ?x)) (n ?x))
            (<= (far ?x ?y) (n ?x) (n ?y) (distinct ?x ?y))
            (<= (next (c ?y)) (does a (go ?x)) (n ?y) (far ?x ?y))
            (<= terminal (true (c 2))) (goal a 100)";
        let g = load("t.kif", text).unwrap();
        let far = g.relation_by_name("far").unwrap();
        let r = residual(&g, &[far]).unwrap();
        // ?x, shared with the move, is a parameter: the question is `far`
        // alone, and the guard reads the move.
        assert_eq!(r.queries[0].question.body.len(), 1);
        assert_eq!(r.queries[0].question.params.len(), 2);
        let guard = r.clauses.iter().find(|c| c.head.rel == r.queries[0].rel).unwrap();
        assert!(guard.body.iter().any(|l| matches!(l, Lit::Pos(a) if a.rel == RelId::DOES)));
    }

    #[test]
    fn a_residual_that_reads_the_move_or_leaves_a_variable_unbound_is_refused() {
        let moves = "(role a) (init (c 1)) (n 1) (n 2)
            (<= (legal a (go ?x)) (n ?x))
            (<= (saw ?x ?m) (does a ?m) (n ?x))
            (<= (next (c ?x)) (does a (go ?x)) (saw ?x ?m))
            (<= terminal (true (c 2))) (goal a 100)";
        let g = load("t.kif", moves).unwrap();
        let saw = g.relation_by_name("saw").unwrap();
        assert!(matches!(residual(&g, &[saw]), Err(Refused::ReadsMoves { .. })));
        let unbound = "(role a) (init (c 1)) (n 1) (n 2)
            (<= (legal a (go ?x)) (far ?x))
            (<= (far ?x) (n ?x) (true (c 1)))
            (<= (next (c ?x)) (does a (go ?x)))
            (<= terminal (true (c 2))) (goal a 100)";
        let g = load("t.kif", unbound).unwrap();
        let far = g.relation_by_name("far").unwrap();
        assert!(matches!(residual(&g, &[far]), Err(Refused::Unbound { .. })));
    }
}
