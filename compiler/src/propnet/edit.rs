//! An editable form of a propnet for the passes: components can be added,
//! rewired and replaced by others (aliases); `finish` resolves aliases,
//! drops what no output reads and numbers the rest in dependency order.

use super::{Base, Goal, Input, Kind, Propnet, QueryLeaf};
use crate::deadline::Deadline;
use crate::graph::{scc_groups, Groups};

pub(crate) struct Edit {
    pub(crate) kinds: Vec<Kind>,
    /// Inputs of component `c`: `fanin[start[c]..start[c] + len[c]]`. One
    /// flat array, not a list per component: a pass over a network of
    /// millions of components otherwise spends a quarter of its time in
    /// the allocator. A rewritten list that is longer than the old one goes
    /// to the end (the old one is left unused).
    start: Vec<u32>,
    len: Vec<u32>,
    fanin: Vec<u32>,
    alias: Vec<u32>,
    pub(crate) roles: Vec<String>,
    pub(crate) bases: Vec<Base>,
    pub(crate) inputs: Vec<Input>,
    pub(crate) goals: Vec<Goal>,
    pub(crate) terminal: u32,
    pub(crate) queries: Vec<QueryLeaf>,
    true_c: Option<u32>,
    false_c: Option<u32>,
    pub(crate) partial: bool,
    /// When a pass must give up: its loops ask [`Edit::stop`] as they go
    /// (a pass over millions of components runs for minutes).
    deadline: Deadline,
    ticks: u32,
    stopped: bool,
}

impl Edit {
    pub(crate) fn new(net: Propnet) -> Edit {
        let n = net.len();
        let len = net.fanin_start.windows(2).map(|w| w[1] - w[0]).collect();
        let mut start = net.fanin_start;
        start.truncate(n);
        let mut e = Edit {
            kinds: net.kinds,
            start,
            len,
            fanin: net.fanin,
            alias: (0..n as u32).collect(),
            roles: net.roles,
            bases: net.bases,
            inputs: net.inputs,
            goals: net.goals,
            terminal: net.terminal,
            queries: net.queries,
            true_c: None,
            false_c: None,
            partial: net.partial,
            deadline: Deadline::none(),
            ticks: 0,
            stopped: false,
        };
        e.true_c = e.kinds.iter().position(|k| *k == Kind::True).map(|i| i as u32);
        e.false_c = e.kinds.iter().position(|k| *k == Kind::False).map(|i| i as u32);
        e
    }

    pub(crate) fn len(&self) -> usize {
        self.kinds.len()
    }

    /// An edit that gives up (see [`Edit::stop`]) once `deadline` passes.
    pub(crate) fn until(mut self, deadline: &Deadline) -> Edit {
        self.deadline = deadline.clone();
        self
    }

