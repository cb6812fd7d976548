//! A [`Module`] that compiles on every core. The emitters define function
//! bodies as usual; this wrapper keeps them and, once they hold
//! [`BATCH_INSTS`] instructions (and at [`Parallel::finish`]), compiles
//! them on worker threads (largest first, so the long ones do not come
//! last) and hands the machine code to the wrapped module as bytes, in
//! definition order. Code generation is most of a large machine's build
//! time, and each function compiles on its own. Compiling in batches keeps
//! memory to a few batches of IR (about 80 bytes an instruction) plus the
//! machine code (about two batches at the peak: the emitter's batch of
//! bodies and the copies being compiled), whatever the network's size.

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::{isa, Context};
use cranelift_module::{
    DataDescription, DataId, FuncId, Linkage, Module, ModuleDeclarations, ModuleError, ModuleReloc, ModuleResult,
};
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) struct Parallel<'m, M: Module> {
    inner: &'m mut M,
    /// Compiles the bodies defined while [`Parallel::bulk_code`] is on
    /// (the straight-line bulk of a machine; the module's own ISA
    /// compiles the rest).
    bulk_isa: isa::OwnedTargetIsa,
    bulk: bool,
    /// Bodies to compile, and whether each is bulk code.
    pending: Vec<(FuncId, Function, bool)>,
    /// IR instructions in `pending`.
    pending_insts: usize,
    /// Compile a batch once `pending_insts` reaches this.
    batch_insts: usize,
    threads: usize,
    dump_asm: bool,
    pass_times: bool,
    cancel: super::options::Cancel,
}

/// IR instructions held before a batch is compiled: enough for every core
/// to have work, few enough to bound memory (a few hundred MB).
/// `CodegenOptions::batch_insts` overrides it; the engines' bodies and the goal
/// network's chunks are sized from it, so tests with tiny batches run
/// every path that cuts code into pieces.
pub(crate) const BATCH_INSTS: usize = 4_000_000;

/// One function's machine code, ready for `define_function_bytes`.
struct Compiled {
    alignment: u64,
    bytes: Vec<u8>,
    relocs: Vec<ModuleReloc>,
    /// The code as text, when `CodegenOptions::dump_asm` asks for it.
    asm: Option<String>,
}

/// Runs `work(state, k)` for every `k` in `0..count` on `threads` worker
/// threads, each with its own `init()` state (handed to `finish` when the
/// thread runs out of work); returns the results in `k` order. A panic in
/// a worker is passed on.
pub(crate) fn on_workers<S, T: Send>(
    threads: usize,
    count: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> T + Sync,
    finish: impl Fn(S) + Sync,
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let workers = threads.min(count).max(1);
    let mut done: Vec<(usize, T)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut state = init();
                    let mut out = Vec::new();
                    loop {
                        // Relaxed: the counter only hands out distinct
                        // indices; what the work reads was written before
                        // the threads started.
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= count {
                            break;
                        }
                        out.push((k, work(&mut state, k)));
                    }
                    finish(state);
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    done.sort_by_key(|d| d.0);
    done.into_iter().map(|(_, t)| t).collect()
}

impl<'m, M: Module> Parallel<'m, M> {
    /// `bulk_isa` must target the wrapped module's processor and calling
    /// convention; it may differ in optimisation level.
    pub(crate) fn new(inner: &'m mut M, bulk_isa: isa::OwnedTargetIsa, options: &super::CodegenOptions) -> Self {
        Parallel {
            inner,
            bulk_isa,
            bulk: false,
            pending: Vec::new(),
            pending_insts: 0,
            batch_insts: options.batch_insts.max(1),
            threads: options.workers(),
            dump_asm: options.dump_asm,
            pass_times: options.pass_times,
            cancel: options.cancel.clone(),
        }
    }

    /// IR instructions compiled per batch: emitters size the pieces they
    /// build at a time by it.
    pub(crate) fn batch_insts(&self) -> usize {
        self.batch_insts
    }

    /// Whether the bodies defined from now on are bulk code.
    pub(crate) fn bulk_code(&mut self, on: bool) {
        self.bulk = on;
    }

    /// Compiles every pending body and defines it in the wrapped module.
    pub(crate) fn finish(mut self) -> ModuleResult<()> {
        self.flush()
    }

