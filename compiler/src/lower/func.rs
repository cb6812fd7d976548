//! Setting up and defining one generated function: what every emitter
//! does around a body (signature from the declaration, entry block with
//! the parameters, sealing, finalising, defining in the module).

use cranelift_codegen::ir::{Function, UserFuncName, Value};
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
