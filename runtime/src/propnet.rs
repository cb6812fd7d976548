//! The interpreted propagator: a propnet run by differential forward
//! propagation, in the design of the Sancho posts.
//!
//! - The topology is shared and read-only ([`Topology`]): one packed record
//!   per component and one contiguous fan-out array.
//! - Each machine instance (one per thread) owns an `i32` counter per
//!   component. Every logic component is the same operation: an input
//!   turning true adds 1, turning false subtracts 1, and the top bit of
//!   the counter is the output. The starting values make the kinds: OR
//!   0x7FFFFFFF, AND 0x80000000 - n, NOR 0xFFFFFFFF, NAND -n (NOT = NOR of
//!   one input).
//! - Only components whose output flips propagate; flips of legal and
//!   next-state components update trigger bitsets, so the legal moves and
//!   the next state are read without scanning the network.
//! - A new state is set by XOR of the old and new base bitsets: only the
//!   bases that differ are touched.
//! - Recursion gives cycles of AND/OR. Counting alone would let a cycle
//!   keep itself true after its outside support is gone, so a decrement
//!   arriving in a cyclic component schedules a recomputation of that
//!   component's least fixed point from its outside inputs.

mod machine;

pub use machine::PropnetMachine;

use crate::goals::GoalProgram;
use crate::machine::{MachineError, StateMachine};
use propel_compiler::propnet::{Kind, Propnet};
use propel_compiler::topdown::{Rules, TopDown};
use propel_compiler::TermId;
use std::sync::Arc;

const NONE: u32 = u32::MAX;

/// One component's record.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Rec {
    /// The counter with no input true.
    counter0: i32,
    fan_start: u32,
    fan_len: u32,
    /// Triggers: `trig_len` entries from `trig_start` in `Topology::triggers`.
    trig_start: u32,
    trig_len: u32,
    /// Cyclic SCC this component belongs to, or NONE.
    scc: u32,
}

/// What a component's flip updates.
#[derive(Clone, Copy, Debug)]
enum Trigger {
    Legal(u32),
    Next(u32),
    /// The guard of query component `i`.
    Guard(u32),
}

/// What a network's query components ask ([`propel_compiler::queries`]):
/// shared by every engine of the topology.
#[derive(Clone, Debug)]
struct Questions {
    /// An evaluator whose terms include every base's fact and every
    /// question's arguments (each engine starts from a copy).
    template: TopDown,
    base_terms: Vec<TermId>,
    /// Per query component: its component, question and arguments.
    leaves: Vec<(u32, u32, Box<[TermId]>)>,
}

/// A cyclic strongly connected component: its members, and for each
/// member its inputs (to recompute the least fixed point).
#[derive(Clone, Debug)]
struct Cycle {
    members: Vec<u32>,
}

/// The read-only part of a propnet machine, shared by all its instances.
#[derive(Debug)]
pub struct Topology {
    recs: Vec<Rec>,
    fanout: Vec<u32>,
    fanin_start: Vec<u32>,
    fanin: Vec<u32>,
    triggers: Vec<Trigger>,
    cycles: Vec<Cycle>,
    base_comp: Vec<u32>,
    input_comp: Vec<u32>,
    /// Each role's inputs: (first, count); numbered by role, then name.
    role_range: Vec<(u32, u32)>,
    input_role: Vec<u32>,
    /// Whether any cycle exists (skips the cycle bookkeeping when not).
    has_cycles: bool,
    terminal: u32,
    roles: Vec<String>,
    base_names: Vec<String>,
    input_names: Vec<String>,
    initial: Vec<u64>,
    /// Goals read from the playout network, or None when they live in a
    /// separate goal network.
    goals: Vec<(u32, u8, u32)>,
    goal_net: Option<Arc<GoalProgram>>,
    /// Query components (the network's `queries`, in order).
    query_leaves: usize,
    /// How to answer them; `None` until [`Topology::with_questions`].
    questions: Option<Arc<Questions>>,
}

fn counter0(kind: Kind, n: usize) -> i32 {
    let n = n as i32;
    match kind {
        Kind::Or => i32::MAX,
        Kind::And => i32::MIN.wrapping_sub(n),
        Kind::Not | Kind::Nor => -1,
        Kind::Nand => n.wrapping_neg(),
        Kind::True => -1,
        Kind::False | Kind::Base(_) | Kind::Input(_) | Kind::Query(_) => 0,
    }
}

