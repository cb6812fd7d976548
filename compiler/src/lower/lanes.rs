//! Bit-parallel playout code: 128 playouts at once, one bit per playout
//! ("lane") in each 16-byte word (two `u64`s, lanes 0-63 in the first),
//! one word per component. The network is evaluated from scratch each step
//! as straight-line AND/OR/NOT code over those words, in SSE registers,
//! with no counters, no work stack and no branches, so each instruction
//! advances 128 games.
//!
//! A step has two phases. The *state* phase computes every gate that the
//! terminal, legal and (without a goal network) goal outputs read; those
//! depend only on the state. The runtime then picks one legal input per
//! role and lane, writes the input words, and runs the *next* phase: the
//! gates the next-state outputs read that the state phase did not compute.
//! The goal network, when there is one, is a third function run only when
//! some lane reached a terminal state.
//!
//! The runtime drives the steps (choosing moves, refilling lanes whose game
//! ended, reading goals) from a [`LanePlan`]: where each base, input, legal,
//! goal and terminal word lies. Exports, each `void f(uint64_t *words)`
//! (16-byte aligned, two `u64`s per word):
//! `propel_lanes_state`, `propel_lanes_next`, `propel_lanes_goals`; and
//! `const uint32_t *propel_lanes_plan(void)` returns the plan (first word:
//! the number of words that follow; none when the network cannot be run
//! this way).

use super::func::{Emit, Scratch};
use crate::propnet::{Kind, Propnet};
use cranelift_codegen::ir::types::{I64, I64X2};
use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{DataDescription, FuncId, Linkage, Module, ModuleError};
pub use propel_abi::lanes::{LanePlan, LANES};

/// Gate inputs read per generated function, to keep functions small and
/// compile time linear in the network.
const CHUNK_EDGES: usize = 4096;

/// A word's bytes and Cranelift type.
const WORD_BYTES: i32 = 16;
const WORD: cranelift_codegen::ir::Type = I64X2;

/// The byte offset of word `w`.
fn at(w: u32) -> i32 {
    WORD_BYTES * w as i32
}

/// A word with every lane `on` (all ones) or off.
fn splat(b: &mut FunctionBuilder, on: bool) -> Value {
    let x = b.ins().iconst(I64, if on { -1 } else { 0 });
    b.ins().splat(WORD, x)
}

/// The gates of one phase, in evaluation order: (components, cyclic).
type Groups = Vec<(Vec<u32>, bool)>;

/// What to generate for a network: the plan and each phase's gates, with
/// the word of every component.
struct Program {
    plan: LanePlan,
    /// (from, to): words the state phase copies at its end (each input's
    /// legal output into a dense run, so the runtime scans it in order).
    copies: Vec<(u32, u32)>,
    state: Groups,
    next: Groups,
    goals: Groups,
}

/// Components reachable backwards from `roots`.
fn closure(net: &Propnet, roots: impl IntoIterator<Item = u32>) -> Vec<bool> {
    let mut seen = vec![false; net.len()];
    let mut stack: Vec<u32> = roots.into_iter().collect();
    while let Some(c) = stack.pop() {
        if std::mem::replace(&mut seen[c as usize], true) {
            continue;
        }
        stack.extend(net.inputs_of(c).iter().filter(|&&i| !seen[i as usize]));
    }
    seen
}

/// The gate groups of `sccs` (the network's, in evaluation order) that
/// `keep` takes.
fn groups(net: &Propnet, sccs: &[Vec<u32>], keep: impl Fn(u32) -> bool) -> Groups {
    sccs.iter().filter(|g| net.kind(g[0]).is_gate() && keep(g[0])).map(|g| (g.clone(), net.is_cycle(g))).collect()
}

/// The largest cyclic group given lane code (gates).
const MAX_CYCLE: usize = 1000;

/// Whether lane code can be generated for `net`: `Err` says why not.
pub fn supported(net: &Propnet, goal_net: Option<&Propnet>) -> Result<(), String> {
    match program(net, goal_net) {
        Some(_) => Ok(()),
        None => Err(format!(
            "a cycle over {MAX_CYCLE} gates, or a state output that reads an input: one game at a time only"
        )),
    }
}

