//! The goal network's code (when the `goals` pass split it off): the whole
//! network evaluated from scratch at a terminal state, one byte per
//! component. It is emitted once per machine, for every engine (the copies
//! of a split network read the same goals), as
//! `void propel_goal_eval(const uint64_t *bits, uint8_t *values)`, which
//! calls chunk functions of at most [`CHUNK_INPUTS`] gate inputs each in
//! dependency order. Goal networks can be large (othello-comp2007's piece
//! counting is 188k components): as one function it was one thread's
//! work for 1.2 s; in chunks it compiles on every core.

use super::func::{Emit, Scratch};
use crate::propnet::{Evaluator, Kind, Propnet};
use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{FuncId, Linkage, Module, ModuleError};

/// Gate inputs read per chunk function (at most; smaller with small
/// compile batches).
pub(crate) const CHUNK_INPUTS: usize = 16_384;

/// Emits the goal network's evaluation in chunks of about `chunk_inputs`
/// gate inputs; returns `propel_goal_eval`.
pub(crate) fn emit<M: Module>(module: &mut M, net: &Propnet, chunk_inputs: usize) -> Result<FuncId, ModuleError> {
    let mut sig = module.make_signature();
    sig.params.extend([AbiParam::new(I64), AbiParam::new(I64)]);
    let order = Evaluator::new(net);
    let mut chunks: Vec<Vec<(&[u32], bool)>> = vec![Vec::new()];
    let mut inputs = 0;
    for (group, cyclic) in order.groups() {
        if inputs >= chunk_inputs {
            chunks.push(Vec::new());
            inputs = 0;
        }
        inputs += group.iter().map(|&c| net.inputs_of(c).len().max(1)).sum::<usize>();
        if let Some(last) = chunks.last_mut() {
            last.push((group, cyclic));
        }
    }
    let mut e = GoalEmitter { module, scratch: Scratch::default() };
    let mut ids = Vec::with_capacity(chunks.len());
    for (k, groups) in chunks.iter().enumerate() {
        let id = e.module.declare_function(&format!("propel_goal_chunk_{k}"), Linkage::Local, &sig)?;
        e.define_simple(id, |_, b, p| chunk_body(b, net, groups, p[0], p[1]))?;
        ids.push(id);
    }
    let eval = e.module.declare_function("propel_goal_eval", Linkage::Local, &sig)?;
    e.define(
        eval,
        |e, func| ids.iter().map(|&id| e.module.declare_func_in_func(id, func)).collect::<Vec<_>>(),
        |_, b, p, refs| {
            for r in refs {
                b.ins().call(r, p);
            }
            b.ins().return_(&[]);
        },
    )?;
    Ok(eval)
}

struct GoalEmitter<'a, M: Module> {
    module: &'a mut M,
    scratch: Scratch,
}

impl<M: Module> Emit for GoalEmitter<'_, M> {
    type M = M;
    const NAMESPACE: u32 = 3;
    fn module(&mut self) -> &mut M {
        self.module
    }
    fn scratch(&mut self) -> &mut Scratch {
        &mut self.scratch
    }
}

/// One chunk: each group's values in order; a cyclic group is iterated
/// up from all-false to its least fixed point (AND/OR only: monotone).
fn chunk_body(b: &mut FunctionBuilder, net: &Propnet, groups: &[(&[u32], bool)], bits: Value, values: Value) {
    let mem = MemFlagsData::trusted();
    let at = |c: u32| c as i32;
    for &(group, cyclic) in groups {
        if !cyclic {
            let c = group[0];
            let v = value(b, net, c, bits, values);
            b.ins().store(mem, v, values, at(c));
            continue;
        }
        let z = b.ins().iconst(I8, 0);
        for &c in group {
            b.ins().store(mem, z, values, at(c));
        }
        let again = b.create_block();
        let done = b.create_block();
        b.ins().jump(again, &[]);
        b.switch_to_block(again);
        let mut changed = b.ins().iconst(I8, 0);
        for &c in group {
            let old = b.ins().load(I8, mem, values, at(c));
            let v = value(b, net, c, bits, values);
            b.ins().store(mem, v, values, at(c));
            let d = b.ins().bxor(old, v);
            changed = b.ins().bor(changed, d);
        }
        b.ins().brif(changed, again, &[], done, &[]);
        b.switch_to_block(done);
    }
    b.ins().return_(&[]);
}

/// Component `c`'s value (an i8, 0 or 1) from the state's bits and the
/// values already stored: AND/OR as a chain of `band`/`bor` over its
/// inputs' bytes, complemented for NAND, NOR and NOT.
fn value(b: &mut FunctionBuilder, net: &Propnet, c: u32, bits: Value, values: Value) -> Value {
    let mem = MemFlagsData::trusted();
    let kind = net.kind(c);
    match kind {
        Kind::True => b.ins().iconst(I8, 1),
        Kind::False | Kind::Input(_) => b.ins().iconst(I8, 0),
        Kind::Base(i) => {
            // The state is u64 words: a word load reads bit i on any byte order.
            let w = b.ins().load(I64, mem, bits, 8 * (i / 64) as i32);
            let s = b.ins().ushr_imm_u(w, (i % 64) as i64);
            let bit = b.ins().band_imm_s(s, 1);
            b.ins().ireduce(I8, bit)
        }
        _ => {
            let ins = net.inputs_of(c);
            let Some((&first, rest)) = ins.split_first() else {
                return b.ins().iconst(I8, kind.gate(0, 0) as i64);
            };
            let mut acc = b.ins().load(I8, mem, values, first as i32);
            for &i in rest {
                let v = b.ins().load(I8, mem, values, i as i32);
                acc = match kind {
                    Kind::And | Kind::Nand => b.ins().band(acc, v),
                    _ => b.ins().bor(acc, v),
                };
            }
            match kind {
                Kind::Nand | Kind::Nor | Kind::Not => b.ins().bxor_imm_s(acc, 1),
                _ => acc,
            }
        }
    }
}