fn words(n: usize) -> usize {
    n.div_ceil(64)
}

impl Topology {
    /// Builds the topology of `net`; `goal_net`, when given, computes the
    /// goals instead of `net`'s goal outputs.
    pub fn new(net: &Propnet, goal_net: Option<Propnet>) -> Topology {
        Topology::with_goal_net(net, goal_net.map(|net| Arc::new(GoalProgram::new(&net))))
    }

    /// As [`Topology::new`], sharing a goal network already built.
    fn with_goal_net(net: &Propnet, goal_net: Option<Arc<GoalProgram>>) -> Topology {
        let n = net.len();
        // Inputs numbered by role, then name: a role's moves are one
        // contiguous range of the legal bitset, already in sorted order.
        let mut by_role: Vec<u32> = (0..net.inputs.len() as u32).collect();
        by_role.sort_by(|&a, &b| {
            let (x, y) = (&net.inputs[a as usize], &net.inputs[b as usize]);
            (x.role, &x.name).cmp(&(y.role, &y.name))
        });
        let mut input_index = vec![0u32; net.inputs.len()];
        for (new, &old) in by_role.iter().enumerate() {
            input_index[old as usize] = new as u32;
        }
        let fanout_lists = net.fanout();
        let mut recs = Vec::with_capacity(n);
        let mut fanout = Vec::new();
        let mut trig_lists: Vec<Vec<Trigger>> = vec![Vec::new(); n];
        for (i, inp) in net.inputs.iter().enumerate() {
            trig_lists[inp.legal as usize].push(Trigger::Legal(input_index[i]));
        }
        for (i, b) in net.bases.iter().enumerate() {
            trig_lists[b.next as usize].push(Trigger::Next(i as u32));
        }
        for (i, q) in net.queries.iter().enumerate() {
            trig_lists[q.guard as usize].push(Trigger::Guard(i as u32));
        }
        let mut triggers = Vec::new();
        for c in 0..n {
            let ins = net.inputs_of(c as u32);
            recs.push(Rec {
                counter0: counter0(net.kind(c as u32), ins.len()),
                fan_start: fanout.len() as u32,
                fan_len: fanout_lists[c].len() as u32,
                trig_start: triggers.len() as u32,
                trig_len: trig_lists[c].len() as u32,
                scc: NONE,
            });
            fanout.extend_from_slice(&fanout_lists[c]);
            triggers.extend_from_slice(&trig_lists[c]);
        }
        let mut cycles = Vec::new();
        for comp in net.cycles() {
            for &c in &comp {
                recs[c as usize].scc = cycles.len() as u32;
            }
            cycles.push(Cycle { members: comp });
        }
        let mut fanin_start = Vec::with_capacity(n + 1);
        let mut fanin = Vec::new();
        for c in 0..n as u32 {
            fanin_start.push(fanin.len() as u32);
            fanin.extend_from_slice(net.inputs_of(c));
        }
        fanin_start.push(fanin.len() as u32);
        let mut role_range = vec![(0u32, 0u32); net.roles.len()];
        for (new, &old) in by_role.iter().enumerate() {
            let r = net.inputs[old as usize].role as usize;
            if role_range[r].1 == 0 {
                role_range[r].0 = new as u32;
            }
            role_range[r].1 += 1;
        }
        let mut initial = vec![0u64; words(net.bases.len())];
        for (i, b) in net.bases.iter().enumerate() {
            if b.init {
                initial[i / 64] |= 1 << (i % 64);
            }
        }
        let has_cycles = !cycles.is_empty();
        Topology {
            recs,
            fanout,
            fanin_start,
            fanin,
            triggers,
            cycles,
            base_comp: net.bases.iter().map(|b| b.comp).collect(),
            input_comp: by_role.iter().map(|&i| net.inputs[i as usize].comp).collect(),
            role_range,
            input_role: by_role.iter().map(|&i| net.inputs[i as usize].role).collect(),
            has_cycles,
            terminal: net.terminal,
            roles: net.roles.clone(),
            base_names: net.bases.iter().map(|b| b.name.clone()).collect(),
            input_names: by_role.iter().map(|&i| net.inputs[i as usize].name.clone()).collect(),
            initial,
            goals: net.goals.iter().map(|g| (g.role, g.value, g.comp)).collect(),
            goal_net,
            query_leaves: net.queries.len(),
            questions: None,
        }
    }

