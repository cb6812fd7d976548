//! Propositional networks: a game's ground rules as a circuit.
//!
//! Components are numbered `0..len()`; each has a kind and a list of input
//! components (flat arrays, no object graph). Base propositions are the
//! state (`true` atoms), inputs are the joint move (`does` atoms); legal,
//! goal, terminal and next-state outputs name components. Recursive
//! relations give cycles of AND/OR (never through NOT: the rules are
//! stratified); the network's meaning is the least fixed point, which
//! [`Propnet::eval`] computes from scratch and the propagators maintain.

mod build;
mod edit;
pub mod passes;

pub use build::{from_ground, from_ground_until, PropnetError};

use crate::graph::{scc_groups, Groups};

/// A component's kind. `Base(i)` and `Input(i)` index
/// [`Propnet::bases`] and [`Propnet::inputs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    True,
    False,
    Base(u32),
    Input(u32),
    /// The answer to a question on the state ([`Propnet::queries`]): a
    /// leaf whose value the machine sets, like a base's.
    Query(u32),
    And,
    Or,
    Not,
    /// NOT of an AND.
    Nand,
    /// NOT of an OR.
    Nor,
}

impl Kind {
    pub fn name(&self) -> &'static str {
        match self {
            Kind::True => "true",
            Kind::False => "false",
            Kind::Base(_) => "base",
            Kind::Input(_) => "input",
            Kind::Query(_) => "query",
            Kind::And => "and",
            Kind::Or => "or",
            Kind::Not => "not",
            Kind::Nand => "nand",
            Kind::Nor => "nor",
        }
    }

    pub fn is_gate(&self) -> bool {
        matches!(self, Kind::And | Kind::Or | Kind::Not | Kind::Nand | Kind::Nor)
    }

    /// The value of a gate given how many of its `n` inputs are true.
    pub fn gate(&self, true_inputs: usize, n: usize) -> bool {
        match self {
            Kind::And => true_inputs == n,
            Kind::Or => true_inputs > 0,
            Kind::Not | Kind::Nor => true_inputs == 0,
            Kind::Nand => true_inputs < n,
            Kind::True => true,
            _ => false,
        }
    }
}

/// A base proposition: one fact of the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Base {
    pub comp: u32,
    /// The component whose value is this proposition in the next state.
    pub next: u32,
    /// Canonical KIF of the fact (the argument of `true`).
    pub name: String,
    /// Whether it holds in the initial state.
    pub init: bool,
}

/// An input proposition: one role's move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub comp: u32,
    pub role: u32,
    /// The component that says whether the move is legal.
    pub legal: u32,
    /// Canonical KIF of the move.
    pub name: String,
}

/// A query component: the answer to a question asked of the state
/// ([`crate::queries`]), needed only while its guard holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryLeaf {
    pub comp: u32,
    /// The component that says whether the answer is read at all: where
    /// it is false, no output depends on the answer.
    pub guard: u32,
    /// Index of the question in the game's `queries`.
    pub question: u32,
    /// The question's parameters, each a term in canonical KIF.
    pub args: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Goal {
    pub role: u32,
    /// 0 to 100, or above for a value GDL does not allow, which every
    /// machine reports as an error when it holds (native code's 128-bit
    /// goal masks hold values from 127 up in bit 127).
    pub value: u8,
    pub comp: u32,
}

/// A propnet. Outputs (legal, goal, terminal, next) are component ids.
#[derive(Clone, Debug, Default)]
pub struct Propnet {
    kinds: Vec<Kind>,
    fanin_start: Vec<u32>,
    fanin: Vec<u32>,
    pub roles: Vec<String>,
    pub bases: Vec<Base>,
    pub inputs: Vec<Input>,
    pub goals: Vec<Goal>,
    pub terminal: u32,
    /// Query components; empty unless the game was built with questions.
    pub queries: Vec<QueryLeaf>,
    /// The network does not see every state reachable from the initial
    /// one through its own transitions: a goal network (its next-state
    /// outputs are placeholders) or one copy of a split network (it sees
    /// only the states with its proposition fixed). Passes must not infer
    /// from its transitions which bases never change.
    pub partial: bool,
}

