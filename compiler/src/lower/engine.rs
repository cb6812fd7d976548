//! The propagation engine of one network, in Cranelift IR: the part of a
//! machine that keeps counters, legal and next bits up to date when a
//! state or a move changes. Generic over the module, so the JIT and the
//! AOT library run exactly the same code. The functions that ask the
//! engine something or drive it (init, set state, play, legal, goals, a
//! playout step) are in [`super::queries`].
//!
//! The propagation code has the topology baked in: each component that
//! can flip owns a block of straight-line updates of its readers' counters
//! at fixed offsets (load, add, store, sign-flip test, branch-free push).
//! Components are grouped into chunk functions of consecutive ids, cut
//! where the updates would pass [`CHUNK_UPDATES`]; a chunk function pops
//! the work stack and jumps, through one `br_table`, to the block of the
//! component popped, for as long as the top of the stack lies in its
//! chunk. Chunking keeps functions small, so compile time grows linearly
//! with the network.

mod code;

use super::func::{Emit, Scratch};
use super::layout::{counter0, counts_down, Layout};
use super::moves::{self, MoveOrs};
use crate::propnet::{Kind, Propnet};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64, I8};
use cranelift_codegen::ir::{
    AbiParam, Block, FuncRef, Function, InstBuilder, MemFlagsData, Signature, UserFuncName, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Switch, Variable};
use cranelift_module::{DataDescription, DataId, FuncId, Linkage, Module, ModuleError};

/// Chunks are made of groups of `1 << GROUP_SHIFT` consecutive ids.
const GROUP_SHIFT: u32 = 6;
/// A chunk takes groups while it has at most this many counter updates...
const CHUNK_UPDATES: usize = 8192;
/// ... and at most this many ids. Small functions keep code generation
/// time linear (register allocation slows down on very large ones); large
/// ones make fewer calls between chunks while propagating.
const CHUNK_IDS: u32 = 1024;
pub(super) const NONE: u32 = u32::MAX;
/// A component with more readers than this has its fan-out written into
/// functions of this many updates each, called from its chunk: one
/// straight-line block of millions of updates (amazonsTorus) made a 10.8 MB
/// stack frame (the single-pass allocator's spill slots grow with the
/// block) and overflowed the stack. `CodegenOptions::fanout_piece`
/// overrides it.
pub(crate) const FANOUT_PIECE: usize = 16_384;
/// Engines up to this many counter updates compile optimised
/// (`CodegenOptions::engine_opt_updates`).
pub(crate) const ENGINE_OPT_UPDATES: usize = 65_536;
/// Engines over this many counter updates propagate from tables
/// (`CodegenOptions::engine_table_updates`). At 1,024, once the table loop
/// lost its spills, tables beat code on breakthrough (2.3k
/// and 2.7k updates, 56k against 36k playouts/s) and connect four (1.5k,
/// 250k against 199k), code still on tic-tac-toe (287) and pentago (1.6k,
/// 33k against 28k).
pub(crate) const ENGINE_TABLE_UPDATES: usize = 1_024;

/// What a component's output sets: the legal bit of an input, the
/// next-state bit of a base.
#[derive(Clone, Copy, Debug)]
pub(super) enum Trig {
    Legal(u32),
    Next(u32),
}

