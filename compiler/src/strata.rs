//! Stratification: the order in which clauses are evaluated, and the check
//! that no relation depends on itself through `not`.
//!
//! Stratification is checked on relation *instances*: a relation whose
//! clause heads all have constants at some argument positions is split by
//! those constants. So the common puzzle idiom
//! `(<= (goal robot 100) (not (goal robot 0)))` is accepted: `goal robot
//! 100` depends on `goal robot 0`, not on itself.

use crate::game::{AtomPat, Clause, Game, Layer, Lit, Pat, RelId, Relation, Stratum};
use crate::symbol::Sym;
use crate::symbol::SymbolTable;
use rustc_hash::FxHashMap;

/// A cycle through negation: clause `clause` (head `head`) uses
/// `(not (neg ...))`, and `neg` depends on `head` again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unstratified {
    pub clause: usize,
    pub head: RelId,
    pub neg: RelId,
    /// Relations on the cycle.
    pub cycle: Vec<RelId>,
}

/// `game` with its rules replaced by a rewrite's: relations' `defined`
/// flags, layers and strata computed again. Fails when the rewritten rules
/// are not stratified.
pub(crate) fn rewritten(
    game: &Game,
    symbols: SymbolTable,
    mut relations: Vec<Relation>,
    clauses: Vec<Clause>,
    warnings: Vec<String>,
) -> Result<Game, Unstratified> {
    for r in relations.iter_mut() {
        r.defined = false;
    }
    for c in &clauses {
        relations[c.head.rel.index()].defined = true;
    }
    let questions: Vec<RelId> = game.queries.iter().map(|q| q.rel).collect();
    set_layers(&mut relations, &clauses, &questions);
    let strata = stratify(&relations, &clauses)?;
    Ok(Game {
        name: game.name.clone(),
        symbols,
        roles: game.roles.clone(),
        relations,
        clauses,
        strata,
        source_rules: game.source_rules,
        warnings,
        queries: game.queries.clone(),
    })
}

/// Sets each relation's layer: the highest layer of what its clauses read
/// (`true` is `State`, `does` is `Move`), computed on whole relations.
/// The relations in `questions` read the state whatever their rules say
/// (their answers do: [`crate::queries`]).
pub(crate) fn set_layers(relations: &mut [Relation], clauses: &[Clause], questions: &[RelId]) {
    let n = relations.len();
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n];
    for c in clauses {
        for l in &c.body {
            if let Lit::Pos(a) | Lit::Neg(a) = l {
                succ[c.head.rel.index()].push(a.rel.0);
            }
        }
    }
    for r in relations.iter_mut() {
        r.layer = Layer::Static;
    }
    relations[RelId::TRUE.index()].layer = Layer::State;
    relations[RelId::DOES.index()].layer = Layer::Move;
    for q in questions {
        relations[q.index()].layer = Layer::State;
    }
    for comp in crate::graph::sccs(&succ) {
        let mut layer = Layer::Static;
        for &r in &comp {
            layer = layer.max(relations[r as usize].layer);
            for &d in &succ[r as usize] {
                layer = layer.max(relations[d as usize].layer);
            }
        }
        for &r in &comp {
            relations[r as usize].layer = layer;
        }
    }
}

