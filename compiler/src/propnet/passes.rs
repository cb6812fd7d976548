//! Optimisation passes over propnets. Each pass maps a network to an
//! equivalent one: the same legal moves, next states, goals and terminal
//! states in every reachable state, for every joint move of one move per
//! role. `tests/passes.rs` checks each pass with perft and traces against
//! the prover on every bundled game.

use super::edit::Edit;
use super::{Counts, Kind, Propnet, PropnetError};
use crate::deadline::Deadline;
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

/// A pass, by name (`--passes` takes a comma-separated list of these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Fold constants; drop TRUE inputs of AND, FALSE inputs of OR; a gate
    /// with one input becomes that input. Bases that never change (their
    /// next value is themselves, or a latch already at its fixed value)
    /// are constants for their readers.
    Constants,
    /// Drop components no output reads.
    Dead,
    /// Merge structurally equal components (hash-consing).
    Dedup,
    /// Inline an AND (OR) read only by an AND (OR) into it.
    Flatten,
    /// Factor an input shared by several ANDs under one OR (or ORs under
    /// one AND) out by the distributive law.
    Factor,
    /// [`Pass::Factor`], and again on the gates that factoring makes, down
    /// to the bottom (fewer edges; more levels of gates). For networks
    /// evaluated from scratch, the lanes: there hex's next-state logic went
    /// from 270,588 to 122,728 edges and its lanes ran 1.8x faster; not in
    /// the default pipeline, whose networks propagate differentially and
    /// pay for each extra level (connect four's interpreter lost 12%).
    FactorDeep,
    /// Replace a large OR over one role's moves by the NOT of the OR of its
    /// other moves (exactly one move per role is played).
    Complement,
    /// Fold NOTs into the gate they negate (NAND, NOR), and NOT-of-NOT.
    NotFold,
    /// Move the goal logic to a separate network, evaluated at terminal
    /// states only (when that network is small enough to pay).
    Goals,
    /// Variable elimination in the rules before grounding
    /// ([`crate::project`], step 3): a network of at least
    /// [`crate::pipeline::ELIMINATE_EDGES`] edges (or a game over the
    /// grounding budget) is built again from the rewritten rules, and that
    /// network kept when it has at most a quarter of the edges (native
    /// code takes it at [`crate::pipeline::NATIVE_ELIMINATED`] when bases
    /// and inputs coincide). Decided by the pipeline; a no-op here.
    Eliminate,
    /// Two copies of the network, each specialised on the value of the
    /// base proposition that changes most often (typically whose turn it
    /// is), every state routed to its copy. Chosen and built by the
    /// runtime, which can measure how often each proposition changes; a
    /// no-op here.
    Split,
}

impl Pass {
    /// The default pipeline, in order (`--passes all` or `default`): not
    /// every pass ([`Pass::EVERY`] lists them all).
    pub const DEFAULT: &'static [Pass] = &[
        Pass::Constants,
        Pass::Dead,
        Pass::Goals,
        Pass::Dedup,
        Pass::Factor,
        Pass::Complement,
        Pass::Constants,
        Pass::Flatten,
        Pass::Dedup,
        Pass::NotFold,
        Pass::Dead,
        Pass::Eliminate,
        Pass::Split,
    ];

    /// What the lanes' network gets beyond the default pipeline.
    pub const LANES: &'static [Pass] = &[Pass::FactorDeep, Pass::Dedup, Pass::Dead];

    /// Passes that clean up after a network was specialised.
    pub const CLEANUP: &'static [Pass] =
        &[Pass::Constants, Pass::Dead, Pass::Dedup, Pass::Flatten, Pass::Dedup, Pass::NotFold, Pass::Dead];

    /// The old name of [`Pass::DEFAULT`], kept for callers written
    /// before the rename.
    pub const ALL: &'static [Pass] = Pass::DEFAULT;

    /// Every pass once, for listing and parsing names (most are also in
    /// [`Pass::DEFAULT`], but `factor-deep` is not).
    pub const EVERY: &'static [Pass] = &[
        Pass::Constants,
        Pass::Dead,
        Pass::Dedup,
        Pass::Flatten,
        Pass::Factor,
        Pass::FactorDeep,
        Pass::Complement,
        Pass::NotFold,
        Pass::Goals,
        Pass::Eliminate,
        Pass::Split,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            Pass::Constants => "constants",
            Pass::Dead => "dead",
            Pass::Dedup => "dedup",
            Pass::Flatten => "flatten",
            Pass::Factor => "factor",
            Pass::FactorDeep => "factor-deep",
            Pass::Complement => "complement",
            Pass::NotFold => "notfold",
            Pass::Goals => "goals",
            Pass::Eliminate => "eliminate",
            Pass::Split => "split",
        }
    }

    /// Parses a comma-separated list of names; `all` is the default
    /// pipeline and `none` no pass.
    pub fn parse_list(s: &str) -> Result<Vec<Pass>, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "none" => {}
                "all" | "default" => out.extend_from_slice(Pass::DEFAULT),
                name => match Pass::EVERY.iter().find(|p| p.name() == name) {
                    Some(p) => out.push(*p),
                    None => {
                        let names: Vec<&str> = Pass::EVERY.iter().map(|p| p.name()).collect();
                        return Err(format!("unknown pass `{name}` (passes: all, none, {})", names.join(", ")));
                    }
                },
            }
        }
        Ok(out)
    }
}

