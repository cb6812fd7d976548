//! Machines running generated native code: the JIT (`--machine jit`) and
//! ahead-of-time libraries (`--machine aot:FILE`). The code is reached only
//! through its owner (the JIT module or the loaded library), which lends
//! its functions ([`propel_abi::Fns`]); what the machine knows about the
//! code (sizes, where each bitset lies, names, lane plan) comes from the
//! code's own metadata, checked before use ([`propel_abi::meta`]), so code
//! cannot be paired with another game's network or trusted with a size
//! from elsewhere. Each machine instance owns its memory and reads the
//! legal-move and next-state bitsets there directly.

use crate::goals::GoalProgram;
use crate::lanes::{Captures, LaneEval, LaneSource, Lanes, Word};
use crate::machine::{MachineError, StateMachine};
use crate::propnet::NetState;
use propel_abi::meta::{EngineOffsets, Interface, MetaError, Metadata};
use propel_abi::{Fns, LanePlan};
use propel_compiler::lower::JitCode;
use propel_compiler::propnet::Propnet;
use std::sync::Arc;

/// Goal networks larger than this are evaluated by the interpreter's goal
/// program rather than generated code (see [`NativeCode::with_goal_net`]).
pub const GOAL_PROGRAM_COMPONENTS: usize = 20_000;

/// What keeps generated code alive and lends its functions: only the JIT's
/// module and a loaded library (this crate's own types) implement it.
pub(crate) trait Owner: Send + Sync {
    fn fns(&self) -> &Fns;
}

impl Owner for JitCode {
    fn fns(&self) -> &Fns {
        JitCode::fns(self)
    }
}

/// Generated code and what a machine needs to know about it.
pub struct NativeCode {
    owner: Box<dyn Owner>,
    iface: Interface,
    /// The goal network as the interpreter evaluates it, where a large
    /// one was split off (see [`NativeCode::with_goal_net`]).
    goals: Option<GoalProgram>,
}

impl std::fmt::Debug for NativeCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeCode").field("size", &self.iface.size).finish_non_exhaustive()
    }
}

impl NativeCode {
    /// JIT code, described by its own metadata.
    pub fn from_jit(code: JitCode) -> Result<NativeCode, MetaError> {
        NativeCode::new(Box::new(code))
    }

    /// Code of `owner`, described by its metadata (`propel_info`), which
    /// is checked first: every offset the machine will use lies inside the
    /// instance, every count agrees.
    pub(crate) fn new(owner: Box<dyn Owner>) -> Result<NativeCode, MetaError> {
        let iface = Metadata::parse(owner.fns().info_text().to_bytes())?.check()?;
        Ok(NativeCode { owner, iface, goals: None })
    }

    /// Reads goals by evaluating `goal_net` (the goal network the code was
    /// generated with, over the same bases) as the interpreter does, when
    /// it has more than `min_components` components (the player uses
    /// [`GOAL_PROGRAM_COMPONENTS`]): the generated goal code is
    /// straight-line, a few bytes per gate input with no short cut, and a
    /// large network's code runs out of the instruction cache at every
    /// terminal state (othello-comp2007's 188k components: twice the
    /// interpreter's time; reversi's 13k run faster as code).
    pub fn with_goal_net(mut self, goal_net: Option<&Propnet>, min_components: usize) -> NativeCode {
        self.goals = goal_net
            .filter(|g| g.len() > min_components && g.bases.len() == self.iface.base_names.len())
            .map(GoalProgram::new);
        self
    }

    /// Whether goals are read by the goal program rather than the code.
    pub fn goals_interpreted(&self) -> bool {
        self.goals.is_some()
    }

    fn fns(&self) -> &Fns {
        self.owner.fns()
    }

    pub fn roles(&self) -> &[String] {
        &self.iface.roles
    }

    pub fn base_names(&self) -> &[String] {
        &self.iface.base_names
    }

    pub fn input_names(&self) -> &[String] {
        &self.iface.input_names
    }

    /// Each role's inputs: (first, end).
    pub fn role_range(&self) -> &[(u32, u32)] {
        &self.iface.role_range
    }

    /// Where the bit-parallel playout code keeps each output, when the code
    /// has it.
    pub fn lanes(&self) -> Option<&LanePlan> {
        self.iface.lanes.as_ref()
    }

