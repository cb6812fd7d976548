//! Setting up and defining one generated function: what every emitter
//! does around a body (signature from the declaration, entry block with
//! the parameters, sealing, finalising, defining in the module).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{Function, InstBuilder, MemFlagsData, UserFuncName, Value};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Module, ModuleError};

/// The contexts an emitter reuses from one function to the next.
#[derive(Default)]
pub(crate) struct Scratch {
    ctx: Option<Context>,
    fctx: FunctionBuilderContext,
}

/// An emitter of function bodies into a module.
pub(crate) trait Emit: Sized {
    type M: Module;
    /// The namespace of this emitter's functions' names, so that names
    /// from different emitters never meet.
    const NAMESPACE: u32;

    fn module(&mut self) -> &mut Self::M;
    fn scratch(&mut self) -> &mut Scratch;

    /// A new function for the declared `id`, with its signature.
    fn begin(&mut self, id: FuncId) -> Function {
        let sig = self.module().declarations().get_function_decl(id).signature.clone();
        Function::with_name_signature(UserFuncName::user(Self::NAMESPACE, id.as_u32()), sig)
    }

    /// Defines `func` (built elsewhere) as `id`.
    fn finish(&mut self, id: FuncId, func: Function) -> Result<(), ModuleError> {
        let mut ctx = self.scratch().ctx.take().unwrap_or_else(|| self.module().make_context());
        ctx.func = func;
        let r = self.module().define_function(id, &mut ctx);
        self.module().clear_context(&mut ctx);
        self.scratch().ctx = Some(ctx);
        r
    }

    /// Builds and defines the body of `id`: `refs` first declares what the
    /// body calls or reads (functions, data) in the function, then `body`
    /// writes it from the entry block, given the parameters.
    fn define<R>(
        &mut self,
        id: FuncId,
        refs: impl FnOnce(&mut Self, &mut Function) -> R,
        body: impl FnOnce(&mut Self, &mut FunctionBuilder, &[Value], R),
    ) -> Result<(), ModuleError> {
        let mut func = self.begin(id);
        let r = refs(self, &mut func);
        let fc = self.module().isa().frontend_config();
        let mut fctx = std::mem::take(&mut self.scratch().fctx);
        {
            let mut b = FunctionBuilder::new(&mut func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let params = b.block_params(entry).to_vec();
            body(self, &mut b, &params, r);
            b.seal_all_blocks();
            b.finalize(fc);
        }
        self.scratch().fctx = fctx;
        self.finish(id, func)
    }

    /// [`Emit::define`] for a body that declares nothing.
    fn define_simple(
        &mut self,
        id: FuncId,
        body: impl FnOnce(&mut Self, &mut FunctionBuilder, &[Value]),
    ) -> Result<(), ModuleError> {
        self.define(id, |_, _| (), |e, b, p, ()| body(e, b, p))
    }
}

/// Copies `words` 64-bit words from `src` to `dst`, in a loop (instances
/// and their images are kilobytes: a loop keeps the function small).
pub(crate) fn copy_words(b: &mut FunctionBuilder, src: Value, dst: Value, words: i64) {
    let mem = MemFlagsData::trusted();
    let i = b.declare_var(I64);
    let zero = b.ins().iconst(I64, 0);
    b.def_var(i, zero);
    let head = b.create_block();
    let body = b.create_block();
    let done = b.create_block();
    b.ins().jump(head, &[]);
    b.switch_to_block(head);
    let iv = b.use_var(i);
    let more = b.ins().icmp_imm_s(IntCC::UnsignedLessThan, iv, words);
    b.ins().brif(more, body, &[], done, &[]);
    b.switch_to_block(body);
    let o = b.ins().ishl_imm_u(iv, 3);
    let s = b.ins().iadd(src, o);
    let d = b.ins().iadd(dst, o);
    let w = b.ins().load(I64, mem, s, 0);
    b.ins().store(mem, w, d, 0);
    let next = b.ins().iadd_imm_s(iv, 1);
    b.def_var(i, next);
    b.ins().jump(head, &[]);
    b.switch_to_block(done);
}