/// Component counts by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: usize,
    pub and: usize,
    pub or: usize,
    pub not: usize,
    pub nand: usize,
    pub nor: usize,
    pub base: usize,
    pub input: usize,
    pub query: usize,
    pub constant: usize,
    /// Sum of fan-in over all components.
    pub edges: usize,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} components ({} and, {} or, {} not, {} nand, {} nor, {} base, {} input, {} const), {} edges",
            self.total,
            self.and,
            self.or,
            self.not,
            self.nand,
            self.nor,
            self.base,
            self.input,
            self.constant,
            self.edges
        )?;
        if self.query > 0 {
            write!(f, ", {} query", self.query)?;
        }
        Ok(())
    }
}

impl Propnet {
    /// A network from components in order: `comps[i] = (kind, inputs)`.
    pub fn from_parts(
        comps: Vec<(Kind, Vec<u32>)>,
        roles: Vec<String>,
        bases: Vec<Base>,
        inputs: Vec<Input>,
        goals: Vec<Goal>,
        terminal: u32,
    ) -> Propnet {
        let mut kinds = Vec::with_capacity(comps.len());
        let mut fanin_start = Vec::with_capacity(comps.len() + 1);
        let mut fanin = Vec::new();
        for (k, ins) in comps {
            kinds.push(k);
            fanin_start.push(fanin.len() as u32);
            fanin.extend(ins);
        }
        fanin_start.push(fanin.len() as u32);
        Propnet {
            kinds,
            fanin_start,
            fanin,
            roles,
            bases,
            inputs,
            goals,
            terminal,
            queries: Vec::new(),
            partial: false,
        }
    }

    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    pub fn kind(&self, c: u32) -> Kind {
        self.kinds[c as usize]
    }

    pub fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    pub fn inputs_of(&self, c: u32) -> &[u32] {
        &self.fanin[self.fanin_start[c as usize] as usize..self.fanin_start[c as usize + 1] as usize]
    }

