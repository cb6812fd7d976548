//! Independent factors of a game's propnet, and the puzzle solver that
//! can search them one at a time.

use super::Factor;
use crate::machine::{MachineError, StateMachine};
use crate::propnet::{NetState, PropnetMachine};
use propel_compiler::propnet::{Kind, Propnet};
use rustc_hash::FxHashMap;
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

/// Depth-first search for a line reaching goal 100 (one role), on the
/// moves `allowed` lets through (all when `None`).
pub(super) struct Solver<'a> {
    pub(super) m: &'a mut PropnetMachine,
    pub(super) deadline: Instant,
    pub(super) allowed: Option<Vec<bool>>,
    /// States expanded, over every search of this solver.
    pub(super) nodes: u64,
}

impl Solver<'_> {
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
        if Instant::now() > self.deadline {
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