    /// Bytes per instance.
    pub fn instance_size(&self) -> u32 {
        self.iface.size
    }

    /// The hash of the game the code was generated from (its name for JIT
    /// code).
    pub fn game_hash(&self) -> &str {
        &self.iface.game_hash
    }

    /// The processor the code was generated for ([`propel_abi::cpu`]).
    pub fn cpu(&self) -> &str {
        &self.iface.cpu
    }

    /// The metadata text, as the code carries it.
    pub fn metadata(&self) -> &std::ffi::CStr {
        self.fns().info_text()
    }
}

/// One instance of a native machine (per thread).
pub struct NativeMachine {
    code: Arc<NativeCode>,
    /// Whether batches of playouts run on the lanes (where the code has
    /// them) rather than one native playout after another.
    batch_lanes: bool,
    /// Instance memory, 8-byte aligned, of the code's checked size.
    mem: Vec<u64>,
    joint: Vec<u32>,
    /// Lane memory, made on first use.
    lanes: Option<Lanes>,
    /// Win-first inputs for lane playouts ([`Lanes::set_win_first`]).
    win_first: Vec<u32>,
    /// Safe-first lane playouts ([`Lanes::set_safe_first`]).
    safe_first: bool,
    /// Decisive lane playouts ([`Lanes::set_decisive`]).
    decisive: bool,
    /// Capture-first lane playouts: the chance and how captures are
    /// known ([`Lanes::set_capture_first`]).
    capture: Option<(f64, Captures)>,
    /// Material-cutoff lane playouts: steps, material and the reference
    /// state's bits ([`NativeMachine::set_cutoff`]).
    cutoff: Option<(u32, crate::heuristic::Material, Vec<u64>)>,
    /// The goal program's values and a terminal state's bits (where the
    /// code has a goal program).
    goal_vals: Vec<u8>,
    bits: Vec<u64>,
    /// The state whose goal program values `goal_vals` holds, if any.
    goals_of: Option<NetState>,
}

/// The generated lane functions, called on lane memory of the plan's size.
struct NativeLanes<'a> {
    fns: &'a Fns,
}

// SAFETY (all three): `words` is the lane memory made by `Lanes::new` from
// the plan checked out of this same code's metadata, so it has
// `plan.words` words, every word the generated functions read or write; a
// `u128` slice is 16-byte aligned, as the code's vector loads and stores
// expect, and lies as the two `u64`s per word the code reads.
impl LaneEval for NativeLanes<'_> {
    fn state(&mut self, words: &mut [Word]) {
        unsafe { self.fns.lanes_state(words.as_mut_ptr().cast()) }
    }
    fn next(&mut self, words: &mut [Word]) {
        unsafe { self.fns.lanes_next(words.as_mut_ptr().cast()) }
    }
    fn goals(&mut self, words: &mut [Word]) {
        unsafe { self.fns.lanes_goals(words.as_mut_ptr().cast()) }
    }
}

impl Clone for NativeMachine {
    /// A fresh instance of the same code with the same settings (batch
    /// lanes, win-first moves); not the current state (see
    /// [`NativeMachine::copy_to`]).
    fn clone(&self) -> Self {
        let mut m = NativeMachine::new(self.code.clone());
        m.batch_lanes = self.batch_lanes;
        m.win_first = self.win_first.clone();
        m.safe_first = self.safe_first;
        m.decisive = self.decisive;
        m.capture = self.capture.clone();
        m
    }
}

impl std::fmt::Debug for NativeMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeMachine").finish_non_exhaustive()
    }
}

fn check(rc: i32, what: &'static str) -> Result<(), MachineError> {
    match rc {
        0 => Ok(()),
        1 => Err(MachineError::StackOverflow { what }),
        other => Err(MachineError::Native { what, code: other.into() }),
    }
}

impl NativeMachine {
    pub fn new(code: Arc<NativeCode>) -> NativeMachine {
        let words = (code.iface.size as usize).div_ceil(8);
        let batch_lanes = code.lanes().is_some();
        let mut m = NativeMachine {
            mem: vec![0u64; words],
            joint: vec![0; code.roles().len()],
            code,
            lanes: None,
            batch_lanes,
            win_first: Vec::new(),
            safe_first: false,
            decisive: false,
            capture: None,
            cutoff: None,
            goal_vals: Vec::new(),
            bits: Vec::new(),
            goals_of: None,
        };
        // SAFETY: `mem` is the instance size the code's checked metadata
        // gives, 8-byte aligned, owned by this instance; `init` writes
        // only inside it.
        let inst = m.inst();
        unsafe { m.code.fns().init(inst) };
        m
    }