pub(crate) struct Emitter<'a, M: Module> {
    pub(crate) module: &'a mut M,
    pub(super) net: &'a Propnet,
    /// The goal network, when the goal logic was split off, and its code
    /// (`propel_goal_eval`, [`super::goals`]).
    pub(super) goal_net: Option<(&'a Propnet, FuncId)>,
    pub(super) layout: &'a Layout,
    pub(super) fanout: Vec<Vec<u32>>,
    pub(super) triggers: Vec<Vec<Trig>>,
    /// Cyclic component of each component, or NONE.
    pub(super) scc_of: Vec<u32>,
    cycles: Vec<Vec<u32>>,
    scratch: Scratch,
    pub(super) mem: MemFlagsData,
    /// Symbol prefix of this engine's functions.
    prefix: String,
    /// Instructions emitted so far (roughly: updates), for reports.
    pub(crate) edges: usize,
    /// Each chunk function's ids: (first, end).
    chunks: Vec<(u32, u32)>,
    /// Counter updates whose chunk bodies are built at a time (about 10 IR
    /// instructions each: one compile batch).
    body_batch: usize,
    /// Updates per fan-out piece ([`FANOUT_PIECE`]), and the pieces of each
    /// component with more readers than that.
    piece_len: usize,
    /// Worker threads for building chunk bodies.
    threads: usize,
    pieces: rustc_hash::FxHashMap<u32, Vec<FuncId>>,
    piece_sig: Signature,
    /// ORs over one role's inputs, set from a table by `set_joint`.
    pub(super) moves: MoveOrs,
    /// How chunk bodies are written ([`super::CodegenOptions`]).
    locals: bool,
    branch_free: bool,
    /// Whether the propagation code is compiled like the control code
    /// (optimised, backtracking allocator) rather than as bulk.
    optimised: bool,
    /// Propagation from tables ([`super::tables`]) instead of chunk
    /// code: the function, once declared.
    table: bool,
    table_fn: Option<FuncId>,
}

impl<M: Module> Emit for Emitter<'_, M> {
    type M = M;
    const NAMESPACE: u32 = 0;
    fn module(&mut self) -> &mut M {
        self.module
    }
    fn scratch(&mut self) -> &mut Scratch {
        &mut self.scratch
    }
}

/// One engine's functions (one network's machine), all taking the
/// engine's own instance pointer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EngineFns {
    pub(crate) init: FuncId,
    pub(crate) set_state: FuncId,
    pub(crate) set_joint: FuncId,
    pub(crate) terminal: FuncId,
    pub(crate) legal: FuncId,
    pub(crate) goals: FuncId,
    /// One random joint move, played; the next state left in scratch.
    pub(crate) step: FuncId,
}

impl<'a, M: Module> Emitter<'a, M> {
    pub(crate) fn new(
        module: &'a mut M,
        net: &'a Propnet,
        goal_net: Option<(&'a Propnet, FuncId)>,
        layout: &'a Layout,
        cycles: Vec<Vec<u32>>,
        prefix: &str,
        options: &super::CodegenOptions,
    ) -> Self {
        let n = net.len();
        let mut fanout = net.fanout();
        let moves = moves::take(net, &mut fanout, options.move_table_edges);
        if !moves.is_empty() {
            tracing::debug!(
                prefix,
                edges = moves.edges,
                ors = moves.per_role.iter().map(Vec::len).sum::<usize>(),
                "move ORs set from a table"
            );
        }
        let mut triggers = vec![Vec::new(); n];
        for (i, inp) in net.inputs.iter().enumerate() {
            triggers[inp.legal as usize].push(Trig::Legal(i as u32));
        }
        for (i, b) in net.bases.iter().enumerate() {
            triggers[b.next as usize].push(Trig::Next(i as u32));
        }
        let mut scc_of = vec![NONE; n];
        for (s, comp) in cycles.iter().enumerate() {
            for &c in comp {
                scc_of[c as usize] = s as u32;
            }
        }
        let mut piece_sig = module.make_signature();
        piece_sig.params.extend([AbiParam::new(I64), AbiParam::new(I32)]);
        let updates = fanout.iter().map(Vec::len).sum::<usize>();
        let optimised = updates <= options.engine_opt_updates;
        let table = updates > options.engine_table_updates;
        Emitter {
            module,
            net,
            goal_net,
            layout,
            fanout,
            triggers,
            scc_of,
            cycles,
            scratch: Scratch::default(),
            mem: MemFlagsData::trusted(),
            prefix: prefix.to_string(),
            edges: 0,
            chunks: Vec::new(),
            body_batch: (options.batch_insts / 10).max(1),
            piece_len: options.fanout_piece.max(1),
            threads: options.workers(),
            pieces: Default::default(),
            piece_sig,
            moves,
            // Block-local copies only help the single-pass allocator.
            locals: options.engine_locals && !optimised,
            branch_free: options.branch_free_triggers,
            optimised,
            table,
            table_fn: None,
        }
    }

    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether this engine propagates from tables
    /// ([`super::CodegenOptions::engine_table_updates`]).
    pub(crate) fn uses_tables(&self) -> bool {
        self.table
    }

    /// Defines the table propagation function, when this engine has one
    /// (after [`Emitter::emit_engine`]: the caller picks its code level).
    pub(crate) fn emit_tables(&mut self) -> Result<(), ModuleError> {
        match self.table_fn {
            Some(id) => self.emit_table_propagate(id),
            None => Ok(()),
        }
    }

    /// Whether this engine's propagation code is small enough to compile
    /// optimised, with the backtracking allocator
    /// ([`super::CodegenOptions::engine_opt_updates`]).
    pub(crate) fn optimised(&self) -> bool {
        self.optimised
    }

    pub(super) fn code(&self) -> Code<'_> {
        Code {
            net: self.net,
            layout: self.layout,
            fanout: &self.fanout,
            triggers: &self.triggers,
            scc_of: &self.scc_of,
            chunks: &self.chunks,
            mem: self.mem,
            pieces: &self.pieces,
            piece_sig: &self.piece_sig,
            locals: self.locals,
            branch_free: self.branch_free,
        }
    }

