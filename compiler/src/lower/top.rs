//! The exported functions of a machine (the table of
//! [`propel_abi::exports`]): they dispatch to the engine (one network, or
//! one copy of a split network) that holds the current state, step and
//! run whole playouts moving each new state to the engine of its copy,
//! copy instances, and answer names and counts.
//!
//! Instance memory: a header (the current engine at
//! [`propel_abi::layout::CURRENT`], the playout's random generator state
//! at [`propel_abi::layout::RNG`]), then each engine's memory at its
//! region.

use super::engine::EngineFns;
use super::func::{copy_words, Emit, Scratch};
use super::layout::{words, Layout};
use crate::propnet::Propnet;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64, I8};
use cranelift_codegen::ir::{AbiParam, BlockArg, FuncRef, InstBuilder, MemFlagsData, Signature, Value};
use cranelift_frontend::{FunctionBuilder, Switch};
use cranelift_module::{DataDescription, DataId, FuncId, Linkage, Module, ModuleError};
use propel_abi::layout::{CURRENT, RNG};
use propel_abi::{Export, Ty};

const CUR: i32 = CURRENT as i32;

/// The signature of an export, from the table.
fn signature<M: Module>(module: &M, e: Export) -> Signature {
    let ty = |t: Ty| match t {
        t if t.is_pointer() => module.isa().pointer_type(),
        t if t.bits() == 32 => I32,
        _ => I64,
    };
    let mut s = module.make_signature();
    s.params.extend(e.params().iter().map(|&(_, t)| AbiParam::new(ty(t))));
    if e.ret() != Ty::Void {
        s.returns.push(AbiParam::new(ty(e.ret())));
    }
    s
}

/// Every export, declared.
pub(crate) struct ExportIds(Vec<FuncId>);

impl ExportIds {
    pub(crate) fn declare<M: Module>(module: &mut M) -> Result<ExportIds, ModuleError> {
        let ids = Export::ALL
            .iter()
            .map(|&e| module.declare_function(e.name(), Linkage::Export, &signature(module, e)))
            .collect::<Result<_, _>>()?;
        Ok(ExportIds(ids))
    }

    pub(crate) fn get(&self, e: Export) -> FuncId {
        self.0[e.index()]
    }

    /// Each export's id, in [`Export::ALL`] order.
    pub(crate) fn all(&self) -> &[FuncId] {
        &self.0
    }
}

/// The names a machine answers with (`propel_role_name`, ...).
pub(crate) struct Names<'a> {
    pub(crate) roles: &'a [String],
    pub(crate) bases: Vec<&'a str>,
    pub(crate) inputs: Vec<&'a str>,
    pub(crate) input_roles: Vec<u32>,
}

impl<'a> Names<'a> {
    pub(crate) fn of(net: &'a Propnet) -> Names<'a> {
        Names {
            roles: &net.roles,
            bases: net.bases.iter().map(|b| b.name.as_str()).collect(),
            inputs: net.inputs.iter().map(|i| i.name.as_str()).collect(),
            input_roles: net.inputs.iter().map(|i| i.role).collect(),
        }
    }
}

pub(crate) struct Top<'a, M: Module> {
    pub(crate) module: &'a mut M,
    pub(crate) engines: &'a [EngineFns],
    pub(crate) layouts: &'a [Layout],
    pub(crate) regions: &'a [u32],
    pub(crate) size: u32,
    /// The base the copies are specialised on (engine 1 when it holds).
    pub(crate) split: Option<u32>,
    pub(crate) names: Names<'a>,
    /// The initial state's bitset.
    pub(crate) initial: Vec<u64>,
    pub(crate) scratch: Scratch,
}

impl<M: Module> Emit for Top<'_, M> {
    type M = M;
    const NAMESPACE: u32 = 1;
    fn module(&mut self) -> &mut M {
        self.module
    }
    fn scratch(&mut self) -> &mut Scratch {
        &mut self.scratch
    }
}