    pub fn code(&self) -> &Arc<NativeCode> {
        &self.code
    }

    fn inst(&mut self) -> *mut u8 {
        self.mem.as_mut_ptr() as *mut u8
    }

    /// `n` words at a byte offset the checked metadata placed inside the
    /// instance (an error rather than a panic if it did not).
    fn words_at(&self, byte_offset: u32, n: usize) -> Result<&[u64], MachineError> {
        let w = byte_offset as usize / 8;
        self.mem
            .get(w..w + n)
            .ok_or(MachineError::Native { what: "a bitset outside the instance", code: byte_offset.into() })
    }

    /// The current engine's bitsets (absolute byte offsets).
    fn engine(&self) -> Result<EngineOffsets, MachineError> {
        // The header's first u32 (little end of word 0) is the engine.
        let e = (self.mem[propel_abi::layout::CURRENT as usize / 8] & 0xffff_ffff) as usize;
        self.code.iface.engines.get(e).copied().ok_or(MachineError::Native { what: "no such engine", code: e as i64 })
    }

    fn check_state(&self, s: &NetState) -> Result<(), MachineError> {
        if s.bits().len() != self.code.iface.state_words() {
            return Err(MachineError::WrongGame);
        }
        Ok(())
    }

    fn check_joint(&self, joint: &[u32]) -> Result<(), MachineError> {
        crate::machine::check_joint(joint, &self.code.iface.input_role, self.code.roles(), |m| self.move_kif(m))
    }

    fn set_state(&mut self, s: &NetState) -> Result<(), MachineError> {
        self.check_state(s)?;
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `bits` holds one word per
        // 64 bases, which is what the function reads.
        let rc = unsafe { self.code.fns().set_state(inst, s.bits().as_ptr()) };
        check(rc, "setting a state")
    }

    /// Makes `s` the instance's current state (`propel_set_state`).
    pub fn load_state(&mut self, s: &NetState) -> Result<(), MachineError> {
        self.set_state(s)
    }

    /// The instance's current state, read back out (`propel_get_state`).
    pub fn current_state(&self) -> NetState {
        let mut bits = vec![0u64; self.code.iface.state_words()];
        // SAFETY: instance memory as in `new`, only read; `bits` has the
        // state's words, which is what the function writes.
        unsafe { self.code.fns().get_state(self.mem.as_ptr() as *const u8, bits.as_mut_ptr()) };
        NetState::from_bits(bits)
    }

    /// Plays `joint` in the current state and makes the next state current
    /// (`propel_step`).
    pub fn step(&mut self, joint: &[u32]) -> Result<(), MachineError> {
        self.check_joint(joint)?;
        self.joint.copy_from_slice(joint);
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `joint` has one input index
        // per role, each checked above to be one of that role's inputs.
        let rc = unsafe { self.code.fns().step(inst, self.joint.as_ptr()) };
        check(rc, "stepping")
    }

    /// Copies this instance, current state and all, into `other`
    /// (`propel_clone`); `other` must run the same code.
    pub fn copy_to(&self, other: &mut NativeMachine) -> Result<(), MachineError> {
        if !Arc::ptr_eq(&self.code, &other.code) {
            return Err(MachineError::WrongGame);
        }
        let dst = other.inst();
        // SAFETY: both instances have the size of the same code, are
        // 8-byte aligned and distinct (`other` is borrowed mutably).
        unsafe { self.code.fns().clone_instance(self.mem.as_ptr() as *const u8, dst) };
        Ok(())
    }

