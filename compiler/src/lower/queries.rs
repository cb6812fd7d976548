//! The functions that drive one engine ([`super::engine`]) and ask it
//! what holds: init, making a state current, playing a joint move, the
//! terminal test, legal moves, goals, and one step of a random playout.
//! Each takes the engine's own instance pointer; [`super::top`] calls them
//! from the exported functions.

use super::engine::{stack_addr, Emitter, NONE};
use super::func::{copy_words, Emit};
use super::layout::words;
use crate::propnet::Kind;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64, I8};
use cranelift_codegen::ir::{Block, InstBuilder, Value};
use cranelift_frontend::{FunctionBuilder, Switch, Variable};
use cranelift_module::{DataId, FuncId, Module, ModuleError};

/// A leaf table entry for a leaf set by its own code.
const SPECIAL: u32 = u32::MAX;
/// A leaf table entry for an input nothing reads (all its readers are
/// move ORs, set from their table): setting it does nothing.
const SKIP: u32 = u32::MAX - 1;

impl<M: Module> Emitter<'_, M> {
    /// A table of one `u32` per leaf: its component, or [`SPECIAL`] for a
    /// leaf that needs its own code (one with triggers or no readers). Most
    /// leaves are then set by one generic piece of code instead of a block
    /// each, which kept `set_joint` at hundreds of thousands of
    /// instructions on games with many moves.
    pub(super) fn leaf_table(&mut self, name: &str, comps: &[u32]) -> Result<DataId, ModuleError> {
        let mut bytes = Vec::with_capacity(4 * comps.len());
        for &c in comps {
            let e = if self.leaf_is_inert(c) {
                SKIP
            } else if self.leaf_is_special(c) {
                SPECIAL
            } else {
                c
            };
            bytes.extend_from_slice(&e.to_le_bytes());
        }
        self.data(name, bytes)
    }

    fn leaf_is_special(&self, c: u32) -> bool {
        !self.leaf_is_inert(c) && (!self.triggers[c as usize].is_empty() || self.fanout[c as usize].is_empty())
    }

    /// An input that nothing in this engine reads: no readers (they were
    /// move ORs), no legal or next bit. Goals and terminal never read
    /// inputs (GDL forbids `does` there), so its counter can stay as it is.
    fn leaf_is_inert(&self, c: u32) -> bool {
        matches!(self.net.kind(c), Kind::Input(_))
            && self.triggers[c as usize].is_empty()
            && self.fanout[c as usize].is_empty()
    }

    /// Sets leaf `index` (of the table `table`, a `u32` per leaf) to `v`
    /// (i32 0 or 1): through the generic code when its entry is a
    /// component, else through `special`, the block for leaves that need
    /// their own code.
    #[allow(clippy::too_many_arguments)]
    fn set_leaf_from_table(
        &self,
        b: &mut FunctionBuilder,
        inst: Value,
        table: Value,
        index: Value,
        v: Value,
        sp_var: Variable,
        special: Block,
        after: Block,
    ) {
        let i = b.ins().uextend(I64, index);
        let o = b.ins().ishl_imm_u(i, 2);
        let a = b.ins().iadd(table, o);
        let e = b.ins().load(I32, self.mem, a, 0);
        let not_generic = b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, e, SKIP as i64);
        let generic = b.create_block();
        let special_or_skip = b.create_block();
        b.ins().brif(not_generic, special_or_skip, &[], generic, &[]);
        b.switch_to_block(special_or_skip);
        let is_special = b.ins().icmp_imm_s(IntCC::Equal, e, SPECIAL as i64);
        b.ins().brif(is_special, special, &[], after, &[]);
        b.switch_to_block(generic);
        let neg = b.ins().ineg(v);
        let w = b.ins().uextend(I64, e);
        let o = b.ins().ishl_imm_u(w, 2);
        let a = b.ins().iadd(inst, o);
        b.ins().store(self.mem, neg, a, self.layout.counters as i32);
        let twice = b.ins().ishl_imm_u(e, 1);
        let entry = b.ins().iadd(twice, v);
        let sp = b.use_var(sp_var);
        let addr = stack_addr(b, inst, sp, self.layout);
        b.ins().store(self.mem, entry, addr, 0);
        let sp = b.ins().iadd_imm_s(sp, 1);
        b.def_var(sp_var, sp);
        b.ins().jump(after, &[]);
    }

    /// A switch on `index` over `leaves` ((index, component) pairs), each
    /// case setting its leaf to the value `v` makes (i32 0 or 1) and going
    /// on to `after`.
    #[allow(clippy::too_many_arguments)]
    fn leaf_switch(
        &mut self,
        b: &mut FunctionBuilder,
        inst: Value,
        sp_var: Variable,
        leaves: &[(u32, u32)],
        index: Value,
        v: &dyn Fn(&mut FunctionBuilder) -> Value,
        after: Block,
    ) {
        let mut sw = Switch::new();
        let mut hs = Vec::new();
        for &(i, comp) in leaves {
            let blk = b.create_block();
            sw.set_entry(i as u128, blk);
            hs.push((blk, comp));
        }
        sw.emit(b, index, after);
        for (blk, comp) in hs {
            b.switch_to_block(blk);
            let v = v(b);
            self.set_leaf(b, inst, comp, v, sp_var);
            b.ins().jump(after, &[]);
        }
    }

    /// Sets a leaf (base or input) that is known to change to `v` (i32 0
    /// or 1): its counter, its triggers, and a push.
    fn set_leaf(&mut self, b: &mut FunctionBuilder, inst: Value, c: u32, v: Value, sp_var: Variable) {
        let neg = b.ins().ineg(v);
        b.ins().store(self.mem, neg, inst, (self.layout.counters + 4 * c) as i32);
        self.code().set_triggers(b, inst, c, v);
        if !self.fanout[c as usize].is_empty() {
            let entry = b.ins().iadd_imm_s(v, (c as i64) << 1);
            let sp = b.use_var(sp_var);
            let addr = stack_addr(b, inst, sp, self.layout);
            b.ins().store(self.mem, entry, addr, 0);
            let sp = b.ins().iadd_imm_s(sp, 1);
            b.def_var(sp_var, sp);
        }
    }

    /// Evaluates the separate goal network from scratch into
    /// `goal_values` (a no-op when there is none), through the machine's
    /// shared [`super::goals`] code.
    pub(super) fn emit_eval_goals(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let layout = self.layout.clone();
        self.define(
            id,
            |e, func| e.goal_net.map(|(_, f)| e.module.declare_func_in_func(f, func)),
            |_, b, p, eval| {
                let inst = p[0];
                if let Some(eval) = eval {
                    let bits = b.ins().iadd_imm_s(inst, layout.base_bits as i64);
                    let values = b.ins().iadd_imm_s(inst, layout.goal_values as i64);
                    b.ins().call(eval, &[bits, values]);
                }
                b.ins().return_(&[]);
            },
        )
    }

    pub(super) fn emit_init(&mut self, id: FuncId, image: DataId) -> Result<(), ModuleError> {
        let mem = self.mem;
        let words = (self.layout.stack / 8) as i64;
        let sp_off = self.layout.sp as i32;
        self.define(
            id,
            |e, func| e.module.declare_data_in_func(image, func),
            |_, b, p, gv| {
                let inst = p[0];
                let src = b.ins().symbol_value(I64, gv);
                copy_words(b, src, inst, words);
                let z = b.ins().iconst(I32, 0);
                b.ins().store(mem, z, inst, sp_off);
                b.ins().return_(&[]);
            },
        )
    }

    /// Makes the state `bits` current (only the bases that differ are
    /// touched), then propagates. Returns what `drain` returns.
    pub(super) fn emit_set_state(&mut self, id: FuncId, drain: FuncId, table: DataId) -> Result<(), ModuleError> {
        let mem = self.mem;
        let layout = self.layout.clone();
        let bases: Vec<u32> = self.net.bases.iter().map(|b| b.comp).collect();
        self.define(
            id,
            |e, func| (e.module.declare_func_in_func(drain, func), e.module.declare_data_in_func(table, func)),
            |e, b, p, (drain_ref, table_gv)| {
                let inst = p[0];
                let bits = p[1];
                let table = b.ins().symbol_value(I64, table_gv);
                let sp_var = b.declare_var(I32);
                let sp0 = b.ins().load(I32, mem, inst, layout.sp as i32);
                b.def_var(sp_var, sp0);
                let diff_var = b.declare_var(I64);
                let new_var = b.declare_var(I64);
                let v_var = b.declare_var(I32);
                let i_var = b.declare_var(I32);
                for w in 0..words(layout.counts.bases) {
                    let new = b.ins().load(I64, mem, bits, (8 * w) as i32);
                    let off = (layout.base_bits + 8 * w) as i32;
                    let old = b.ins().load(I64, mem, inst, off);
                    let diff = b.ins().bxor(new, old);
                    b.ins().store(mem, new, inst, off);
                    b.def_var(diff_var, diff);
                    b.def_var(new_var, new);
                    let lp = b.create_block();
                    let body = b.create_block();
                    let next = b.create_block();
                    b.ins().jump(lp, &[]);
                    b.switch_to_block(lp);
                    let diff = b.use_var(diff_var);
                    b.ins().brif(diff, body, &[], next, &[]);
                    b.switch_to_block(body);
                    let bit = b.ins().ctz(diff);
                    let m1 = b.ins().iadd_imm_s(diff, -1);
                    let rest = b.ins().band(diff, m1);
                    b.def_var(diff_var, rest);
                    let new = b.use_var(new_var);
                    let sh = b.ins().ushr(new, bit);
                    let v = b.ins().band_imm_s(sh, 1);
                    let v = b.ins().ireduce(I32, v);
                    b.def_var(v_var, v);
                    let bit = b.ins().ireduce(I32, bit);
                    let i = b.ins().iadd_imm_s(bit, 64 * w as i64);
                    b.def_var(i_var, i);
                    let special = b.create_block();
                    e.set_leaf_from_table(b, inst, table, i, v, sp_var, special, lp);
                    // Leaves with their own code: a switch over this word's.
                    b.switch_to_block(special);
                    let special: Vec<(u32, u32)> = (w * 64..(w * 64 + 64).min(layout.counts.bases))
                        .map(|i| (i, bases[i as usize]))
                        .filter(|&(_, c)| e.leaf_is_special(c))
                        .collect();
                    let i = b.use_var(i_var);
                    e.leaf_switch(b, inst, sp_var, &special, i, &|b| b.use_var(v_var), lp);
                    b.switch_to_block(next);
                }
                let sp = b.use_var(sp_var);
                b.ins().store(mem, sp, inst, layout.sp as i32);
                let call = b.ins().call(drain_ref, &[inst]);
                let r = b.inst_results(call)[0];
                b.ins().return_(&[r]);
            },
        )
    }

    /// Plays `moves` (one input index per role, in role order), then
    /// propagates. Returns what `drain` returns, or 3 for a move that is
    /// not one of the role's inputs.
    pub(super) fn emit_set_joint(
        &mut self,
        id: FuncId,
        drain: FuncId,
        table: DataId,
        move_rows: Option<DataId>,
    ) -> Result<(), ModuleError> {
        let mem = self.mem;
        let layout = self.layout.clone();
        let ranges = self.role_ranges();
        let inputs: Vec<u32> = self.net.inputs.iter().map(|i| i.comp).collect();
        self.define(
            id,
            |e, func| {
                (
                    e.module.declare_func_in_func(drain, func),
                    e.module.declare_data_in_func(table, func),
                    move_rows.map(|d| e.module.declare_data_in_func(d, func)),
                )
            },
            |e, b, p, (drain_ref, table_gv, rows_gv)| {
                let inst = p[0];
                let moves = p[1];
                let table = b.ins().symbol_value(I64, table_gv);
                let rows = rows_gv.map(|gv| b.ins().symbol_value(I64, gv));
                let bad = b.create_block();
                let sp_var = b.declare_var(I32);
                let sp0 = b.ins().load(I32, mem, inst, layout.sp as i32);
                b.def_var(sp_var, sp0);
                for (r, &(lo, hi)) in ranges.iter().enumerate() {
                    let m = b.ins().load(I32, mem, moves, (4 * r) as i32);
                    let off = (layout.role_input + 4 * r as u32) as i32;
                    let old = b.ins().load(I32, mem, inst, off);
                    let same = b.ins().icmp(IntCC::Equal, m, old);
                    let change = b.create_block();
                    let clear = b.create_block();
                    let set = b.create_block();
                    let valid = b.create_block();
                    let next = b.create_block();
                    b.ins().brif(same, next, &[], change, &[]);
                    b.switch_to_block(change);
                    let none = b.ins().icmp_imm_s(IntCC::Equal, old, NONE as i64);
                    b.ins().brif(none, set, &[], clear, &[]);
                    // The role's special inputs, each with its own block.
                    let special: Vec<(u32, u32)> =
                        (lo..hi).map(|i| (i, inputs[i as usize])).filter(|&(_, c)| e.leaf_is_special(c)).collect();
                    // Clear the role's last move.
                    b.switch_to_block(clear);
                    let zero = b.ins().iconst(I32, 0);
                    let clear_special = b.create_block();
                    e.set_leaf_from_table(b, inst, table, old, zero, sp_var, clear_special, set);
                    b.switch_to_block(clear_special);
                    e.leaf_switch(b, inst, sp_var, &special, old, &|b| b.ins().iconst(I32, 0), set);
                    // Check the move is one of the role's, then play it.
                    b.switch_to_block(set);
                    let none = b.ins().iconst(I32, NONE as i64);
                    b.ins().store(mem, none, inst, off);
                    let rel = b.ins().iadd_imm_s(m, -(lo as i64));
                    let ok = b.ins().icmp_imm_s(IntCC::UnsignedLessThan, rel, (hi - lo) as i64);
                    if let Some(rows) = rows.filter(|_| !e.moves.per_role[r].is_empty()) {
                        e.set_move_ors(b, inst, rows, r, m, ok, lo, sp_var);
                    }
                    b.ins().brif(ok, valid, &[], bad, &[]);
                    b.switch_to_block(valid);
                    b.ins().store(mem, m, inst, off);
                    let one = b.ins().iconst(I32, 1);
                    let set_special = b.create_block();
                    e.set_leaf_from_table(b, inst, table, m, one, sp_var, set_special, next);
                    b.switch_to_block(set_special);
                    e.leaf_switch(b, inst, sp_var, &special, m, &|b| b.ins().iconst(I32, 1), next);
                    b.switch_to_block(next);
                }
                let sp = b.use_var(sp_var);
                b.ins().store(mem, sp, inst, layout.sp as i32);
                let call = b.ins().call(drain_ref, &[inst]);
                let r = b.inst_results(call)[0];
                b.ins().return_(&[r]);
                b.switch_to_block(bad);
                // The bad role's input is recorded as none (see `set`), so the
                // next call sets it again.
                let sp = b.use_var(sp_var);
                b.ins().store(mem, sp, inst, layout.sp as i32);
                b.ins().call(drain_ref, &[inst]);
                let three = b.ins().iconst(I32, 3);
                b.ins().return_(&[three]);
            },
        )
    }

    /// Sets role `r`'s move ORs to the row of move `m` (none when `ok` is
    /// false: the move is refused and the role left without one): the ORs
    /// whose bit differs from the role's current row, one at a time, as
    /// leaves. Leaves the builder in a new block.
    #[allow(clippy::too_many_arguments)]
    fn set_move_ors(
        &mut self,
        b: &mut FunctionBuilder,
        inst: Value,
        rows: Value,
        r: usize,
        m: Value,
        ok: Value,
        lo: u32,
        sp_var: Variable,
    ) {
        let mem = self.mem;
        // A refused move may be out of the table: read the role's first row
        // instead, and drop it.
        let first = b.ins().iconst(I32, lo as i64);
        let i = b.ins().select(ok, m, first);
        let i = b.ins().uextend(I64, i);
        let o = b.ins().ishl_imm_u(i, 3);
        let a = b.ins().iadd(rows, o);
        let row = b.ins().load(I64, mem, a, 0);
        let none = b.ins().iconst(I64, 0);
        let new = b.ins().select(ok, row, none);
        let off = (self.layout.move_ors + 8 * r as u32) as i32;
        let cur = b.ins().load(I64, mem, inst, off);
        b.ins().store(mem, new, inst, off);
        let diff = b.ins().bxor(cur, new);
        let left = b.declare_var(I64);
        b.def_var(left, diff);
        let head = b.create_block();
        let body = b.create_block();
        let done = b.create_block();
        b.ins().jump(head, &[]);
        b.switch_to_block(head);
        let d = b.use_var(left);
        b.ins().brif(d, body, &[], done, &[]);
        b.switch_to_block(body);
        let d = b.use_var(left);
        let j = b.ins().ctz(d);
        let d1 = b.ins().iadd_imm_s(d, -1);
        let rest = b.ins().band(d, d1);
        b.def_var(left, rest);
        let bit = b.ins().ushr(new, j);
        let bit = b.ins().band_imm_s(bit, 1);
        let v = b.ins().ireduce(I32, bit);
        let j = b.ins().ireduce(I32, j);
        let ors: Vec<(u32, u32)> = self.moves.per_role[r].iter().enumerate().map(|(j, &c)| (j as u32, c)).collect();
        self.leaf_switch(b, inst, sp_var, &ors, j, &|_| v, head);
        b.switch_to_block(done);
    }

    pub(super) fn emit_terminal(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let off = (self.layout.counters + 4 * self.net.terminal) as i32;
        let mem = self.mem;
        self.define_simple(id, |_, b, p| {
            let inst = p[0];
            let c = b.ins().load(I32, mem, inst, off);
            let s = b.ins().ushr_imm_u(c, 31);
            b.ins().return_(&[s]);
        })
    }

    /// The first and last input of each role (inputs are numbered by role).
    fn role_ranges(&self) -> Vec<(u32, u32)> {
        let mut r = vec![(u32::MAX, 0u32); self.net.roles.len()];
        for (i, inp) in self.net.inputs.iter().enumerate() {
            let e = &mut r[inp.role as usize];
            e.0 = e.0.min(i as u32);
            e.1 = e.1.max(i as u32 + 1);
        }
        r.into_iter().map(|(a, b)| if a == u32::MAX { (0, 0) } else { (a, b) }).collect()
    }

    /// The legal bits of one role, word by word: (word offset, mask, first index).
    fn role_words(&self, lo: u32, hi: u32) -> Vec<(i32, i64, u32)> {
        let mut v = Vec::new();
        if lo >= hi {
            return v;
        }
        for w in lo / 64..=(hi - 1) / 64 {
            let mut mask = !0u64;
            if w * 64 < lo {
                mask &= !0u64 << (lo - w * 64);
            }
            if (w + 1) * 64 > hi {
                mask &= !0u64 >> ((w + 1) * 64 - hi);
            }
            v.push(((self.layout.legal_bits + 8 * w) as i32, mask as i64, w * 64));
        }
        v
    }

    /// Writes up to `cap` legal input indices of `role` to `out`; returns
    /// how many there are.
    pub(super) fn emit_legal(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let mem = self.mem;
        let ranges = self.role_ranges();
        self.define_simple(id, |e, b, p| {
            let p = p.to_vec();
            let (inst, role, out, cap) = (p[0], p[1], p[2], p[3]);
            let count = b.declare_var(I32);
            let word = b.declare_var(I64);
            let zero = b.ins().iconst(I32, 0);
            b.def_var(count, zero);
            let done = b.create_block();
            let mut sw = Switch::new();
            let mut roles = Vec::new();
            for &(lo, hi) in &ranges {
                let blk = b.create_block();
                sw.set_entry(roles.len() as u128, blk);
                roles.push((blk, lo, hi));
            }
            sw.emit(b, role, done);
            for (blk, lo, hi) in roles {
                b.switch_to_block(blk);
                for (off, mask, base) in e.role_words(lo, hi) {
                    let w = b.ins().load(I64, mem, inst, off);
                    let w = b.ins().band_imm_s(w, mask);
                    b.def_var(word, w);
                    let lp = b.create_block();
                    let body = b.create_block();
                    let write = b.create_block();
                    let skip = b.create_block();
                    let next = b.create_block();
                    b.ins().jump(lp, &[]);
                    b.switch_to_block(lp);
                    let w = b.use_var(word);
                    b.ins().brif(w, body, &[], next, &[]);
                    b.switch_to_block(body);
                    let bit = b.ins().ctz(w);
                    let bit = b.ins().ireduce(I32, bit);
                    let idx = b.ins().iadd_imm_s(bit, base as i64);
                    let m1 = b.ins().iadd_imm_s(w, -1);
                    let rest = b.ins().band(w, m1);
                    b.def_var(word, rest);
                    let n = b.use_var(count);
                    let room = b.ins().icmp(IntCC::UnsignedLessThan, n, cap);
                    b.ins().brif(room, write, &[], skip, &[]);
                    b.switch_to_block(write);
                    let n64 = b.ins().uextend(I64, n);
                    let o = b.ins().imul_imm_s(n64, 4);
                    let a = b.ins().iadd(out, o);
                    b.ins().store(mem, idx, a, 0);
                    b.ins().jump(skip, &[]);
                    b.switch_to_block(skip);
                    let n1 = b.ins().iadd_imm_s(n, 1);
                    b.def_var(count, n1);
                    b.ins().jump(lp, &[]);
                    b.switch_to_block(next);
                }
                b.ins().jump(done, &[]);
            }
            b.switch_to_block(done);
            let n = b.use_var(count);
            b.ins().return_(&[n]);
        })
    }

    /// Writes the goal values `role` has now as a 128-bit mask (bit v:
    /// the rules give value v; bit 127: 127 or more, which like 101-126
    /// GDL does not allow) in two `u64` words at `out`.
    pub(super) fn emit_goals(&mut self, id: FuncId, eval_goals: FuncId) -> Result<(), ModuleError> {
        let mem = self.mem;
        let layout = self.layout.clone();
        let (goals, from_goal_net) = match self.goal_net {
            Some((g, _)) => (g.goals.clone(), true),
            None => (self.net.goals.clone(), false),
        };
        let nroles = self.net.roles.len();
        self.define(
            id,
            |e, func| e.module.declare_func_in_func(eval_goals, func),
            |_, b, p, eval_ref| {
                let p = p.to_vec();
                let (inst, role, out) = (p[0], p[1], p[2]);
                if from_goal_net {
                    b.ins().call(eval_ref, &[inst]);
                }
                let done = b.create_block();
                let mut sw = Switch::new();
                let mut blocks = Vec::new();
                for r in 0..nroles {
                    let blk = b.create_block();
                    sw.set_entry(r as u128, blk);
                    blocks.push(blk);
                }
                let z = b.ins().iconst(I64, 0);
                b.ins().store(mem, z, out, 0);
                b.ins().store(mem, z, out, 8);
                sw.emit(b, role, done);
                for (r, blk) in blocks.into_iter().enumerate() {
                    b.switch_to_block(blk);
                    let mut words = [b.ins().iconst(I64, 0), b.ins().iconst(I64, 0)];
                    for g in goals.iter().filter(|g| g.role as usize == r) {
                        let bit = if from_goal_net {
                            let v = b.ins().load(I8, mem, inst, (layout.goal_values + g.comp) as i32);
                            b.ins().uextend(I64, v)
                        } else {
                            let c = b.ins().load(I32, mem, inst, (layout.counters + 4 * g.comp) as i32);
                            let s = b.ins().ushr_imm_u(c, 31);
                            b.ins().uextend(I64, s)
                        };
                        let slot = g.value.min(127);
                        let w = (slot / 64) as usize;
                        let sh = b.ins().ishl_imm_u(bit, (slot % 64) as i64);
                        words[w] = b.ins().bor(words[w], sh);
                    }
                    b.ins().store(mem, words[0], out, 0);
                    b.ins().store(mem, words[1], out, 8);
                    b.ins().jump(done, &[]);
                }
                b.switch_to_block(done);
                b.ins().return_(&[]);
            },
        )
    }

    /// One step of a random playout: each role plays a uniformly random
    /// legal move (the k-th set bit of its legal range, k from wyrand, the
    /// generator of `propel_runtime::Rng`, whose state is the `u64` at
    /// `rng`), and the next state is copied to scratch. Returns 0, -1 if a
    /// role has no legal move, -3 on an internal error.
    pub(super) fn emit_step(&mut self, id: FuncId, set_joint: FuncId) -> Result<(), ModuleError> {
        let mem = self.mem;
        let layout = self.layout.clone();
        let ranges = self.role_ranges();
        self.define(
            id,
            |e, func| e.module.declare_func_in_func(set_joint, func),
            |e, b, p, set_joint_ref| {
                let p = p.to_vec();
                let (inst, rng_ptr) = (p[0], p[1]);
                let rng = b.declare_var(I64);
                let seed = b.ins().load(I64, mem, rng_ptr, 0);
                b.def_var(rng, seed);
                let no_move = b.create_block();
                let failed = b.create_block();
                let k_var = b.declare_var(I64);
                let w_var = b.declare_var(I64);
                for (r, &(lo, hi)) in ranges.iter().enumerate() {
                    let words = e.role_words(lo, hi);
                    let mut count = b.ins().iconst(I64, 0);
                    let mut masked = Vec::new();
                    for &(off, mask, _) in &words {
                        let w = b.ins().load(I64, mem, inst, off);
                        let w = b.ins().band_imm_s(w, mask);
                        let pc = b.ins().popcnt(w);
                        count = b.ins().iadd(count, pc);
                        masked.push(w);
                    }
                    let some = b.create_block();
                    b.ins().brif(count, some, &[], no_move, &[]);
                    b.switch_to_block(some);
                    // wyrand: state += C1; r = mulhi(s, s^C2) ^ mullo(s, s^C2)
                    let s = b.use_var(rng);
                    let s = b.ins().iadd_imm_s(s, 0xa076_1d64_78bd_642fu64 as i64);
                    b.def_var(rng, s);
                    let x = b.ins().bxor_imm_s(s, 0xe703_7ed1_a0b4_28dbu64 as i64);
                    let lo_p = b.ins().imul(s, x);
                    let hi_p = b.ins().umulhi(s, x);
                    let rnd = b.ins().bxor(hi_p, lo_p);
                    let k = b.ins().umulhi(rnd, count);
                    b.def_var(k_var, k);
                    let chosen = b.create_block();
                    b.append_block_param(chosen, I32);
                    for (&(_, _, base), &w) in words.iter().zip(&masked) {
                        let pc = b.ins().popcnt(w);
                        let k = b.use_var(k_var);
                        let here = b.ins().icmp(IntCC::UnsignedLessThan, k, pc);
                        let inside = b.create_block();
                        let onward = b.create_block();
                        b.ins().brif(here, inside, &[], onward, &[]);
                        // The k-th set bit of this word: drop k set bits, take the next.
                        b.switch_to_block(inside);
                        b.def_var(w_var, w);
                        let lp = b.create_block();
                        let drop = b.create_block();
                        let take = b.create_block();
                        b.ins().jump(lp, &[]);
                        b.switch_to_block(lp);
                        let k = b.use_var(k_var);
                        b.ins().brif(k, drop, &[], take, &[]);
                        b.switch_to_block(drop);
                        let wv = b.use_var(w_var);
                        let m1 = b.ins().iadd_imm_s(wv, -1);
                        let wv = b.ins().band(wv, m1);
                        b.def_var(w_var, wv);
                        let k1 = b.ins().iadd_imm_s(k, -1);
                        b.def_var(k_var, k1);
                        b.ins().jump(lp, &[]);
                        b.switch_to_block(take);
                        let wv = b.use_var(w_var);
                        let bit = b.ins().ctz(wv);
                        let bit = b.ins().ireduce(I32, bit);
                        let idx = b.ins().iadd_imm_s(bit, base as i64);
                        b.ins().jump(chosen, &[cranelift_codegen::ir::BlockArg::Value(idx)]);
                        b.switch_to_block(onward);
                        let k = b.use_var(k_var);
                        let k = b.ins().isub(k, pc);
                        b.def_var(k_var, k);
                    }
                    // Unreachable when k < count; fail safe.
                    b.ins().jump(failed, &[]);
                    b.switch_to_block(chosen);
                    let idx = b.block_params(chosen)[0];
                    b.ins().store(mem, idx, inst, (layout.moves + 4 * r as u32) as i32);
                }
                let s = b.use_var(rng);
                b.ins().store(mem, s, rng_ptr, 0);
                let moves = b.ins().iadd_imm_s(inst, layout.moves as i64);
                let call = b.ins().call(set_joint_ref, &[inst, moves]);
                let rc = b.inst_results(call)[0];
                let ok = b.create_block();
                b.ins().brif(rc, failed, &[], ok, &[]);
                b.switch_to_block(ok);
                // The next state, copied: triggers change `next` while it is set.
                for w in 0..words(layout.counts.bases) {
                    let v = b.ins().load(I64, mem, inst, (layout.next_bits + 8 * w) as i32);
                    b.ins().store(mem, v, inst, (layout.scratch_bits + 8 * w) as i32);
                }
                let z = b.ins().iconst(I32, 0);
                b.ins().return_(&[z]);
                b.switch_to_block(no_move);
                let s = b.use_var(rng);
                b.ins().store(mem, s, rng_ptr, 0);
                let m1 = b.ins().iconst(I32, -1);
                b.ins().return_(&[m1]);
                b.switch_to_block(failed);
                let m3 = b.ins().iconst(I32, -3);
                b.ins().return_(&[m3]);
            },
        )
    }
}