    /// This topology with its query components answered from `rules`
    /// (the rules `net` was built from, with its questions): `net` must
    /// be the network the topology was made of.
    pub fn with_questions(mut self, net: &Propnet, rules: Arc<Rules>) -> Result<Topology, MachineError> {
        let mut template = TopDown::new(rules);
        let mut term =
            |text: &str| template.term_from_kif(text).map_err(|why| MachineError::NotATerm { text: text.into(), why });
        let base_terms = net.bases.iter().map(|b| term(&b.name)).collect::<Result<Vec<_>, _>>()?;
        let mut leaves = Vec::with_capacity(net.queries.len());
        for q in &net.queries {
            let args = q.args.iter().map(|a| term(a)).collect::<Result<Vec<_>, _>>()?;
            leaves.push((q.comp, q.question, args.into()));
        }
        self.questions = Some(Arc::new(Questions { template, base_terms, leaves }));
        Ok(self)
    }

    pub fn bases(&self) -> usize {
        self.base_comp.len()
    }

    pub fn components(&self) -> usize {
        self.recs.len()
    }

    pub fn cyclic_components(&self) -> usize {
        self.cycles.iter().map(|c| c.members.len()).sum()
    }

    fn fanin_of(&self, c: u32) -> &[u32] {
        &self.fanin[self.fanin_start[c as usize] as usize..self.fanin_start[c as usize + 1] as usize]
    }
}

/// A state: the bitset of base propositions that hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NetState(Arc<[u64]>);

impl NetState {
    pub fn from_bits(bits: Vec<u64>) -> NetState {
        NetState(Arc::from(bits))
    }

    /// A copy of `bits` (one allocation, where `from_bits(bits.to_vec())`
    /// takes two and a second copy).
    pub fn from_slice(bits: &[u64]) -> NetState {
        NetState(Arc::from(bits))
    }

    pub fn bits(&self) -> &[u64] {
        &self.0
    }
}

/// One propagating instance of one network (per thread).
#[derive(Clone, Debug)]
pub struct Engine {
    topo: Arc<Topology>,
    counters: Vec<i32>,
    bases: Vec<u64>,
    inputs: Vec<u64>,
    legal: Vec<u64>,
    next: Vec<u64>,
    /// Flips waiting to propagate: (component, +1 or -1).
    stack: Vec<(u32, i32)>,
    pending: Vec<u32>,
    pending_flag: Vec<bool>,
    scratch: Vec<i32>,
    scratch_val: Vec<bool>,
    want: Vec<u64>,
    /// The goal network's values, for the state in `goal_for`.
    goal_val: Vec<u8>,
    goal_for: Option<Vec<u64>>,
    /// Counter updates made so far (the propagation's work, counted).
    updates: u64,
    /// Query components whose guard holds, and those answered for the
    /// current state (bitsets).
    guards: Vec<u64>,
    answered: Vec<u64>,
    asker: Option<Box<Asker>>,
    /// Why an answer could not be computed (taken by the next call).
    query_error: Option<MachineError>,
}

/// An engine's evaluator of its network's questions.
#[derive(Clone, Debug)]
struct Asker {
    td: TopDown,
    facts: Vec<TermId>,
    /// Whether `td` holds the engine's current state.
    current: bool,
}

#[inline]
fn on(c: i32) -> bool {
    c < 0
}

impl Engine {
    pub fn new(topo: Arc<Topology>) -> Engine {
        let n = topo.recs.len();
        let mut m = Engine {
            counters: topo.recs.iter().map(|r| r.counter0).collect(),
            bases: vec![0; words(topo.base_comp.len())],
            inputs: vec![0; words(topo.input_comp.len())],
            legal: vec![0; words(topo.input_comp.len())],
            next: vec![0; words(topo.base_comp.len())],
            stack: Vec::new(),
            pending: Vec::new(),
            pending_flag: vec![false; topo.cycles.len()],
            scratch: vec![0; n],
            scratch_val: vec![false; n],
            want: Vec::new(),
            goal_val: Vec::new(),
            goal_for: None,
            updates: 0,
            guards: vec![0; words(topo.query_leaves)],
            answered: vec![0; words(topo.query_leaves)],
            asker: None,
            query_error: None,
            topo,
        };
        // Every component whose output is true with nothing set (TRUE,
        // NOT, NOR, NAND) propagates once; then the network is consistent.
        for c in 0..n as u32 {
            if on(m.counters[c as usize]) {
                m.flipped(c, 1);
            }
        }
        m.settle();
        m
    }