    fn sig(&self, params: &[cranelift_codegen::ir::Type], ret: Option<cranelift_codegen::ir::Type>) -> Signature {
        let mut s = self.module.make_signature();
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(ret.map(AbiParam::new));
        s
    }

    fn declare(&mut self, name: &str, linkage: Linkage, sig: &Signature) -> Result<FuncId, ModuleError> {
        self.module.declare_function(name, linkage, sig)
    }

    /// Emits every function of this engine.
    pub(crate) fn emit_engine(&mut self, image: Vec<u8>) -> Result<EngineFns, ModuleError> {
        let p = self.prefix.clone();
        // Declarations first, so that bodies can call each other.
        let inst_ret_i32 = self.sig(&[I64], Some(I32));
        let inst_only = self.sig(&[I64], None);
        for c in 0..self.fanout.len() {
            let n = self.fanout[c].len().div_ceil(self.piece_len);
            if n > 1 && !self.table {
                let sig = self.piece_sig.clone();
                let ids = (0..n)
                    .map(|j| self.declare(&format!("{p}_fan_{c}_{j}"), Linkage::Local, &sig))
                    .collect::<Result<Vec<_>, _>>()?;
                self.pieces.insert(c as u32, ids);
            }
        }
        let mut chunks = Vec::new();
        if self.table {
            self.table_fn = Some(self.declare(&format!("{p}_propagate"), Linkage::Local, &inst_ret_i32)?);
        } else {
            self.chunks = self.chunk_ranges();
            for k in 0..self.chunks.len() {
                chunks.push(self.declare(&format!("{p}_chunk_{k}"), Linkage::Local, &inst_ret_i32)?);
            }
        }
        let mut cycle_fns = Vec::new();
        for s in 0..self.cycles.len() {
            cycle_fns.push(self.declare(&format!("{p}_cycle_{s}"), Linkage::Local, &inst_only)?);
        }
        let drain = self.declare(&format!("{p}_drain"), Linkage::Local, &inst_ret_i32)?;
        let eval_goals = self.declare(&format!("{p}_eval_goals"), Linkage::Local, &inst_only)?;
        let init = self.declare(&format!("{p}_init"), Linkage::Local, &inst_only)?;
        let ptr_ret_i32 = self.sig(&[I64, I64], Some(I32));
        let set_state = self.declare(&format!("{p}_set_state"), Linkage::Local, &ptr_ret_i32)?;
        let set_joint = self.declare(&format!("{p}_set_joint"), Linkage::Local, &ptr_ret_i32)?;
        let terminal = self.declare(&format!("{p}_terminal"), Linkage::Local, &inst_ret_i32)?;
        let legal_sig = self.sig(&[I64, I32, I64, I32], Some(I32));
        let legal = self.declare(&format!("{p}_legal"), Linkage::Local, &legal_sig)?;
        let goals_sig = self.sig(&[I64, I32, I64], None);
        let goals = self.declare(&format!("{p}_goals"), Linkage::Local, &goals_sig)?;
        let step = self.declare(&format!("{p}_step"), Linkage::Local, &ptr_ret_i32)?;
        let image_id = self.data(&format!("{p}_image"), image)?;
        let base_comps: Vec<u32> = self.net.bases.iter().map(|b| b.comp).collect();
        let input_comps: Vec<u32> = self.net.inputs.iter().map(|i| i.comp).collect();
        let base_table = self.leaf_table(&format!("{p}_base_leaves"), &base_comps)?;
        let input_table = self.leaf_table(&format!("{p}_input_leaves"), &input_comps)?;
        let move_rows = if self.moves.is_empty() {
            None
        } else {
            let bytes = self.moves.rows.iter().flat_map(|r| r.to_le_bytes()).collect();
            Some(self.data(&format!("{p}_move_rows"), bytes)?)
        };

        // Bodies built a batch at a time (the module compiles them in
        // batches too), so that memory does not grow with the network.
        self.edges += self.fanout.iter().map(Vec::len).sum::<usize>();
        let mut k0 = 0;
        while k0 < chunks.len() {
            let (mut k1, mut updates) = (k0, 0);
            while k1 < chunks.len() && (k1 == k0 || updates < self.body_batch) {
                let (lo, hi) = self.chunks[k1];
                updates += (lo..hi).map(|c| self.fanout[c as usize].len()).sum::<usize>();
                k1 += 1;
            }
            let bodies = self.chunk_bodies(&chunks, k0..k1);
            for (&id, func) in chunks[k0..k1].iter().zip(bodies) {
                self.finish(id, func)?;
            }
            k0 = k1;
        }
        self.emit_pieces()?;
        for (s, &f) in cycle_fns.iter().enumerate() {
            self.emit_cycle(f, s)?;
        }
        match self.table_fn {
            Some(t) => self.emit_drain(drain, &[t], &cycle_fns)?,
            None => self.emit_drain(drain, &chunks, &cycle_fns)?,
        }
        self.emit_eval_goals(eval_goals)?;
        self.emit_init(init, image_id)?;
        self.emit_set_state(set_state, drain, base_table)?;
        self.emit_set_joint(set_joint, drain, input_table, move_rows)?;
        self.emit_terminal(terminal)?;
        self.emit_legal(legal)?;
        self.emit_goals(goals, eval_goals)?;
        self.emit_step(step, set_joint)?;
        Ok(EngineFns { init, set_state, set_joint, terminal, legal, goals, step })
    }

