//! The goal network, evaluated from scratch at terminal states.
//!
//! When the goal logic is split off the playout network (the `goals` pass),
//! it is read only at the end of a game, so it is not kept up to date by
//! propagation. Evaluating it is then the cost of every playout's last
//! step, and on games whose goals count pieces (othello) it is larger than
//! the playout network itself. So it is flattened once into a program of
//! gates in dependency order over a byte per component, each gate
//! short-circuiting on its first deciding input.

use propel_compiler::propnet::{Kind, Propnet};

/// One gate: its component, what it computes, and its inputs
/// (`args[start..start + len]`).
#[derive(Clone, Copy, Debug)]
struct Gate {
    comp: u32,
    start: u32,
    len: u32,
    /// True for OR/NOR (any input true), false for AND/NAND (all true).
    any: bool,
    /// NAND, NOR and NOT.
    negate: bool,
}

/// A flattened goal network, shared read-only by every engine.
#[derive(Debug)]
pub(crate) struct GoalProgram {
    gates: Vec<Gate>,
    args: Vec<u32>,
    /// Runs of `gates` in order, and whether the run is a cycle (iterated
    /// from false up to its least fixed point: only AND/OR occur there).
    runs: Vec<(u32, u32, bool)>,
    /// Component of each base proposition.
    base_comp: Vec<u32>,
    /// Components that are constant true.
    trues: Vec<u32>,
    /// (role, value, component) of each goal output.
    goals: Vec<(u32, u8, u32)>,
    len: usize,
}

impl GoalProgram {
    pub(crate) fn new(net: &Propnet) -> GoalProgram {
        let mut p = GoalProgram {
            gates: Vec::new(),
            args: Vec::new(),
            runs: Vec::new(),
            base_comp: net.bases.iter().map(|b| b.comp).collect(),
            trues: Vec::new(),
            goals: net.goals.iter().map(|g| (g.role, g.value, g.comp)).collect(),
            len: net.len(),
        };
        for group in net.sccs() {
            let cyclic = net.is_cycle(&group);
            let first = p.gates.len() as u32;
            for c in group {
                let (any, negate) = match net.kind(c) {
                    Kind::True => {
                        p.trues.push(c);
                        continue;
                    }
                    // Inputs are never played when goals are read; a goal
                    // network is never built where questions are asked.
                    Kind::False | Kind::Base(_) | Kind::Input(_) | Kind::Query(_) => continue,
                    Kind::And => (false, false),
                    Kind::Nand => (false, true),
                    Kind::Or => (true, false),
                    Kind::Not | Kind::Nor => (true, true),
                };
                let ins = net.inputs_of(c);
                p.gates.push(Gate { comp: c, start: p.args.len() as u32, len: ins.len() as u32, any, negate });
                p.args.extend_from_slice(ins);
            }
            let last = p.gates.len() as u32;
            if last == first {
                continue;
            }
            // Consecutive acyclic gates share one run.
            match p.runs.last_mut() {
                Some((_, end, false)) if !cyclic && *end == first => *end = last,
                _ => p.runs.push((first, last, cyclic)),
            }
        }
        p
    }

    /// Evaluates the network for the state `bits` into `val` (one byte per
    /// component).
    pub(crate) fn eval(&self, bits: &[u64], val: &mut Vec<u8>) {
        // Every gate is written below before it is read; only the leaves
        // and cycle members need values first.
        if val.len() != self.len {
            val.clear();
            val.resize(self.len, 0);
        }
        for (i, &c) in self.base_comp.iter().enumerate() {
            val[c as usize] = (bits[i / 64] >> (i % 64) & 1) as u8;
        }
        for &c in &self.trues {
            val[c as usize] = 1;
        }
        for &(start, end, cyclic) in &self.runs {
            let run = &self.gates[start as usize..end as usize];
            if !cyclic {
                for g in run {
                    val[g.comp as usize] = self.gate(g, val);
                }
                continue;
            }
            // Members start false; AND/OR are monotone, so this rises to
            // the least fixed point.
            for g in run {
                val[g.comp as usize] = 0;
            }
            loop {
                let mut changed = false;
                for g in run {
                    let v = self.gate(g, val);
                    if v != val[g.comp as usize] {
                        val[g.comp as usize] = v;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
        }
    }

    /// Every goal value of `role` true in `val` (from [`GoalProgram::eval`]).
    pub(crate) fn role_values(&self, val: &[u8], role: usize, out: &mut Vec<u8>) {
        for &(r, v, c) in &self.goals {
            if r as usize == role && val[c as usize] == 1 {
                out.push(v);
            }
        }
    }

    /// The largest goal value of `role` true in `val`, if any.
    pub(crate) fn role_max(&self, val: &[u8], role: usize) -> Option<u8> {
        self.goals.iter().filter(|&&(r, _, c)| r as usize == role && val[c as usize] == 1).map(|&(_, v, _)| v).max()
    }

    #[inline]
    fn gate(&self, g: &Gate, val: &[u8]) -> u8 {
        let ins = &self.args[g.start as usize..(g.start + g.len) as usize];
        let v =
            if g.any { ins.iter().any(|&i| val[i as usize] != 0) } else { ins.iter().all(|&i| val[i as usize] != 0) };
        (v != g.negate) as u8
    }
}
