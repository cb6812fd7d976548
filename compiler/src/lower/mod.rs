//! Lowering a propnet to native code with Cranelift: in memory (JIT) or as
//! an object file for a shared library (AOT). Both come from one emitter:
//! the propagation engine of each network (`engine`), the functions that
//! drive it (`queries`), the exported functions (`top`), the goal network
//! (`goals`) and the bit-parallel lanes ([`lanes`]). What is
//! exported, with which signature, is the table of
//! [`propel_abi::exports`]; the runtime calls the result through
//! [`propel_abi::Fns`].

// Cranelift's `ModuleError` is 136 bytes: the emitters pass it up as it is
// (a cold path, once per failed build), and `LowerError` boxes it.
#![allow(clippy::result_large_err)]

mod engine;
mod func;
mod goals;
pub mod lanes;
mod layout;
mod moves;
mod options;
mod parallel;
mod queries;
mod tables;
mod top;

pub use layout::{reset_image, FORMAT_VERSION};
pub use options::{Cancel, CodegenOptions, OptLevel, Regalloc, KEYS as CODEGEN_KEYS};
pub use propel_abi::layout::{Layout, MachineLayout};
pub use propel_abi::{game_hash, Export, Fns};

use crate::propnet::Propnet;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{ArenaMemoryProvider, JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module, ModuleError};
use cranelift_object::{ObjectBuilder, ObjectModule};
use propel_abi::meta::{EngineMeta, Metadata};
use std::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    #[error("code generation failed")]
    Codegen(#[source] Box<ModuleError>),
    #[error("the code generator refused a setting")]
    Setting(#[from] settings::SetError),
    #[error("this machine's processor is not supported by the code generator: {0}")]
    Host(&'static str),
    #[error("the code generator could not be set up for this processor")]
    Isa(#[source] cranelift_codegen::CodegenError),
    #[error("writing the object file failed")]
    Object(#[source] cranelift_object::object::write::Error),
    #[error("cannot reserve address space for the code")]
    Arena(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error(
        "the network is too large for native code: {updates} counter updates (limit {limit}); \
         the interpreted propnet (--machine propnet) runs it"
    )]
    TooLarge { updates: usize, limit: usize },
    #[error("code generation cancelled")]
    Cancelled,
    #[error(
        "the network asks {questions} questions of the state (query components), which native code \
         does not answer; the interpreted propnet (--machine auto) runs it"
    )]
    Queries { questions: usize },
}

impl From<ModuleError> for LowerError {
    fn from(e: ModuleError) -> Self {
        LowerError::Codegen(Box::new(e))
    }
}

/// Counter updates (edges of the engines and of the lane network) above
/// which no code is generated. Code generation compiles in batches, so
/// memory is one batch of IR plus the machine code, about 52 bytes per
/// update (base/amazons, 3.47M updates: 181 MB of code, 9.4 s on two cores,
/// 1.5 GB at the peak); this limit keeps the code within `JIT_ARENA`:
/// base/amazonsTorus, the largest network in the corpus (16.4M estimated,
/// 17.28M generated), is 1.39 GB of object code.
pub const MAX_UPDATES: usize = 17_000_000;

impl Machine<'_> {
    /// Counter updates the generated code will hold, about (the goal
    /// network's inputs count once for its own code and once more in the
    /// lanes).
    pub fn updates(&self) -> usize {
        let edges = |n: &Propnet| n.counts().edges;
        let goals = self.goal_net.map_or(0, edges) * (1 + self.lanes.is_some() as usize);
        self.engines.iter().map(|n| edges(n)).sum::<usize>() + self.lanes.map_or(0, edges) + goals
    }

    /// The error code generation would give for a machine over
    /// [`MAX_UPDATES`], if this one is.
    pub fn too_large(&self) -> Option<LowerError> {
        let updates = self.updates();
        (updates > MAX_UPDATES).then_some(LowerError::TooLarge { updates, limit: MAX_UPDATES })
    }
}

/// What lowering produced, for reports.
#[derive(Clone, Debug, Default)]
pub struct CodeStats {
    pub seconds: f64,
    /// Counter updates written out (edges of the propagation code).
    pub updates: usize,
    pub functions: usize,
    /// Bytes of machine code (JIT: as allocated).
    pub code_bytes: usize,
}

/// A machine to generate: one network, or the two copies of a split one.
pub struct Machine<'a> {
    /// One network, or (split) the copies for the split base false, true.
    pub engines: Vec<&'a Propnet>,
    pub split: Option<u32>,
    pub goal_net: Option<&'a Propnet>,
    /// The unsplit playout network, for bit-parallel playouts ([`lanes`]);
    /// `None` generates none.
    pub lanes: Option<&'a Propnet>,
}