/// Runs `passes` in order; `report(name, seconds, counts)` after each.
/// Returns the playout network and, when the goals were split off, the
/// goal network.
pub fn run(net: Propnet, passes: &[Pass], report: &mut dyn FnMut(&str, f64, &Counts)) -> (Propnet, Option<Propnet>) {
    match run_until(net, passes, &Deadline::none(), report) {
        Ok(r) => r,
        Err(_) => unreachable!("no deadline"),
    }
}

/// [`run`], giving up when `deadline` has passed before a pass.
pub fn run_until(
    net: Propnet,
    passes: &[Pass],
    deadline: &Deadline,
    report: &mut dyn FnMut(&str, f64, &Counts),
) -> Result<(Propnet, Option<Propnet>), PropnetError> {
    let mut net = net;
    let mut goal_net: Option<Propnet> = None;
    for p in passes {
        if deadline.passed() {
            let stage = format!("before the `{}` pass", p.name());
            return Err(PropnetError::Timeout { stage, components: net.len() });
        }
        let t = Instant::now();
        if matches!(p, Pass::Split | Pass::Eliminate) {
            continue;
        }
        if *p == Pass::Goals {
            if goal_net.is_none() {
                let before = net.len();
                let (main, goals) = split_goals(net.clone());
                // The goal network is evaluated from scratch at every
                // terminal state; worth it only when the playout network
                // loses a good share of that size.
                let saved = before - main.len();
                if goals.len() <= 4 * saved {
                    net = main;
                    goal_net = Some(goals);
                } else {
                    tracing::debug!(goal_net = goals.len(), saved, "goals: kept in the playout network");
                }
            }
        } else {
            let stage = || format!("in the `{}` pass", p.name());
            let n = net.len();
            net = apply_until(net, *p, deadline)
                .ok_or_else(|| PropnetError::Timeout { stage: stage(), components: n })?;
            if let Some(g) = goal_net.take() {
                let n = g.len();
                goal_net = Some(
                    apply_until(g, *p, deadline)
                        .ok_or_else(|| PropnetError::Timeout { stage: stage(), components: n })?,
                );
            }
        }
        debug_assert_eq!(net.check(), Ok(()), "after pass {}", p.name());
        report(p.name(), t.elapsed().as_secs_f64(), &net.counts());
    }
    Ok((net, goal_net))
}

/// Applies one pass (other than `Goals`).
pub fn apply(net: Propnet, p: Pass) -> Propnet {
    match apply_until(net, p, &Deadline::none()) {
        Some(net) => net,
        None => unreachable!("no deadline"),
    }
}

/// [`apply`], or `None` when `deadline` passed during the pass.
pub fn apply_until(net: Propnet, p: Pass, deadline: &Deadline) -> Option<Propnet> {
    let mut e = Edit::new(net).until(deadline);
    match p {
        Pass::Constants => constants(&mut e),
        Pass::Dead => {}
        Pass::Dedup => dedup(&mut e),
        Pass::Flatten => flatten(&mut e),
        Pass::Factor => factor(&mut e, false),
        Pass::FactorDeep => factor(&mut e, true),
        Pass::Complement => complement(&mut e),
        Pass::NotFold => notfold(&mut e),
        Pass::Goals | Pass::Split | Pass::Eliminate => {}
    }
    if e.stopped() {
        return None;
    }
    Some(e.finish())
}

