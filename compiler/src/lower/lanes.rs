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

use crate::propnet::{Kind, Propnet};
use cranelift_codegen::ir::types::{I64, I64X2};
use cranelift_codegen::ir::{AbiParam, Function, InstBuilder, MemFlagsData, UserFuncName, Value};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{DataDescription, FuncId, Linkage, Module, ModuleError};

/// Gate inputs read per generated function, to keep functions small and
/// compile time linear in the network.
const CHUNK_EDGES: usize = 4096;

/// Marks an encoded plan (and its version).
const PLAN_MAGIC: u32 = 0x4c41_4e01;

/// Playouts per word, and the word's bytes and Cranelift type.
pub const LANES: usize = 128;
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

/// Where the runtime finds each output in the lane words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LanePlan {
    /// Words (`u64`) of lane memory.
    pub words: u32,
    pub terminal: u32,
    /// Words that hold all ones (the TRUE constant); every other word
    /// starts at zero.
    pub ones: Vec<u32>,
    /// Per base: its word, and the word of its next-state output.
    pub base: Vec<u32>,
    pub next: Vec<u32>,
    /// Per input: its word, and the word of its legal output.
    pub input: Vec<u32>,
    pub legal: Vec<u32>,
    /// (role, value, word) per goal output.
    pub goals: Vec<(u32, u32, u32)>,
    /// Whether `propel_lanes_goals` must run before goals are read.
    pub goal_net: bool,
}

impl LanePlan {
    pub fn encode(&self) -> Vec<u32> {
        let mut v = vec![PLAN_MAGIC, self.words, self.terminal, self.goal_net as u32];
        let list = |v: &mut Vec<u32>, xs: &[u32]| {
            v.push(xs.len() as u32);
            v.extend_from_slice(xs);
        };
        list(&mut v, &self.ones);
        list(&mut v, &self.base);
        list(&mut v, &self.next);
        list(&mut v, &self.input);
        list(&mut v, &self.legal);
        v.push(self.goals.len() as u32);
        for &(r, val, w) in &self.goals {
            v.extend_from_slice(&[r, val, w]);
        }
        v
    }

    /// Decodes and checks a plan: every word index in range, as many next
    /// words as bases and legal words as inputs. `None` if it is not one.
    pub fn decode(v: &[u32]) -> Option<LanePlan> {
        let mut it = v.iter().copied();
        if it.next()? != PLAN_MAGIC {
            return None;
        }
        let words = it.next()?;
        let terminal = it.next()?;
        let goal_net = it.next()? != 0;
        let list = |it: &mut dyn Iterator<Item = u32>| -> Option<Vec<u32>> {
            let n = it.next()? as usize;
            let xs: Vec<u32> = it.take(n).collect();
            (xs.len() == n && xs.iter().all(|&w| w < words)).then_some(xs)
        };
        let ones = list(&mut it)?;
        let base = list(&mut it)?;
        let next = list(&mut it)?;
        let input = list(&mut it)?;
        let legal = list(&mut it)?;
        let ng = it.next()? as usize;
        let mut goals = Vec::with_capacity(ng);
        for _ in 0..ng {
            let (r, val, w) = (it.next()?, it.next()?, it.next()?);
            if w >= words || val > 100 {
                return None;
            }
            goals.push((r, val, w));
        }
        let ok = terminal < words && base.len() == next.len() && input.len() == legal.len() && it.next().is_none();
        ok.then_some(LanePlan { words, terminal, ones, base, next, input, legal, goals, goal_net })
    }
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

/// The functions generated for lanes, and what they took.
pub(crate) struct LaneFns {
    pub(crate) state: FuncId,
    pub(crate) next: FuncId,
    pub(crate) goals: FuncId,
    pub(crate) plan: FuncId,
    pub(crate) edges: usize,
}

/// Emits lane code for `net` (and its goal network) into `module`, or
/// empty functions and no plan when `net` is `None` or cannot be run in
/// lanes.
pub(crate) fn emit<M: Module>(
    module: &mut M,
    net: Option<&Propnet>,
    goal_net: Option<&Propnet>,
    names: [&str; 4],
) -> Result<LaneFns, ModuleError> {
    let prog = net.and_then(|n| program(n, goal_net).map(|p| (n, p)));
    let mut e = LaneEmitter { module, ctx: None, fctx: FunctionBuilderContext::new(), edges: 0, chunks: 0 };
    let (state, next, goals, plan) = match &prog {
        Some((net, p)) => {
            let main = |c: u32| c;
            let state = e.phase(names[0], net, &main, &p.state, &p.copies)?;
            let next = e.phase(names[1], net, &main, &p.next, &[])?;
            let goals = match goal_net {
                Some(g) => e.phase(names[2], g, &|c| goal_word(net, g, c), &p.goals, &[])?,
                None => e.phase(names[2], net, &main, &[], &[])?,
            };
            (state, next, goals, p.plan.encode())
        }
        None => {
            let empty = Propnet::default();
            let f = |e: &mut LaneEmitter<M>, name: &str| e.phase(name, &empty, &|c| c, &[], &[]);
            (f(&mut e, names[0])?, f(&mut e, names[1])?, f(&mut e, names[2])?, Vec::new())
        }
    };
    // The plan, behind its length.
    let mut blob: Vec<u8> = (plan.len() as u32).to_le_bytes().to_vec();
    blob.extend(plan.iter().flat_map(|w| w.to_le_bytes()));
    let data = e.module.declare_data("propel_lanes_plan_data", Linkage::Local, false, false)?;
    let mut d = DataDescription::new();
    d.define(blob.into_boxed_slice());
    d.set_align(4);
    e.module.define_data(data, &d)?;
    let mut sig = e.module.make_signature();
    sig.returns.push(AbiParam::new(I64));
    let plan_fn = e.module.declare_function(names[3], Linkage::Export, &sig)?;
    let mut func = Function::with_name_signature(UserFuncName::user(2, plan_fn.as_u32()), sig);
    let gv = e.module.declare_data_in_func(data, &mut func);
    e.build(plan_fn, func, |b, _| {
        let a = b.ins().symbol_value(I64, gv);
        b.ins().return_(&[a]);
    })?;
    Ok(LaneFns { state, next, goals, plan: plan_fn, edges: e.edges })
}

struct LaneEmitter<'a, M: Module> {
    module: &'a mut M,
    ctx: Option<Context>,
    fctx: FunctionBuilderContext,
    edges: usize,
    chunks: usize,
}