    /// Compiles the pending bodies on the workers and defines them.
    fn flush(&mut self) -> ModuleResult<()> {
        let pending = std::mem::take(&mut self.pending);
        self.pending_insts = 0;
        let Parallel { inner, bulk_isa, threads, dump_asm: dump, pass_times, cancel, .. } = self;
        let (dump, pass_times) = (*dump, *pass_times);
        let mut order: Vec<usize> = (0..pending.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(pending[i].1.dfg.num_insts()));
        let isas: [&dyn isa::TargetIsa; 2] = [inner.isa(), &**bulk_isa];
        let decls = inner.declarations();
        let mut done = on_workers(
            *threads,
            pending.len(),
            Context::new,
            |ctx, k| {
                let i = order[k];
                let (id, func, bulk) = &pending[i];
                if cancel.raised() {
                    return (i, Err(cancelled()));
                }
                ctx.clear();
                ctx.func = func.clone();
                let t = std::time::Instant::now();
                let r = compile(isas[*bulk as usize], ctx, *id, dump);
                tracing::trace!(
                    function = decls.get_function_decl(*id).linkage_name(*id).as_ref(),
                    insts = func.dfg.num_insts(),
                    blocks = func.dfg.num_blocks(),
                    seconds = t.elapsed().as_secs_f64(),
                    "compiled"
                );
                (i, r)
            },
            |_| {
                if pass_times {
                    tracing::info!("{}", cranelift_codegen::timing::take_current());
                }
            },
        );
        // Every index was handed out once, so this pairs each body with its code.
        done.sort_by_key(|d| d.0);
        for ((id, ..), (_, r)) in pending.iter().zip(done) {
            let c = r?;
            if let Some(asm) = c.asm {
                tracing::info!("; function {}\n{asm}", id.as_u32());
            }
            inner.define_function_bytes(*id, c.alignment, &c.bytes, &c.relocs)?;
        }
        Ok(())
    }
}

/// What a worker answers once code generation is cancelled
/// (`generate` reports it as `LowerError::Cancelled`).
fn cancelled() -> ModuleError {
    ModuleError::Compilation(cranelift_codegen::CodegenError::Unsupported("code generation cancelled".into()))
}

fn compile(isa: &dyn isa::TargetIsa, ctx: &mut Context, id: FuncId, dump: bool) -> ModuleResult<Compiled> {
    ctx.set_disasm(dump);
    let code = ctx.compile(isa, &mut ControlPlane::default()).map_err(|e| ModuleError::Compilation(e.inner))?;
    let alignment = code.buffer.alignment as u64;
    let bytes = code.code_buffer().to_vec();
    let asm = if dump { code.vcode.clone() } else { None };
    let relocs = code.buffer.relocs().to_vec();
    let relocs = relocs.iter().map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id)).collect();
    Ok(Compiled { alignment, bytes, relocs, asm })
}

impl<M: Module> Module for Parallel<'_, M> {
    fn isa(&self) -> &dyn isa::TargetIsa {
        self.inner.isa()
    }

    fn declarations(&self) -> &ModuleDeclarations {
        self.inner.declarations()
    }

    fn declare_function(
        &mut self,
        name: &str,
        linkage: Linkage,
        signature: &cranelift_codegen::ir::Signature,
    ) -> ModuleResult<FuncId> {
        self.inner.declare_function(name, linkage, signature)
    }

    fn declare_anonymous_function(&mut self, signature: &cranelift_codegen::ir::Signature) -> ModuleResult<FuncId> {
        self.inner.declare_anonymous_function(signature)
    }

    fn declare_data(&mut self, name: &str, linkage: Linkage, writable: bool, tls: bool) -> ModuleResult<DataId> {
        self.inner.declare_data(name, linkage, writable, tls)
    }

    fn declare_anonymous_data(&mut self, writable: bool, tls: bool) -> ModuleResult<DataId> {
        self.inner.declare_anonymous_data(writable, tls)
    }

    /// Keeps the body for the next batch; `ctx` is left empty.
    fn define_function_with_control_plane(
        &mut self,
        func: FuncId,
        ctx: &mut Context,
        _ctrl_plane: &mut ControlPlane,
    ) -> ModuleResult<()> {
        if self.cancel.raised() {
            return Err(cancelled());
        }
        let body = std::mem::replace(&mut ctx.func, Function::new());
        self.pending_insts += body.dfg.num_insts();
        self.pending.push((func, body, self.bulk));
        if self.pending_insts >= self.batch_insts {
            self.flush()?;
        }
        Ok(())
    }

    fn define_function_bytes(
        &mut self,
        func_id: FuncId,
        alignment: u64,
        bytes: &[u8],
        relocs: &[ModuleReloc],
    ) -> ModuleResult<()> {
        self.inner.define_function_bytes(func_id, alignment, bytes, relocs)
    }

    fn define_data(&mut self, data_id: DataId, data: &DataDescription) -> ModuleResult<()> {
        self.inner.define_data(data_id, data)
    }
}