/// What a machine carries about itself (`propel_info`): format, game,
/// processor, layout, names and lane plan.
pub fn metadata(
    m: &Machine<'_>,
    layout: &MachineLayout,
    game_hash: &str,
    cpu: &str,
    lanes: Option<&lanes::LanePlan>,
) -> Metadata {
    let net = m.engines[0];
    Metadata {
        format: FORMAT_VERSION,
        game_hash: game_hash.to_string(),
        cpu: cpu.to_string(),
        size: layout.size,
        split: m.split,
        engines: layout
            .engines
            .iter()
            .zip(&layout.regions)
            .map(|(l, &region)| EngineMeta {
                region,
                size: l.size,
                base_bits: l.base_bits,
                legal_bits: l.legal_bits,
                next_bits: l.next_bits,
            })
            .collect(),
        roles: net.roles.clone(),
        bases: net.bases.iter().map(|b| b.name.clone()).collect(),
        inputs: net.inputs.iter().map(|i| i.name.clone()).collect(),
        input_roles: net.inputs.iter().map(|i| i.role).collect(),
        init: net.bases.iter().enumerate().filter(|(_, b)| b.init).map(|(i, _)| i as u32).collect(),
        exports: Export::ALL.iter().map(|e| e.name().to_string()).collect(),
        lanes: lanes.map(lanes::LanePlan::encode),
    }
}

/// Generates the whole machine into `module`; returns every export's
/// function (in [`Export::ALL`] order), the layout, the metadata and what
/// it took. `bulk_isa` compiles the straight-line bulk (engines'
/// propagation code, goal network, lanes); the module's own ISA the rest.
fn generate<M: Module>(
    module: &mut M,
    bulk_isa: cranelift_codegen::isa::OwnedTargetIsa,
    m: &Machine<'_>,
    game_hash: &str,
    cpu: &str,
    options: &CodegenOptions,
) -> Result<(Vec<cranelift_module::FuncId>, MachineLayout, CodeStats), LowerError> {
    if let Some(e) = m.too_large() {
        return Err(e);
    }
    let questions = m.engines.iter().copied().chain(m.goal_net).chain(m.lanes).map(|n| n.queries.len()).sum();
    if questions > 0 {
        return Err(LowerError::Queries { questions });
    }
    let mut par = parallel::Parallel::new(module, bulk_isa, options);
    let cancelled = |e: LowerError| if options.cancel.raised() { LowerError::Cancelled } else { e };
    let (exports, layout, mut stats) = emit_all(&mut par, m, game_hash, cpu, options).map_err(cancelled)?;
    let t = Instant::now();
    par.finish().map_err(|e| cancelled(e.into()))?;
    tracing::debug!(seconds = t.elapsed().as_secs_f64(), "machine code");
    stats.functions = module.declarations().get_functions().count();
    Ok((exports, layout, stats))
}