/// `net` with base `base` fixed at `value` for every reader, cleaned up by
/// [`Pass::CLEANUP`]. Bases, inputs and roles keep their numbering, so a
/// state means the same in both copies of a split network.
pub fn specialise(net: &Propnet, base: usize, value: bool) -> Propnet {
    let mut e = Edit::new(net.clone());
    e.partial = true;
    let b = e.bases[base].comp;
    let k = e.constant(value);
    for c in 0..e.len() {
        for i in e.ins_mut(c as u32) {
            if *i == b {
                *i = k;
            }
        }
    }
    for out in e.bases.iter_mut().map(|x| &mut x.next).chain(e.inputs.iter_mut().map(|x| &mut x.legal)) {
        if *out == b {
            *out = k;
        }
    }
    if e.terminal == b {
        e.terminal = k;
    }
    let net = e.finish();
    let (net, _) = run(net, Pass::CLEANUP, &mut |_, _, _| {});
    net
}

/// Splits a network into one without goal outputs (for playouts) and one
/// with only them (read at terminal states).
pub fn split_goals(net: Propnet) -> (Propnet, Propnet) {
    let mut main = Edit::new(net.clone());
    main.goals.clear();
    let mut goals = Edit::new(net);
    let f = goals.constant(false);
    for b in &mut goals.bases {
        b.next = f;
    }
    for i in &mut goals.inputs {
        i.legal = f;
    }
    goals.terminal = f;
    goals.partial = true;
    (main.finish(), goals.finish())
}

/// Value of a gate over inputs some of which are constant: `Some(v)` if
/// decided, else the remaining (non-constant) inputs.
fn fold_gate(e: &Edit, kind: Kind, ins: &[u32]) -> Result<bool, Vec<u32>> {
    let mut rest = Vec::with_capacity(ins.len());
    let (absorbing, identity) = match kind {
        Kind::And | Kind::Nand => (false, true),
        Kind::Or | Kind::Nor | Kind::Not => (true, false),
        _ => unreachable!("only gates are folded"),
    };
    let negate = matches!(kind, Kind::Nand | Kind::Nor | Kind::Not);
    for &i in ins {
        match e.const_value(i) {
            Some(v) if v == absorbing => return Ok(absorbing != negate),
            Some(_) => {}
            None => rest.push(i),
        }
    }
    if rest.is_empty() {
        return Ok(identity != negate);
    }
    rest.sort_unstable();
    rest.dedup();
    Err(rest)
}

fn constants(e: &mut Edit) {
    // Bases that never change are constants for their readers: next is the
    // base itself, or next keeps it at its initial value (a latch).
    let mut const_base: FxHashMap<u32, bool> = FxHashMap::default();
    if e.partial {
        // No transitions here to learn from.
        fold_all(e, &const_base);
        return;
    }
    loop {
        let before = const_base.len();
        for b in e.bases.clone() {
            if const_base.contains_key(&b.comp) {
                continue;
            }
            let next = e.find(b.next);
            let stays = next == b.comp || e.const_value(next) == Some(b.init) || latch_holds(e, &b, next, &const_base);
            if stays {
                const_base.insert(b.comp, b.init);
            }
        }
        fold_all(e, &const_base);
        if const_base.len() == before || e.stopped() {
            break;
        }
    }
}

/// A latch at its fixed value: an OR reading the base (once true, stays
/// true) with the base initially true, or an AND reading it (once false,
/// stays false) with the base initially false.
fn latch_holds(e: &Edit, b: &super::Base, next: u32, _consts: &FxHashMap<u32, bool>) -> bool {
    let reads_self = e.resolved_ins(next).contains(&b.comp);
    match e.kinds[next as usize] {
        Kind::Or => reads_self && b.init,
        Kind::And => reads_self && !b.init,
        _ => false,
    }
}

