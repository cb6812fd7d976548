//! Independent factors of a game's propnet, and the puzzle solver that
//! can search them one at a time.

use super::Factor;
use crate::machine::{MachineError, StateMachine};
use crate::propnet::{NetState, PropnetMachine};
use propel_compiler::propnet::{Kind, Propnet};
use rustc_hash::{FxHashMap, FxHashSet};
use std::time::Instant;

/// Factors: union-find over the components that the next-state and legal
/// logic reads (terminal and goal logic may join factors without making
/// them depend on each other, so they are left out).
pub(super) fn factors(net: &Propnet) -> Vec<Factor> {
    let n = net.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            p[x as usize] = p[p[x as usize] as usize];
            x = p[x as usize];
        }
        x
    }
    let union = |p: &mut Vec<u32>, a: u32, b: u32| {
        let (ra, rb) = (find(p, a), find(p, b));
        if ra != rb {
            p[ra as usize] = rb;
        }
    };
    // Components in the cones of next-state and legal outputs.
    let mut in_cone = vec![false; n];
    let mut stack: Vec<u32> = net.bases.iter().map(|b| b.next).chain(net.inputs.iter().map(|i| i.legal)).collect();
    while let Some(c) = stack.pop() {
        if std::mem::replace(&mut in_cone[c as usize], true) {
            continue;
        }
        stack.extend_from_slice(net.inputs_of(c));
    }
    for c in 0..n as u32 {
        if in_cone[c as usize] && !matches!(net.kind(c), Kind::True | Kind::False) {
            for &f in net.inputs_of(c) {
                if !matches!(net.kind(f), Kind::True | Kind::False) {
                    union(&mut parent, c, f);
                }
            }
        }
    }
    for b in &net.bases {
        if !matches!(net.kind(b.next), Kind::True | Kind::False) {
            union(&mut parent, b.comp, b.next);
        }
    }
    for i in &net.inputs {
        if !matches!(net.kind(i.legal), Kind::True | Kind::False) {
            union(&mut parent, i.comp, i.legal);
        }
    }
    let mut by_root: FxHashMap<u32, Factor> = FxHashMap::default();
    for b in &net.bases {
        let r = find(&mut parent, b.comp);
        by_root
            .entry(r)
            .or_insert(Factor { bases: 0, inputs: 0, moves: Vec::new(), sample_moves: Vec::new() })
            .bases += 1;
    }
    for (k, i) in net.inputs.iter().enumerate() {
        let r = find(&mut parent, i.comp);
        let f = by_root.entry(r).or_insert(Factor { bases: 0, inputs: 0, moves: Vec::new(), sample_moves: Vec::new() });
        f.inputs += 1;
        f.moves.push(k as u32);
        if f.sample_moves.len() < 3 {
            f.sample_moves.push(i.name.clone());
        }
    }
    // Only groups with moves of their own are factors of play; and a game
    // with one such group has no factorisation.
    let mut out: Vec<Factor> = by_root.into_values().filter(|f| f.inputs > 1 && f.bases > 0).collect();
    out.sort_by_key(|f| std::cmp::Reverse(f.bases));
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// What a breadth-first search found.
pub(super) enum Breadth {
    /// The shortest line to goal 100.
    Found(Vec<u32>),
    /// Every state reachable on the allowed moves was seen: no line exists.
    Exhausted,
    /// Out of time or of room for states.
    GaveUp,
}

/// Searches for a line reaching goal 100 (one role), on the moves
/// `allowed` lets through (all when `None`): breadth first while the
/// states seen fit, depth first (iterative deepening) after that.
pub(super) struct Solver<'a> {
    pub(super) m: &'a mut PropnetMachine,
    pub(super) deadline: Instant,
    /// Also ends the search once passed (a match's abort).
    pub(super) stop: &'a propel_compiler::Deadline,
    pub(super) allowed: Option<Vec<bool>>,
    /// States expanded, over every search of this solver.
    pub(super) nodes: u64,
}

impl Solver<'_> {
    /// Breadth-first search from `s0` with a set of the states seen (most
    /// puzzles revisit states often: a tower of Hanoi of six discs has 729
    /// positions but lines of 63 moves, far beyond depth-first search),
    /// keeping at most `max_states` states.
    pub(super) fn breadth_first(&mut self, s0: &NetState, max_states: usize) -> Result<Breadth, MachineError> {
        // Each state seen, with the index of its parent and the move from it.
        let mut states: Vec<(NetState, u32, u32)> = vec![(s0.clone(), u32::MAX, 0)];
        let mut seen: FxHashSet<NetState> = FxHashSet::default();
        seen.insert(s0.clone());
        let mut moves = Vec::new();
        let mut next = 0;
        while next < states.len() {
            if Instant::now() > self.deadline || self.stop.passed() {
                return Ok(Breadth::GaveUp);
            }
            let s = states[next].0.clone();
            if self.m.is_terminal(&s)? {
                if self.m.goal(&s, 0)?.score() == 100 {
                    let mut line = Vec::new();
                    let mut at = next;
                    while states[at].1 != u32::MAX {
                        line.push(states[at].2);
                        at = states[at].1 as usize;
                    }
                    line.reverse();
                    return Ok(Breadth::Found(line));
                }
                next += 1;
                continue;
            }
            self.nodes += 1;
            self.m.legal_moves(&s, 0, &mut moves)?;
            if let Some(allowed) = &self.allowed {
                moves.retain(|&mv| allowed.get(mv as usize).copied().unwrap_or(true));
            }
            for &mv in &moves {
                let n = self.m.next_state(&s, &[mv])?;
                if seen.insert(n.clone()) {
                    if states.len() >= max_states {
                        return Ok(Breadth::GaveUp);
                    }
                    states.push((n, next as u32, mv));
                }
            }
            next += 1;
        }
        Ok(Breadth::Exhausted)
    }

    pub(super) fn solve(
        &mut self,
        s: &NetState,
        depth: u32,
        line: &mut Vec<u32>,
    ) -> Result<Option<bool>, MachineError> {
        if self.m.is_terminal(s)? {
            return Ok(Some(self.m.goal(s, 0)?.score() == 100));
        }
        if depth == 0 {
            return Ok(Some(false));
        }
        if Instant::now() > self.deadline || self.stop.passed() {
            return Ok(None);
        }
        self.nodes += 1;
        let mut moves = Vec::new();
        self.m.legal_moves(s, 0, &mut moves)?;
        if let Some(allowed) = &self.allowed {
            moves.retain(|&mv| allowed.get(mv as usize).copied().unwrap_or(true));
        }
        for mv in moves {
            let next = self.m.next_state(s, &[mv])?;
            line.push(mv);
            match self.solve(&next, depth - 1, line)? {
                Some(true) => return Ok(Some(true)),
                None => return Ok(None),
                Some(false) => {}
            }
            line.pop();
        }
        Ok(Some(false))
    }
}