/// Writes every function body of the machine into `module`.
fn emit_all<M: Module>(
    module: &mut parallel::Parallel<'_, M>,
    m: &Machine<'_>,
    game_hash: &str,
    cpu: &str,
    options: &CodegenOptions,
) -> Result<(Vec<cranelift_module::FuncId>, MachineLayout, CodeStats), LowerError> {
    let ids = top::ExportIds::declare(module)?;
    let cycles: Vec<Vec<Vec<u32>>> = m.engines.iter().map(|n| n.cycles()).collect();
    let layouts: Vec<Layout> = m
        .engines
        .iter()
        .zip(&cycles)
        .map(|(n, c)| {
            let largest = c.iter().map(|c| c.len()).max().unwrap_or(0);
            layout::engine_layout(n, m.goal_net, c.len() as u32, largest as u32)
        })
        .collect();
    let layout = MachineLayout::new(layouts.clone());
    let mut fns = Vec::new();
    let mut updates = 0;
    // Straight-line loads and stores, like the engines' propagation code.
    module.bulk_code(true);
    let chunk_inputs = (module.batch_insts() / 4).clamp(1, goals::CHUNK_INPUTS);
    let goal_net = match m.goal_net {
        Some(g) => Some((g, goals::emit(module, g, chunk_inputs)?)),
        None => None,
    };
    module.bulk_code(false);
    for (k, ((net, l), c)) in m.engines.iter().zip(&layouts).zip(cycles).enumerate() {
        let image = reset_image(net, l)[..l.stack as usize].to_vec();
        let t = Instant::now();
        let mut e = engine::Emitter::new(module, net, goal_net, l, c, &format!("propel_e{k}"), options);
        let bulk = !e.optimised();
        e.module.bulk_code(bulk);
        fns.push(e.emit_engine(image)?);
        // The table loop is small: optimised whatever the engine's size.
        e.module.bulk_code(false);
        e.emit_tables()?;
        updates += e.edges;
        tracing::debug!(
            engine = k,
            updates = e.edges,
            optimised = !bulk,
            tables = e.uses_tables(),
            seconds = t.elapsed().as_secs_f64(),
            "engine bodies"
        );
    }
    let t = Instant::now();
    module.bulk_code(true);
    let lane_ids = lanes::LaneIds {
        state: ids.get(Export::LanesState),
        next: ids.get(Export::LanesNext),
        goals: ids.get(Export::LanesGoals),
        plan: ids.get(Export::LanesPlan),
    };
    let l = lanes::emit(module, m.lanes, m.goal_net, lane_ids)?;
    module.bulk_code(false);
    tracing::debug!(edges = l.edges, seconds = t.elapsed().as_secs_f64(), "lane bodies");
    updates += l.edges;
    let meta = metadata(m, &layout, game_hash, cpu, l.plan.as_ref());
    top::Top {
        module,
        engines: &fns,
        layouts: &layouts,
        regions: &layout.regions,
        size: layout.size,
        split: m.split,
        names: top::Names::of(m.engines[0]),
        initial: initial_bits(m.engines[0]),
        scratch: Default::default(),
    }
    .emit(&ids, &meta.to_json())?;
    Ok((ids.all().to_vec(), layout, CodeStats { seconds: 0.0, updates, functions: 0, code_bytes: 0 }))
}

/// How a kind of code is generated: Cranelift's optimisation level and
/// register allocator.
#[derive(Clone, Copy)]
struct Level {
    opt: &'static str,
    regalloc: &'static str,
}

/// The small functions that drive the bulk (dispatch, playout loops,
/// legal-move lists): optimised, with the backtracking register allocator.
const CONTROL_OPT: Level = Level { opt: "speed", regalloc: "backtracking" };
/// The bulk of the code: the goal network, the lanes and the propagation
/// code of engines over `CodegenOptions::engine_opt_updates` (smaller
/// engines compile at the control level: the backtracking allocator keeps
/// the flip and the stack top in registers across a chunk's blocks, and
/// one-at-a-time playouts ran 1.1-1.7x faster), all straight-line loads,
/// logic and stores. Cranelift's
/// optimiser barely changes the engines' code (the same size within 0.3%
/// on speedChess) and compiles it about 1.7x slower. The single-pass
/// register allocator compiles these runs 2-4x faster than the
/// backtracking one (which clears its conflict sets per bundle: 23% of
/// hex's code generation was `memset`). The lanes, once optimised with the
/// backtracking allocator, compile 4x faster this way and run as fast or
/// faster (`propel playouts --machine jit --fast`, two rounds: hex 6.0k
/// against 4.6k playouts/s, speedChess 9.9k against 8.4k, reversi 124k
/// against 127k, othello 27.6k against 28.3k); the optimiser had
/// lengthened live ranges, which the single-pass allocator spills.
const BULK_OPT: Level = Level { opt: "none", regalloc: "single_pass" };

fn isa(
    pic: bool,
    level: Level,
    options: &CodegenOptions,
) -> Result<cranelift_codegen::isa::OwnedTargetIsa, LowerError> {
    let mut flags = settings::builder();
    // The options' optimisation level and allocator override both levels.
    flags.set("opt_level", options.opt_level.map_or(level.opt, |o| o.name()))?;
    flags.set("regalloc_algorithm", options.regalloc.map_or(level.regalloc, |r| r.name()))?;
    flags.set("is_pic", if pic { "true" } else { "false" })?;
    flags.set("use_colocated_libcalls", "false")?;
    // The verifier checks every function in debug builds and tests.
    let verify = cfg!(debug_assertions) || options.verify;
    flags.set("enable_verifier", if verify { "true" } else { "false" })?;
    let builder = cranelift_native::builder().map_err(LowerError::Host)?;
    builder.finish(settings::Flags::new(flags)).map_err(LowerError::Isa)
}

/// The processor `isa` generates code for, as libraries record it
/// ([`propel_abi::cpu`]): the target and every extension it may use.
fn cpu_of(isa: &dyn cranelift_codegen::isa::TargetIsa) -> String {
    let flags = isa.isa_flags();
    propel_abi::cpu::describe(
        propel_abi::cpu::TARGET,
        flags.iter().filter(|f| f.as_bool() == Some(true)).map(|f| f.name),
    )
}