    /// A whole random playout in native code from `s`: its length and
    /// each role's goal (largest value given, -1 if none).
    pub fn native_playout(
        &mut self,
        s: &NetState,
        seed: u64,
        max_steps: u32,
        goals: &mut Vec<i32>,
    ) -> Result<u32, MachineError> {
        self.set_state(s)?;
        goals.clear();
        goals.resize(self.code.roles().len(), -1);
        let inst = self.inst();
        let max = max_steps.min(i32::MAX as u32) as i32;
        let out = if self.code.goals.is_some() { std::ptr::null_mut() } else { goals.as_mut_ptr() };
        // SAFETY: instance memory as in `new`; `out` has one slot per role,
        // or is null (then the code writes no goals).
        let n = unsafe { self.code.fns().playout(inst, seed, out, max) };
        let n = match n {
            n if n >= 0 => n as u32,
            -1 => return Err(MachineError::NoLegalMove { role: None }),
            -2 => return Err(MachineError::StepLimit { steps: max_steps.into() }),
            // Every role's goal is written; one is above 100 (checked below).
            -4 if !goals.is_empty() => 0,
            other => return Err(MachineError::Native { what: "a playout", code: other.into() }),
        };
        if let Some(p) = &self.code.goals {
            self.bits.resize(self.code.iface.state_words(), 0);
            // SAFETY: instance memory as in `new`, only read; `bits` has
            // the state's words, which is what the function writes.
            unsafe { self.code.fns().get_state(self.mem.as_ptr() as *const u8, self.bits.as_mut_ptr()) };
            p.eval(&self.bits, &mut self.goal_vals);
            self.goals_of = None;
            for (role, g) in goals.iter_mut().enumerate() {
                *g = p.role_max(&self.goal_vals, role).map_or(-1, i32::from);
            }
        }
        // Each role's largest value: one above 100 is the prover's error.
        if let Some((r, &v)) = goals.iter().enumerate().find(|&(_, &v)| v > i32::from(crate::machine::GOAL_MAX)) {
            return Err(bad_mask_goal(&self.code.roles()[r], v));
        }
        Ok(n)
    }
}

/// A lane error as a machine error, with the role's name where it names
/// one.
fn lane_error(e: crate::lanes::LaneError, roles: &[String]) -> MachineError {
    match e {
        crate::lanes::LaneError::BadGoal { role, value } => match roles.get(role as usize) {
            Some(name) => MachineError::BadGoal { role: name.clone(), value: value.to_string() },
            None => e.into(),
        },
        e => e.into(),
    }
}

/// The prover's error for a goal value above 100 read from a goal mask,
/// whose bit 127 stands for 127 and every value above.
fn bad_mask_goal(role: &str, v: i32) -> MachineError {
    let value = if v >= 127 { "127 or more".to_string() } else { v.to_string() };
    MachineError::BadGoal { role: role.to_string(), value }
}

/// Bit-parallel playouts on a native machine's lane code, with lane
/// memory of its own: a search streams its rollouts through one per thread
/// while its tree walks on another machine instance.
pub struct LaneRunner {
    code: Arc<NativeCode>,
    lanes: Lanes,
}

impl std::fmt::Debug for LaneRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneRunner").finish_non_exhaustive()
    }
}

impl LaneRunner {
    /// Random playouts from the states `source` hands out, until it says
    /// stop and every lane's game has ended (see [`Lanes::stream`]).
    pub fn stream(&mut self, source: &mut impl LaneSource, seed: u64, max_steps: u32) -> Result<(), MachineError> {
        let LaneRunner { code, lanes } = self;
        let plan = code.lanes().ok_or(MachineError::NoLaneCode)?;
        let mut eval = NativeLanes { fns: code.fns() };
        lanes
            .stream(plan, &mut eval, code.role_range(), source, seed, max_steps)
            .map_err(|e| lane_error(e, code.roles()))
    }

    /// Win-first move choice in this runner's lanes (see
    /// [`Lanes::set_win_first`]; empty: uniform moves).
    pub fn set_win_first(&mut self, winning: &[u32]) {
        if let Some(plan) = self.code.lanes() {
            self.lanes.set_win_first(plan, winning);
        }
    }

    /// The win-first inputs in use (empty: none).
    pub fn win_first(&self) -> &[u32] {
        self.lanes.win_first()
    }

    /// Safe-first move choice in this runner's lanes (see
    /// [`Lanes::set_safe_first`]; needs win-first inputs).
    pub fn set_safe_first(&mut self, on: bool) {
        self.lanes.set_safe_first(on);
    }

    /// Whether safe-first move choice is in use.
    pub fn safe_first(&self) -> bool {
        self.lanes.safe_first()
    }

    /// Decisive move choice in this runner's lanes (see
    /// [`Lanes::set_decisive`]).
    pub fn set_decisive(&mut self, on: bool) {
        if let Some(plan) = self.code.lanes() {
            self.lanes.set_decisive(plan, on);
        }
    }