impl<M: Module> LaneEmitter<'_, M> {
    fn words_sig(&self) -> cranelift_codegen::ir::Signature {
        let mut s = self.module.make_signature();
        s.params.push(AbiParam::new(I64));
        s
    }

    fn build(
        &mut self,
        id: FuncId,
        mut func: Function,
        f: impl FnOnce(&mut FunctionBuilder, Value),
    ) -> Result<(), ModuleError> {
        let fc = self.module.isa().frontend_config();
        {
            let mut b = FunctionBuilder::new(&mut func, &mut self.fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let p = b.block_params(entry).first().copied();
            // Functions without parameters get a dummy value they ignore.
            let p = match p {
                Some(p) => p,
                None => b.ins().iconst(I64, 0),
            };
            f(&mut b, p);
            b.seal_all_blocks();
            b.finalize(fc);
        }
        let mut ctx = self.ctx.take().unwrap_or_else(|| self.module.make_context());
        ctx.func = func;
        let r = self.module.define_function(id, &mut ctx);
        ctx.clear();
        self.ctx = Some(ctx);
        r
    }

    /// One exported phase function: calls to chunk functions, each
    /// evaluating a run of groups of about [`CHUNK_EDGES`] inputs, then
    /// copying words (`copies`: from, to).
    fn phase(
        &mut self,
        name: &str,
        net: &Propnet,
        word: &dyn Fn(u32) -> u32,
        groups: &[(Vec<u32>, bool)],
        copies: &[(u32, u32)],
    ) -> Result<FuncId, ModuleError> {
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
            let id = self.module.declare_function(&format!("propel_lanes_c{}", self.chunks), Linkage::Local, &sig)?;
            self.chunks += 1;
            let func = Function::with_name_signature(UserFuncName::user(2, id.as_u32()), sig.clone());
            self.build(id, func, |b, words| {
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
            chunks.push(id);
            start = end;
        }
        for run in copies.chunks(CHUNK_EDGES) {
            let id = self.module.declare_function(&format!("propel_lanes_c{}", self.chunks), Linkage::Local, &sig)?;
            self.chunks += 1;
            let func = Function::with_name_signature(UserFuncName::user(2, id.as_u32()), sig.clone());
            self.build(id, func, |b, words| {
                let mem = MemFlagsData::trusted();
                for &(from, to) in run {
                    let v = b.ins().load(WORD, mem, words, at(from));
                    b.ins().store(mem, v, words, at(to));
                }
                b.ins().return_(&[]);
            })?;
            chunks.push(id);
        }
        let id = self.module.declare_function(name, Linkage::Export, &sig)?;
        let mut func = Function::with_name_signature(UserFuncName::user(2, id.as_u32()), sig.clone());
        let refs: Vec<_> = chunks.iter().map(|&c| self.module.declare_func_in_func(c, &mut func)).collect();
        self.build(id, func, |b, words| {
            for r in refs {
                b.ins().call(r, &[words]);
            }
            b.ins().return_(&[]);
        })?;
        Ok(id)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_round_trips_and_rejects_bad_words() {
        let p = LanePlan {
            words: 10,
            terminal: 3,
            ones: vec![1],
            base: vec![4, 5],
            next: vec![6, 4],
            input: vec![7],
            legal: vec![1],
            goals: vec![(0, 100, 8)],
            goal_net: true,
        };
        let v = p.encode();
        assert_eq!(LanePlan::decode(&v), Some(p.clone()));
        let mut bad = v.clone();
        bad[2] = 10;
        assert_eq!(LanePlan::decode(&bad), None);
        assert_eq!(LanePlan::decode(&v[..v.len() - 1]), None);
        assert_eq!(LanePlan::decode(&[]), None);
    }
}