/// Machine code in memory. Keeps the JIT module (and so the code) alive;
/// its functions are reached only through [`JitCode::fns`], a borrow of it.
pub struct JitCode {
    _module: JITModule,
    fns: Fns,
    layout: MachineLayout,
    stats: CodeStats,
}

// SAFETY: after `finalize_definitions` the JIT's code and data are never
// written again; the module is only kept to keep that memory mapped.
// Calling the functions from several threads is safe as long as each
// thread uses its own instance memory (the runtime's rule).
unsafe impl Send for JitCode {}
unsafe impl Sync for JitCode {}

impl JitCode {
    /// The exported functions, alive as long as `self`.
    pub fn fns(&self) -> &Fns {
        &self.fns
    }

    pub fn layout(&self) -> &MachineLayout {
        &self.layout
    }

    pub fn stats(&self) -> &CodeStats {
        &self.stats
    }
}

/// Address space reserved for one JIT module's code and data: above what
/// [`MAX_UPDATES`] allows (about 52 bytes of code per update), and within
/// the reach of 32-bit PC-relative calls (2 GiB).
const JIT_ARENA: usize = 3 << 29;

/// Compiles a machine into memory. `game_hash` goes into the metadata.
pub fn jit(m: &Machine<'_>, game_hash: &str, options: &CodegenOptions) -> Result<JitCode, LowerError> {
    let t = Instant::now();
    let control = isa(false, CONTROL_OPT, options)?;
    let cpu = cpu_of(&*control);
    let mut builder = JITBuilder::with_isa(control, default_libcall_names());
    // One contiguous reservation (committed as it fills): calls between
    // functions are 32-bit PC-relative, and separately mapped pieces of a
    // large module could land more than 2 GB apart (amazons, 181 MB of
    // code, failed that way in relocation now and then).
    let arena = ArenaMemoryProvider::new_with_size(JIT_ARENA).map_err(|e| LowerError::Arena(Box::new(e)))?;
    builder.memory_provider(Box::new(arena));
    let mut module = JITModule::new(builder);
    let (exports, layout, mut stats) =
        generate(&mut module, isa(false, BULK_OPT, options)?, m, game_hash, &cpu, options)?;
    module.finalize_definitions()?;
    let address =
        |e: Export| std::ptr::NonNull::new(module.get_finalized_function(exports[e.index()]) as *mut std::ffi::c_void);
    // SAFETY: the addresses are those of the functions `generate` defined
    // for each export of the table, with the table's signatures; the
    // module that holds them lives in the same `JitCode` as `fns`.
    let fns = unsafe { Fns::resolve(address) }
        .map_err(|e| LowerError::from(ModuleError::Undeclared(e.name().to_string())))?;
    stats.seconds = t.elapsed().as_secs_f64();
    Ok(JitCode { _module: module, fns, layout, stats })
}

/// Compiles a machine into an object file (position-independent, for a
/// shared library). Returns the bytes, the layout and what it took.
pub fn object(
    m: &Machine<'_>,
    game_hash: &str,
    options: &CodegenOptions,
) -> Result<(Vec<u8>, MachineLayout, CodeStats), LowerError> {
    let t = Instant::now();
    let control = isa(true, CONTROL_OPT, options)?;
    let cpu = cpu_of(&*control);
    let builder = ObjectBuilder::new(control, "propel_game", default_libcall_names())?;
    let mut module = ObjectModule::new(builder);
    let (_, layout, mut stats) = generate(&mut module, isa(true, BULK_OPT, options)?, m, game_hash, &cpu, options)?;
    let product = module.finish();
    let bytes = product.emit().map_err(LowerError::Object)?;
    stats.seconds = t.elapsed().as_secs_f64();
    stats.code_bytes = bytes.len();
    Ok((bytes, layout, stats))
}

/// The initial state's bitset.
pub fn initial_bits(net: &Propnet) -> Vec<u64> {
    let mut v = vec![0u64; net.bases.len().div_ceil(64)];
    for (i, b) in net.bases.iter().enumerate() {
        if b.init {
            v[i / 64] |= 1 << (i % 64);
        }
    }
    v
}

/// The C header of a machine library for `net` (see
/// [`propel_abi::header`]); `game` names where it came from.
pub fn c_header(game: &str, layout: &MachineLayout, net: &Propnet) -> String {
    propel_abi::header::c_header(&propel_abi::header::HeaderInfo {
        game,
        size: layout.size,
        roles: &net.roles,
        bases: net.bases.len(),
        inputs: net.inputs.len(),
    })
}