    /// Whether decisive move choice is in use.
    pub fn decisive(&self) -> bool {
        self.lanes.decisive()
    }

    /// Whether lanes finish their games plainly once a streaming run is
    /// told to stop ([`Lanes::set_plain_after_stop`]).
    pub fn set_plain_after_stop(&mut self, on: bool) {
        self.lanes.set_plain_after_stop(on);
    }

    /// Capture-first move choice in this runner's lanes (see
    /// [`Lanes::set_capture_first`]; with the look-ahead, turns decisive
    /// lanes on).
    pub fn set_capture_first(&mut self, capture: Option<(f64, &Captures)>) {
        if let Some(plan) = self.code.lanes() {
            self.lanes.set_capture_first(plan, capture);
        }
    }

    /// The chance of capture-first move choice, where it is in use.
    pub fn capture_first(&self) -> Option<f64> {
        self.lanes.capture_first()
    }

    /// Whether capture-first moves come from a table ([`Captures::Table`]).
    pub fn capture_table(&self) -> bool {
        self.lanes.capture_table()
    }

    /// Whether this runner's lanes tell their sources the moves each
    /// playout played ([`Lanes::set_record_moves`]).
    pub fn set_record_moves(&mut self, on: bool) {
        if let Some(plan) = self.code.lanes() {
            self.lanes.set_record_moves(plan, on);
        }
    }

    /// Material-cutoff rollouts in this runner's lanes (see
    /// [`Lanes::set_cutoff`]; `None`: playouts to the end).
    pub fn set_cutoff(&mut self, cutoff: Option<(u32, &crate::heuristic::Material)>) {
        if let Some(plan) = self.code.lanes() {
            self.lanes.set_cutoff(plan, cutoff);
        }
    }

    /// The state cut rollouts are valued against
    /// ([`Lanes::set_cutoff_reference`]).
    pub fn set_cutoff_reference(&mut self, material: &crate::heuristic::Material, bits: &[u64]) {
        self.lanes.set_cutoff_reference(material, bits);
    }

    /// The steps after which rollouts are cut (`None`: never).
    pub fn cutoff(&self) -> Option<u32> {
        self.lanes.cutoff()
    }

    /// Words (bits) of a state of this machine.
    pub fn state_words(&self) -> usize {
        self.code.iface.state_words()
    }
}

/// Sets `lanes`' material cutoff as [`NativeMachine::set_cutoff`] keeps it.
fn apply_cutoff(lanes: &mut Lanes, plan: &LanePlan, cutoff: &Option<(u32, crate::heuristic::Material, Vec<u64>)>) {
    lanes.set_cutoff(plan, cutoff.as_ref().map(|(steps, m, _)| (*steps, m)));
    if let Some((_, m, reference)) = cutoff {
        lanes.set_cutoff_reference(m, reference);
    }
}

impl NativeMachine {
    /// A lane runner on this machine's code, when it has lane functions.
    pub fn lane_runner(&self) -> Option<LaneRunner> {
        let plan = self.code.lanes()?;
        Some(LaneRunner { code: self.code.clone(), lanes: Lanes::new(plan) })
    }

    /// Win-first move choice in this machine's lane playouts (see
    /// [`Lanes::set_win_first`]; empty: uniform moves). One-at-a-time
    /// native playouts stay uniform.
    pub fn set_win_first(&mut self, winning: &[u32]) {
        self.win_first = winning.to_vec();
        if let (Some(lanes), Some(plan)) = (self.lanes.as_mut(), self.code.lanes()) {
            lanes.set_win_first(plan, winning);
        }
    }

    /// Safe-first move choice in this machine's lane playouts (see
    /// [`Lanes::set_safe_first`]; needs win-first moves).
    pub fn set_safe_first(&mut self, on: bool) {
        self.safe_first = on;
        if let Some(lanes) = self.lanes.as_mut() {
            lanes.set_safe_first(on);
        }
    }

    /// Decisive move choice in this machine's lane playouts (see
    /// [`Lanes::set_decisive`]).
    pub fn set_decisive(&mut self, on: bool) {
        self.decisive = on;
        if let (Some(lanes), Some(plan)) = (self.lanes.as_mut(), self.code.lanes()) {
            lanes.set_decisive(plan, on);
        }
    }