    pub(super) fn data(&mut self, name: &str, bytes: Vec<u8>) -> Result<DataId, ModuleError> {
        self.data_aligned(name, bytes, 8)
    }

    /// [`Emitter::data`] aligned to `align` bytes.
    pub(super) fn data_aligned(&mut self, name: &str, bytes: Vec<u8>, align: u64) -> Result<DataId, ModuleError> {
        let id = self.module.declare_data(name, Linkage::Local, false, false)?;
        let mut d = DataDescription::new();
        d.define(bytes.into_boxed_slice());
        d.set_align(align);
        self.module.define_data(id, &d)?;
        Ok(id)
    }

    /// The bodies of chunk functions `range` (of `ids`), built on the
    /// code generation's worker threads (each chunk is independent), in
    /// chunk order.
    fn chunk_bodies(&mut self, ids: &[FuncId], range: std::ops::Range<usize>) -> Vec<Function> {
        let sig = self.module.declarations().get_function_decl(ids[0]).signature.clone();
        let fc = self.module.isa().frontend_config();
        let code = self.code();
        super::parallel::on_workers(
            self.threads,
            range.len(),
            FunctionBuilderContext::new,
            |fctx, j| {
                let k = range.start + j;
                let mut func = Function::with_name_signature(UserFuncName::user(0, ids[k].as_u32()), sig.clone());
                code.chunk_body(k as u32, &mut func, fctx, fc);
                func
            },
            |_| {},
        )
    }