impl<M: Module> Top<'_, M> {
    /// Defines every export but the lanes' (see [`super::lanes`]); `info`
    /// is the metadata text.
    pub(crate) fn emit(&mut self, ids: &ExportIds, info: &str) -> Result<(), ModuleError> {
        for &e in Export::ALL {
            let id = ids.get(e);
            match e {
                Export::Init => self.emit_init(id)?,
                Export::Reset => self.emit_reset(id, ids)?,
                Export::SetState => self.emit_set_state(id)?,
                Export::GetState => self.emit_copy_out(id, |l| l.base_bits)?,
                Export::SetJoint => self.emit_dispatch(id, |e| e.set_joint)?,
                Export::GetNext => self.emit_copy_out(id, |l| l.next_bits)?,
                Export::Step => self.emit_step(id)?,
                Export::Terminal => self.emit_dispatch(id, |e| e.terminal)?,
                Export::Legal => self.emit_dispatch(id, |e| e.legal)?,
                Export::Goals => self.emit_dispatch(id, |e| e.goals)?,
                Export::Playout => self.emit_playout(id)?,
                Export::CloneInstance => self.emit_clone(id)?,
                Export::RoleName => {
                    let names: Vec<&str> = self.names.roles.iter().map(String::as_str).collect();
                    self.emit_name(id, "propel_role_names", &names)?
                }
                Export::BaseName => {
                    let names = std::mem::take(&mut self.names.bases);
                    self.emit_name(id, "propel_base_names", &names)?
                }
                Export::InputName => {
                    let names = std::mem::take(&mut self.names.inputs);
                    self.emit_name(id, "propel_input_names", &names)?
                }
                Export::InputRole => {
                    let roles = std::mem::take(&mut self.names.input_roles);
                    self.emit_input_role(id, &roles)?
                }
                Export::InstanceSize => self.emit_const(id, self.size)?,
                Export::Roles => self.emit_const(id, self.names.roles.len() as u32)?,
                Export::Bases => self.emit_const(id, self.layouts[0].counts.bases)?,
                Export::Inputs => self.emit_const(id, self.layouts[0].counts.inputs)?,
                Export::Info => {
                    let mut bytes = info.as_bytes().to_vec();
                    bytes.push(0);
                    let data = self.data("propel_meta", bytes, 1)?;
                    self.emit_address(id, data)?
                }
                Export::LanesState | Export::LanesNext | Export::LanesGoals | Export::LanesPlan => {}
            }
        }
        Ok(())
    }

    fn data(&mut self, name: &str, bytes: Vec<u8>, align: u64) -> Result<DataId, ModuleError> {
        let id = self.module.declare_data(name, Linkage::Local, false, false)?;
        let mut d = DataDescription::new();
        d.define(bytes.into_boxed_slice());
        d.set_align(align);
        self.module.define_data(id, &d)?;
        Ok(id)
    }

    /// Declares `pick` of every engine in `func`.
    fn engine_refs(
        &mut self,
        func: &mut cranelift_codegen::ir::Function,
        pick: fn(&EngineFns) -> FuncId,
    ) -> Vec<FuncRef> {
        self.engines.iter().map(|e| self.module.declare_func_in_func(pick(e), func)).collect()
    }

    fn emit_init(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let regions = self.regions.to_vec();
        self.define(
            id,
            |t, func| t.engine_refs(func, |e| e.init),
            |_, b, p, init| {
                let z = b.ins().iconst(I32, 0);
                b.ins().store(MemFlagsData::trusted(), z, p[0], CUR);
                for (k, &r) in regions.iter().enumerate() {
                    let inst = b.ins().iadd_imm_s(p[0], r as i64);
                    b.ins().call(init[k], &[inst]);
                }
                b.ins().return_(&[]);
            },
        )
    }

    /// `init`, then the initial state.
    fn emit_reset(&mut self, id: FuncId, ids: &ExportIds) -> Result<(), ModuleError> {
        let mut bytes: Vec<u8> = self.initial.iter().flat_map(|w| w.to_le_bytes()).collect();
        if bytes.is_empty() {
            bytes.extend_from_slice(&[0; 8]);
        }
        let initial = self.data("propel_initial", bytes, 8)?;
        let (init, set_state) = (ids.get(Export::Init), ids.get(Export::SetState));
        self.define(
            id,
            |t, func| {
                let m = &mut *t.module;
                (
                    m.declare_func_in_func(init, func),
                    m.declare_func_in_func(set_state, func),
                    m.declare_data_in_func(initial, func),
                )
            },
            |_, b, p, (init, set_state, gv)| {
                b.ins().call(init, &[p[0]]);
                let bits = b.ins().symbol_value(I64, gv);
                let c = b.ins().call(set_state, &[p[0], bits]);
                let r = b.inst_results(c)[0];
                b.ins().return_(&[r]);
            },
        )
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
        let regions = self.regions.to_vec();
        let split = self.split;
        self.define(
            id,
            |t, func| t.engine_refs(func, |e| e.set_state),
            |_, b, p, set_state| {
                let e = Self::engine_of(b, p[1], split);
                b.ins().store(MemFlagsData::trusted(), e, p[0], CUR);
                let r = Self::switch_call(b, e, p[0], &regions, |b, k, inst| {
                    let c = b.ins().call(set_state[k], &[inst, p[1]]);
                    b.inst_results(c)[0]
                });
                b.ins().return_(&[r]);
            },
        )
    }

    /// Copies the current engine's bitset at `field` (a state's words) to
    /// the second argument.
    fn emit_copy_out(&mut self, id: FuncId, field: fn(&Layout) -> u32) -> Result<(), ModuleError> {
        let regions = self.regions.to_vec();
        let offsets: Vec<u32> = self.layouts.iter().map(field).collect();
        let n = words(self.layouts[0].counts.bases);
        self.define_simple(id, |_, b, p| {
            let mem = MemFlagsData::trusted();
            let e = b.ins().load(I32, mem, p[0], CUR);
            Self::switch_call(b, e, p[0], &regions, |b, k, inst| {
                for w in 0..n {
                    let v = b.ins().load(I64, mem, inst, (offsets[k] + 8 * w) as i32);
                    b.ins().store(mem, v, p[1], (8 * w) as i32);
                }
                b.ins().iconst(I32, 0)
            });
            b.ins().return_(&[]);
        })
    }

    /// Calls the current engine's function `pick` with this function's
    /// arguments (the instance moved to the engine's region).
    fn emit_dispatch(&mut self, id: FuncId, pick: fn(&EngineFns) -> FuncId) -> Result<(), ModuleError> {
        let regions = self.regions.to_vec();
        let has_ret = !self.module.declarations().get_function_decl(id).signature.returns.is_empty();
        self.define(
            id,
            |t, func| t.engine_refs(func, pick),
            |_, b, p, f| {
                let e = b.ins().load(I32, MemFlagsData::trusted(), p[0], CUR);
                let r = Self::switch_call(b, e, p[0], &regions, |b, k, inst| {
                    let mut args = vec![inst];
                    args.extend_from_slice(&p[1..]);
                    let c = b.ins().call(f[k], &args);
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
            },
        )
    }

    /// Plays a joint move in the current engine, then makes the next state
    /// current in the engine of its copy.
    fn emit_step(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let regions = self.regions.to_vec();
        let layouts = self.layouts.to_vec();
        let split = self.split;
        self.define(
            id,
            |t, func| (t.engine_refs(func, |e| e.set_joint), t.engine_refs(func, |e| e.set_state)),
            |_, b, p, (set_joint, set_state)| {
                let mem = MemFlagsData::trusted();
                let (top, moves) = (p[0], p[1]);
                let e = b.ins().load(I32, mem, top, CUR);
                let r = Self::switch_call(b, e, top, &regions, |b, k, inst| {
                    let c = b.ins().call(set_joint[k], &[inst, moves]);
                    let rc = b.inst_results(c)[0];
                    let played = b.create_block();
                    let out = b.create_block();
                    b.append_block_param(out, I32);
                    b.ins().brif(rc, out, &[BlockArg::Value(rc)], played, &[]);
                    b.switch_to_block(played);
                    // The next state, copied: setting it changes `next`.
                    let l = &layouts[k];
                    for w in 0..words(l.counts.bases) {
                        let v = b.ins().load(I64, mem, inst, (l.next_bits + 8 * w) as i32);
                        b.ins().store(mem, v, inst, (l.scratch_bits + 8 * w) as i32);
                    }
                    let scratch = b.ins().iadd_imm_s(inst, l.scratch_bits as i64);
                    let e2 = Self::engine_of(b, scratch, split);
                    b.ins().store(mem, e2, top, CUR);
                    let r = Self::switch_call(b, e2, top, &regions, |b, j, inst2| {
                        let c = b.ins().call(set_state[j], &[inst2, scratch]);
                        b.inst_results(c)[0]
                    });
                    b.ins().jump(out, &[BlockArg::Value(r)]);
                    b.switch_to_block(out);
                    b.block_params(out)[0]
                });
                b.ins().return_(&[r]);
            },
        )
    }

    /// `memcpy(dst, src, size)`, a word at a time.
    fn emit_clone(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let words = (self.size / 8) as i64;
        self.define_simple(id, |_, b, p| {
            copy_words(b, p[0], p[1], words);
            b.ins().return_(&[]);
        })
    }

    /// `const char *f(index)`: the index's name, NULL past the last. The
    /// names lie in one block of data: a `u32` offset per name, then the
    /// NUL-terminated texts.
    fn emit_name(&mut self, id: FuncId, symbol: &str, names: &[&str]) -> Result<(), ModuleError> {
        let n = names.len();
        let mut offsets = Vec::with_capacity(4 * n);
        let mut text = Vec::new();
        for name in names {
            offsets.extend_from_slice(&((4 * n + text.len()) as u32).to_le_bytes());
            text.extend_from_slice(name.as_bytes());
            text.push(0);
        }
        offsets.extend(text);
        if offsets.is_empty() {
            offsets.push(0);
        }
        let data = self.data(symbol, offsets, 4)?;
        // The text at the table's start plus the entry's offset.
        let text = |b: &mut FunctionBuilder, table: Value, entry: Value| {
            let off = b.ins().uextend(I64, entry);
            b.ins().iadd(table, off)
        };
        self.emit_lookup(id, data, n, text, (I64, 0))
    }

    /// `int propel_input_role(uint32_t input)`: from a table, -1 past the end.
    fn emit_input_role(&mut self, id: FuncId, roles: &[u32]) -> Result<(), ModuleError> {
        let mut bytes: Vec<u8> = roles.iter().flat_map(|r| r.to_le_bytes()).collect();
        if bytes.is_empty() {
            bytes.extend_from_slice(&[0; 4]);
        }
        let data = self.data("propel_input_roles", bytes, 4)?;
        self.emit_lookup(id, data, roles.len(), |_, _, entry| entry, (I32, -1))
    }

    /// `f(index)`: entry `index` of the `u32` table `data` of `n` entries,
    /// made the result by `hit(builder, table address, entry)`; past the
    /// end, the constant `miss` (type, value).
    fn emit_lookup(
        &mut self,
        id: FuncId,
        data: DataId,
        n: usize,
        hit: impl FnOnce(&mut FunctionBuilder, Value, Value) -> Value,
        miss: (cranelift_codegen::ir::Type, i64),
    ) -> Result<(), ModuleError> {
        self.define(
            id,
            |t, func| t.module.declare_data_in_func(data, func),
            |_, b, p, gv| {
                let found = b.create_block();
                let none = b.create_block();
                let ok = b.ins().icmp_imm_s(IntCC::UnsignedLessThan, p[0], n as i64);
                b.ins().brif(ok, found, &[], none, &[]);
                b.switch_to_block(found);
                let table = b.ins().symbol_value(I64, gv);
                let i = b.ins().uextend(I64, p[0]);
                let o = b.ins().ishl_imm_u(i, 2);
                let at = b.ins().iadd(table, o);
                let entry = b.ins().load(I32, MemFlagsData::trusted(), at, 0);
                let r = hit(b, table, entry);
                b.ins().return_(&[r]);
                b.switch_to_block(none);
                let m = b.ins().iconst(miss.0, miss.1);
                b.ins().return_(&[m]);
            },
        )
    }

    fn emit_const(&mut self, id: FuncId, v: u32) -> Result<(), ModuleError> {
        self.define_simple(id, |_, b, _| {
            let c = b.ins().iconst(I32, v as i64);
            b.ins().return_(&[c]);
        })
    }

    /// Returns the address of `data`.
    fn emit_address(&mut self, id: FuncId, data: DataId) -> Result<(), ModuleError> {
        self.define(
            id,
            |t, func| t.module.declare_data_in_func(data, func),
            |_, b, _, gv| {
                let a = b.ins().symbol_value(I64, gv);
                b.ins().return_(&[a]);
            },
        )
    }

    /// `switch (e) { case k: result = call(k, inst + region_k) }`; an engine
    /// out of range gives -3.
    fn switch_call(
        b: &mut FunctionBuilder,
        e: Value,
        inst0: Value,
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
        sw.emit(b, e, bad);
        for (k, &blk) in blocks.iter().enumerate() {
            b.switch_to_block(blk);
            let inst = b.ins().iadd_imm_s(inst0, regions[k] as i64);
            let r = call(b, k, inst);
            b.ins().jump(done, &[BlockArg::Value(r)]);
        }
        b.switch_to_block(bad);
        let m3 = b.ins().iconst(I32, -3);
        b.ins().jump(done, &[BlockArg::Value(m3)]);
        b.switch_to_block(done);
        b.block_params(done)[0]
    }

    /// Whole random playouts: see `propel_playout` in the table.
    fn emit_playout(&mut self, id: FuncId) -> Result<(), ModuleError> {
        let regions = self.regions.to_vec();
        let layouts = self.layouts.to_vec();
        let split = self.split;
        let roles = self.names.roles.len();
        let mem = MemFlagsData::trusted();
        self.define(
            id,
            |t, func| {
                (
                    t.engine_refs(func, |e| e.terminal),
                    t.engine_refs(func, |e| e.goals),
                    t.engine_refs(func, |e| e.step),
                    t.engine_refs(func, |e| e.set_state),
                )
            },
            |_, b, p, (terminal, goals, step_fn, set_state)| {
                let (top, seed, goals_out, max_steps) = (p[0], p[1], p[2], p[3]);
                b.ins().store(mem, seed, top, RNG as i32);
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
                b.ins().jump(fail, &[BlockArg::Value(m3)]);
                for (k, &blk) in blocks.iter().enumerate() {
                    b.switch_to_block(blk);
                    let inst = b.ins().iadd_imm_s(top, regions[k] as i64);
                    let c = b.ins().call(terminal[k], &[inst]);
                    let t = b.inst_results(c)[0];
                    let finish = b.create_block();
                    let go = b.create_block();
                    b.ins().brif(t, finish, &[], go, &[]);
                    // Terminal: the goals, from this engine, unless the
                    // caller reads them itself (a null `goals`).
                    b.switch_to_block(finish);
                    let read = b.create_block();
                    let skip = b.create_block();
                    b.ins().brif(goals_out, read, &[], skip, &[]);
                    b.switch_to_block(skip);
                    let n = b.use_var(len);
                    b.ins().return_(&[n]);
                    b.switch_to_block(read);
                    let mask = b.ins().stack_addr(I64, slot, 0);
                    // A goal above 100 (not a GDL value: the rules are
                    // broken there) makes the playout fail with -4, as the
                    // prover fails, once every role's goal is written.
                    let mut over = b.ins().iconst(I8, 0);
                    for r in 0..roles {
                        let role = b.ins().iconst(I32, r as i64);
                        b.ins().call(goals[k], &[inst, role, mask]);
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
                        let above = b.ins().icmp_imm_s(IntCC::SignedGreaterThan, v, 100);
                        over = b.ins().bor(over, above);
                    }
                    let n = b.use_var(len);
                    let m4 = b.ins().iconst(I32, -4);
                    let n = b.ins().select(over, m4, n);
                    b.ins().return_(&[n]);
                    // Not terminal: one step here, then the next state to its engine.
                    b.switch_to_block(go);
                    let n = b.use_var(len);
                    let over = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, n, max_steps);
                    let step = b.create_block();
                    let m2 = b.ins().iconst(I32, -2);
                    b.ins().brif(over, fail, &[BlockArg::Value(m2)], step, &[]);
                    b.switch_to_block(step);
                    let rng = b.ins().iadd_imm_s(top, RNG as i64);
                    let c = b.ins().call(step_fn[k], &[inst, rng]);
                    let rc = b.inst_results(c)[0];
                    let stepped = b.create_block();
                    b.ins().brif(rc, fail, &[BlockArg::Value(rc)], stepped, &[]);
                    b.switch_to_block(stepped);
                    let scratch = b.ins().iadd_imm_s(inst, layouts[k].scratch_bits as i64);
                    let e2 = Self::engine_of(b, scratch, split);
                    b.ins().store(mem, e2, top, CUR);
                    let r = Self::switch_call(b, e2, top, &regions, |b, j, inst2| {
                        let c = b.ins().call(set_state[j], &[inst2, scratch]);
                        b.inst_results(c)[0]
                    });
                    let n = b.use_var(len);
                    let n = b.ins().iadd_imm_s(n, 1);
                    b.def_var(len, n);
                    let next = b.create_block();
                    b.ins().brif(r, fail, &[BlockArg::Value(m3)], next, &[]);
                    b.switch_to_block(next);
                    b.ins().jump(head, &[]);
                }
                b.switch_to_block(fail);
                let code = b.block_params(fail)[0];
                b.ins().return_(&[code]);
            },
        )
    }
}