/// Folds constants through every gate, cycles included.
fn fold_all(e: &mut Edit, const_base: &FxHashMap<u32, bool>) {
    let order = e.order();
    let t = e.constant(true);
    let f = e.constant(false);
    // Readers of a constant base read the constant: rewrite inputs.
    let sub = |e: &Edit, i: u32| -> u32 {
        let i = e.find(i);
        match const_base.get(&i) {
            Some(true) => t,
            Some(false) => f,
            None => i,
        }
    };
    for group in order.iter() {
        if e.stop() {
            return;
        }
        let cyclic = group.len() > 1 || e.ins(group[0]).iter().any(|&i| e.find(i) == group[0]);
        if cyclic {
            fold_cycle(e, group, &sub);
            continue;
        }
        let c = group[0];
        let kind = e.kinds[c as usize];
        if !kind.is_gate() {
            continue;
        }
        let ins: Vec<u32> = e.ins(c).iter().map(|&i| sub(e, i)).collect();
        match fold_gate(e, kind, &ins) {
            Ok(v) => {
                let k = e.constant(v);
                e.replace(c, k);
            }
            Err(rest) => {
                if rest.len() == 1 && matches!(kind, Kind::And | Kind::Or) {
                    e.replace(c, rest[0]);
                } else if rest.len() == 1 && kind == Kind::Nand || kind == Kind::Nor && rest.len() == 1 {
                    e.kinds[c as usize] = Kind::Not;
                    e.set_ins(c, &rest);
                } else {
                    e.set_ins(c, &rest);
                }
            }
        }
    }
}

/// Constants in a cycle of AND/OR: a member false even when every outside
/// input that is not constant is true is always false; one true even when
/// they are all false is always true.
fn fold_cycle(e: &mut Edit, group: &[u32], sub: &dyn Fn(&Edit, u32) -> u32) {
    let member: rustc_hash::FxHashSet<u32> = group.iter().copied().collect();
    // Sweeps until nothing changes: a cycle of a million gates (the
    // recursive sums of gt_two_thirds rewritten for demand) takes minutes,
    // so the deadline is looked at every 4,096 gates.
    let lfp = |e: &Edit, outside: bool| -> Option<FxHashMap<u32, bool>> {
        let mut val: FxHashMap<u32, bool> = group.iter().map(|&c| (c, false)).collect();
        let mut seen = 0u32;
        loop {
            let mut changed = false;
            for &c in group {
                seen = seen.wrapping_add(1);
                if seen.is_multiple_of(4096) && e.deadline().passed() {
                    return None;
                }
                let ins = e.ins(c);
                let t = ins
                    .iter()
                    .filter(|&&i| {
                        let i = sub(e, i);
                        if member.contains(&i) {
                            val[&i]
                        } else {
                            e.const_value(i).unwrap_or(outside)
                        }
                    })
                    .count();
                let v = e.kinds[c as usize].gate(t, ins.len());
                if v != val[&c] {
                    val.insert(c, v);
                    changed = true;
                }
            }
            if !changed {
                return Some(val);
            }
        }
    };
    let (Some(high), Some(low)) = (lfp(e, true), lfp(e, false)) else {
        e.give_up();
        return;
    };
    for &c in group {
        if !high[&c] {
            let k = e.constant(false);
            e.replace(c, k);
        } else if low[&c] {
            let k = e.constant(true);
            e.replace(c, k);
        }
    }
}

/// Hash-consing: gates with the same kind and inputs are one component.
/// Components on cycles are left alone.
fn dedup(e: &mut Edit) {
    // Keyed by the kind's code followed by the sorted inputs: one
    // allocation per gate kept, none per gate merged.
    let mut seen: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let mut key: Vec<u32> = Vec::new();
    for group in e.order().iter() {
        if e.stop() {
            return;
        }
        if group.len() > 1 {
            continue;
        }
        let c = group[0];
        let kind = e.kinds[c as usize];
        let code = match kind {
            Kind::And => 0,
            Kind::Or => 1,
            Kind::Not => 2,
            Kind::Nand => 3,
            Kind::Nor => 4,
            _ => continue,
        };
        key.clear();
        key.push(code);
        key.extend(e.ins(c).iter().map(|&i| e.find(i)));
        let ins = &mut key[1..];
        if ins.contains(&c) {
            continue;
        }
        ins.sort_unstable();
        let mut n = ins.len();
        if matches!(kind, Kind::And | Kind::Or | Kind::Nand | Kind::Nor) {
            n = dedup_sorted(ins);
        }
        key.truncate(n + 1);
        e.set_ins(c, &key[1..]);
        if matches!(kind, Kind::And | Kind::Or) && n == 1 {
            e.replace(c, key[1]);
            continue;
        }
        match seen.get(key.as_slice()) {
            Some(&other) => e.replace(c, other),
            None => {
                seen.insert(key.clone(), c);
            }
        }
    }
}