    /// The bodies of the fan-out pieces, one at a time (each goes to the
    /// module's compile batches at once, so memory stays bounded).
    fn emit_pieces(&mut self) -> Result<(), ModuleError> {
        let mut comps: Vec<u32> = self.pieces.keys().copied().collect();
        comps.sort_unstable();
        let fc = self.module.isa().frontend_config();
        let mut fctx = FunctionBuilderContext::new();
        for c in comps {
            let ids = self.pieces[&c].clone();
            for (j, id) in ids.into_iter().enumerate() {
                let lo = j * self.piece_len;
                let hi = (lo + self.piece_len).min(self.fanout[c as usize].len());
                let mut func =
                    Function::with_name_signature(UserFuncName::user(0, id.as_u32()), self.piece_sig.clone());
                self.code().piece_body(c, lo..hi, &mut func, &mut fctx, fc);
                self.finish(id, func)?;
            }
        }
        Ok(())
    }

    /// Updates a component's code holds inline: its fan-out, or one call
    /// per piece.
    fn inline_updates(&self, c: u32) -> usize {
        self.pieces.get(&c).map_or(self.fanout[c as usize].len(), Vec::len)
    }

    /// Cuts the ids into chunks: whole groups, up to [`CHUNK_UPDATES`]
    /// updates (more only for a group that has more alone) and
    /// [`CHUNK_IDS`] ids.
    fn chunk_ranges(&self) -> Vec<(u32, u32)> {
        let n = self.net.len() as u32;
        let group = 1u32 << GROUP_SHIFT;
        let mut out = Vec::new();
        let (mut lo, mut updates) = (0u32, 0usize);
        for g in 0..n.div_ceil(group) {
            let (a, b) = (g * group, ((g + 1) * group).min(n));
            let u: usize = (a..b).map(|c| self.inline_updates(c)).sum();
            if a > lo && (updates + u > CHUNK_UPDATES || b - lo > CHUNK_IDS) {
                out.push((lo, a));
                (lo, updates) = (a, 0);
            }
            updates += u;
        }
        if lo < n || out.is_empty() {
            out.push((lo, n));
        }
        out
    }

    fn chunk_has_code(&self, k: u32) -> bool {
        let (lo, hi) = self.chunks[k as usize];
        (lo..hi).any(|c| !self.fanout[c as usize].is_empty())
    }