/// Plans lane code for `net` (and its goal network). `None` when a state
/// output (terminal, legal, goal) reads an input, which a well-formed game
/// never does but a lane step could not evaluate, or when a cycle is larger
/// than [`MAX_CYCLE`].
fn program(net: &Propnet, goal_net: Option<&Propnet>) -> Option<Program> {
    let n = net.len() as u32;
    let mut state_roots: Vec<u32> = net.inputs.iter().map(|i| i.legal).collect();
    state_roots.push(net.terminal);
    if goal_net.is_none() {
        state_roots.extend(net.goals.iter().map(|g| g.comp));
    }
    let in_state = closure(net, state_roots);
    if (0..n).any(|c| in_state[c as usize] && matches!(net.kind(c), Kind::Input(_))) {
        return None;
    }
    let in_next = closure(net, net.bases.iter().map(|b| b.next));
    let sccs = net.sccs();
    let state = groups(net, &sccs, |c| in_state[c as usize]);
    let next = groups(net, &sccs, |c| in_next[c as usize] && !in_state[c as usize]);
    // A large cycle is one loop body iterated up to once per gate: slow to
    // compile (ad_game_2x2's 10,024-gate cycle did not finish in minutes)
    // and to run; the differential engines handle it instead.
    let largest = state.iter().chain(&next).filter(|g| g.1).map(|g| g.0.len()).max().unwrap_or(0);
    if largest > MAX_CYCLE {
        tracing::debug!(largest, "no lane code: a cycle is too large");
        return None;
    }
    let mut ones: Vec<u32> = (0..n).filter(|&c| net.kind(c) == Kind::True).collect();
    let mut plan = LanePlan {
        words: n,
        terminal: net.terminal,
        base: net.bases.iter().map(|b| b.comp).collect(),
        next: net.bases.iter().map(|b| b.next).collect(),
        input: net.inputs.iter().map(|i| i.comp).collect(),
        legal: net.inputs.iter().map(|i| i.legal).collect(),
        goals: net.goals.iter().map(|g| (g.role, g.value as u32, g.comp)).collect(),
        goal_net: goal_net.is_some(),
        ones: Vec::new(),
    };
    let mut goals = Vec::new();
    if let Some(g) = goal_net {
        // Goal-network components follow the playout network's; its bases
        // are the playout network's bases, its inputs one zero word.
        let m = g.len() as u32;
        plan.words = n + m + 1;
        let word = |c: u32| goal_word(net, g, c);
        ones.extend((0..m).filter(|&c| g.kind(c) == Kind::True).map(word));
        plan.goals = g.goals.iter().map(|x| (x.role, x.value as u32, word(x.comp))).collect();
        let needed = closure(g, g.goals.iter().map(|x| x.comp));
        goals = groups(g, &g.sccs(), |c| needed[c as usize]);
    }
    plan.ones = ones;
    let dense = plan.words;
    plan.words += net.inputs.len() as u32;
    let copies: Vec<(u32, u32)> = plan.legal.iter().enumerate().map(|(j, &w)| (w, dense + j as u32)).collect();
    plan.legal = (0..net.inputs.len() as u32).map(|j| dense + j).collect();
    if tracing::enabled!(tracing::Level::DEBUG) {
        let stats = |gs: &Groups| {
            let cyc: Vec<usize> = gs.iter().filter(|g| g.1).map(|g| g.0.len()).collect();
            let edges: usize = gs.iter().flat_map(|g| &g.0).map(|&c| net.inputs_of(c).len()).sum();
            (gs.len(), edges, cyc.len(), cyc.iter().sum::<usize>(), cyc.iter().max().copied().unwrap_or(0))
        };
        tracing::debug!(state = ?stats(&state), next = ?stats(&next), "lane program (groups, edges, cycles, cyclic gates, largest)");
    }
    Some(Program { plan, copies, state, next, goals })
}