    /// Capture-first move choice in this machine's lane playouts (see
    /// [`Lanes::set_capture_first`]); with the look-ahead, turns decisive
    /// lanes on.
    pub fn set_capture_first(&mut self, capture: Option<(f64, &Captures)>) {
        self.capture = capture.map(|(p, c)| (p, c.clone()));
        self.decisive |= matches!(capture, Some((_, Captures::LookAhead(_))));
        if let (Some(lanes), Some(plan)) = (self.lanes.as_mut(), self.code.lanes()) {
            lanes.set_capture_first(plan, capture);
        }
    }

    /// Material-cutoff lane playouts (see [`Lanes::set_cutoff`]; `None`:
    /// playouts to the end), valued against `reference` (base bits).
    /// One-at-a-time native playouts are never cut.
    pub fn set_cutoff(&mut self, cutoff: Option<(u32, &crate::heuristic::Material)>, reference: &[u64]) {
        self.cutoff = cutoff.map(|(steps, m)| (steps, m.clone(), reference.to_vec()));
        if let (Some(lanes), Some(plan)) = (self.lanes.as_mut(), self.code.lanes()) {
            apply_cutoff(lanes, plan, &self.cutoff);
        }
    }

    /// The win-first moves of this machine's lane playouts
    /// ([`Self::set_win_first`]).
    pub fn win_first_moves(&self) -> &[u32] {
        &self.win_first
    }

    /// Whether the code can run bit-parallel playouts ([`Self::playouts`]).
    pub fn has_lanes(&self) -> bool {
        self.code.lanes().is_some()
    }

    /// Whether batches of playouts run on the lanes: wherever the code
    /// has them, unless [`Self::set_batch_lanes`] said otherwise. Chosen
    /// from the code, not timed: with the lanes' bit-sliced moves they
    /// outrun one-at-a-time native playouts on every game measured
    /// (docs/native.md).
    pub fn batches_on_lanes(&self) -> bool {
        self.batch_lanes && self.has_lanes()
    }

    /// Runs batches of playouts on the lanes (`true`, where the code has
    /// them) or one native playout after another.
    pub fn set_batch_lanes(&mut self, on: bool) {
        self.batch_lanes = on;
    }

    /// `count` random playouts from `s`: each playout's length into
    /// `lengths`, each role's goal (largest value given, -1 if none) into
    /// `goals[p * roles + r]`. Bit-parallel ([`Self::lane_playouts`]) when
    /// [`Self::batches_on_lanes`], else one native playout after another.
    pub fn playouts(
        &mut self,
        s: &NetState,
        count: usize,
        seed: u64,
        max_steps: u32,
        goals: &mut Vec<i32>,
        lengths: &mut Vec<u32>,
    ) -> Result<(), MachineError> {
        if self.batches_on_lanes() {
            return self.lane_playouts(s, count, seed, max_steps, goals, lengths);
        }
        let roles = self.code.roles().len();
        goals.clear();
        lengths.clear();
        let mut rng = crate::rng::Rng::new(seed);
        let mut g = Vec::with_capacity(roles);
        for _ in 0..count {
            lengths.push(self.native_playout(s, rng.next_u64(), max_steps, &mut g)?);
            goals.extend_from_slice(&g);
        }
        Ok(())
    }

    /// [`Self::playouts`] [`crate::lanes::LANES`] at a time in the
    /// bit-parallel lane code (an error when the code has none).
    pub fn lane_playouts(
        &mut self,
        s: &NetState,
        count: usize,
        seed: u64,
        max_steps: u32,
        goals: &mut Vec<i32>,
        lengths: &mut Vec<u32>,
    ) -> Result<(), MachineError> {
        let roles = self.code.roles().len();
        goals.clear();
        goals.resize(count * roles, -1);
        lengths.clear();
        lengths.resize(count, 0);
        self.check_state(s)?;
        let code = self.code.clone();
        let plan = code.lanes().ok_or(MachineError::NoLaneCode)?;
        let (win_first, safe_first, cutoff) = (&self.win_first, self.safe_first, &self.cutoff);
        let (decisive, capture) = (self.decisive, &self.capture);
        let lanes = self.lanes.get_or_insert_with(|| {
            let mut l = Lanes::new(plan);
            l.set_win_first(plan, win_first);
            l.set_safe_first(safe_first);
            l.set_decisive(plan, decisive);
            l.set_capture_first(plan, capture.as_ref().map(|(p, c)| (*p, c)));
            apply_cutoff(&mut l, plan, cutoff);
            l
        });
        let mut eval = NativeLanes { fns: code.fns() };
        lanes
            .run(plan, &mut eval, code.role_range(), |_| s.bits(), count, seed, max_steps, goals, lengths)
            .map_err(|e| lane_error(e, code.roles()))
    }
}