    /// Fan-out lists: for each component, the components that read it.
    pub fn fanout(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.len()];
        for c in 0..self.len() as u32 {
            for &i in self.inputs_of(c) {
                out[i as usize].push(c);
            }
        }
        out
    }

    /// Every component an output reads: legal, goal, terminal, next, and
    /// the guards of query components.
    pub fn outputs(&self) -> Vec<u32> {
        let mut v: Vec<u32> = Vec::new();
        v.extend(self.bases.iter().map(|b| b.next));
        v.extend(self.inputs.iter().map(|i| i.legal));
        v.extend(self.goals.iter().map(|g| g.comp));
        v.push(self.terminal);
        v.extend(self.queries.iter().map(|q| q.guard));
        v
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts { total: self.len(), edges: self.fanin.len(), ..Default::default() };
        for k in &self.kinds {
            match k {
                Kind::And => c.and += 1,
                Kind::Or => c.or += 1,
                Kind::Not => c.not += 1,
                Kind::Nand => c.nand += 1,
                Kind::Nor => c.nor += 1,
                Kind::Base(_) => c.base += 1,
                Kind::Input(_) => c.input += 1,
                Kind::Query(_) => c.query += 1,
                Kind::True | Kind::False => c.constant += 1,
            }
        }
        c
    }

    /// Strongly connected components of the gate graph, dependencies
    /// first. Components not on a cycle come as singletons.
    pub fn sccs(&self) -> Vec<Vec<u32>> {
        self.scc_groups().iter().map(<[u32]>::to_vec).collect()
    }

    fn scc_groups(&self) -> Groups {
        scc_groups(self.len(), |c| self.inputs_of(c))
    }

    /// Whether a strongly connected component (from [`Propnet::sccs`]) is a
    /// cycle: several components, or one that reads itself.
    pub fn is_cycle(&self, scc: &[u32]) -> bool {
        scc.len() > 1 || scc.first().is_some_and(|&c| self.inputs_of(c).contains(&c))
    }

    /// The strongly connected components that are cycles, dependencies first.
    pub fn cycles(&self) -> Vec<Vec<u32>> {
        self.scc_groups().iter().filter(|c| self.is_cycle(c)).map(<[u32]>::to_vec).collect()
    }

    /// The value of every component for a state (`bases[i]`: base `i`
    /// holds) and joint move (`inputs[j]`: input `j` is played), computed
    /// from scratch: components in dependency order, cycles iterated up
    /// from false to their least fixed point. The reference the fast
    /// propagators are checked against.
    /// Query components read false; [`Propnet::eval_with_answers`] gives them.
    pub fn eval(&self, bases: &[bool], inputs: &[bool]) -> Vec<bool> {
        self.eval_with_answers(bases, inputs, &[])
    }

    /// [`Propnet::eval`] with `answers[i]` the value of query component `i`
    /// (false where missing).
    pub fn eval_with_answers(&self, bases: &[bool], inputs: &[bool], answers: &[bool]) -> Vec<bool> {
        let mut val = Vec::new();
        Evaluator::new(self).eval(self, &Leaves { bases, inputs, answers }, &mut val);
        val
    }

    pub(crate) fn value_from_inputs(&self, c: u32, val: &[bool], leaves: &Leaves) -> bool {
        match self.kind(c) {
            Kind::True => true,
            Kind::False => false,
            Kind::Base(i) => leaves.bases[i as usize],
            Kind::Input(i) => leaves.inputs[i as usize],
            Kind::Query(i) => leaves.answers.get(i as usize).copied().unwrap_or(false),
            k => {
                let ins = self.inputs_of(c);
                let t = ins.iter().filter(|&&i| val[i as usize]).count();
                k.gate(t, ins.len())
            }
        }
    }

    /// The initial state: each base's `init` flag.
    pub fn initial_state(&self) -> Vec<bool> {
        self.bases.iter().map(|b| b.init).collect()
    }

    /// Checks internal consistency (debug builds and tests): input ids in
    /// range, gates with the right number of inputs, outputs in range.
    pub fn check(&self) -> Result<(), String> {
        let n = self.len() as u32;
        for c in 0..n {
            let ins = self.inputs_of(c);
            if ins.iter().any(|&i| i >= n) {
                return Err(format!("component {c} reads a component out of range"));
            }
            match self.kind(c) {
                Kind::Not if ins.len() != 1 => return Err(format!("NOT {c} has {} inputs", ins.len())),
                Kind::True | Kind::False | Kind::Base(_) | Kind::Input(_) | Kind::Query(_) if !ins.is_empty() => {
                    return Err(format!("leaf {c} has inputs"))
                }
                Kind::Base(i) if self.bases.get(i as usize).map(|b| b.comp) != Some(c) => {
                    return Err(format!("base component {c} not registered"))
                }
                Kind::Input(i) if self.inputs.get(i as usize).map(|b| b.comp) != Some(c) => {
                    return Err(format!("input component {c} not registered"))
                }
                Kind::Query(i) if self.queries.get(i as usize).map(|q| q.comp) != Some(c) => {
                    return Err(format!("query component {c} not registered"))
                }
                _ => {}
            }
        }
        if self.outputs().iter().any(|&o| o >= n) {
            return Err("an output is out of range".into());
        }
        if self.inputs.iter().any(|i| i.role as usize >= self.roles.len()) {
            return Err("an input's role is out of range".into());
        }
        Ok(())
    }
}

/// The values of a network's leaves: which bases hold, which inputs are
/// played, and the answers of its query components.
#[derive(Clone, Copy, Debug)]
pub struct Leaves<'a> {
    pub bases: &'a [bool],
    pub inputs: &'a [bool],
    pub answers: &'a [bool],
}

/// A propnet's evaluation order, computed once: components in dependency
/// order, cycles marked, for evaluating a network from scratch again and
/// again (the goal network at terminal states).
#[derive(Clone, Debug)]
pub struct Evaluator {
    order: Vec<u32>,
    /// (start, length, cyclic) per group of `order`.
    groups: Vec<(u32, u32, bool)>,
}