    /// Whether the pass must stop now: the deadline is looked at every
    /// 4,096 calls, and once passed this stays true (the pass's result is
    /// then thrown away, so it may stop anywhere).
    pub(crate) fn stop(&mut self) -> bool {
        if !self.stopped {
            self.ticks = self.ticks.wrapping_add(1);
            if self.ticks.is_multiple_of(4096) {
                self.stopped = self.deadline.passed();
            }
        }
        self.stopped
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// The deadline, for loops that hold the edit borrowed.
    pub(crate) fn deadline(&self) -> &Deadline {
        &self.deadline
    }

    /// Stops the pass (a loop found the deadline passed).
    pub(crate) fn give_up(&mut self) {
        self.stopped = true;
    }

    /// The component `c` stands for now.
    pub(crate) fn find(&self, mut c: u32) -> u32 {
        while self.alias[c as usize] != c {
            c = self.alias[c as usize];
        }
        c
    }

    pub(crate) fn add(&mut self, kind: Kind, ins: &[u32]) -> u32 {
        self.kinds.push(kind);
        self.start.push(self.fanin.len() as u32);
        self.len.push(ins.len() as u32);
        self.fanin.extend_from_slice(ins);
        self.alias.push(self.kinds.len() as u32 - 1);
        self.kinds.len() as u32 - 1
    }

    /// `c`'s inputs as stored (aliases not resolved).
    pub(crate) fn ins(&self, c: u32) -> &[u32] {
        let s = self.start[c as usize] as usize;
        &self.fanin[s..s + self.len[c as usize] as usize]
    }

    pub(crate) fn ins_mut(&mut self, c: u32) -> &mut [u32] {
        let s = self.start[c as usize] as usize;
        &mut self.fanin[s..s + self.len[c as usize] as usize]
    }

    /// Makes `ins` the inputs of `c`.
    pub(crate) fn set_ins(&mut self, c: u32, ins: &[u32]) {
        let cu = c as usize;
        if ins.len() > self.len[cu] as usize {
            self.start[cu] = self.fanin.len() as u32;
            self.fanin.extend_from_slice(ins);
        } else {
            let s = self.start[cu] as usize;
            self.fanin[s..s + ins.len()].copy_from_slice(ins);
        }
        self.len[cu] = ins.len() as u32;
    }

    /// From now on, readers of `c` read `by` instead.
    pub(crate) fn replace(&mut self, c: u32, by: u32) {
        let by = self.find(by);
        if by != c {
            self.alias[c as usize] = by;
        }
    }

    pub(crate) fn constant(&mut self, v: bool) -> u32 {
        let slot = if v { self.true_c } else { self.false_c };
        match slot {
            Some(c) => c,
            None => {
                let c = self.add(if v { Kind::True } else { Kind::False }, &[]);
                if v {
                    self.true_c = Some(c)
                } else {
                    self.false_c = Some(c)
                }
                c
            }
        }
    }

    pub(crate) fn const_value(&self, c: u32) -> Option<bool> {
        match self.kinds[self.find(c) as usize] {
            Kind::True => Some(true),
            Kind::False => Some(false),
            _ => None,
        }
    }

    /// `c`'s inputs, aliases resolved.
    pub(crate) fn resolved_ins(&self, c: u32) -> Vec<u32> {
        self.ins(c).iter().map(|&i| self.find(i)).collect()
    }

    /// Output components (legal, goal, terminal, next, the guards of
    /// query components), resolved.
    pub(crate) fn outputs(&self) -> Vec<u32> {
        let mut v: Vec<u32> = Vec::new();
        v.extend(self.bases.iter().map(|b| self.find(b.next)));
        v.extend(self.inputs.iter().map(|i| self.find(i.legal)));
        v.extend(self.goals.iter().map(|g| self.find(g.comp)));
        v.push(self.find(self.terminal));
        v.extend(self.queries.iter().map(|q| self.find(q.guard)));
        v
    }

    /// Live components (reachable from the outputs, plus every base and
    /// input), in dependency order, grouped as strongly connected
    /// components: each group comes after the groups it reads.
    pub(crate) fn order(&self) -> Groups {
        let live = self.live();
        // The resolved inputs of the live components, flat.
        let mut start = Vec::with_capacity(self.len() + 1);
        let mut succ = Vec::new();
        for c in 0..self.len() as u32 {
            start.push(succ.len());
            if live[c as usize] && self.find(c) == c {
                succ.extend(self.ins(c).iter().map(|&i| self.find(i)));
            }
        }
        start.push(succ.len());
        let groups = scc_groups(self.len(), |c| &succ[start[c as usize]..start[c as usize + 1]]);
        groups.filter(|g| live[g[0] as usize] && self.find(g[0]) == g[0])
    }

    pub(crate) fn live(&self) -> Vec<bool> {
        let mut live = vec![false; self.len()];
        let mut stack = self.outputs();
        stack.extend(self.bases.iter().map(|b| b.comp));
        stack.extend(self.inputs.iter().map(|i| i.comp));
        stack.extend(self.queries.iter().map(|q| q.comp));
        while let Some(c) = stack.pop() {
            let c = self.find(c);
            if std::mem::replace(&mut live[c as usize], true) {
                continue;
            }
            stack.extend_from_slice(self.ins(c));
        }
        live
    }

    /// Number of live readers of each component.
    pub(crate) fn fanout_counts(&self) -> Vec<u32> {
        let live = self.live();
        let mut n = vec![0u32; self.len()];
        for (c, &alive) in live.iter().enumerate() {
            if alive && self.find(c as u32) == c as u32 {
                for &i in self.ins(c as u32) {
                    n[self.find(i) as usize] += 1;
                }
            }
        }
        for o in self.outputs() {
            n[o as usize] += 1;
        }
        n
    }

    /// The network: aliases resolved, dead components dropped, the rest
    /// numbered in dependency order (inputs before readers), which keeps a
    /// wave of propagation moving forward through memory.
    pub(crate) fn finish(self) -> Propnet {
        let order = self.order();
        let order = order.nodes();
        let mut new_id = vec![u32::MAX; self.len()];
        for (i, &c) in order.iter().enumerate() {
            new_id[c as usize] = i as u32;
        }
        let map = |c: u32| new_id[self.find(c) as usize];
        let mut kinds = Vec::with_capacity(order.len());
        let mut fanin_start = Vec::with_capacity(order.len() + 1);
        let mut fanin = Vec::new();
        for &c in order {
            let kind = self.kinds[c as usize];
            kinds.push(kind);
            let s = fanin.len();
            fanin_start.push(s as u32);
            fanin.extend(self.ins(c).iter().map(|&i| map(i)));
            if kind.is_gate() {
                fanin[s..].sort_unstable();
            }
        }
        fanin_start.push(fanin.len() as u32);
        let bases = self.bases.iter().map(|b| Base { comp: map(b.comp), next: map(b.next), ..b.clone() }).collect();
        let inputs =
            self.inputs.iter().map(|i| Input { comp: map(i.comp), legal: map(i.legal), ..i.clone() }).collect();
        let goals = self.goals.iter().map(|g| Goal { comp: map(g.comp), ..*g }).collect();
        let terminal = map(self.terminal);
        let queries =
            self.queries.iter().map(|q| QueryLeaf { comp: map(q.comp), guard: map(q.guard), ..q.clone() }).collect();
        Propnet {
            kinds,
            fanin_start,
            fanin,
            roles: self.roles,
            bases,
            inputs,
            goals,
            terminal,
            queries,
            partial: self.partial,
        }
    }
}