/// Removes repeats from a sorted slice in place; returns how many distinct
/// values now lead it.
fn dedup_sorted(v: &mut [u32]) -> usize {
    let mut n = 0;
    for i in 0..v.len() {
        if n == 0 || v[i] != v[n - 1] {
            v[n] = v[i];
            n += 1;
        }
    }
    n
}

/// Components on a cycle, in the current network.
fn cyclic_set(e: &Edit) -> Vec<bool> {
    let mut cyc = vec![false; e.len()];
    for g in e.order().iter() {
        if g.len() > 1 || e.ins(g[0]).iter().any(|&i| e.find(i) == g[0]) {
            for &c in g {
                cyc[c as usize] = true;
            }
        }
    }
    cyc
}

fn flatten(e: &mut Edit) {
    let fan = e.fanout_counts();
    let cyc = cyclic_set(e);
    for group in e.order().iter() {
        if e.stop() {
            return;
        }
        let c = group[0];
        let kind = e.kinds[c as usize];
        if group.len() > 1 || cyc[c as usize] || !matches!(kind, Kind::And | Kind::Or) {
            continue;
        }
        let mut ins = Vec::new();
        for i in e.resolved_ins(c) {
            if e.kinds[i as usize] == kind && fan[i as usize] == 1 && !cyc[i as usize] {
                ins.extend(e.resolved_ins(i));
            } else {
                ins.push(i);
            }
        }
        ins.sort_unstable();
        ins.dedup();
        e.set_ins(c, &ins);
    }
}

/// Distributive law: in an OR, the AND children (read only by it) that
/// share an input x become one AND(x, OR(rest of each)); dually for an AND
/// of ORs. Inputs shared by the most children go first, each child into
/// one group; `deep` factors the new inner gates too.
fn factor(e: &mut Edit, deep: bool) {
    let cyc = cyclic_set(e);
    let mut fan = e.fanout_counts();
    // Gates in evaluation order; when `deep`, the inner gates factoring
    // makes are appended and factored in turn (the ANDs under an OR of ANDs
    // may share inputs of their own once the common one is out).
    let mut todo: Vec<u32> = e.order().iter().filter(|g| g.len() == 1 && !cyc[g[0] as usize]).map(|g| g[0]).collect();
    let mut next = 0;
    while next < todo.len() {
        if e.stop() {
            return;
        }
        let c = todo[next];
        next += 1;
        let kind = e.kinds[c as usize];
        let inner = match kind {
            Kind::Or => Kind::And,
            Kind::And => Kind::Or,
            _ => continue,
        };
        let ins = e.resolved_ins(c);
        let kids: Vec<u32> = ins
            .iter()
            .copied()
            .filter(|&k| {
                e.kinds[k as usize] == inner && fan[k as usize] == 1 && !cyc.get(k as usize).copied().unwrap_or(false)
            })
            .collect();
        if kids.len() < 2 {
            continue;
        }
        // Which kids read each input; inputs shared by the most kids are
        // factored out first, each kid into one group at most.
        let mut readers: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        for (j, &k) in kids.iter().enumerate() {
            let mut kins = e.resolved_ins(k);
            kins.sort_unstable();
            kins.dedup();
            for x in kins {
                readers.entry(x).or_default().push(j);
            }
        }
        let mut shared: Vec<(u32, usize)> =
            readers.iter().filter(|(_, r)| r.len() >= 2).map(|(&x, r)| (x, r.len())).collect();
        shared.sort_unstable_by_key(|&(x, n)| (std::cmp::Reverse(n), x));
        let mut taken = vec![false; kids.len()];
        let mut joined_all = Vec::new();
        for (x, _) in shared {
            let group: Vec<usize> = readers[&x].iter().copied().filter(|&j| !taken[j]).collect();
            if group.len() < 2 {
                continue;
            }
            // The kids sharing x lose it; they are joined by a gate of kind
            // `kind` (OR for an OR of ANDs), and x is put back on top with
            // an `inner` gate: OR(AND(x,a),AND(x,b)) = AND(x, OR(a,b)).
            let mut rest_alts = Vec::with_capacity(group.len());
            let mut trivial = false;
            for &j in &group {
                taken[j] = true;
                let k = kids[j];
                let rest: Vec<u32> = e.resolved_ins(k).into_iter().filter(|&i| i != x).collect();
                match rest.len() {
                    // AND(x) alone: the whole alternative is x (absorption).
                    0 => trivial = true,
                    1 => rest_alts.push(rest[0]),
                    _ => {
                        e.set_ins(k, &rest);
                        rest_alts.push(k);
                    }
                }
            }
            joined_all.push(if trivial {
                // OR(x, AND(x,a)) = x (and dually): the group is just x.
                x
            } else {
                let j = e.add(kind, &rest_alts);
                let top = e.add(inner, &[x, j]);
                fan.push(1);
                fan.push(1);
                if deep {
                    todo.push(j);
                }
                top
            });
        }
        if joined_all.is_empty() {
            continue;
        }
        let grouped: FxHashSet<u32> = (0..kids.len()).filter(|&j| taken[j]).map(|j| kids[j]).collect();
        let mut new_ins: Vec<u32> = ins.into_iter().filter(|i| !grouped.contains(i)).collect();
        new_ins.extend(joined_all);
        new_ins.sort_unstable();
        new_ins.dedup();
        e.set_ins(c, &new_ins);
        fan.resize(e.len(), 0);
    }
}