impl Evaluator {
    pub fn new(net: &Propnet) -> Evaluator {
        let mut order = Vec::with_capacity(net.len());
        let mut groups = Vec::new();
        for comp in net.scc_groups().iter() {
            let cyclic = net.is_cycle(comp);
            groups.push((order.len() as u32, comp.len() as u32, cyclic));
            order.extend_from_slice(comp);
        }
        Evaluator { order, groups }
    }

    /// The groups in evaluation order: components, and whether they form
    /// a cycle.
    pub fn groups(&self) -> impl Iterator<Item = (&[u32], bool)> + '_ {
        self.groups.iter().map(|&(s, l, c)| (&self.order[s as usize..(s + l) as usize], c))
    }

    /// Fills `val` with every component's value (see [`Propnet::eval`]).
    pub fn eval(&self, net: &Propnet, leaves: &Leaves, val: &mut Vec<bool>) {
        val.clear();
        val.resize(net.len(), false);
        for &(start, len, cyclic) in &self.groups {
            let group = &self.order[start as usize..(start + len) as usize];
            if !cyclic {
                let c = group[0];
                val[c as usize] = net.value_from_inputs(c, val, leaves);
                continue;
            }
            for &c in group {
                val[c as usize] = false;
            }
            // AND/OR only in a cycle: monotone, so this rises to the least
            // fixed point.
            loop {
                let mut changed = false;
                for &c in group {
                    let v = net.value_from_inputs(c, val, leaves);
                    if v != val[c as usize] {
                        val[c as usize] = v;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
        }
    }
}

/// Base propositions whose value can only go one way, read off the
/// next-state logic: `next(p) = OR(p, ...)` (once true, stays true),
/// `next(p) = AND(p, ...)` (once false, stays false), `next(p) = p`
/// (never changes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Latches {
    /// Once true, stays true.
    pub positive: Vec<usize>,
    /// Once false, stays false.
    pub negative: Vec<usize>,
    /// Never changes.
    pub constant: Vec<usize>,
}

impl Propnet {
    pub fn latches(&self) -> Latches {
        let mut l = Latches::default();
        for (i, b) in self.bases.iter().enumerate() {
            if b.next == b.comp {
                l.constant.push(i);
                continue;
            }
            let reads_self = self.inputs_of(b.next).contains(&b.comp);
            match self.kind(b.next) {
                Kind::Or if reads_self => l.positive.push(i),
                Kind::And if reads_self => l.negative.push(i),
                _ => {}
            }
        }
        l
    }
}

impl Propnet {
    /// Renumbers inputs by role, then name, and bases by name: the order
    /// every back end (interpreter, JIT, AOT library) uses, so that a state
    /// bitset or a move index means the same thing in all of them.
    pub fn canonical_order(&mut self) {
        let mut inputs: Vec<usize> = (0..self.inputs.len()).collect();
        inputs.sort_by(|&a, &b| {
            (self.inputs[a].role, &self.inputs[a].name).cmp(&(self.inputs[b].role, &self.inputs[b].name))
        });
        let mut bases: Vec<usize> = (0..self.bases.len()).collect();
        bases.sort_by(|&a, &b| self.bases[a].name.cmp(&self.bases[b].name));
        let mut new_input = vec![0u32; inputs.len()];
        for (n, &o) in inputs.iter().enumerate() {
            new_input[o] = n as u32;
        }
        let mut new_base = vec![0u32; bases.len()];
        for (n, &o) in bases.iter().enumerate() {
            new_base[o] = n as u32;
        }
        for k in &mut self.kinds {
            match k {
                Kind::Base(i) => *i = new_base[*i as usize],
                Kind::Input(i) => *i = new_input[*i as usize],
                _ => {}
            }
        }
        self.inputs = inputs.iter().map(|&o| self.inputs[o].clone()).collect();
        self.bases = bases.iter().map(|&o| self.bases[o].clone()).collect();
    }
}
