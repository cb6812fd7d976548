//! Propagation from tables, for large engines: one loop reads each
//! component's readers from a table in the data section, instead of a
//! block of straight-line updates per component.
//!
//! Straight-line code is about 30 bytes per counter update; a large
//! network's code is megabytes, and a state change touches a few thousand
//! updates scattered through it, nearly every one an instruction-cache
//! miss (hex: 270k updates, one-at-a-time playouts at a third of the
//! interpreter's rate). A table entry is 4 bytes, and the loop that reads
//! it stays in the cache. The loop makes the same updates as the code:
//! counters counting down for NOT, NOR and NAND, a flip where the update
//! wraps the counter from one end of `i32` to the other; a flipped reader with readers is pushed behind a
//! branch (rarely taken, so the processor runs ahead to the next readers'
//! counters), and legal and next bits and cycle flags are set on a slower
//! path that only readers with triggers or a cycle take.

use super::engine::{Emitter, Stack, Trig, NONE};
use super::func::Emit;
use super::layout::Layout;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64, I8};
use cranelift_codegen::ir::{Block, GlobalValue, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::{FunctionBuilder, Variable};
use cranelift_module::{FuncId, Module, ModuleError};

/// Reader entry bits: the reader is in a cycle; it sets legal or next
/// bits; it has readers of its own (is pushed on a flip).
const CYCLE: u32 = 1;
const TRIG: u32 = 2;
const PUSH: u32 = 4;
const SHIFT: u32 = 3;

/// The tables of one engine, as bytes for the data section.
struct Tables {
    /// Per component, 16 bytes (one aligned piece of a cache line, read
    /// once per component popped): its first reader entry, its first
    /// reader that counts up, the end of its readers (three `u32`s), and
    /// the offset of its cycle's pending flag or `NONE`.
    heads: Vec<u8>,
    /// Reader entries: `component << SHIFT | PUSH | TRIG | CYCLE`, each
    /// component's readers that count down before those that count up:
    /// the loop runs over the two runs with a fixed direction each, so a
    /// reader's update needs no select on its direction. The order
    /// changes which flips are transient (a reader flipped and flipped
    /// back within one propagation): down first measured 7-10% faster on
    /// hex, speedChess and othello than the fan-out's own order, and up
    /// first 20% slower on chess_200.
    readers: Vec<u8>,
    /// Per component: first trigger (low 32 bits), count (high).
    trig_heads: Vec<u8>,
    /// Triggers: byte offset of the bit's word in the instance `<< 6 |
    /// bit`.
    trigs: Vec<u8>,
}

impl<M: Module> Emitter<'_, M> {
    fn tables(&self) -> Tables {
        let n = self.fanout.len();
        let mut t = Tables {
            heads: Vec::with_capacity(16 * n),
            readers: Vec::new(),
            trig_heads: Vec::with_capacity(8 * n),
            trigs: Vec::new(),
        };
        let mut start = 0u64;
        let mut trig_start = 0u64;
        for c in 0..n {
            let fans = &self.fanout[c];
            let down = |f: u32| super::layout::counts_down(self.net.kind(f));
            let downs = fans.iter().filter(|&&f| down(f)).count() as u64;
            let s = self.scc_of[c];
            let pending = if s == NONE { NONE } else { self.layout.pending + s };
            for x in [start, start + downs, start + fans.len() as u64] {
                t.heads.extend_from_slice(&(x as u32).to_le_bytes());
            }
            t.heads.extend_from_slice(&pending.to_le_bytes());
            start += fans.len() as u64;
            let ordered = fans.iter().filter(|&&f| down(f)).chain(fans.iter().filter(|&&f| !down(f)));
            for &f in ordered {
                let mut e = f << SHIFT;
                if self.scc_of[f as usize] != NONE {
                    e |= CYCLE;
                }
                if !self.triggers[f as usize].is_empty() {
                    e |= TRIG;
                }
                if !self.fanout[f as usize].is_empty() {
                    e |= PUSH;
                }
                t.readers.extend_from_slice(&e.to_le_bytes());
            }
            let trigs = &self.triggers[c];
            t.trig_heads.extend_from_slice(&(trig_start | (trigs.len() as u64) << 32).to_le_bytes());
            trig_start += trigs.len() as u64;
            for tr in trigs {
                let (region, i) = match *tr {
                    Trig::Legal(i) => (self.layout.legal_bits, i),
                    Trig::Next(i) => (self.layout.next_bits, i),
                };
                let word = region + 8 * (i / 64);
                t.trigs.extend_from_slice(&((word << 6) | (i % 64)).to_le_bytes());
            }
        }
        t
    }

    /// Emits `id` (`i32 f(inst)`): pops and propagates until the stack is
    /// empty (returns -1) or about to overflow (-2), like all the chunk
    /// functions of a code engine together.
    pub(super) fn emit_table_propagate(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let t = self.tables();
        let p = self.prefix().to_string();
        // A table may be empty; the data section wants at least a word.
        let pad = |mut v: Vec<u8>| {
            if v.is_empty() {
                v.resize(8, 0);
            }
            v
        };
        let heads = self.data_aligned(&format!("{p}_fan_heads"), pad(t.heads), 16)?;
        let readers = self.data(&format!("{p}_fan_readers"), pad(t.readers))?;
        let trig_heads = self.data(&format!("{p}_trig_heads"), pad(t.trig_heads))?;
        let trigs = self.data(&format!("{p}_trigs"), pad(t.trigs))?;
        let maxfan = self.fanout.iter().map(Vec::len).max().unwrap_or(0) as i64;
        let layout = self.layout.clone();
        let mem = self.mem;
        self.define(
            id,
            |e, func| [heads, readers, trig_heads, trigs].map(|d| e.module.declare_data_in_func(d, func)),
            |_, b, params, gvs| {
                let g = Run { inst: params[0], gvs, layout: &layout, mem };
                let stack = Stack::open(b, g.inst, &layout);
                // The reader entry being read, the end of its run and the
                // end of the second run (the first ends where it starts).
                let (p, pend, end) = (b.declare_var(I64), b.declare_var(I64), b.declare_var(I64));
                for v in [p, pend, end] {
                    let z = b.ins().iconst(I64, 0);
                    b.def_var(v, z);
                }
                let pop = b.create_block();
                let not_empty = b.create_block();
                let popped = b.create_block();
                let empty = b.create_block();
                let full = b.create_block();
                // A popped +1 (the component became true): its readers that
                // count down take -1, then those that count up +1; a popped
                // -1 the opposite. One loop per run and sign, each with its
                // change and its readers' new output as constants, keeps the
                // loop's live values to the instance, the stack top and the
                // run's two ends.
                b.ins().jump(pop, &[]);
                let second = [b.create_block(), b.create_block()];
                let runs = [
                    [g.emit(b, p, pend, &stack, -1, false, second[0]), g.emit(b, p, pend, &stack, 1, false, pop)],
                    [g.emit(b, p, pend, &stack, 1, true, second[1]), g.emit(b, p, pend, &stack, -1, true, pop)],
                ];
                for (blk, run) in second.into_iter().zip(&runs) {
                    b.switch_to_block(blk);
                    let ev = b.use_var(end);
                    b.def_var(pend, ev);
                    b.ins().jump(run[1], &[]);
                }

                // pop: empty? about to overflow? Take the top entry.
                b.switch_to_block(pop);
                let top = b.use_var(stack.top);
                let base = b.ins().iadd_imm_s(g.inst, layout.stack as i64);
                let is_empty = b.ins().icmp(IntCC::Equal, top, base);
                b.ins().brif(is_empty, empty, &[], not_empty, &[]);
                b.switch_to_block(not_empty);
                // Above this address a component's pushes could pass the capacity.
                let limit = b.ins().iadd_imm_s(g.inst, layout.stack as i64 + 4 * (layout.stack_cap as i64 - maxfan));
                let is_full = b.ins().icmp(IntCC::UnsignedGreaterThan, top, limit);
                b.ins().brif(is_full, full, &[], popped, &[]);
                b.switch_to_block(popped);
                let top = b.ins().iadd_imm_s(top, -4);
                b.def_var(stack.top, top);
                let entry = b.ins().load(I32, mem, top, 0);
                let c = b.ins().ushr_imm_u(entry, 1);
                let c64 = b.ins().uextend(I64, c);
                let at = b.ins().ishl_imm_u(c64, 4);
                let heads = b.ins().symbol_value(I64, g.gvs[0]);
                let at = b.ins().iadd(heads, at);
                let readers = b.ins().symbol_value(I64, g.gvs[1]);
                let trusted = MemFlagsData::trusted();
                let [first, mid, last] = [0, 4, 8].map(|o| {
                    let x = b.ins().uload32(trusted, at, o);
                    let x = b.ins().ishl_imm_u(x, 2);
                    b.ins().iadd(readers, x)
                });
                b.def_var(p, first);
                b.def_var(pend, mid);
                b.def_var(end, last);
                let up = b.ins().band_imm_s(entry, 1);
                b.ins().brif(up, runs[0][0], &[], runs[1][0], &[]);

                b.switch_to_block(empty);
                stack.close(b, g.inst, &layout);
                let r = b.ins().iconst(I32, -1);
                b.ins().return_(&[r]);
                b.switch_to_block(full);
                stack.close(b, g.inst, &layout);
                let r = b.ins().iconst(I32, -2);
                b.ins().return_(&[r]);
            },
        )
    }
}