    pub fn topology(&self) -> &Arc<Topology> {
        &self.topo
    }

    /// Component `c`'s output has just flipped (`delta` +1: now true).
    #[inline]
    fn flipped(&mut self, c: u32, delta: i32) {
        let r = self.topo.recs[c as usize];
        for t in r.trig_start..r.trig_start + r.trig_len {
            let (bits, i) = match self.topo.triggers[t as usize] {
                Trigger::Legal(i) => (&mut self.legal, i),
                Trigger::Next(i) => (&mut self.next, i),
                Trigger::Guard(i) => (&mut self.guards, i),
            };
            let w = &mut bits[i as usize / 64];
            let m = 1u64 << (i % 64);
            if delta > 0 {
                *w |= m
            } else {
                *w &= !m
            }
        }
        if r.fan_len > 0 {
            self.stack.push((c, delta));
        }
    }

    /// Propagates every pending flip, then recomputes the cycles that lost
    /// support, until nothing changes.
    fn settle(&mut self) {
        loop {
            if self.topo.has_cycles {
                self.drain::<true>();
            } else {
                self.drain::<false>();
            }
            let Some(s) = self.pending.pop() else { return };
            self.pending_flag[s as usize] = false;
            self.recompute_cycle(s);
        }
    }

    /// The propagation loop: every flip on the stack adds its delta to its
    /// readers' counters, and readers whose top bit changes flip in turn.
    /// `CYCLES` compiles the cycle bookkeeping out for acyclic networks.
    #[inline(never)]
    fn drain<const CYCLES: bool>(&mut self) {
        let topo = &*self.topo;
        let recs = &topo.recs[..];
        let fanout = &topo.fanout[..];
        let triggers = &topo.triggers[..];
        let counters = &mut self.counters[..];
        let stack = &mut self.stack;
        let mut updates = 0u64;
        while let Some((c, delta)) = stack.pop() {
            let r = recs[c as usize];
            updates += r.fan_len as u64;
            let fans = &fanout[r.fan_start as usize..(r.fan_start + r.fan_len) as usize];
            for &f in fans {
                // Fan-out entries are component ids of this topology, and
                // `counters` has one slot per component (both built by
                // `Topology::new` / `Engine::new`); the bounds check stays,
                // it costs little next to the memory access.
                let slot = &mut counters[f as usize];
                let before = *slot;
                let after = before.wrapping_add(delta);
                *slot = after;
                if CYCLES && delta < 0 {
                    let sc = recs[f as usize].scc;
                    if sc != NONE && !self.pending_flag[sc as usize] {
                        self.pending_flag[sc as usize] = true;
                        self.pending.push(sc);
                    }
                }
                if (before ^ after) < 0 {
                    let d = if after < 0 { 1 } else { -1 };
                    let rf = recs[f as usize];
                    for t in &triggers[rf.trig_start as usize..(rf.trig_start + rf.trig_len) as usize] {
                        let (bits, i) = match *t {
                            Trigger::Legal(i) => (&mut self.legal, i),
                            Trigger::Next(i) => (&mut self.next, i),
                            Trigger::Guard(i) => (&mut self.guards, i),
                        };
                        let w = &mut bits[i as usize / 64];
                        let m = 1u64 << (i % 64);
                        if d > 0 {
                            *w |= m
                        } else {
                            *w &= !m
                        }
                    }
                    if rf.fan_len > 0 {
                        stack.push((f, d));
                    }
                }
            }
        }
        self.updates += updates;
    }

