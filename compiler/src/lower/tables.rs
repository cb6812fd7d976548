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
//! counters counting down for NOT, NOR and NAND, a flip read off the
//! update's overflow; a flipped reader with readers is pushed behind a
//! branch (rarely taken, so the processor runs ahead to the next readers'
//! counters), and legal and next bits and cycle flags are set on a slower
//! path that only readers with triggers or a cycle take.

use super::engine::{Emitter, Stack, Trig, NONE};
use super::func::Emit;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64, I8};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{FuncId, Module, ModuleError};

/// Reader entry bits: the reader counts down; it takes the slow path
/// (triggers or a cycle); it has readers of its own (is pushed on a flip).
const DOWN: u32 = 1;
const SLOW: u32 = 2;
const PUSH: u32 = 4;
const SHIFT: u32 = 3;

/// The tables of one engine, as bytes for the data section.
struct Tables {
    /// Per component, 16 bytes (one aligned piece of a cache line, read
    /// once per component popped): its first reader entry, its first
    /// reader that counts up, the end of its readers (three `u32`s), and
    /// the offset of its cycle's pending flag or `NONE`.
    heads: Vec<u8>,
    /// Reader entries: `component << SHIFT | PUSH | SLOW | DOWN`, each
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
                if down(f) {
                    e |= DOWN;
                }
                if !self.triggers[f as usize].is_empty() || self.scc_of[f as usize] != NONE {
                    e |= SLOW;
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
                let inst = params[0];
                let [heads, readers, trig_heads, trigs] = gvs.map(|gv| b.ins().symbol_value(I64, gv));
                let stack = Stack::open(b, inst, &layout);
                // Above this address a component's pushes could pass the capacity.
                let limit = b.ins().iadd_imm_s(stack.base, 4 * (layout.stack_cap as i64 - maxfan));
                let (j, end, d, up) = (b.declare_var(I64), b.declare_var(I64), b.declare_var(I32), b.declare_var(I32));
                // The end of the run of readers being updated, their
                // counters' change (d, then -d) and their new output.
                let (stop, dd) = (b.declare_var(I64), b.declare_var(I32));
                let (k, kend, f, now, flipped) =
                    (b.declare_var(I64), b.declare_var(I64), b.declare_var(I64), b.declare_var(I32), b.declare_var(I8));
                // Every variable starts defined, so that no path reads one unset.
                for v in [j, end, stop, k, kend, f] {
                    let z = b.ins().iconst(I64, 0);
                    b.def_var(v, z);
                }
                for v in [d, dd, up, now] {
                    let z = b.ins().iconst(I32, 0);
                    b.def_var(v, z);
                }
                let z = b.ins().iconst(I8, 0);
                b.def_var(flipped, z);
                let pop = b.create_block();
                let popped = b.create_block();
                let not_empty = b.create_block();
                let reader = b.create_block();
                let next = b.create_block();
                let run_end = b.create_block();
                let ups = b.create_block();
                let slow = b.create_block();
                let set_pending = b.create_block();
                let trig_check = b.create_block();
                let trig_start = b.create_block();
                let trig_loop = b.create_block();
                let trig_body = b.create_block();
                let empty = b.create_block();
                let full = b.create_block();
                b.ins().jump(pop, &[]);

                // pop: empty? about to overflow? Take the top entry.
                b.switch_to_block(pop);
                let top = b.use_var(stack.top);
                let is_empty = b.ins().icmp(IntCC::Equal, top, stack.base);
                b.ins().brif(is_empty, empty, &[], not_empty, &[]);
                b.switch_to_block(not_empty);
                let is_full = b.ins().icmp(IntCC::UnsignedGreaterThan, top, limit);
                b.ins().brif(is_full, full, &[], popped, &[]);
                b.switch_to_block(popped);
                let top = b.ins().iadd_imm_s(top, -4);
                b.def_var(stack.top, top);
                let entry = b.ins().load(I32, mem, top, 0);
                let c = b.ins().ushr_imm_u(entry, 1);
                let u = b.ins().band_imm_s(entry, 1);
                let twice = b.ins().ishl_imm_u(u, 1);
                let dv = b.ins().iadd_imm_s(twice, -1);
                b.def_var(d, dv);
                let nd = b.ins().ineg(dv);
                b.def_var(dd, nd);
                b.def_var(up, u);
                let nu = b.ins().bxor_imm_s(u, 1);
                b.def_var(now, nu);
                let c64 = b.ins().uextend(I64, c);
                let at = b.ins().ishl_imm_u(c64, 4);
                let at = b.ins().iadd(heads, at);
                let trusted = MemFlagsData::trusted();
                let [first, split, last] = [0, 4, 8].map(|o| b.ins().uload32(trusted, at, o));
                b.def_var(j, first);
                b.def_var(stop, split);
                b.def_var(end, last);
                b.ins().jump(next, &[]);

                // next: the run's next reader, or the end of the run.
                b.switch_to_block(next);
                let jv = b.use_var(j);
                let sv = b.use_var(stop);
                let done = b.ins().icmp(IntCC::Equal, jv, sv);
                b.ins().brif(done, run_end, &[], reader, &[]);

                // run_end: after the readers that count down (their
                // counters take -d, their output is the opposite), those
                // that count up; after those, the next entry.
                b.switch_to_block(run_end);
                let sv = b.use_var(stop);
                let ev = b.use_var(end);
                let last = b.ins().icmp(IntCC::Equal, sv, ev);
                b.ins().brif(last, pop, &[], ups, &[]);
                b.switch_to_block(ups);
                let ev = b.use_var(end);
                b.def_var(stop, ev);
                let dv = b.use_var(d);
                b.def_var(dd, dv);
                let uv = b.use_var(up);
                b.def_var(now, uv);
                b.ins().jump(next, &[]);

                // reader: its counter and the flip.
                b.switch_to_block(reader);
                let jv = b.use_var(j);
                let at = b.ins().ishl_imm_u(jv, 2);
                let at = b.ins().iadd(readers, at);
                let r = b.ins().uload32(mem, at, 0);
                let j1 = b.ins().iadd_imm_s(jv, 1);
                b.def_var(j, j1);
                let ddv = b.use_var(dd);
                // The counter at 4 * component: (r >> 1) with the flag bits cleared.
                let off = b.ins().ushr_imm_u(r, (SHIFT - 2) as i64);
                let off = b.ins().band_imm_s(off, !3);
                let addr = b.ins().iadd(inst, off);
                let before = b.ins().load(I32, mem, addr, layout.counters as i32);
                let (after, of) = b.ins().sadd_overflow(before, ddv);
                b.ins().store(mem, after, addr, layout.counters as i32);
                let nowv = b.use_var(now);
                b.def_var(f, r);
                b.def_var(flipped, of);
                // Most updates flip nothing: a predictable branch lets the
                // processor run ahead to the next readers' counters.
                let flip = b.create_block();
                let push = b.create_block();
                let after_push = b.create_block();
                let is_slow = b.ins().band_imm_s(r, SLOW as i64);
                b.ins().brif(of, flip, &[], after_push, &[]);
                b.switch_to_block(flip);
                let has_readers = b.ins().band_imm_s(r, PUSH as i64);
                b.ins().brif(has_readers, push, &[], after_push, &[]);
                b.switch_to_block(push);
                let fshift = b.ins().ushr_imm_u(r, (SHIFT - 1) as i64);
                let fshift = b.ins().band_imm_s(fshift, !1);
                let fshift = b.ins().ireduce(I32, fshift);
                let pushed = b.ins().bor(fshift, nowv);
                let top = b.use_var(stack.top);
                b.ins().store(mem, pushed, top, 0);
                let top = b.ins().iadd_imm_s(top, 4);
                b.def_var(stack.top, top);
                b.ins().jump(after_push, &[]);
                b.switch_to_block(after_push);
                b.ins().brif(is_slow, slow, &[], next, &[]);

                // slow: a decrement into a cycle flags it for recomputation.
                b.switch_to_block(slow);
                let rv = b.use_var(f);
                let fv = b.ins().ushr_imm_u(rv, SHIFT as i64);
                let at = b.ins().ishl_imm_u(fv, 4);
                let at = b.ins().iadd(heads, at);
                let po = b.ins().load(I32, mem, at, 12);
                let in_cycle = b.ins().icmp_imm_s(IntCC::NotEqual, po, NONE as i64);
                let dv = b.use_var(d);
                let dec = b.ins().icmp_imm_s(IntCC::SignedLessThan, dv, 0);
                let flag = b.ins().band(in_cycle, dec);
                b.ins().brif(flag, set_pending, &[], trig_check, &[]);
                b.switch_to_block(set_pending);
                let po64 = b.ins().uextend(I64, po);
                let pa = b.ins().iadd(inst, po64);
                let one = b.ins().iconst(I8, 1);
                b.ins().store(mem, one, pa, 0);
                b.ins().jump(trig_check, &[]);

                // Legal and next bits change only on a flip.
                b.switch_to_block(trig_check);
                let of = b.use_var(flipped);
                b.ins().brif(of, trig_start, &[], next, &[]);
                b.switch_to_block(trig_start);
                let rv = b.use_var(f);
                let fv = b.ins().ushr_imm_u(rv, SHIFT as i64);
                let (s, e_) = range_of(b, trig_heads, fv);
                b.def_var(k, s);
                b.def_var(kend, e_);
                b.ins().jump(trig_loop, &[]);
                b.switch_to_block(trig_loop);
                let kv = b.use_var(k);
                let ke = b.use_var(kend);
                let kdone = b.ins().icmp(IntCC::Equal, kv, ke);
                b.ins().brif(kdone, next, &[], trig_body, &[]);
                b.switch_to_block(trig_body);
                let kv = b.use_var(k);
                let at = b.ins().ishl_imm_u(kv, 2);
                let at = b.ins().iadd(trigs, at);
                let tr = b.ins().load(I32, mem, at, 0);
                let k1 = b.ins().iadd_imm_s(kv, 1);
                b.def_var(k, k1);
                let woff = b.ins().ushr_imm_u(tr, 6);
                let woff = b.ins().uextend(I64, woff);
                let wa = b.ins().iadd(inst, woff);
                let bit = b.ins().band_imm_s(tr, 63);
                let bit = b.ins().uextend(I64, bit);
                let w = b.ins().load(I64, mem, wa, 0);
                let one = b.ins().iconst(I64, 1);
                let m = b.ins().ishl(one, bit);
                let cleared = b.ins().band_not(w, m);
                let nv = b.use_var(now);
                let nv = b.ins().uextend(I64, nv);
                let set = b.ins().ishl(nv, bit);
                let w = b.ins().bor(cleared, set);
                b.ins().store(mem, w, wa, 0);
                b.ins().jump(trig_loop, &[]);

                b.switch_to_block(empty);
                stack.close(b, inst, &layout);
                let r = b.ins().iconst(I32, -1);
                b.ins().return_(&[r]);
                b.switch_to_block(full);
                stack.close(b, inst, &layout);
                let r = b.ins().iconst(I32, -2);
                b.ins().return_(&[r]);
            },
        )
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