/// What the loops over one run of readers share.
struct Run<'a> {
    inst: Value,
    /// The data: heads, readers, trigger heads, triggers.
    gvs: [GlobalValue; 4],
    layout: &'a Layout,
    mem: MemFlagsData,
}

impl Run<'_> {
    /// Emits the loop over the readers from `p` to `pend`, each counter
    /// taking `add`; returns its head, which goes to `exit` at the end.
    /// A reader that flips becomes true when `add` is +1 (its counter went
    /// from `i32::MAX` to `i32::MIN`). `falling`: the popped component
    /// became false, so a reader in a cycle has its cycle's pending flag
    /// set whether it flips or not.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        b: &mut FunctionBuilder,
        p: Variable,
        pend: Variable,
        stack: &Stack,
        add: i64,
        falling: bool,
        exit: Block,
    ) -> Block {
        let (inst, mem) = (self.inst, self.mem);
        let now = i64::from(add > 0);
        // The blocks of a reader that flips are cold (laid out after the
        // loop): an update that flips nothing runs `head`, `body` (and
        // `steady`) and back. A test at the bottom of the loop instead
        // measured 9% more instructions per step on reversi.
        let head = b.create_block();
        let body = b.create_block();
        let flip = b.create_block();
        let push = b.create_block();
        let pushed = b.create_block();
        let triggered = b.create_block();
        let trig_start = b.create_block();
        let trig_loop = b.create_block();
        let trig_body = b.create_block();
        for cold in [flip, push, pushed, triggered, trig_start, trig_loop, trig_body] {
            b.set_cold_block(cold);
        }
        b.switch_to_block(head);
        let pv = b.use_var(p);
        let pe = b.use_var(pend);
        let done = b.ins().icmp(IntCC::Equal, pv, pe);
        b.ins().brif(done, exit, &[], body, &[]);

        // body: the reader's counter. Most updates flip nothing: a
        // predictable branch lets the processor run ahead to the next
        // readers' counters.
        b.switch_to_block(body);
        let pv = b.use_var(p);
        let r = b.ins().uload32(mem, pv, 0);
        let p1 = b.ins().iadd_imm_s(pv, 4);
        b.def_var(p, p1);
        // The counter at inst + 4 * component: x86's scaled index.
        let fv = b.ins().ushr_imm_u(r, SHIFT as i64);
        let off = b.ins().ishl_imm_u(fv, 2);
        let addr = b.ins().iadd(inst, off);
        let before = b.ins().load(I32, mem, addr, self.layout.counters as i32);
        let after = b.ins().iadd_imm_s(before, add);
        b.ins().store(mem, after, addr, self.layout.counters as i32);
        // The update overflowed when it left the counter at the far end:
        // one compare, where reading the overflow flag took two.
        let wrapped = if add > 0 { i64::from(i32::MIN) } else { i64::from(i32::MAX) };
        let of = b.ins().icmp_imm_s(IntCC::Equal, after, wrapped);
        if falling {
            let steady = b.create_block();
            b.ins().brif(of, flip, &[], steady, &[]);
            b.switch_to_block(steady);
            self.pending(b, r, head);
        } else {
            b.ins().brif(of, flip, &[], head, &[]);
        }

        // flip: push a reader with readers; in a cycle, flag it (when
        // falling); set its legal and next bits.
        b.switch_to_block(flip);
        let has_readers = b.ins().band_imm_s(r, PUSH as i64);
        b.ins().brif(has_readers, push, &[], pushed, &[]);
        b.switch_to_block(push);
        let fshift = b.ins().ushr_imm_u(r, (SHIFT - 1) as i64);
        let fshift = b.ins().band_imm_s(fshift, !1);
        let fshift = b.ins().ireduce(I32, fshift);
        let entry = b.ins().bor_imm_s(fshift, now);
        let top = b.use_var(stack.top);
        b.ins().store(mem, entry, top, 0);
        let top = b.ins().iadd_imm_s(top, 4);
        b.def_var(stack.top, top);
        b.ins().jump(pushed, &[]);
        b.switch_to_block(pushed);
        if falling {
            self.pending(b, r, triggered);
        } else {
            b.ins().jump(triggered, &[]);
        }
        b.switch_to_block(triggered);
        let has_trigs = b.ins().band_imm_s(r, TRIG as i64);
        b.ins().brif(has_trigs, trig_start, &[], head, &[]);

        b.switch_to_block(trig_start);
        let fv = b.ins().ushr_imm_u(r, SHIFT as i64);
        let trig_heads = b.ins().symbol_value(I64, self.gvs[2]);
        let (s, e) = range_of(b, trig_heads, fv);
        b.ins().jump(trig_loop, &[s.into()]);
        b.switch_to_block(trig_loop);
        b.append_block_param(trig_loop, I64);
        let kv = b.block_params(trig_loop)[0];
        let kdone = b.ins().icmp(IntCC::Equal, kv, e);
        b.ins().brif(kdone, head, &[], trig_body, &[]);
        b.switch_to_block(trig_body);
        let trigs = b.ins().symbol_value(I64, self.gvs[3]);
        let at = b.ins().ishl_imm_u(kv, 2);
        let at = b.ins().iadd(trigs, at);
        let tr = b.ins().load(I32, mem, at, 0);
        let woff = b.ins().ushr_imm_u(tr, 6);
        let woff = b.ins().uextend(I64, woff);
        let wa = b.ins().iadd(inst, woff);
        let bit = b.ins().band_imm_s(tr, 63);
        let bit = b.ins().uextend(I64, bit);
        let w = b.ins().load(I64, mem, wa, 0);
        let one = b.ins().iconst(I64, 1);
        let m = b.ins().ishl(one, bit);
        let w = if now == 1 { b.ins().bor(w, m) } else { b.ins().band_not(w, m) };
        b.ins().store(mem, w, wa, 0);
        let k1 = b.ins().iadd_imm_s(kv, 1);
        b.ins().jump(trig_loop, &[k1.into()]);
        head
    }

    /// A reader in a cycle (entry `r`) has its cycle's pending flag set;
    /// then on to `next`.
    fn pending(&self, b: &mut FunctionBuilder, r: Value, next: Block) {
        let set = b.create_block();
        b.set_cold_block(set);
        let in_cycle = b.ins().band_imm_s(r, CYCLE as i64);
        b.ins().brif(in_cycle, set, &[], next, &[]);
        b.switch_to_block(set);
        let fv = b.ins().ushr_imm_u(r, SHIFT as i64);
        let at = b.ins().ishl_imm_u(fv, 4);
        let heads = b.ins().symbol_value(I64, self.gvs[0]);
        let at = b.ins().iadd(heads, at);
        let po = b.ins().uload32(self.mem, at, 12);
        let pa = b.ins().iadd(self.inst, po);
        let one = b.ins().iconst(I8, 1);
        b.ins().store(self.mem, one, pa, 0);
        b.ins().jump(next, &[]);
    }
}

/// Entry `index` of a table of (first, count) heads: the range
/// `first..first + count` as two i64 values.
fn range_of(b: &mut FunctionBuilder, table: Value, index: Value) -> (Value, Value) {
    let at = b.ins().ishl_imm_u(index, 3);
    let at = b.ins().iadd(table, at);
    let h = b.ins().load(I64, MemFlagsData::trusted(), at, 0);
    let first = b.ins().band_imm_s(h, 0xffff_ffff);
    let count = b.ins().ushr_imm_u(h, 32);
    let end = b.ins().iadd(first, count);
    (first, end)
}