    /// Recomputes cycle `s` to the least fixed point of its outside inputs
    /// and tells its outside readers what changed.
    fn emit_cycle(&mut self, id: FuncId, s: usize) -> Result<(), ModuleError> {
        let members = self.cycles[s].clone();
        let pos: rustc_hash::FxHashMap<u32, usize> = members.iter().enumerate().map(|(i, &m)| (m, i)).collect();
        let mem = self.mem;
        let layout = self.layout.clone();
        self.define_simple(id, |e, b, p| {
            let inst = p[0];
            // The iteration's values live in instance memory (one i32 per
            // member), not in SSA values: thousands of values live across
            // the loop made register allocation take minutes.
            let val_off = |k: usize| (layout.cycle_vals + 4 * k as u32) as i32;
            let net = e.net;
            // Members' count of true inputs from outside the cycle.
            let outside = |b: &mut FunctionBuilder, m: u32| {
                let mut acc = b.ins().iconst(I32, 0);
                for &i in net.inputs_of(m) {
                    if !pos.contains_key(&i) {
                        let c = b.ins().load(I32, mem, inst, (layout.counters + 4 * i) as i32);
                        let s = b.ins().ushr_imm_u(c, 31);
                        acc = b.ins().iadd(acc, s);
                    }
                }
                acc
            };
            // ... plus the members' true inputs from inside it.
            let inside = |b: &mut FunctionBuilder, m: u32, mut acc: Value| {
                for &i in net.inputs_of(m) {
                    if let Some(&j) = pos.get(&i) {
                        let v = b.ins().load(I32, mem, inst, val_off(j));
                        acc = b.ins().iadd(acc, v);
                    }
                }
                acc
            };
            let zero = b.ins().iconst(I32, 0);
            for k in 0..members.len() {
                b.ins().store(mem, zero, inst, val_off(k));
            }
            let iterate = b.create_block();
            let install = b.create_block();
            b.ins().jump(iterate, &[]);
            // Rise from false until nothing changes (AND/OR: monotone).
            b.switch_to_block(iterate);
            let mut changed = b.ins().iconst(I32, 0);
            for (k, &m) in members.iter().enumerate() {
                let out = outside(b, m);
                let cnt = inside(b, m, out);
                let n = net.inputs_of(m).len() as i64;
                let new = gate_value(b, net.kind(m), cnt, n);
                let old = b.ins().load(I32, mem, inst, val_off(k));
                let diff = b.ins().bxor(old, new);
                changed = b.ins().bor(changed, diff);
                b.ins().store(mem, new, inst, val_off(k));
            }
            b.ins().brif(changed, iterate, &[], install, &[]);
            b.switch_to_block(install);
            let stack = Stack::open(b, inst, &layout);
            for (k, &m) in members.iter().enumerate() {
                let out = outside(b, m);
                let on = inside(b, m, out);
                let c0 = b.ins().iconst(I32, counter0(net.kind(m), net.inputs_of(m).len()) as i64);
                let cnt = if counts_down(net.kind(m)) { b.ins().isub(c0, on) } else { b.ins().iadd(c0, on) };
                let off = (layout.counters + 4 * m) as i32;
                let old = b.ins().load(I32, mem, inst, off);
                b.ins().store(mem, cnt, inst, off);
                let new_sign = b.ins().load(I32, mem, inst, val_off(k));
                e.code().set_triggers(b, inst, m, new_sign);
                // Outside readers see the change as a ±1 (0 when unchanged).
                let old_sign = b.ins().ushr_imm_u(old, 31);
                let changed = b.ins().bxor(old_sign, new_sign);
                let twice = b.ins().ishl_imm_u(new_sign, 1);
                let pm = b.ins().iadd_imm_s(twice, -1);
                let d = b.ins().imul(pm, changed);
                let down = b.ins().bxor_imm_s(new_sign, 1);
                let fl = FlipValues { d, up: new_sign, down };
                let fans: Vec<u32> = e.fanout[m as usize].iter().copied().filter(|f| !pos.contains_key(f)).collect();
                e.edges += fans.len();
                for f in fans {
                    e.code().update(b, inst, f, fl, stack.top);
                }
            }
            stack.close(b, inst, &layout);
            b.ins().return_(&[]);
        })
    }

    /// Runs chunks until the stack is empty, then the cycles flagged as
    /// pending, until neither has work. Returns 0, or 1 on stack overflow.
    fn emit_drain(&mut self, id: FuncId, chunks: &[FuncId], cycles: &[FuncId]) -> Result<(), ModuleError> {
        let table = self.table;
        let has_code: Vec<bool> = (0..chunks.len() as u32).map(|k| table || self.chunk_has_code(k)).collect();
        let mem = self.mem;
        let layout = self.layout.clone();
        // With tables, one function propagates every entry.
        let ranges = if table { vec![(0, self.net.len() as u32)] } else { self.chunks.clone() };
        let declare = |e: &mut Self, func: &mut Function, ids: &[FuncId]| -> Vec<FuncRef> {
            ids.iter().map(|&c| e.module.declare_func_in_func(c, func)).collect()
        };
        self.define(
            id,
            |e, func| (declare(e, func, chunks), declare(e, func, cycles)),
            |_, b, p, (chunk_refs, cycle_refs)| {
                let head = b.create_block();
                let dispatch = b.create_block();
                let cyc = b.create_block();
                let overflow = b.create_block();
                let bad = b.create_block();
                let inst = p[0];
                b.ins().jump(head, &[]);
                b.switch_to_block(head);
                let sp = b.ins().load(I32, mem, inst, layout.sp as i32);
                b.ins().brif(sp, dispatch, &[], cyc, &[]);
                b.switch_to_block(dispatch);
                let top = b.ins().iadd_imm_s(sp, -1);
                let addr = stack_addr(b, inst, top, &layout);
                let e = b.ins().load(I32, mem, addr, 0);
                let g = b.ins().ushr_imm_u(e, 1 + GROUP_SHIFT as i64);
                let mut sw = Switch::new();
                let mut calls = Vec::new();
                for (i, &f) in chunk_refs.iter().enumerate() {
                    if !has_code[i] {
                        continue;
                    }
                    let blk = b.create_block();
                    let (lo, hi) = ranges[i];
                    for g in lo >> GROUP_SHIFT..hi.div_ceil(1 << GROUP_SHIFT) {
                        sw.set_entry(g as u128, blk);
                    }
                    calls.push((blk, f));
                }
                sw.emit(b, g, bad);
                for (blk, f) in calls {
                    b.switch_to_block(blk);
                    let call = b.ins().call(f, &[inst]);
                    let r = b.inst_results(call)[0];
                    let over = b.ins().icmp_imm_s(IntCC::Equal, r, -2);
                    b.ins().brif(over, overflow, &[], head, &[]);
                }
                // Stack empty: recompute the cycles flagged as pending.
                b.switch_to_block(cyc);
                for (s, &f) in cycle_refs.iter().enumerate() {
                    let run = b.create_block();
                    let next = b.create_block();
                    let off = (layout.pending + s as u32) as i32;
                    let flag = b.ins().load(I8, mem, inst, off);
                    b.ins().brif(flag, run, &[], next, &[]);
                    b.switch_to_block(run);
                    let z = b.ins().iconst(I8, 0);
                    b.ins().store(mem, z, inst, off);
                    b.ins().call(f, &[inst]);
                    b.ins().jump(head, &[]);
                    b.switch_to_block(next);
                }
                let ok = b.ins().iconst(I32, 0);
                b.ins().return_(&[ok]);
                b.switch_to_block(overflow);
                let one = b.ins().iconst(I32, 1);
                b.ins().return_(&[one]);
                b.switch_to_block(bad);
                let two = b.ins().iconst(I32, 2);
                b.ins().return_(&[two]);
            },
        )
    }
}

