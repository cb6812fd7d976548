//! Machines running generated native code: the JIT (`--machine jit`) and
//! ahead-of-time libraries (`--machine aot:FILE`). The code is called
//! through function pointers; each machine instance owns its memory (see
//! [`propel_compiler::lower::Layout`]) and reads the legal-move and
//! next-state bitsets there directly.

use crate::lanes::{LaneEval, LaneSource, Lanes, Word};
use crate::machine::{MachineError, StateMachine};
use crate::propnet::NetState;
use propel_compiler::lower::lanes::LanePlan;
use propel_compiler::lower::{Fns, MachineLayout};

/// Where one engine's bitsets lie in instance memory (byte offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineOffsets {
    pub legal_bits: u32,
    pub next_bits: u32,
}
use std::sync::Arc;

/// Generated code and what a machine needs to know about it.
pub struct NativeCode {
    pub fns: Fns,
    /// Bytes per instance.
    pub size: u32,
    /// Each engine's bitsets, absolute offsets.
    pub engines: Vec<EngineOffsets>,
    pub bases: usize,
    pub inputs: usize,
    pub roles: Vec<String>,
    pub base_names: Vec<String>,
    pub input_names: Vec<String>,
    /// Role of each input (inputs are numbered by role, then name).
    pub input_role: Vec<u32>,
    /// Each role's inputs: (first, end).
    pub role_range: Vec<(u32, u32)>,
    /// The initial state.
    pub initial: Vec<u64>,
    /// Where the bit-parallel playout code keeps each output, when the
    /// code has it.
    pub lanes: Option<LanePlan>,
    /// Keeps the code alive: the JIT module or the loaded library.
    pub owner: Box<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for NativeCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeCode").field("size", &self.size).finish_non_exhaustive()
    }
}

impl NativeCode {
    /// Engine offsets of a generated machine's layout.
    pub fn offsets(layout: &MachineLayout) -> Vec<EngineOffsets> {
        layout
            .engines
            .iter()
            .zip(&layout.regions)
            .map(|(l, &r)| EngineOffsets { legal_bits: r + l.legal_bits, next_bits: r + l.next_bits })
            .collect()
    }

    /// The lane plan the code carries, if any.
    pub fn lane_plan(fns: &Fns) -> Option<LanePlan> {
        // SAFETY: `lanes_plan` returns a pointer to the generated plan
        // data: a length word, then that many words, alive with the code.
        let words = unsafe {
            let p = (fns.lanes_plan)();
            if p.is_null() {
                return None;
            }
            std::slice::from_raw_parts(p.add(1), *p as usize)
        };
        LanePlan::decode(words)
    }

    /// Role ranges from the inputs' roles (inputs are numbered by role).
    pub fn ranges(roles: usize, input_role: &[u32]) -> Vec<(u32, u32)> {
        let mut r = vec![(u32::MAX, 0u32); roles];
        for (i, &role) in input_role.iter().enumerate() {
            let e = &mut r[role as usize];
            e.0 = e.0.min(i as u32);
            e.1 = e.1.max(i as u32 + 1);
        }
        r.into_iter().map(|(a, b)| if a == u32::MAX { (0, 0) } else { (a, b) }).collect()
    }
}

/// One instance of a native machine (per thread).
pub struct NativeMachine {
    code: Arc<NativeCode>,
    /// Whether batches of playouts run on the lanes (where the code has
    /// them) rather than one native playout after another.
    batch_lanes: bool,
    /// Instance memory, 8-byte aligned.
    mem: Vec<u64>,
    joint: Vec<u32>,
    /// Lane memory, made on first use.
    lanes: Option<Lanes>,
}

/// The generated lane functions, called on lane memory of the plan's size.
struct NativeLanes<'a> {
    fns: &'a Fns,
}

// SAFETY (all three): `words` is the lane memory made by `Lanes::new` from
// the plan decoded out of this same code, so it has `plan.words` words,
// every word the generated functions read or write; a `u128` slice is
// 16-byte aligned, as the code's vector loads and stores expect, and lies
// as the two `u64`s per word the code reads.
impl LaneEval for NativeLanes<'_> {
    fn state(&mut self, words: &mut [Word]) {
        unsafe { (self.fns.lanes_state)(words.as_mut_ptr().cast()) }
    }
    fn next(&mut self, words: &mut [Word]) {
        unsafe { (self.fns.lanes_next)(words.as_mut_ptr().cast()) }
    }
    fn goals(&mut self, words: &mut [Word]) {
        unsafe { (self.fns.lanes_goals)(words.as_mut_ptr().cast()) }
    }
}