/// The word of goal-network component `c`.
fn goal_word(net: &Propnet, g: &Propnet, c: u32) -> u32 {
    let n = net.len() as u32;
    match g.kind(c) {
        Kind::Base(i) => net.bases[i as usize].comp,
        Kind::Input(_) => n + g.len() as u32,
        _ => n + c,
    }
}

/// What lane code was generated: its plan (none when the network cannot
/// run in lanes) and the gate inputs it reads.
pub(crate) struct LaneCode {
    pub(crate) plan: Option<LanePlan>,
    pub(crate) edges: usize,
}

/// The four lane exports, declared by the caller.
pub(crate) struct LaneIds {
    pub(crate) state: FuncId,
    pub(crate) next: FuncId,
    pub(crate) goals: FuncId,
    pub(crate) plan: FuncId,
}

/// Emits lane code for `net` (and its goal network) into `module` as the
/// functions `ids`, or empty functions and no plan when `net` is `None` or
/// cannot be run in lanes.
pub(crate) fn emit<M: Module>(
    module: &mut M,
    net: Option<&Propnet>,
    goal_net: Option<&Propnet>,
    ids: LaneIds,
) -> Result<LaneCode, ModuleError> {
    let prog = net.and_then(|n| program(n, goal_net).map(|p| (n, p)));
    let mut e = LaneEmitter { module, scratch: Scratch::default(), edges: 0, chunks: 0 };
    match &prog {
        Some((net, p)) => {
            let main = |c: u32| c;
            e.phase(ids.state, net, &main, &p.state, &p.copies)?;
            e.phase(ids.next, net, &main, &p.next, &[])?;
            match goal_net {
                Some(g) => e.phase(ids.goals, g, &|c| goal_word(net, g, c), &p.goals, &[])?,
                None => e.phase(ids.goals, net, &main, &[], &[])?,
            };
        }
        None => {
            let empty = Propnet::default();
            for id in [ids.state, ids.next, ids.goals] {
                e.phase(id, &empty, &|c| c, &[], &[])?;
            }
        }
    }
    let plan = prog.map(|(_, p)| p.plan);
    let words = plan.as_ref().map(LanePlan::encode).unwrap_or_default();
    // The plan, behind its length.
    let mut blob: Vec<u8> = (words.len() as u32).to_le_bytes().to_vec();
    blob.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    let data = e.module.declare_data("propel_lanes_plan_data", Linkage::Local, false, false)?;
    let mut d = DataDescription::new();
    d.define(blob.into_boxed_slice());
    d.set_align(4);
    e.module.define_data(data, &d)?;
    e.define(
        ids.plan,
        |e, func| e.module.declare_data_in_func(data, func),
        |_, b, _, gv| {
            let a = b.ins().symbol_value(I64, gv);
            b.ins().return_(&[a]);
        },
    )?;
    Ok(LaneCode { plan, edges: e.edges })
}

struct LaneEmitter<'a, M: Module> {
    module: &'a mut M,
    scratch: Scratch,
    edges: usize,
    chunks: usize,
}

impl<M: Module> Emit for LaneEmitter<'_, M> {
    type M = M;
    const NAMESPACE: u32 = 2;
    fn module(&mut self) -> &mut M {
        self.module
    }
    fn scratch(&mut self) -> &mut Scratch {
        &mut self.scratch
    }
}

