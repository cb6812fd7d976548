//! Lowering a propnet to native code with Cranelift: in memory (JIT) or as
//! an object file for a shared library (AOT). Both come from one emitter
//! ([`emit`]); the runtime calls the result through function pointers.
//!
//! The exported functions (C ABI; `inst` points to [`Layout::size`] bytes,
//! 8-byte aligned, one per machine instance):
//!
//! | function | what it does |
//! | --- | --- |
//! | `void propel_init(inst)` | every leaf false, counters consistent |
//! | `int propel_set_state(inst, const uint64_t *bits)` | make a state current (0: ok) |
//! | `int propel_set_joint(inst, const uint32_t *moves)` | play one input per role (0: ok) |
//! | `int propel_terminal(inst)` | 1 if the current state is terminal |
//! | `int propel_legal(inst, int role, uint32_t *out, int cap)` | the role's legal inputs |
//! | `void propel_goals(inst, int role, uint64_t out[2])` | bit v: goal value v holds |
//! | `int propel_playout(inst, uint64_t seed, int *goals, int max_steps)` | random playout to the end |
//! | `const char *propel_info(void)` | metadata (JSON) |
//! | `int propel_reset(inst)` | `init`, then the initial state (0: ok) |
//! | `void propel_lanes_state(uint64_t *w)` | lanes: the state phase ([`lanes`]) |
//! | `void propel_lanes_next(uint64_t *w)` | lanes: the next-state phase |
//! | `void propel_lanes_goals(uint64_t *w)` | lanes: the goal network |
//! | `const uint32_t *propel_lanes_plan(void)` | lanes: where outputs lie |

mod emit;
mod goals;
pub mod lanes;
pub mod layout;
mod moves;
mod options;
mod parallel;
mod top;

pub use emit::EXPORTS;
pub use layout::{reset_image, Layout, FORMAT_VERSION};
pub use options::{Cancel, CodegenOptions, OptLevel, Regalloc, KEYS as CODEGEN_KEYS};

use crate::propnet::Propnet;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{ArenaMemoryProvider, JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Module, ModuleError};
use cranelift_object::{ObjectBuilder, ObjectModule};
use std::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    #[error("code generation failed: {0}")]
    Codegen(String),
    #[error("this machine's processor is not supported by the code generator: {0}")]
    Host(String),
    #[error(
        "the network is too large for native code: {updates} counter updates (limit {limit}); \
         the interpreted propnet (--machine propnet) runs it"
    )]
    TooLarge { updates: usize, limit: usize },
    #[error("code generation cancelled")]
    Cancelled,
}

/// Counter updates (edges of the engines and of the lane network) above
/// which no code is generated. Code generation compiles in batches, so
/// memory is one batch of IR plus the machine code, about 52 bytes per
/// update (base/amazons, 3.47M updates: 181 MB of code, 9.4 s on two cores,
/// 1.5 GB at the peak); this limit keeps the code within [`JIT_ARENA`]:
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

