//! From ground rules to a propnet: an OR per atom over its rules, an AND
//! per rule over its literals, a NOT per negated atom.

use super::{Base, Goal, Input, Kind, Propnet, QueryLeaf};
use crate::deadline::Deadline;
use crate::game::RelId;
use crate::ground::{AtomId, Grounded};
use rustc_hash::FxHashMap;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PropnetError {
    #[error("goal value `{value}` of role `{role}` is not an integer from 0 to 100")]
    BadGoal { role: String, value: String },
    #[error("`{what}` names `{role}`, which is not a role")]
    UnknownRole { what: String, role: String },
    #[error("build gave up: time limit reached {stage} ({components} components)")]
    Timeout { stage: String, components: usize },
}

/// Builds the propnet of a grounded game. Static parts (facts and what
/// follows from them alone) stay as gates over TRUE/FALSE until the
/// constant-propagation pass folds them.
pub fn from_ground(g: &Grounded) -> Result<Propnet, PropnetError> {
    from_ground_until(g, &Deadline::none())
}

/// [`from_ground`], stopping when `deadline` passes.
pub fn from_ground_until(g: &Grounded, deadline: &Deadline) -> Result<Propnet, PropnetError> {
    let timeout = |components: usize| PropnetError::Timeout { stage: "building the network".into(), components };
    let game = &g.game;
    let roles: Vec<String> = game.role_names();
    let role_terms: FxHashMap<crate::term::TermId, u32> =
        game.roles.iter().enumerate().filter_map(|(i, &r)| g.pool.find_constant(r).map(|t| (t, i as u32))).collect();
    let mut comps: Vec<(Kind, Vec<u32>)> = Vec::with_capacity(g.atoms.len() * 2 + 2);
    const TRUE: u32 = 0;
    const FALSE: u32 = 1;
    comps.push((Kind::True, vec![]));
    comps.push((Kind::False, vec![]));
    // One component per atom, filled in below.
    let atom_comp: Vec<u32> = (0..g.atoms.len() as u32).map(|i| i + 2).collect();
    comps.extend((0..g.atoms.len()).map(|_| (Kind::False, vec![])));
    let mut bases = Vec::new();
    let mut inputs = Vec::new();
    for (i, a) in g.atoms.iter().enumerate() {
        let c = atom_comp[i];
        if a.rel == RelId::TRUE {
            comps[c as usize].0 = Kind::Base(bases.len() as u32);
            let name = g.pool.to_kif(a.args[0], &game.symbols);
            bases.push(Base { comp: c, next: FALSE, name, init: false });
        } else if a.rel == RelId::DOES {
            // A move of something that is not a role is never played (the
            // relaxed model may hold one when a variable also ranges over
            // other symbols): no input.
            let Some(&role) = role_terms.get(&a.args[0]) else { continue };
            comps[c as usize].0 = Kind::Input(inputs.len() as u32);
            let name = g.pool.to_kif(a.args[1], &game.symbols);
            inputs.push(Input { comp: c, role, legal: FALSE, name });
        }
    }
    // Rules grouped by head.
    let mut rules_of: Vec<Vec<usize>> = vec![Vec::new(); g.atoms.len()];
    for (ri, r) in g.rules.iter().enumerate() {
        rules_of[r.head.0 as usize].push(ri);
    }
    let mut not_of: FxHashMap<u32, u32> = FxHashMap::default();
    let mut queries: Vec<QueryLeaf> = Vec::new();
    for (ai, rules) in rules_of.iter().enumerate() {
        if ai % 65536 == 65535 && deadline.passed() {
            return Err(timeout(comps.len()));
        }
        let rel = g.atoms[ai].rel;
        if rel == RelId::TRUE || rel == RelId::DOES || rules.is_empty() {
            continue;
        }
        let mut alternatives: Vec<u32> = Vec::with_capacity(rules.len());
        for &ri in rules {
            let r = &g.rules[ri];
            let mut lits: Vec<u32> = g.pos(r).iter().map(|a| atom_comp[a.0 as usize]).collect();
            for a in g.neg(r) {
                let target = atom_comp[a.0 as usize];
                let n = *not_of.entry(target).or_insert_with(|| {
                    comps.push((Kind::Not, vec![target]));
                    comps.len() as u32 - 1
                });
                lits.push(n);
            }
            let alt = match lits.len() {
                0 => TRUE,
                1 => lits[0],
                _ => {
                    comps.push((Kind::And, lits));
                    comps.len() as u32 - 1
                }
            };
            alternatives.push(alt);
        }
        alternatives.sort_unstable();
        alternatives.dedup();
        // A question's atom holds where its guard (its rules) does and the
        // answer read on the state says so (`crate::queries`).
        if let Some(q) = game.query_of(rel) {
            comps.push((Kind::Or, alternatives));
            let guard = comps.len() as u32 - 1;
            comps.push((Kind::Query(queries.len() as u32), vec![]));
            let comp = comps.len() as u32 - 1;
            let args = g.atoms[ai].args.iter().map(|&t| g.pool.to_kif(t, &game.symbols)).collect();
            queries.push(QueryLeaf { comp, guard, question: q as u32, args });
            comps[atom_comp[ai] as usize] = (Kind::And, vec![guard, comp]);
            continue;
        }
        comps[atom_comp[ai] as usize] = (Kind::Or, alternatives);
    }
    let find = |rel: RelId, args: &[crate::term::TermId]| g.find(rel, args).map(|a| atom_comp[a.0 as usize]);
    let mut init_comps = Vec::with_capacity(bases.len());
    for b in &mut bases {
        let at = g.atom(AtomId(b.comp - 2));
        b.next = find(RelId::NEXT, &at.args).unwrap_or(FALSE);
        init_comps.push(find(RelId::INIT, &at.args).unwrap_or(FALSE));
    }
    for inp in &mut inputs {
        let at = g.atom(AtomId(inp.comp - 2));
        inp.legal = find(RelId::LEGAL, &at.args).unwrap_or(FALSE);
    }
    let mut goals = Vec::new();
    for (i, a) in g.atoms.iter().enumerate() {
        if a.rel != RelId::GOAL {
            continue;
        }
        // A goal of something that is not a role is never asked for.
        let Some(&role) = role_terms.get(&a.args[0]) else { continue };
        let text = g.pool.to_kif(a.args[1], &game.symbols);
        // Values above 100 are kept: the relaxed model may admit them
        // where play never reaches them (sancho arithmetic's score runs to
        // 150 there, to 60 in play), and every machine reports one that
        // holds as an error, as the prover does.
        let value = match text.parse::<u8>() {
            Ok(v) => v,
            _ => return Err(PropnetError::BadGoal { role: roles[role as usize].clone(), value: text }),
        };
        goals.push(Goal { role, value, comp: atom_comp[i] });
    }
    goals.sort_by_key(|g| (g.role, g.value));
    let terminal = find(RelId::TERMINAL, &[]).unwrap_or(FALSE);
    if deadline.passed() {
        return Err(timeout(comps.len()));
    }
    let mut net = Propnet::from_parts(comps, roles, bases, inputs, goals, terminal);
    net.queries = queries;
    // `init` reads only static relations: evaluate with an empty state.
    let val = net.eval(&vec![false; net.bases.len()], &vec![false; net.inputs.len()]);
    for (b, &ic) in net.bases.iter_mut().zip(&init_comps) {
        b.init = val[ic as usize];
    }
    Ok(net)
}