/// The read-only inputs of the propagation code, borrowed from the
/// [`Emitter`] so that chunk bodies can be built on several threads.
pub(super) struct Code<'e> {
    net: &'e Propnet,
    layout: &'e Layout,
    fanout: &'e [Vec<u32>],
    triggers: &'e [Vec<Trig>],
    scc_of: &'e [u32],
    chunks: &'e [(u32, u32)],
    mem: MemFlagsData,
    pieces: &'e rustc_hash::FxHashMap<u32, Vec<FuncId>>,
    piece_sig: &'e Signature,
    locals: bool,
    branch_free: bool,
}

impl Code<'_> {
    /// Rewrites the legal/next bits triggered by component `c` from its
    /// output (`sign`: i32 0 or 1).
    pub(super) fn set_triggers(&self, b: &mut FunctionBuilder, inst: Value, c: u32, sign: Value) {
        for t in &self.triggers[c as usize] {
            let (region, i) = match *t {
                Trig::Legal(i) => (self.layout.legal_bits, i),
                Trig::Next(i) => (self.layout.next_bits, i),
            };
            let off = (region + 8 * (i / 64)) as i32;
            let w = b.ins().load(I64, self.mem, inst, off);
            let cleared = b.ins().band_imm_s(w, !(1i64 << (i % 64)));
            let wide = b.ins().uextend(I64, sign);
            let bit = b.ins().ishl_imm_u(wide, (i % 64) as i64);
            let w = b.ins().bor(cleared, bit);
            b.ins().store(self.mem, w, inst, off);
        }
    }
}

/// The work stack inside a propagation function: its base address and a
/// variable holding the address of the first free entry, so that a push is
/// a store and an add. The instance keeps the top as an index between calls.
pub(super) struct Stack {
    pub(super) base: Value,
    pub(super) top: Variable,
}

impl Stack {
    pub(super) fn open(b: &mut FunctionBuilder, inst: Value, layout: &Layout) -> Stack {
        let base = b.ins().iadd_imm_s(inst, layout.stack as i64);
        let top = b.declare_var(I64);
        let stack = Stack { base, top };
        stack.reload(b, inst, layout);
        stack
    }