impl From<ModuleError> for LowerError {
    fn from(e: ModuleError) -> Self {
        LowerError::Codegen(format!("{e:?}"))
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

/// The memory of a whole machine: a header, then each engine's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineLayout {
    /// Byte offset of each engine's memory.
    pub regions: Vec<u32>,
    pub engines: Vec<Layout>,
    pub size: u32,
}

impl MachineLayout {
    /// Byte offset of the current engine's index (a `u32`).
    pub const CURRENT: u32 = top::CUR as u32;
}

/// What a library carries about itself: format, game, processor, layout
/// and names (JSON).
pub fn metadata(m: &Machine<'_>, layout: &MachineLayout, game_hash: &str, cpu: &str) -> String {
    let net = m.engines[0];
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let list = |v: Vec<String>| v.iter().map(|s| format!("\"{}\"", esc(s))).collect::<Vec<_>>().join(",");
    let nums = |v: Vec<u32>| v.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    let engines = layout
        .engines
        .iter()
        .zip(&layout.regions)
        .map(|(l, r)| {
            format!(
                "{{\"region\":{r},\"legal_bits\":{},\"next_bits\":{},\"size\":{}}}",
                l.legal_bits, l.next_bits, l.size
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "{{\"format\":{FORMAT_VERSION},\"game_hash\":\"{}\",\"cpu\":\"{}\",\"size\":{},\"split\":{},\"engines\":[{engines}],\"roles\":[{}],\"bases\":[{}],\"inputs\":[{}],\"input_roles\":[{}],\"init\":[{}]}}",
        esc(game_hash),
        esc(cpu),
        layout.size,
        m.split.map(|b| b.to_string()).unwrap_or_else(|| "null".into()),
        list(net.roles.clone()),
        list(net.bases.iter().map(|b| b.name.clone()).collect()),
        list(net.inputs.iter().map(|i| i.name.clone()).collect()),
        nums(net.inputs.iter().map(|i| i.role).collect()),
        nums(net.bases.iter().enumerate().filter(|(_, b)| b.init).map(|(i, _)| i as u32).collect()),
    )
}

/// Generates the whole machine into `module`; returns the exported
/// functions (in [`EXPORTS`] order), the layout and what it took.
/// `bulk_isa` compiles the straight-line bulk (engines' propagation code,
/// goal network, lanes); the module's own ISA the rest.
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
    let cycles: Vec<Vec<Vec<u32>>> = m.engines.iter().map(|n| n.cycles()).collect();
    let layouts: Vec<Layout> = m
        .engines
        .iter()
        .zip(&cycles)
        .map(|(n, c)| {
            let largest = c.iter().map(|c| c.len()).max().unwrap_or(0);
            Layout::new(n, m.goal_net, c.len() as u32, largest as u32)
        })
        .collect();
    let (regions, size) = top::regions(&layouts);
    let layout = MachineLayout { regions, engines: layouts.clone(), size };
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
        module.bulk_code(true);
        let mut e = emit::Emitter::new(module, net, goal_net, l, c, &format!("propel_e{k}"), options);
        fns.push(e.emit_engine(image)?);
        e.module.bulk_code(false);
        updates += e.edges;
        tracing::debug!(engine = k, updates = e.edges, seconds = t.elapsed().as_secs_f64(), "engine bodies");
    }
    let info = info_bytes(&metadata(m, &layout, game_hash, cpu));
    let exports = top::Top {
        module,
        engines: &fns,
        layouts: &layouts,
        regions: &layout.regions,
        split: m.split,
        roles: m.engines[0].roles.len(),
        initial: initial_bits(m.engines[0]),
    }
    .emit(info)?;
    let names = [EXPORTS[9], EXPORTS[10], EXPORTS[11], EXPORTS[12]];
    let t = Instant::now();
    module.bulk_code(true);
    let l = lanes::emit(module, m.lanes, m.goal_net, names)?;
    module.bulk_code(false);
    tracing::debug!(edges = l.edges, seconds = t.elapsed().as_secs_f64(), "lane bodies");
    updates += l.edges;
    let mut exports = exports;
    exports.extend([l.state, l.next, l.goals, l.plan]);
    Ok((exports, layout, CodeStats { seconds: 0.0, updates, functions: 0, code_bytes: 0 }))
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
/// The bulk of the code: the engines' propagation code, the goal network
/// and the lanes, all straight-line loads, logic and stores. Cranelift's
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
    let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(|e| LowerError::Codegen(e.to_string()));
    // The options' optimisation level and allocator override both levels.
    set(&mut flags, "opt_level", options.opt_level.map_or(level.opt, |o| o.name()))?;
    set(&mut flags, "regalloc_algorithm", options.regalloc.map_or(level.regalloc, |r| r.name()))?;
    set(&mut flags, "is_pic", if pic { "true" } else { "false" })?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    // The verifier checks every function in debug builds and tests.
    let verify = cfg!(debug_assertions) || options.verify;
    set(&mut flags, "enable_verifier", if verify { "true" } else { "false" })?;
    let builder = cranelift_native::builder().map_err(|e| LowerError::Host(e.to_string()))?;
    builder.finish(settings::Flags::new(flags)).map_err(|e| LowerError::Codegen(e.to_string()))
}

/// The host's processor features as the code generator sees them, to
/// refuse a library built for another processor.
pub fn host_cpu() -> Result<String, LowerError> {
    let isa = isa(true, CONTROL_OPT, &CodegenOptions::default())?;
    Ok(format!(
        "{} {}",
        isa.triple(),
        isa.isa_flags().iter().filter(|f| f.as_bool() == Some(true)).map(|f| f.name).collect::<Vec<_>>().join(",")
    ))
}

/// Native function pointers of one machine.
#[derive(Clone, Copy, Debug)]
pub struct Fns {
    pub init: unsafe extern "C" fn(*mut u8),
    pub set_state: unsafe extern "C" fn(*mut u8, *const u64) -> i32,
    pub set_joint: unsafe extern "C" fn(*mut u8, *const u32) -> i32,
    pub terminal: unsafe extern "C" fn(*mut u8) -> i32,
    pub legal: unsafe extern "C" fn(*mut u8, i32, *mut u32, i32) -> i32,
    pub goals: unsafe extern "C" fn(*mut u8, i32, *mut u64),
    pub playout: unsafe extern "C" fn(*mut u8, u64, *mut i32, i32) -> i32,
    pub info: unsafe extern "C" fn() -> *const u8,
    pub reset: unsafe extern "C" fn(*mut u8) -> i32,
    pub lanes_state: unsafe extern "C" fn(*mut u64),
    pub lanes_next: unsafe extern "C" fn(*mut u64),
    pub lanes_goals: unsafe extern "C" fn(*mut u64),
    pub lanes_plan: unsafe extern "C" fn() -> *const u32,
}

impl Fns {
    /// Builds the table from the exported functions' addresses, in
    /// [`EXPORTS`] order.
    ///
    /// # Safety
    /// Each address must point to the function of that name generated by
    /// this module's emitter, which has exactly the signature of its field.
    pub unsafe fn from_addresses(a: &[*const u8]) -> Fns {
        // SAFETY: guaranteed by the caller: the addresses are the emitted
        // functions, whose signatures (`Emitter::emit_all`) match.
        unsafe {
            Fns {
                init: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8)>(a[0]),
                set_state: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8, *const u64) -> i32>(a[1]),
                set_joint: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8, *const u32) -> i32>(a[2]),
                terminal: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8) -> i32>(a[3]),
                legal: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8, i32, *mut u32, i32) -> i32>(a[4]),
                goals: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8, i32, *mut u64)>(a[5]),
                playout: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8, u64, *mut i32, i32) -> i32>(
                    a[6],
                ),
                info: std::mem::transmute::<*const u8, unsafe extern "C" fn() -> *const u8>(a[7]),
                reset: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u8) -> i32>(a[8]),
                lanes_state: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u64)>(a[9]),
                lanes_next: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u64)>(a[10]),
                lanes_goals: std::mem::transmute::<*const u8, unsafe extern "C" fn(*mut u64)>(a[11]),
                lanes_plan: std::mem::transmute::<*const u8, unsafe extern "C" fn() -> *const u32>(a[12]),
            }
        }
    }
}

