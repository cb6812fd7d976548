//! The exported functions of a machine: they dispatch to the engine (one
//! network, or one copy of a split network) that holds the current state,
//! and run whole playouts, moving each new state to the engine of its copy.
//!
//! Instance memory: a header (the current engine at 0, the playout's
//! random generator state at 8), then each engine's memory at its region.

use super::emit::EngineFns;
use super::layout::Layout;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{AbiParam, Function, InstBuilder, MemFlagsData, Signature, UserFuncName, Value};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Switch};
use cranelift_module::{DataDescription, FuncId, Linkage, Module, ModuleError};

pub(crate) const CUR: i32 = 0;
pub(crate) const RNG: i32 = 8;
pub(crate) const HEADER: u32 = 64;

/// Where each engine's memory lies, and the whole size.
pub(crate) fn regions(layouts: &[Layout]) -> (Vec<u32>, u32) {
    let mut at = HEADER;
    let mut v = Vec::new();
    for l in layouts {
        v.push(at);
        at = (at + l.size).div_ceil(64) * 64;
    }
    (v, at)
}

pub(crate) struct Top<'a, M: Module> {
    pub(crate) module: &'a mut M,
    pub(crate) engines: &'a [EngineFns],
    pub(crate) layouts: &'a [Layout],
    pub(crate) regions: &'a [u32],
    /// The base the copies are specialised on (engine 1 when it holds).
    pub(crate) split: Option<u32>,
    pub(crate) roles: usize,
    /// The initial state's bitset.
    pub(crate) initial: Vec<u64>,
}