    /// Sets a cycle to the least fixed point of its current outside inputs.
    fn recompute_cycle(&mut self, s: u32) {
        let topo = self.topo.clone();
        let members = &topo.cycles[s as usize].members;
        // Counters with only the outside inputs counted.
        let mut work: Vec<u32> = Vec::new();
        for &m in members {
            let mut c = topo.recs[m as usize].counter0;
            for &i in topo.fanin_of(m) {
                if topo.recs[i as usize].scc != s && on(self.counters[i as usize]) {
                    c = c.wrapping_add(1);
                }
            }
            self.scratch[m as usize] = c;
            self.scratch_val[m as usize] = false;
            if on(c) {
                work.push(m);
            }
        }
        // Grow from there through the cycle (AND/OR: monotone).
        while let Some(m) = work.pop() {
            if self.scratch_val[m as usize] {
                continue;
            }
            self.scratch_val[m as usize] = true;
            let r = topo.recs[m as usize];
            for k in r.fan_start..r.fan_start + r.fan_len {
                let f = topo.fanout[k as usize];
                if topo.recs[f as usize].scc == s {
                    self.scratch[f as usize] = self.scratch[f as usize].wrapping_add(1);
                    if on(self.scratch[f as usize]) && !self.scratch_val[f as usize] {
                        work.push(f);
                    }
                }
            }
        }
        // Install the new values: member counters as recomputed; members
        // whose output changed tell their outside readers.
        for &m in members {
            let was = on(self.counters[m as usize]);
            self.counters[m as usize] = self.scratch[m as usize];
            let now = on(self.counters[m as usize]);
            debug_assert_eq!(now, self.scratch_val[m as usize]);
            if was == now {
                continue;
            }
            let delta = if now { 1 } else { -1 };
            let r = topo.recs[m as usize];
            for t in r.trig_start..r.trig_start + r.trig_len {
                let (bits, i) = match topo.triggers[t as usize] {
                    Trigger::Legal(i) => (&mut self.legal, i),
                    Trigger::Next(i) => (&mut self.next, i),
                    Trigger::Guard(i) => (&mut self.guards, i),
                };
                let w = &mut bits[i as usize / 64];
                let mask = 1u64 << (i % 64);
                if now {
                    *w |= mask
                } else {
                    *w &= !mask
                }
            }
            for k in r.fan_start..r.fan_start + r.fan_len {
                let f = topo.fanout[k as usize];
                if topo.recs[f as usize].scc == s {
                    continue;
                }
                let before = self.counters[f as usize];
                let after = before.wrapping_add(delta);
                self.counters[f as usize] = after;
                if delta < 0 {
                    let fs = topo.recs[f as usize].scc;
                    if fs != NONE && !self.pending_flag[fs as usize] {
                        self.pending_flag[fs as usize] = true;
                        self.pending.push(fs);
                    }
                }
                if on(before) != on(after) {
                    self.flipped(f, if on(after) { 1 } else { -1 });
                }
            }
        }
    }

    /// Sets a leaf (base or input) component's value.
    #[inline]
    fn set_leaf(&mut self, c: u32, value: bool) {
        let cur = on(self.counters[c as usize]);
        if cur != value {
            self.counters[c as usize] = if value { -1 } else { 0 };
            self.flipped(c, if value { 1 } else { -1 });
        }
    }

    /// Makes `bits` the current state: only bases that differ are touched.
    pub fn set_state(&mut self, bits: &[u64]) {
        let mut changed = false;
        for (w, &word) in bits.iter().enumerate() {
            let mut diff = word ^ self.bases[w];
            changed |= diff != 0;
            while diff != 0 {
                let b = diff.trailing_zeros();
                diff &= diff - 1;
                let i = w * 64 + b as usize;
                let value = bits[w] >> b & 1 == 1;
                let c = self.topo.base_comp[i];
                self.set_leaf(c, value);
            }
            self.bases[w] = bits[w];
        }
        if changed && self.topo.query_leaves > 0 {
            // Every answer was for the state before.
            self.answered.fill(0);
            if let Some(a) = &mut self.asker {
                a.current = false;
            }
        }
        self.settle();
        self.answer();
    }

