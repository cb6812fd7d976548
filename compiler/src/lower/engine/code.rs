//! The bodies of the engine's functions: a chunk of the network's
//! updates, a piece of a fan-out, one component's update and the triggers
//! it sets when it flips.

use super::*;

impl Code<'_> {
    /// One propagation chunk: pop and propagate while the top of the stack
    /// is in this chunk. Returns -1 when the stack is empty, -2 when it is
    /// about to overflow, 0 when the entry on top is another chunk's.
    pub(super) fn chunk_body(
        &self,
        k: u32,
        func: &mut Function,
        fctx: &mut FunctionBuilderContext,
        fc: TargetFrontendConfig,
    ) {
        let (lo, hi) = self.chunks[k as usize];
        let maxfan = (lo..hi).map(|c| self.fanout[c as usize].len()).max().unwrap_or(0) as i64;
        let comps: Vec<u32> = (lo..hi).filter(|&c| !self.fanout[c as usize].is_empty()).collect();
        let layout = self.layout;
        let mem = self.mem;
        {
            let mut b = FunctionBuilder::new(func, fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            let head = b.create_block();
            let pop = b.create_block();
            let leave = b.create_block();
            b.switch_to_block(entry);
            let inst = b.block_params(entry)[0];
            let stack = Stack::open(&mut b, inst, layout);
            let flip = Flip::declare(&mut b);
            // Above this address a block's pushes could pass the capacity.
            let limit = b.ins().iadd_imm_s(stack.base, 4 * (layout.stack_cap as i64 - maxfan));
            b.ins().jump(head, &[]);

            // head: empty? overflow? foreign chunk?
            b.switch_to_block(head);
            let spa = b.use_var(stack.top);
            let ret_var = b.declare_var(I32);
            let minus1 = b.ins().iconst(I32, -1);
            b.def_var(ret_var, minus1);
            let not_empty = b.create_block();
            let empty = b.ins().icmp(IntCC::Equal, spa, stack.base);
            b.ins().brif(empty, leave, &[], not_empty, &[]);
            b.switch_to_block(not_empty);
            let full = b.ins().icmp(IntCC::UnsignedGreaterThan, spa, limit);
            let not_full = b.create_block();
            let overflow = b.create_block();
            b.ins().brif(full, overflow, &[], not_full, &[]);
            b.switch_to_block(overflow);
            let minus2 = b.ins().iconst(I32, -2);
            b.def_var(ret_var, minus2);
            b.ins().jump(leave, &[]);
            b.switch_to_block(not_full);
            let top = b.ins().iadd_imm_s(spa, -4);
            let e = b.ins().load(I32, mem, top, 0);
            let c = b.ins().ushr_imm_u(e, 1);
            let rel = b.ins().iadd_imm_s(c, -(lo as i64));
            let mine = b.ins().icmp_imm_s(IntCC::UnsignedLessThan, rel, (hi - lo) as i64);
            let other = b.create_block();
            b.ins().brif(mine, pop, &[], other, &[]);
            b.switch_to_block(other);
            let zero = b.ins().iconst(I32, 0);
            b.def_var(ret_var, zero);
            b.ins().jump(leave, &[]);

            // pop: take the entry, jump to its component's block.
            b.switch_to_block(pop);
            b.def_var(stack.top, top);
            let up = b.ins().band_imm_s(e, 1);
            flip.define(&mut b, up);
            let mut sw = Switch::new();
            let mut blocks: Vec<(u32, Block)> = Vec::with_capacity(comps.len());
            for &cc in &comps {
                let blk = b.create_block();
                sw.set_entry((cc - lo) as u128, blk);
                blocks.push((cc, blk));
            }
            // Ids without readers are never pushed; giving them an entry
            // too keeps the table one dense range: one bounds check and
            // one indirect jump, where gaps made a tree of compares.
            for cc in lo..hi {
                if self.fanout[cc as usize].is_empty() {
                    sw.set_entry((cc - lo) as u128, head);
                }
            }
            sw.emit(&mut b, rel, head);
            for (cc, blk) in blocks {
                b.switch_to_block(blk);
                let fl = flip.values(&mut b);
                match self.pieces.get(&cc) {
                    Some(ids) => {
                        // The pieces push through the top kept in memory.
                        stack.close(&mut b, inst, layout);
                        let sig = b.import_signature(self.piece_sig.clone());
                        for &id in ids {
                            let name = b.func.declare_imported_user_function(cranelift_codegen::ir::UserExternalName {
                                namespace: 0,
                                index: id.as_u32(),
                            });
                            let f = b.import_function(cranelift_codegen::ir::ExtFuncData {
                                name: cranelift_codegen::ir::ExternalName::user(name),
                                signature: sig,
                                colocated: true,
                                patchable: false,
                            });
                            b.ins().call(f, &[inst, fl.up]);
                        }
                        stack.reload(&mut b, inst, layout);
                    }
                    None => {
                        let (inst, fl) =
                            if self.locals { local_copies(&mut b, inst, fl, stack.top) } else { (inst, fl) };
                        for &f in &self.fanout[cc as usize] {
                            self.update(&mut b, inst, f, fl, stack.top);
                        }
                    }
                }
                b.ins().jump(head, &[]);
            }

            b.switch_to_block(leave);
            stack.close(&mut b, inst, layout);
            let r = b.use_var(ret_var);
            b.ins().return_(&[r]);
            b.seal_all_blocks();
            b.finalize(fc);
        }
    }

    /// One piece of component `c`'s fan-out (`range` of its readers): the
    /// updates its chunk would make, as `void f(inst, up)`.
    pub(super) fn piece_body(
        &self,
        c: u32,
        range: std::ops::Range<usize>,
        func: &mut Function,
        fctx: &mut FunctionBuilderContext,
        fc: TargetFrontendConfig,
    ) {
        let mut b = FunctionBuilder::new(func, fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (inst, up) = (b.block_params(entry)[0], b.block_params(entry)[1]);
        let stack = Stack::open(&mut b, inst, self.layout);
        let flip = Flip::declare(&mut b);
        flip.define(&mut b, up);
        let fl = flip.values(&mut b);
        for &f in &self.fanout[c as usize][range] {
            self.update(&mut b, inst, f, fl, stack.top);
        }
        stack.close(&mut b, inst, self.layout);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(fc);
    }

    /// Adds `fl.d` (+1/-1, or 0) to component `f`'s counter (subtracts it
    /// when `f` counts down) and, when its output flips, updates its
    /// triggers and pushes it. A flip is the update's overflow (see
    /// [`counts_down`]); the push is branch-free: the entry is always
    /// written and the top moves by 4 bytes only on a flip.
    pub(super) fn update(&self, b: &mut FunctionBuilder, inst: Value, f: u32, fl: FlipValues, top: Variable) {
        let mem = self.mem;
        let off = (self.layout.counters + 4 * f) as i32;
        let before = b.ins().load(I32, mem, inst, off);
        let down = counts_down(self.net.kind(f));
        let (after, flipped) =
            if down { b.ins().ssub_overflow(before, fl.d) } else { b.ins().sadd_overflow(before, fl.d) };
        b.ins().store(mem, after, inst, off);
        let s = self.scc_of[f as usize];
        if s != NONE {
            // A decrement may leave a cycle supporting itself: recompute it.
            let neg = b.ins().icmp_imm_s(IntCC::SignedLessThan, fl.d, 0);
            let poff = (self.layout.pending + s) as i32;
            let flag = b.ins().load(I8, mem, inst, poff);
            let flag = b.ins().bor(flag, neg);
            b.ins().store(mem, flag, inst, poff);
        }
        // The output after a flip: the input's direction, reversed for a
        // gate that counts down.
        let now = if down { fl.down } else { fl.up };
        if !self.triggers[f as usize].is_empty() && self.branch_free {
            self.set_triggers_on_flip(b, inst, f, now, flipped);
        } else if !self.triggers[f as usize].is_empty() {
            // Legal and next bits change only on a flip: a branch instead
            // of rewriting a shared bitset word every time.
            let trig = b.create_block();
            let cont = b.create_block();
            b.ins().brif(flipped, trig, &[], cont, &[]);
            b.switch_to_block(trig);
            self.set_triggers(b, inst, f, now);
            b.ins().jump(cont, &[]);
            b.switch_to_block(cont);
        }
        if !self.fanout[f as usize].is_empty() {
            let entry = b.ins().iadd_imm_s(now, (f as i64) << 1);
            let spa = b.use_var(top);
            b.ins().store(mem, entry, spa, 0);
            let wide = b.ins().uextend(I64, flipped);
            let step = b.ins().ishl_imm_u(wide, 2);
            let spa = b.ins().iadd(spa, step);
            b.def_var(top, spa);
        }
    }

    /// Sets the legal/next bits triggered by component `f` to `now` where
    /// `flipped` (i8 0/1), without a branch: each word takes `w ^ (((w >>
    /// i) ^ now) & flipped & 1) << i`.
    pub(super) fn set_triggers_on_flip(
        &self,
        b: &mut FunctionBuilder,
        inst: Value,
        f: u32,
        now: Value,
        flipped: Value,
    ) {
        let fw = b.ins().uextend(I64, flipped);
        let nw = b.ins().uextend(I64, now);
        for t in &self.triggers[f as usize] {
            let (region, i) = match *t {
                Trig::Legal(i) => (self.layout.legal_bits, i),
                Trig::Next(i) => (self.layout.next_bits, i),
            };
            let off = (region + 8 * (i / 64)) as i32;
            let w = b.ins().load(I64, self.mem, inst, off);
            let sh = b.ins().ushr_imm_u(w, (i % 64) as i64);
            let diff = b.ins().bxor(sh, nw);
            let x = b.ins().band(diff, fw);
            let x = b.ins().band_imm_s(x, 1);
            let m = b.ins().ishl_imm_u(x, (i % 64) as i64);
            let w = b.ins().bxor(w, m);
            b.ins().store(self.mem, w, inst, off);
        }
    }
}
