//! The memory of one machine instance, shared by the generated code and
//! the runtime: where the counters, bitsets and work stack live, as byte
//! offsets from the instance pointer. The runtime allocates `size` bytes
//! (8-byte aligned) per instance; the generated `init` fills them.

use crate::propnet::{Kind, Propnet};

/// Version of the generated interface and layout; a library built with
/// another version is refused.
pub const FORMAT_VERSION: u32 = 5;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub components: u32,
    pub bases: u32,
    pub inputs: u32,
    pub roles: u32,
    /// Cyclic strongly connected components (each has a pending flag).
    pub cycles: u32,
    /// The largest cycle's size (components).
    pub largest_cycle: u32,
    /// Components of the separate goal network (0 when there is none).
    pub goal_components: u32,
    /// `i32` per component.
    pub counters: u32,
    /// Current state: `u64` words, bit i = base i.
    pub base_bits: u32,
    /// Legal moves: bit j = input j is legal.
    pub legal_bits: u32,
    /// Next state, kept up to date by triggers.
    pub next_bits: u32,
    /// A copy of the next state (the native playout moves to it).
    pub scratch_bits: u32,
    /// `u32` per role: the input currently played, or `u32::MAX`.
    pub role_input: u32,
    /// `u32` per role: the moves chosen by the native playout.
    pub moves: u32,
    /// `u64` per role: which of its move ORs are true (see `moves.rs`).
    pub move_ors: u32,
    /// `u8` per cyclic component.
    pub pending: u32,
    /// A cycle's values while it is recomputed (i32 per member).
    pub cycle_vals: u32,
    /// `u8` per goal-network component.
    pub goal_values: u32,
    /// `u32`: entries on the work stack.
    pub sp: u32,
    /// `u32` entries: `component << 1 | (1 if it turned true)`.
    pub stack: u32,
    pub stack_cap: u32,
    pub size: u32,
}

pub fn words(bits: u32) -> u32 {
    bits.div_ceil(64)
}

impl Layout {
    pub fn new(net: &Propnet, goal_net: Option<&Propnet>, cycles: u32, largest_cycle: u32) -> Layout {
        let n = net.len() as u32;
        let (wb, wi) = (words(net.bases.len() as u32), words(net.inputs.len() as u32));
        let roles = net.roles.len() as u32;
        let goal_components = goal_net.map(|g| g.len() as u32).unwrap_or(0);
        let mut at = 0u32;
        let mut take = |bytes: u32, align: u32| {
            at = at.div_ceil(align) * align;
            let start = at;
            at += bytes;
            start
        };
        let base_bits = take(8 * wb, 8);
        let legal_bits = take(8 * wi, 8);
        let next_bits = take(8 * wb, 8);
        let scratch_bits = take(8 * wb, 8);
        let counters = take(4 * n, 8);
        let role_input = take(4 * roles, 4);
        let moves = take(4 * roles, 4);
        let move_ors = take(8 * roles, 8);
        let sp = take(4, 4);
        let pending = take(cycles, 1);
        let cycle_vals = take(4 * largest_cycle, 4);
        let goal_values = take(goal_components, 1);
        // A wave of propagation pushes each flip once; the generated code
        // checks the room left before every pop.
        let stack_cap = (4 * n).max(4096);
        let stack = take(4 * stack_cap, 8);
        let size = at.div_ceil(8) * 8;
        Layout {
            components: n,
            bases: net.bases.len() as u32,
            inputs: net.inputs.len() as u32,
            roles,
            cycles,
            largest_cycle,
            cycle_vals,
            goal_components,
            counters,
            base_bits,
            legal_bits,
            next_bits,
            scratch_bits,
            role_input,
            moves,
            move_ors,
            pending,
            goal_values,
            sp,
            stack,
            stack_cap,
            size,
        }
    }
}

/// The starting value of a component's counter: with all its inputs
/// false, the top bit is the output (OR 0x7FFFFFFF, AND 0x80000000 - n,
/// NOR 0xFFFFFFFF, NAND -n; a leaf's counter is -1 when true, 0 when false).
pub fn counter0(kind: Kind, n: usize) -> i32 {
    let n = n as i32;
    match kind {
        Kind::Or => i32::MAX,
        Kind::And => i32::MIN.wrapping_sub(n),
        Kind::Not | Kind::Nor => i32::MIN,
        Kind::Nand => i32::MIN.wrapping_add(n - 1),
        Kind::True => -1,
        Kind::False | Kind::Base(_) | Kind::Input(_) => 0,
    }
}

/// Whether a gate counts down (NOT, NOR, NAND): each true input subtracts
/// one from its counter instead of adding one. Every gate's output then
/// flips exactly when its counter crosses between `i32::MAX` and
/// `i32::MIN`, that is when the update overflows, so the generated code
/// reads a flip off the overflow flag.
pub fn counts_down(kind: Kind) -> bool {
    matches!(kind, Kind::Not | Kind::Nor | Kind::Nand)
}

/// The instance memory right after `init`: every leaf false, every counter
/// consistent with its inputs (least fixed point on cycles), legal and
/// next bits set from their components, no input played.
pub fn reset_image(net: &Propnet, layout: &Layout) -> Vec<u8> {
    let mut mem = vec![0u8; layout.size as usize];
    let val = net.eval(&vec![false; net.bases.len()], &vec![false; net.inputs.len()]);
    for c in 0..net.len() {
        let ins = net.inputs_of(c as u32);
        let on = ins.iter().filter(|&&i| val[i as usize]).count() as i32;
        let counter = match net.kind(c as u32) {
            Kind::Base(_) | Kind::Input(_) | Kind::False => 0,
            Kind::True => -1,
            k if counts_down(k) => counter0(k, ins.len()).wrapping_sub(on),
            k => counter0(k, ins.len()).wrapping_add(on),
        };
        let at = layout.counters as usize + 4 * c;
        mem[at..at + 4].copy_from_slice(&counter.to_le_bytes());
    }
    let mut set_bit = |region: u32, i: usize| {
        let at = region as usize + 8 * (i / 64);
        let mut w = u64::from_le_bytes(mem[at..at + 8].try_into().unwrap_or([0; 8]));
        w |= 1 << (i % 64);
        mem[at..at + 8].copy_from_slice(&w.to_le_bytes());
    };
    for (i, inp) in net.inputs.iter().enumerate() {
        if val[inp.legal as usize] {
            set_bit(layout.legal_bits, i);
        }
    }
    for (i, b) in net.bases.iter().enumerate() {
        if val[b.next as usize] {
            set_bit(layout.next_bits, i);
        }
    }
    for r in 0..layout.roles as usize {
        let at = layout.role_input as usize + 4 * r;
        mem[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    }
    mem
}