    /// Answers the query components whose guard holds and that are not
    /// answered for this state yet, propagating each round of answers
    /// (which may make more guards hold) until none is left. Where a
    /// guard is false the answer is never read, so an old one may stay.
    fn answer(&mut self) {
        if self.topo.query_leaves == 0 {
            return;
        }
        let Some(q) = self.topo.questions.clone() else {
            if self.guards.iter().any(|&w| w != 0) {
                self.query_error.get_or_insert(MachineError::NoQuestions);
            }
            return;
        };
        let mut asker = match self.asker.take() {
            Some(a) => a,
            None => Box::new(Asker { td: q.template.clone(), facts: Vec::new(), current: false }),
        };
        loop {
            let mut asked = false;
            for w in 0..self.guards.len() {
                let mut todo = self.guards[w] & !self.answered[w];
                while todo != 0 {
                    let b = todo.trailing_zeros();
                    todo &= todo - 1;
                    self.answered[w] |= 1 << b;
                    if !asker.current {
                        asker.facts.clear();
                        for (bw, &word) in self.bases.iter().enumerate() {
                            let mut bits = word;
                            while bits != 0 {
                                asker.facts.push(q.base_terms[bw * 64 + bits.trailing_zeros() as usize]);
                                bits &= bits - 1;
                            }
                        }
                        let Asker { td, facts, .. } = &mut *asker;
                        td.set_state(facts);
                        asker.current = true;
                    }
                    let (comp, question, args) = &q.leaves[w * 64 + b as usize];
                    let value = match asker.td.ask(*question as usize, args) {
                        Ok(v) => v,
                        Err(e) => {
                            self.query_error.get_or_insert(e.into());
                            false
                        }
                    };
                    self.set_leaf(*comp, value);
                    asked = true;
                }
            }
            if !asked {
                break;
            }
            self.settle();
        }
        self.asker = Some(asker);
    }

    /// The error an answer ran into since the last call, if any.
    fn take_query_error(&mut self) -> Result<(), MachineError> {
        match self.query_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Makes `joint` (one input index per role) the current move.
    pub fn set_joint(&mut self, joint: &[u32]) {
        let mut want = std::mem::take(&mut self.want);
        want.clear();
        want.resize(self.inputs.len(), 0);
        for &i in joint {
            want[i as usize / 64] |= 1 << (i % 64);
        }
        for (w, &word) in want.iter().enumerate() {
            let mut diff = word ^ self.inputs[w];
            while diff != 0 {
                let b = diff.trailing_zeros();
                diff &= diff - 1;
                let i = w * 64 + b as usize;
                let c = self.topo.input_comp[i];
                self.set_leaf(c, want[w] >> b & 1 == 1);
            }
            self.inputs[w] = want[w];
        }
        self.want = want;
        self.settle();
        // Guards may read the move.
        self.answer();
    }

    /// The legal moves of `role` in the current state.
    pub fn legal_into(&self, role: usize, out: &mut Vec<u32>) {
        out.clear();
        let (first, count) = self.topo.role_range[role];
        let (lo, hi) = (first as usize, (first + count) as usize);
        let mut w = lo / 64;
        while w * 64 < hi {
            let mut bits = self.legal[w];
            // Mask off bits outside [lo, hi).
            if w * 64 < lo {
                bits &= !0u64 << (lo - w * 64);
            }
            if (w + 1) * 64 > hi {
                bits &= !0u64 >> ((w + 1) * 64 - hi);
            }
            while bits != 0 {
                out.push((w * 64) as u32 + bits.trailing_zeros());
                bits &= bits - 1;
            }
            w += 1;
        }
    }

    pub fn terminal_now(&self) -> bool {
        on(self.counters[self.topo.terminal as usize])
    }

    pub fn is_legal_now(&self, input: u32) -> bool {
        self.legal[input as usize / 64] >> (input % 64) & 1 == 1
    }

    /// The next state, as computed for the current state and move.
    pub fn next_bits(&self) -> &[u64] {
        &self.next
    }

    fn goal_values_now(&mut self, role: usize, out: &mut Vec<u8>) {
        out.clear();
        match &self.topo.goal_net {
            None => {
                for &(r, v, c) in &self.topo.goals {
                    if r as usize == role && on(self.counters[c as usize]) {
                        out.push(v);
                    }
                }
            }
            Some(g) => {
                // Every role's goal is read at the same terminal state:
                // evaluate once per state.
                if self.goal_for.as_deref() != Some(&self.bases[..]) {
                    g.eval(&self.bases, &mut self.goal_val);
                    let f = self.goal_for.get_or_insert_with(Vec::new);
                    f.clone_from(&self.bases);
                }
                g.role_values(&self.goal_val, role, out);
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}