impl Clone for NativeMachine {
    fn clone(&self) -> Self {
        NativeMachine::new(self.code.clone())
    }
}

impl std::fmt::Debug for NativeMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeMachine").finish_non_exhaustive()
    }
}

fn check(rc: i32, what: &str) -> Result<(), MachineError> {
    match rc {
        0 => Ok(()),
        1 => Err(MachineError::Other(format!("{what}: propagation stack overflow"))),
        3 => Err(MachineError::Other(format!("{what}: a move is not one of its role's moves"))),
        other => Err(MachineError::Other(format!("{what}: native code failed ({other})"))),
    }
}

impl NativeMachine {
    pub fn new(code: Arc<NativeCode>) -> NativeMachine {
        let words = (code.size as usize).div_ceil(8);
        let batch_lanes = code.lanes.is_some();
        let mut m =
            NativeMachine { mem: vec![0u64; words], joint: vec![0; code.roles.len()], code, lanes: None, batch_lanes };
        // SAFETY: `mem` is `layout.size` bytes, 8-byte aligned, owned by
        // this instance; `init` writes only inside it.
        unsafe { (m.code.fns.init)(m.inst()) };
        m
    }

    pub fn code(&self) -> &Arc<NativeCode> {
        &self.code
    }

    fn inst(&mut self) -> *mut u8 {
        self.mem.as_mut_ptr() as *mut u8
    }

    fn words_at(&self, byte_offset: u32, n: usize) -> &[u64] {
        let w = byte_offset as usize / 8;
        &self.mem[w..w + n]
    }

    /// Byte offsets of the current engine's legal and next bitsets.
    fn bitsets(&self) -> (u32, u32) {
        // The header's first u32 (little end of word 0) is the engine.
        let e = (self.mem[MachineLayout::CURRENT as usize / 8] & 0xffff_ffff) as usize;
        let o = self.code.engines[e.min(self.code.engines.len() - 1)];
        (o.legal_bits, o.next_bits)
    }

    fn set_state(&mut self, s: &NetState) -> Result<(), MachineError> {
        if s.bits().len() != self.code.bases.div_ceil(64) {
            return Err(MachineError::Other("a state of another game".into()));
        }
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `bits` holds one word per
        // 64 bases, which is what the function reads.
        let rc = unsafe { (self.code.fns.set_state)(inst, s.bits().as_ptr()) };
        check(rc, "setting a state")
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
        goals.resize(self.code.roles.len(), -1);
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `goals` has one slot per role.
        let n = unsafe { (self.code.fns.playout)(inst, seed, goals.as_mut_ptr(), max_steps as i32) };
        match n {
            n if n >= 0 => Ok(n as u32),
            -1 => Err(MachineError::Other("a role has no legal move in a non-terminal state".into())),
            -2 => Err(MachineError::Other(format!("a playout went on for more than {max_steps} steps"))),
            other => Err(MachineError::Other(format!("native playout failed ({other})"))),
        }
    }
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
        let Some(plan) = &code.lanes else {
            return Err(MachineError::Other("this machine's code has no lane functions".into()));
        };
        let mut eval = NativeLanes { fns: &code.fns };
        lanes
            .stream(plan, &mut eval, &code.role_range, source, seed, max_steps)
            .map_err(|e| MachineError::Other(e.to_string()))
    }

    /// Words (bits) of a state of this machine.
    pub fn state_words(&self) -> usize {
        self.code.bases.div_ceil(64)
    }
}

impl NativeMachine {
    /// A lane runner on this machine's code, when it has lane functions.
    pub fn lane_runner(&self) -> Option<LaneRunner> {
        let plan = self.code.lanes.as_ref()?;
        Some(LaneRunner { code: self.code.clone(), lanes: Lanes::new(plan) })
    }