/// Exactly one move per role is played, so an OR over a set S of one
/// role's moves equals NOT(OR(the role's other moves)); used when that is
/// smaller.
fn complement(e: &mut Edit) {
    let mut role_inputs: Vec<Vec<u32>> = vec![Vec::new(); e.roles.len()];
    let mut role_of: FxHashMap<u32, u32> = FxHashMap::default();
    for inp in &e.inputs {
        role_inputs[inp.role as usize].push(inp.comp);
        role_of.insert(inp.comp, inp.role);
    }
    for group in e.order().iter() {
        if e.stop() {
            return;
        }
        let c = group[0];
        if group.len() > 1 || e.kinds[c as usize] != Kind::Or {
            continue;
        }
        let ins = e.resolved_ins(c);
        let mut by_role: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for &i in &ins {
            if let Some(&r) = role_of.get(&i) {
                by_role.entry(r).or_default().push(i);
            }
        }
        let mut new_ins: Vec<u32> = ins.clone();
        let mut changed = false;
        for (r, set) in by_role {
            let all = &role_inputs[r as usize];
            let others: Vec<u32> = all.iter().copied().filter(|i| !set.contains(i)).collect();
            if set.len() < 4 || others.len() * 2 >= set.len() {
                continue;
            }
            new_ins.retain(|i| !set.contains(i));
            let replacement = if others.is_empty() { e.constant(true) } else { e.add(Kind::Nor, &others) };
            new_ins.push(replacement);
            changed = true;
        }
        if changed {
            new_ins.sort_unstable();
            new_ins.dedup();
            e.set_ins(c, &new_ins);
        }
    }
}

fn notfold(e: &mut Edit) {
    let fan = e.fanout_counts();
    for group in e.order().iter() {
        if e.stop() {
            return;
        }
        let c = group[0];
        if group.len() > 1 || e.kinds[c as usize] != Kind::Not {
            continue;
        }
        let x = e.find(e.ins(c)[0]);
        match e.kinds[x as usize] {
            // NOT(NOT(y)) = y, whoever else reads the inner NOT.
            Kind::Not => {
                let y = e.find(e.ins(x)[0]);
                e.replace(c, y);
            }
            k @ (Kind::And | Kind::Or | Kind::Nand | Kind::Nor) if fan[x as usize] == 1 => {
                e.kinds[c as usize] = match k {
                    Kind::And => Kind::Nand,
                    Kind::Or => Kind::Nor,
                    Kind::Nand => Kind::And,
                    _ => Kind::Or,
                };
                let ins = e.resolved_ins(x);
                e.set_ins(c, &ins);
            }
            _ => {}
        }
    }
}