    /// The top from the index the instance keeps (after [`Stack::close`]
    /// and a call that pushed).
    fn reload(&self, b: &mut FunctionBuilder, inst: Value, layout: &Layout) {
        let sp = b.ins().load(I32, MemFlagsData::trusted(), inst, layout.sp as i32);
        let i = b.ins().uextend(I64, sp);
        let o = b.ins().ishl_imm_u(i, 2);
        let a = b.ins().iadd(self.base, o);
        b.def_var(self.top, a);
    }

    pub(super) fn close(&self, b: &mut FunctionBuilder, inst: Value, layout: &Layout) {
        let a = b.use_var(self.top);
        let o = b.ins().isub(a, self.base);
        let i = b.ins().ushr_imm_u(o, 2);
        let sp = b.ins().ireduce(I32, i);
        b.ins().store(MemFlagsData::trusted(), sp, inst, layout.sp as i32);
    }
}

/// The change being propagated from a component whose output flipped: the
/// delta its readers' counters take (`d`: +1 or -1, 0 for no change) and the
/// direction as a bit (`up`) and its complement (`down`).
#[derive(Clone, Copy)]
struct FlipValues {
    d: Value,
    up: Value,
    down: Value,
}

/// [`FlipValues`] kept in variables across a chunk's blocks.
struct Flip {
    d: Variable,
    up: Variable,
    down: Variable,
}

impl Flip {
    fn declare(b: &mut FunctionBuilder) -> Flip {
        Flip { d: b.declare_var(I32), up: b.declare_var(I32), down: b.declare_var(I32) }
    }

    /// From the popped entry's direction bit.
    fn define(&self, b: &mut FunctionBuilder, up: Value) {
        let twice = b.ins().ishl_imm_u(up, 1);
        let d = b.ins().iadd_imm_s(twice, -1);
        let down = b.ins().bxor_imm_s(up, 1);
        b.def_var(self.d, d);
        b.def_var(self.up, up);
        b.def_var(self.down, down);
    }

    fn values(&self, b: &mut FunctionBuilder) -> FlipValues {
        FlipValues { d: b.use_var(self.d), up: b.use_var(self.up), down: b.use_var(self.down) }
    }
}

/// Block-local copies of the values a component's updates read: the
/// instance, the flip, and the stack top. The single-pass allocator keeps
/// values defined in a block in registers but reloads one defined in
/// another block from its spill slot at every use. A `band` with all ones
/// is a copy nothing folds away (an `iadd` of 0 would be folded into the
/// loads' addresses, and the reloads would stay).
fn local_copies(b: &mut FunctionBuilder, inst: Value, fl: FlipValues, top: Variable) -> (Value, FlipValues) {
    let inst = b.ins().band_imm_s(inst, -1);
    let d = b.ins().band_imm_s(fl.d, -1);
    let up = b.ins().band_imm_s(fl.up, -1);
    let down = b.ins().band_imm_s(fl.down, -1);
    let t = b.use_var(top);
    let t = b.ins().band_imm_s(t, -1);
    b.def_var(top, t);
    (inst, FlipValues { d, up, down })
}

/// `inst + stack + 4 * index` (index: i32).
pub(super) fn stack_addr(b: &mut FunctionBuilder, inst: Value, index: Value, layout: &Layout) -> Value {
    let i = b.ins().uextend(I64, index);
    let o = b.ins().imul_imm_s(i, 4);
    let a = b.ins().iadd(inst, o);
    b.ins().iadd_imm_s(a, layout.stack as i64)
}

/// A gate's output (i32 0/1) from how many of its `n` inputs are true.
fn gate_value(b: &mut FunctionBuilder, kind: Kind, count: Value, n: i64) -> Value {
    let cc = match kind {
        Kind::And => b.ins().icmp_imm_s(IntCC::Equal, count, n),
        Kind::Or => b.ins().icmp_imm_s(IntCC::NotEqual, count, 0),
        Kind::Not | Kind::Nor => b.ins().icmp_imm_s(IntCC::Equal, count, 0),
        Kind::Nand => b.ins().icmp_imm_s(IntCC::NotEqual, count, n),
        Kind::True => return b.ins().iconst(I32, 1),
        _ => return b.ins().iconst(I32, 0),
    };
    b.ins().uextend(I32, cc)
}