    /// Whether the code can run bit-parallel playouts ([`Self::playouts`]).
    pub fn has_lanes(&self) -> bool {
        self.code.lanes.is_some()
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
        let roles = self.code.roles.len();
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

    /// [`Self::playouts`] [`LANES`] at a time in the bit-parallel lane code (an
    /// error when the code has none).
    pub fn lane_playouts(
        &mut self,
        s: &NetState,
        count: usize,
        seed: u64,
        max_steps: u32,
        goals: &mut Vec<i32>,
        lengths: &mut Vec<u32>,
    ) -> Result<(), MachineError> {
        let roles = self.code.roles.len();
        goals.clear();
        goals.resize(count * roles, -1);
        lengths.clear();
        lengths.resize(count, 0);
        if s.bits().len() != self.code.bases.div_ceil(64) {
            return Err(MachineError::Other("a state of another game".into()));
        }
        let code = self.code.clone();
        let Some(plan) = &code.lanes else {
            return Err(MachineError::Other("this machine's code has no lane functions".into()));
        };
        let lanes = self.lanes.get_or_insert_with(|| Lanes::new(plan));
        let mut eval = NativeLanes { fns: &code.fns };
        lanes
            .run(plan, &mut eval, &code.role_range, |_| s.bits(), count, seed, max_steps, goals, lengths)
            .map_err(|e| MachineError::Other(e.to_string()))
    }
}

impl StateMachine for NativeMachine {
    type State = NetState;
    type Move = u32;

    fn roles(&self) -> &[String] {
        &self.code.roles
    }

    fn initial_state(&mut self) -> Result<NetState, MachineError> {
        Ok(NetState::from_bits(self.code.initial.clone()))
    }

    fn is_terminal(&mut self, s: &NetState) -> Result<bool, MachineError> {
        self.set_state(s)?;
        let inst = self.inst();
        // SAFETY: instance memory as in `new`.
        Ok(unsafe { (self.code.fns.terminal)(inst) } != 0)
    }

    fn legal_moves(&mut self, s: &NetState, role: usize, out: &mut Vec<u32>) -> Result<(), MachineError> {
        self.set_state(s)?;
        out.clear();
        let (lo, hi) = self.code.role_range[role];
        let legal = self.words_at(self.bitsets().0, self.code.inputs.div_ceil(64));
        for i in lo..hi {
            if legal[i as usize / 64] >> (i % 64) & 1 == 1 {
                out.push(i);
            }
        }
        Ok(())
    }

    fn next_state(&mut self, s: &NetState, joint: &[u32]) -> Result<NetState, MachineError> {
        if joint.len() != self.code.roles.len()
            || joint.iter().enumerate().any(|(r, &m)| self.code.input_role.get(m as usize) != Some(&(r as u32)))
        {
            return Err(MachineError::Other("a joint move needs one move of each role, in role order".into()));
        }
        self.set_state(s)?;
        self.joint.copy_from_slice(joint);
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `joint` has one input index
        // per role, each checked above to be one of that role's inputs.
        let rc = unsafe { (self.code.fns.set_joint)(inst, self.joint.as_ptr()) };
        check(rc, "playing a joint move")?;
        let next = self.words_at(self.bitsets().1, self.code.bases.div_ceil(64));
        Ok(NetState::from_bits(next.to_vec()))
    }

    fn goal_values(&mut self, s: &NetState, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        self.set_state(s)?;
        let mut mask = [0u64; 2];
        let inst = self.inst();
        // SAFETY: instance memory as in `new`; `mask` is the two words written.
        unsafe { (self.code.fns.goals)(inst, role as i32, mask.as_mut_ptr()) };
        out.clear();
        out.extend((0..=100u8).filter(|&v| mask[v as usize / 64] >> (v % 64) & 1 == 1));
        Ok(())
    }

    fn state_kif(&mut self, s: &NetState) -> Vec<String> {
        let names = &self.code.base_names;
        let mut v: Vec<String> =
            (0..names.len()).filter(|&i| s.bits()[i / 64] >> (i % 64) & 1 == 1).map(|i| names[i].clone()).collect();
        v.sort();
        v
    }

    fn move_kif(&self, m: u32) -> String {
        self.code.input_names[m as usize].clone()
    }
}
