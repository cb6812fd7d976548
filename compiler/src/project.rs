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

use crate::game::{AtomPat, Clause, Game, Lit, Pat, RelId, Relation};
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

/// Renumbers a pattern's variables in order of first occurrence (the key
/// under which equal literals share one helper).
fn canonical(p: &Pat, map: &mut Vec<(u32, u32)>) -> Pat {
    match p {
        Pat::Var(v) => {
            let k = match map.iter().find(|(from, _)| from == v) {
                Some(&(_, to)) => to,
                None => {
                    let to = map.len() as u32;
                    map.push((*v, to));
                    to
                }
            };
            Pat::Var(k)
        }
        Pat::Const(s) => Pat::Const(*s),
        Pat::App(f, args) => Pat::App(*f, args.iter().map(|a| canonical(a, map)).collect()),
    }
}

/// The game with local variables projected out, or `None` when no
/// literal has any.
pub fn project_locals(game: &Game) -> Option<Game> {
    let mut symbols = game.symbols.clone();
    let mut relations: Vec<Relation> = game.relations.clone();
    let mut clauses: Vec<Clause> = Vec::with_capacity(game.clauses.len());
    let mut helpers: FxHashMap<(RelId, Box<[Pat]>, Vec<u32>), RelId> = FxHashMap::default();
    let mut extra: Vec<Clause> = Vec::new();
    for c in &game.clauses {
        if c.body.len() < 2 {
            clauses.push(c.clone());
            continue;
        }
        // How often each variable occurs in the head and in each literal.
        let mut head_vars = Vec::new();
        c.head.args.iter().for_each(|p| p.for_each_var(&mut |v| head_vars.push(v)));
        let lit_vars: Vec<Vec<u32>> = c
            .body
            .iter()
            .map(|l| {
                let mut v = Vec::new();
                vars_of(l, &mut v);
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let mut body = c.body.clone();
        for (i, l) in c.body.iter().enumerate() {
            let Lit::Pos(a) = l else { continue };
            let elsewhere =
                |v: u32| head_vars.contains(&v) || lit_vars.iter().enumerate().any(|(j, vs)| j != i && vs.contains(&v));
            let shared: Vec<u32> = lit_vars[i].iter().copied().filter(|&v| elsewhere(v)).collect();
            if shared.len() == lit_vars[i].len() {
                continue;
            }
            // Shared variables in order of first occurrence in the literal.
            let mut map = Vec::new();
            let args: Box<[Pat]> = a.args.iter().map(|p| canonical(p, &mut map)).collect();
            let shared: Vec<(u32, u32)> = map.iter().copied().filter(|(v, _)| shared.contains(v)).collect();
            let key = (a.rel, args, shared.iter().map(|&(_, k)| k).collect::<Vec<_>>());
            let shared_pats: Box<[Pat]> = shared.iter().map(|&(v, _)| Pat::Var(v)).collect();
            let next_id = RelId(relations.len() as u32);
            let helper = *helpers.entry(key).or_insert(next_id);
            if helper == next_id {
                let name = format!("{}{MARK}{}", game.rel_name(c.head.rel), helpers.len());
                tracing::debug!(helper = name, over = game.rel_name(a.rel), arity = shared.len(), "projection");
                relations.push(Relation {
                    name: symbols.intern(&name),
                    arity: shared.len(),
                    layer: game.relations[a.rel.index()].layer,
                    defined: true,
                });
                extra.push(Clause {
                    head: AtomPat { rel: helper, args: shared_pats.clone() },
                    body: vec![l.clone()],
                    var_names: c.var_names.clone(),
                    loc: c.loc.clone(),
                });
            }
            body[i] = Lit::Pos(AtomPat { rel: helper, args: shared_pats });
        }
        clauses.push(Clause { head: c.head.clone(), body, var_names: c.var_names.clone(), loc: c.loc.clone() });
    }
    if extra.is_empty() {
        return None;
    }
    clauses.extend(extra);
    crate::strata::set_layers(&mut relations, &clauses);
    // Projection adds no negation, so a stratified game stays stratified.
    let strata = crate::strata::stratify(&relations, &clauses).ok()?;
    Some(Game {
        name: game.name.clone(),
        symbols,
        roles: game.roles.clone(),
        relations,
        clauses,
        strata,
        source_rules: game.source_rules,
        warnings: game.warnings.clone(),
    })
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