/// Orders the clauses into strata, dependencies first. Needs the layers
/// set (a stratum's layer is the highest layer of the relations it defines).
pub(crate) fn stratify(relations: &[Relation], clauses: &[Clause]) -> Result<Vec<Stratum>, Unstratified> {
    let nrel = relations.len();
    // Positions where every head of the relation holds a constant.
    let mut split: Vec<Option<Vec<usize>>> = vec![None; nrel];
    for c in clauses {
        let r = c.head.rel.index();
        let consts: Vec<usize> = (0..c.head.args.len()).filter(|&i| matches!(c.head.args[i], Pat::Const(_))).collect();
        split[r] = Some(match split[r].take() {
            None => consts,
            Some(prev) => prev.into_iter().filter(|i| consts.contains(i)).collect(),
        });
    }
    let key = |args: &[Pat], pos: &[usize]| -> Option<Vec<Sym>> {
        pos.iter()
            .map(|&i| match &args[i] {
                Pat::Const(s) => Some(*s),
                _ => None,
            })
            .collect()
    };
    // Nodes: (relation, constants at its split positions).
    let mut node_ids: FxHashMap<(RelId, Vec<Sym>), u32> = FxHashMap::default();
    let mut node_rel: Vec<RelId> = Vec::new();
    let mut rel_nodes: Vec<Vec<(Vec<Sym>, u32)>> = vec![Vec::new(); nrel];
    let mut head_node = Vec::with_capacity(clauses.len());
    for c in clauses {
        let pos = split[c.head.rel.index()].as_deref().unwrap_or(&[]);
        let k = key(&c.head.args, pos).unwrap_or_default();
        let id = *node_ids.entry((c.head.rel, k.clone())).or_insert_with(|| {
            node_rel.push(c.head.rel);
            rel_nodes[c.head.rel.index()].push((k, node_rel.len() as u32 - 1));
            node_rel.len() as u32 - 1
        });
        head_node.push(id);
    }
    for (r, nodes) in rel_nodes.iter_mut().enumerate() {
        if nodes.is_empty() {
            node_rel.push(RelId(r as u32));
            nodes.push((Vec::new(), node_rel.len() as u32 - 1));
        }
    }
    // The nodes a body atom may read.
    let reads = |a: &AtomPat| -> Vec<u32> {
        let pos = split[a.rel.index()].as_deref().unwrap_or(&[]);
        rel_nodes[a.rel.index()]
            .iter()
            .filter(|(k, _)| {
                pos.iter().zip(k).all(|(&i, want)| match &a.args[i] {
                    Pat::Const(s) => s == want,
                    Pat::Var(_) => true,
                    Pat::App(..) => false,
                })
            })
            .map(|&(_, n)| n)
            .collect()
    };
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); node_rel.len()];
    for (ci, c) in clauses.iter().enumerate() {
        for l in &c.body {
            if let Lit::Pos(a) | Lit::Neg(a) = l {
                succ[head_node[ci] as usize].extend(reads(a));
            }
        }
    }
    for s in &mut succ {
        s.sort_unstable();
        s.dedup();
    }
    let comps = crate::graph::sccs(&succ);
    let mut comp_of = vec![0usize; node_rel.len()];
    for (i, comp) in comps.iter().enumerate() {
        for &n in comp {
            comp_of[n as usize] = i;
        }
    }
    let mut comp_clauses: Vec<Vec<usize>> = vec![Vec::new(); comps.len()];
    for (ci, c) in clauses.iter().enumerate() {
        let hc = comp_of[head_node[ci] as usize];
        comp_clauses[hc].push(ci);
        for l in &c.body {
            let Lit::Neg(a) = l else { continue };
            if reads(a).iter().any(|&n| comp_of[n as usize] == hc) {
                let mut cycle: Vec<RelId> = comps[hc].iter().map(|&n| node_rel[n as usize]).collect();
                cycle.sort_unstable();
                cycle.dedup();
                return Err(Unstratified { clause: ci, head: c.head.rel, neg: a.rel, cycle });
            }
        }
    }
    let mut strata = Vec::with_capacity(comps.len());
    for (i, comp) in comps.iter().enumerate() {
        let mut rels: Vec<RelId> = comp.iter().map(|&n| node_rel[n as usize]).collect();
        rels.sort_unstable();
        rels.dedup();
        let layer = rels.iter().map(|r| relations[r.index()].layer).max().unwrap_or(Layer::Static);
        let recursive = comp.len() > 1 || succ[comp[0] as usize].contains(&comp[0]);
        strata.push(Stratum { rels, clauses: std::mem::take(&mut comp_clauses[i]), recursive, layer });
    }
    Ok(strata)
}