impl<M: Module> Top<'_, M> {
    fn sig(&self, params: &[cranelift_codegen::ir::Type], ret: Option<cranelift_codegen::ir::Type>) -> Signature {
        let mut s = self.module.make_signature();
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(ret.map(AbiParam::new));
        s
    }

    /// Emits the exports; returns them in [`super::EXPORTS`] order.
    pub(crate) fn emit(&mut self, info: Vec<u8>) -> Result<Vec<FuncId>, ModuleError> {
        let names = super::EXPORTS;
        let inst_only = self.sig(&[I64], None);
        let inst_i32 = self.sig(&[I64], Some(I32));
        let ptr_i32 = self.sig(&[I64, I64], Some(I32));
        let legal_sig = self.sig(&[I64, I32, I64, I32], Some(I32));
        let goals_sig = self.sig(&[I64, I32, I64], None);
        let playout_sig = self.sig(&[I64, I64, I64, I32], Some(I32));
        let info_sig = self.sig(&[], Some(I64));
        let mut ids = vec![
            self.module.declare_function(names[0], Linkage::Export, &inst_only)?,
            self.module.declare_function(names[1], Linkage::Export, &ptr_i32)?,
            self.module.declare_function(names[2], Linkage::Export, &ptr_i32)?,
            self.module.declare_function(names[3], Linkage::Export, &inst_i32)?,
            self.module.declare_function(names[4], Linkage::Export, &legal_sig)?,
            self.module.declare_function(names[5], Linkage::Export, &goals_sig)?,
            self.module.declare_function(names[6], Linkage::Export, &playout_sig)?,
            self.module.declare_function(names[7], Linkage::Export, &info_sig)?,
        ];
        ids.push(self.module.declare_function(names[8], Linkage::Export, &inst_i32)?);
        let initial_id = self.module.declare_data("propel_initial", Linkage::Local, false, false)?;
        let mut d = DataDescription::new();
        let mut bytes: Vec<u8> = self.initial.iter().flat_map(|w| w.to_le_bytes()).collect();
        if bytes.is_empty() {
            bytes.extend_from_slice(&[0; 8]);
        }
        d.define(bytes.into_boxed_slice());
        d.set_align(8);
        self.module.define_data(initial_id, &d)?;
        let info_id = self.module.declare_data("propel_meta", Linkage::Local, false, false)?;
        let mut d = DataDescription::new();
        d.define(info.into_boxed_slice());
        self.module.define_data(info_id, &d)?;

        self.emit_init(ids[0])?;
        self.emit_set_state(ids[1])?;
        self.emit_dispatch(ids[2], |e| e.set_joint)?;
        self.emit_dispatch(ids[3], |e| e.terminal)?;
        self.emit_dispatch(ids[4], |e| e.legal)?;
        self.emit_dispatch(ids[5], |e| e.goals)?;
        self.emit_playout(ids[6])?;
        // info
        let mut func = self.begin(ids[7]);
        let gv = self.module.declare_data_in_func(info_id, &mut func);
        self.body(ids[7], func, |b, _, _| {
            let a = b.ins().symbol_value(I64, gv);
            b.ins().return_(&[a]);
        })?;
        // reset: init, then the initial state.
        let mut func = self.begin(ids[8]);
        let init_ref = self.module.declare_func_in_func(ids[0], &mut func);
        let set_ref = self.module.declare_func_in_func(ids[1], &mut func);
        let gv = self.module.declare_data_in_func(initial_id, &mut func);
        self.body(ids[8], func, |b, p, _| {
            b.ins().call(init_ref, &[p[0]]);
            let bits = b.ins().symbol_value(I64, gv);
            let c = b.ins().call(set_ref, &[p[0], bits]);
            let r = b.inst_results(c)[0];
            b.ins().return_(&[r]);
        })?;
        Ok(ids)
    }

    fn begin(&mut self, id: FuncId) -> Function {
        let decl = self.module.declarations().get_function_decl(id);
        Function::with_name_signature(UserFuncName::user(1, id.as_u32()), decl.signature.clone())
    }

    /// Builds a body: `f(builder, entry params, engine function refs)`.
    fn body(
        &mut self,
        id: FuncId,
        mut func: Function,
        f: impl FnOnce(&mut FunctionBuilder, &[Value], &[Vec<cranelift_codegen::ir::FuncRef>]),
    ) -> Result<(), ModuleError> {
        let refs: Vec<Vec<_>> = self
            .engines
            .iter()
            .map(|e| {
                [e.init, e.set_state, e.set_joint, e.terminal, e.legal, e.goals, e.step]
                    .iter()
                    .map(|&fid| self.module.declare_func_in_func(fid, &mut func))
                    .collect()
            })
            .collect();
        let fc = self.module.isa().frontend_config();
        let mut fctx = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let params = b.block_params(entry).to_vec();
            f(&mut b, &params, &refs);
            b.seal_all_blocks();
            b.finalize(fc);
        }
        let mut ctx = Context::for_function(func);
        self.module.define_function(id, &mut ctx)
    }

    fn emit_init(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let func = self.begin(id);
        let regions = self.regions.to_vec();
        self.body(id, func, |b, p, refs| {
            let z = b.ins().iconst(I32, 0);
            b.ins().store(MemFlagsData::trusted(), z, p[0], CUR);
            for (k, &r) in regions.iter().enumerate() {
                let inst = b.ins().iadd_imm_s(p[0], r as i64);
                b.ins().call(refs[k][0], &[inst]);
            }
            b.ins().return_(&[]);
        })
    }

    /// The engine for state `bits` (i32): the split base's value, or 0.
    fn engine_of(b: &mut FunctionBuilder, bits: Value, split: Option<u32>) -> Value {
        match split {
            None => b.ins().iconst(I32, 0),
            Some(base) => {
                let w = b.ins().load(I64, MemFlagsData::trusted(), bits, (8 * (base / 64)) as i32);
                let s = b.ins().ushr_imm_u(w, (base % 64) as i64);
                let bit = b.ins().band_imm_s(s, 1);
                b.ins().ireduce(I32, bit)
            }
        }
    }

    fn emit_set_state(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let func = self.begin(id);
        let regions = self.regions.to_vec();
        let split = self.split;
        self.body(id, func, |b, p, refs| {
            let e = Self::engine_of(b, p[1], split);
            b.ins().store(MemFlagsData::trusted(), e, p[0], CUR);
            let r = Self::switch_call(b, e, &regions, |b, k, inst| {
                let c = b.ins().call(refs[k][1], &[inst, p[1]]);
                b.inst_results(c)[0]
            });
            b.ins().return_(&[r]);
        })
    }

    /// Calls engine `which`'s function `pick` with this function's
    /// arguments (the instance moved to the engine's region).
    fn emit_dispatch(&mut self, id: FuncId, pick: fn(&EngineFns) -> FuncId) -> Result<(), ModuleError> {
        let func = self.begin(id);
        let regions = self.regions.to_vec();
        let index = {
            let e = &self.engines[0];
            let f = pick(e);
            [e.init, e.set_state, e.set_joint, e.terminal, e.legal, e.goals, e.step]
                .iter()
                .position(|&x| x == f)
                .unwrap_or(0)
        };
        let has_ret = !self.module.declarations().get_function_decl(id).signature.returns.is_empty();
        self.body(id, func, |b, p, refs| {
            let e = b.ins().load(I32, MemFlagsData::trusted(), p[0], CUR);
            let r = Self::switch_call(b, e, &regions, |b, k, inst| {
                let mut args = vec![inst];
                args.extend_from_slice(&p[1..]);
                let c = b.ins().call(refs[k][index], &args);
                if has_ret {
                    b.inst_results(c)[0]
                } else {
                    b.ins().iconst(I32, 0)
                }
            });
            if has_ret {
                b.ins().return_(&[r]);
            } else {
                b.ins().return_(&[]);
            }
        })
    }

    /// `switch (e) { case k: result = call(k, inst + region_k) }`; an engine
    /// out of range returns -3.
    fn switch_call(
        b: &mut FunctionBuilder,
        e: Value,
        regions: &[u32],
        mut call: impl FnMut(&mut FunctionBuilder, usize, Value) -> Value,
    ) -> Value {
        let done = b.create_block();
        b.append_block_param(done, I32);
        let bad = b.create_block();
        let mut sw = Switch::new();
        let blocks: Vec<_> = (0..regions.len()).map(|_| b.create_block()).collect();
        for (k, &blk) in blocks.iter().enumerate() {
            sw.set_entry(k as u128, blk);
        }
        // Every exported function takes the instance first.
        let entry = b.func.layout.entry_block().expect("a function under construction has an entry block");
        let inst0 = b.func.dfg.block_params(entry)[0];
        sw.emit(b, e, bad);
        for (k, &blk) in blocks.iter().enumerate() {
            b.switch_to_block(blk);
            let inst = b.ins().iadd_imm_s(inst0, regions[k] as i64);
            let r = call(b, k, inst);
            b.ins().jump(done, &[cranelift_codegen::ir::BlockArg::Value(r)]);
        }
        b.switch_to_block(bad);
        let m3 = b.ins().iconst(I32, -3);
        b.ins().jump(done, &[cranelift_codegen::ir::BlockArg::Value(m3)]);
        b.switch_to_block(done);
        b.block_params(done)[0]
    }

    /// Whole random playouts: see `propel_playout` in the module docs.
    fn emit_playout(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let func = self.begin(id);
        let regions = self.regions.to_vec();
        let layouts = self.layouts.to_vec();
        let split = self.split;
        let roles = self.roles;
        let mem = MemFlagsData::trusted();
        self.body(id, func, |b, p, refs| {
            let (top, seed, goals_out, max_steps) = (p[0], p[1], p[2], p[3]);
            b.ins().store(mem, seed, top, RNG);
            let slot = b.create_sized_stack_slot(cranelift_codegen::ir::StackSlotData::new(
                cranelift_codegen::ir::StackSlotKind::ExplicitSlot,
                16,
                3,
            ));
            let len = b.declare_var(I32);
            let zero = b.ins().iconst(I32, 0);
            b.def_var(len, zero);
            let head = b.create_block();
            let fail = b.create_block();
            b.append_block_param(fail, I32);
            b.ins().jump(head, &[]);
            b.switch_to_block(head);
            let e = b.ins().load(I32, mem, top, CUR);
            let mut sw = Switch::new();
            let blocks: Vec<_> = (0..regions.len()).map(|_| b.create_block()).collect();
            for (k, &blk) in blocks.iter().enumerate() {
                sw.set_entry(k as u128, blk);
            }
            let m3 = b.ins().iconst(I32, -3);
            let bad = b.create_block();
            sw.emit(b, e, bad);
            b.switch_to_block(bad);
            b.ins().jump(fail, &[cranelift_codegen::ir::BlockArg::Value(m3)]);
            for (k, &blk) in blocks.iter().enumerate() {
                b.switch_to_block(blk);
                let inst = b.ins().iadd_imm_s(top, regions[k] as i64);
                let c = b.ins().call(refs[k][3], &[inst]);
                let t = b.inst_results(c)[0];
                let finish = b.create_block();
                let go = b.create_block();
                b.ins().brif(t, finish, &[], go, &[]);
                // Terminal: the goals, from this engine.
                b.switch_to_block(finish);
                let mask = b.ins().stack_addr(I64, slot, 0);
                for r in 0..roles {
                    let role = b.ins().iconst(I32, r as i64);
                    b.ins().call(refs[k][5], &[inst, role, mask]);
                    let w1 = b.ins().load(I64, mem, mask, 8);
                    let w0 = b.ins().load(I64, mem, mask, 0);
                    // Highest set bit: in w1 (127 - clz) if any, else in w0
                    // (63 - clz; -1 when there is no goal at all).
                    let c1 = b.ins().clz(w1);
                    let k127 = b.ins().iconst(I64, 127);
                    let h1 = b.ins().isub(k127, c1);
                    let c0 = b.ins().clz(w0);
                    let k63 = b.ins().iconst(I64, 63);
                    let h0 = b.ins().isub(k63, c0);
                    let any1 = b.ins().icmp_imm_s(IntCC::NotEqual, w1, 0);
                    let v = b.ins().select(any1, h1, h0);
                    let v = b.ins().ireduce(I32, v);
                    b.ins().store(mem, v, goals_out, (4 * r) as i32);
                }
                let n = b.use_var(len);
                b.ins().return_(&[n]);
                // Not terminal: one step here, then the next state to its engine.
                b.switch_to_block(go);
                let n = b.use_var(len);
                let over = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, n, max_steps);
                let step = b.create_block();
                let m2 = b.ins().iconst(I32, -2);
                b.ins().brif(over, fail, &[cranelift_codegen::ir::BlockArg::Value(m2)], step, &[]);
                b.switch_to_block(step);
                let rng = b.ins().iadd_imm_s(top, RNG as i64);
                let c = b.ins().call(refs[k][6], &[inst, rng]);
                let rc = b.inst_results(c)[0];
                let stepped = b.create_block();
                b.ins().brif(rc, fail, &[cranelift_codegen::ir::BlockArg::Value(rc)], stepped, &[]);
                b.switch_to_block(stepped);
                let scratch = b.ins().iadd_imm_s(inst, layouts[k].scratch_bits as i64);
                let e2 = Self::engine_of(b, scratch, split);
                b.ins().store(mem, e2, top, CUR);
                let r = Self::switch_call(b, e2, &regions, |b, j, inst2| {
                    let c = b.ins().call(refs[j][1], &[inst2, scratch]);
                    b.inst_results(c)[0]
                });
                let n = b.use_var(len);
                let n = b.ins().iadd_imm_s(n, 1);
                b.def_var(len, n);
                let next = b.create_block();
                b.ins().brif(r, fail, &[cranelift_codegen::ir::BlockArg::Value(m3)], next, &[]);
                b.switch_to_block(next);
                b.ins().jump(head, &[]);
            }
            b.switch_to_block(fail);
            let code = b.block_params(fail)[0];
            b.ins().return_(&[code]);
        })
    }
}