/// Machine code in memory. Keeps the JIT module (and so the code) alive.
pub struct JitCode {
    _module: JITModule,
    pub fns: Fns,
    pub layout: MachineLayout,
    pub stats: CodeStats,
}

// SAFETY: after `finalize_definitions` the JIT's code and data are never
// written again; the module is only kept to keep that memory mapped.
// Calling the functions from several threads is safe as long as each
// thread uses its own instance memory (the runtime's rule).
unsafe impl Send for JitCode {}
unsafe impl Sync for JitCode {}

fn info_bytes(meta: &str) -> Vec<u8> {
    let mut v = meta.as_bytes().to_vec();
    v.push(0);
    v
}

/// Address space reserved for one JIT module's code and data: above what
/// [`MAX_UPDATES`] allows (about 52 bytes of code per update), and within
/// the reach of 32-bit PC-relative calls (2 GiB).
const JIT_ARENA: usize = 3 << 29;

/// Compiles a machine into memory.
pub fn jit(m: &Machine<'_>, game_hash: &str, options: &CodegenOptions) -> Result<JitCode, LowerError> {
    let t = Instant::now();
    let cpu = host_cpu()?;
    let mut builder = JITBuilder::with_isa(isa(false, CONTROL_OPT, options)?, default_libcall_names());
    // One contiguous reservation (committed as it fills): calls between
    // functions are 32-bit PC-relative, and separately mapped pieces of a
    // large module could land more than 2 GB apart (amazons, 181 MB of
    // code, failed that way in relocation now and then).
    let arena = ArenaMemoryProvider::new_with_size(JIT_ARENA).map_err(|e| LowerError::Codegen(e.to_string()))?;
    builder.memory_provider(Box::new(arena));
    let mut module = JITModule::new(builder);
    let (exports, layout, mut stats) =
        generate(&mut module, isa(false, BULK_OPT, options)?, m, game_hash, &cpu, options)?;
    module.finalize_definitions()?;
    let addrs: Vec<*const u8> = exports.iter().map(|&id| module.get_finalized_function(id)).collect();
    // SAFETY: the addresses are those of the functions `generate` defined,
    // in EXPORTS order, with the signatures `Fns` names.
    let fns = unsafe { Fns::from_addresses(&addrs) };
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
    let cpu = host_cpu()?;
    let builder = ObjectBuilder::new(isa(true, CONTROL_OPT, options)?, "propel_game", default_libcall_names())?;
    let mut module = ObjectModule::new(builder);
    let (_, layout, mut stats) = generate(&mut module, isa(true, BULK_OPT, options)?, m, game_hash, &cpu, options)?;
    let product = module.finish();
    let bytes = product.emit().map_err(|e| LowerError::Codegen(e.to_string()))?;
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

/// A C header for a machine library: the functions and the numbers a C
/// program needs (instance size, roles, bases, inputs).
pub fn c_header(game: &str, layout: &MachineLayout, net: &Propnet) -> String {
    let roles: Vec<String> = net.roles.iter().enumerate().map(|(i, r)| format!(" *   {i}: {r}")).collect();
    format!(
        r#"/* Generated by `propel compile` for {game}. Do not edit.
 *
 * A compiled GGP state machine. Each instance needs PROPEL_INSTANCE_SIZE
 * bytes, 8-byte aligned; one instance per thread. Moves are input indices
 * (numbered by role, then name); a state is a bitset of PROPEL_BASES bits.
 * Roles:
{roles}
 */
#ifndef PROPEL_GAME_H
#define PROPEL_GAME_H
#include <stdint.h>

#define PROPEL_FORMAT {FORMAT_VERSION}
#define PROPEL_INSTANCE_SIZE {size}
#define PROPEL_ROLES {nroles}
#define PROPEL_BASES {nbases}
#define PROPEL_INPUTS {ninputs}

#ifdef __cplusplus
extern "C" {{
#endif

/* Every base proposition false (not yet a game state). */
void propel_init(void *inst);
/* init, then the initial state. Returns 0. */
int propel_reset(void *inst);
/* Makes a state current; bits: (PROPEL_BASES + 63) / 64 words. 0: ok. */
int propel_set_state(void *inst, const uint64_t *bits);
/* Plays one input per role (role order) in the current state. 0: ok. */
int propel_set_joint(void *inst, const uint32_t *moves);
/* 1 if the current state is terminal. */
int propel_terminal(void *inst);
/* Writes up to cap legal inputs of role to out; returns how many there are. */
int propel_legal(void *inst, int role, uint32_t *out, int cap);
/* Goal values of role in the current state: bit v of out[v / 64] set. */
void propel_goals(void *inst, int role, uint64_t out[2]);
/* A random playout from the current state to a terminal one: writes each
 * role's goal (-1 if undefined) to goals and returns its length; -1 if a
 * role has no legal move, -2 after max_steps steps. */
int propel_playout(void *inst, uint64_t seed, int32_t *goals, int max_steps);
/* Bit-parallel playouts (128 at once, one bit per playout in each word of
 * 16 bytes, two uint64_t with lanes 0-63 first, the array 16-byte
 * aligned): the state phase, the next-state phase and the goal
 * network; propel_lanes_plan() says where each output lies (see the
 * Propel documentation, docs/native.md). */
void propel_lanes_state(uint64_t *words);
void propel_lanes_next(uint64_t *words);
void propel_lanes_goals(uint64_t *words);
const uint32_t *propel_lanes_plan(void);
/* Metadata: format, game hash, processor, names (JSON). */
const char *propel_info(void);

#ifdef __cplusplus
}}
#endif
#endif
"#,
        size = layout.size,
        nroles = net.roles.len(),
        nbases = net.bases.len(),
        ninputs = net.inputs.len(),
        roles = roles.join("\n"),
    )
}

/// A stable hash of a game file's bytes (FNV-1a, 64 bits, hex), carried by
/// libraries to recognise one built from another version of the game.
pub fn game_hash(text: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}