impl<M: Module> LaneEmitter<'_, M> {
    fn words_sig(&self) -> cranelift_codegen::ir::Signature {
        let mut s = self.module.make_signature();
        s.params.push(AbiParam::new(I64));
        s
    }

    /// One exported phase function `id`: calls to chunk functions, each
    /// evaluating a run of groups of about [`CHUNK_EDGES`] inputs, then
    /// copying words (`copies`: from, to).
    fn phase(
        &mut self,
        id: FuncId,
        net: &Propnet,
        word: &dyn Fn(u32) -> u32,
        groups: &[(Vec<u32>, bool)],
        copies: &[(u32, u32)],
    ) -> Result<(), ModuleError> {
        let sig = self.words_sig();
        let mut chunks: Vec<FuncId> = Vec::new();
        let mut start = 0;
        while start < groups.len() {
            let mut end = start;
            let mut edges = 0;
            while end < groups.len() && (end == start || edges < CHUNK_EDGES) {
                edges += groups[end].0.iter().map(|&c| net.inputs_of(c).len()).sum::<usize>();
                end += 1;
            }
            let chunk =
                self.module.declare_function(&format!("propel_lanes_c{}", self.chunks), Linkage::Local, &sig)?;
            self.chunks += 1;
            self.define_simple(chunk, |_, b, p| {
                let words = p[0];
                for (g, cyclic) in &groups[start..end] {
                    if *cyclic {
                        emit_cycle(b, net, word, words, g);
                    } else {
                        let v = gate(b, net, word, words, g[0]);
                        b.ins().store(MemFlagsData::trusted(), v, words, at(word(g[0])));
                    }
                }
                b.ins().return_(&[]);
            })?;
            self.edges += edges;
            chunks.push(chunk);
            start = end;
        }
        for run in copies.chunks(CHUNK_EDGES) {
            let chunk =
                self.module.declare_function(&format!("propel_lanes_c{}", self.chunks), Linkage::Local, &sig)?;
            self.chunks += 1;
            self.define_simple(chunk, |_, b, p| {
                let mem = MemFlagsData::trusted();
                for &(from, to) in run {
                    let v = b.ins().load(WORD, mem, p[0], at(from));
                    b.ins().store(mem, v, p[0], at(to));
                }
                b.ins().return_(&[]);
            })?;
            chunks.push(chunk);
        }
        self.define(
            id,
            |e, func| chunks.iter().map(|&c| e.module.declare_func_in_func(c, func)).collect::<Vec<_>>(),
            |_, b, p, refs| {
                for r in refs {
                    b.ins().call(r, &[p[0]]);
                }
                b.ins().return_(&[]);
            },
        )
    }
}

/// A gate's word from its inputs' words.
fn gate(b: &mut FunctionBuilder, net: &Propnet, word: &dyn Fn(u32) -> u32, words: Value, c: u32) -> Value {
    let mem = MemFlagsData::trusted();
    let kind = net.kind(c);
    let conj = matches!(kind, Kind::And | Kind::Nand);
    let mut acc: Option<Value> = None;
    for &i in net.inputs_of(c) {
        let v = b.ins().load(WORD, mem, words, at(word(i)));
        acc = Some(match acc {
            None => v,
            Some(a) if conj => b.ins().band(a, v),
            Some(a) => b.ins().bor(a, v),
        });
    }
    // With no inputs, AND holds and OR does not.
    let acc = match acc {
        Some(a) => a,
        None => splat(b, conj),
    };
    match kind {
        Kind::Not | Kind::Nand | Kind::Nor => b.ins().bnot(acc),
        _ => acc,
    }
}

/// A cycle of AND/OR gates, iterated from all-false up to its least fixed
/// point (the gates are monotone, so every lane rises and then stops).
fn emit_cycle(b: &mut FunctionBuilder, net: &Propnet, word: &dyn Fn(u32) -> u32, words: Value, g: &[u32]) {
    let mem = MemFlagsData::trusted();
    let zero = splat(b, false);
    for &c in g {
        b.ins().store(mem, zero, words, at(word(c)));
    }
    let head = b.create_block();
    let done = b.create_block();
    b.ins().jump(head, &[]);
    b.switch_to_block(head);
    let mut changed = splat(b, false);
    for &c in g {
        let v = gate(b, net, word, words, c);
        let old = b.ins().load(WORD, mem, words, at(word(c)));
        let d = b.ins().bxor(v, old);
        changed = b.ins().bor(changed, d);
        b.ins().store(mem, v, words, at(word(c)));
    }
    let any = b.ins().vany_true(changed);
    b.ins().brif(any, head, &[], done, &[]);
    b.switch_to_block(done);
}