impl StateMachine for NativeMachine {
    type State = NetState;
    type Move = u32;

    fn roles(&self) -> &[String] {
        self.code.roles()
    }

    fn initial_state(&mut self) -> Result<NetState, MachineError> {
        Ok(NetState::from_bits(self.code.iface.initial.clone()))
    }

    fn is_terminal(&mut self, s: &NetState) -> Result<bool, MachineError> {
        self.set_state(s)?;
        let inst = self.inst();
        // SAFETY: instance memory as in `new`.
        Ok(unsafe { self.code.fns().terminal(inst) } != 0)
    }

    fn legal_moves(&mut self, s: &NetState, role: usize, out: &mut Vec<u32>) -> Result<(), MachineError> {
        self.set_state(s)?;
        out.clear();
        let Some(&(lo, hi)) = self.code.role_range().get(role) else {
            return Err(MachineError::NoRole { role, roles: self.code.roles().len() });
        };
        let legal = self.words_at(self.engine()?.legal_bits, self.code.iface.input_words())?;
        // The set bits of the role's range, a word at a time.
        let (lo, hi) = (lo as usize, hi as usize);
        for w in lo / 64..hi.div_ceil(64) {
            let mut bits = legal.get(w).copied().unwrap_or(0);
            if w == lo / 64 {
                bits &= !0u64 << (lo % 64);
            }
            if w == hi / 64 {
                bits &= (1u64 << (hi % 64)) - 1;
            }
            while bits != 0 {
                out.push((w * 64) as u32 + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
        Ok(())
    }

    fn next_state(&mut self, s: &NetState, joint: &[u32]) -> Result<NetState, MachineError> {
        self.check_joint(joint)?;
        self.set_state(s)?;
        self.joint.copy_from_slice(joint);
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `joint` has one input index
        // per role, each checked above to be one of that role's inputs.
        let rc = unsafe { self.code.fns().set_joint(inst, self.joint.as_ptr()) };
        check(rc, "playing a joint move")?;
        let next = self.words_at(self.engine()?.next_bits, self.code.iface.state_words())?;
        Ok(NetState::from_slice(next))
    }

    fn goal_values(&mut self, s: &NetState, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        let roles = self.code.roles().len();
        if role >= roles {
            return Err(MachineError::NoRole { role, roles });
        }
        if let Some(p) = &self.code.goals {
            self.check_state(s)?;
            // Goals are asked role by role of one state: evaluate it once.
            if self.goals_of.as_ref() != Some(s) {
                p.eval(s.bits(), &mut self.goal_vals);
                self.goals_of = Some(s.clone());
            }
            out.clear();
            p.role_values(&self.goal_vals, role, out);
            out.sort_unstable();
            out.dedup();
            return crate::machine::check_goal_values(&self.code.roles()[role], out);
        }
        self.set_state(s)?;
        let mut mask = [0u64; 2];
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `role` is one of the code's
        // roles (checked above); `mask` is the two words written.
        unsafe { self.code.fns().goals(inst, role as i32, mask.as_mut_ptr()) };
        out.clear();
        out.extend((0..=127u8).filter(|&v| mask[v as usize / 64] >> (v % 64) & 1 == 1));
        match out.iter().find(|&&v| v > crate::machine::GOAL_MAX) {
            Some(&v) => Err(bad_mask_goal(&self.code.roles()[role], v.into())),
            None => Ok(()),
        }
    }

    fn state_kif(&mut self, s: &NetState) -> Vec<String> {
        let names = self.code.base_names();
        let bit = |i: usize| s.bits().get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1);
        let mut v: Vec<String> = (0..names.len()).filter(|&i| bit(i)).map(|i| names[i].clone()).collect();
        v.sort();
        v
    }

    fn move_kif(&self, m: u32) -> String {
        match self.code.input_names().get(m as usize) {
            Some(name) => name.clone(),
            None => format!("(no input {m})"),
        }
    }
}
