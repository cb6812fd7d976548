//! The memory of one machine instance, shared by the generated code and
//! whatever runs it: a header, then each engine's memory (one network, or
//! the two copies of a split one), where the counters, bitsets and work
//! stack live, as byte offsets.

/// Byte offset of the current engine's index (a `u32`) in the header.
pub const CURRENT: u32 = 0;
/// Byte offset of the native playout's random generator state (a `u64`).
pub const RNG: u32 = 8;
/// Bytes of the header; the first engine's memory starts here.
pub const HEADER: u32 = 64;

/// `u64` words of a bitset of `bits` bits.
pub fn words(bits: u32) -> u32 {
    bits.div_ceil(64)
}

/// The numbers an engine's layout follows from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayoutCounts {
    pub components: u32,
    pub bases: u32,
    pub inputs: u32,
    pub roles: u32,
    /// Cyclic strongly connected components.
    pub cycles: u32,
    /// The largest cycle's size (components).
    pub largest_cycle: u32,
    /// Components of the separate goal network (0 when there is none).
    pub goal_components: u32,
}

/// Where one engine keeps everything, as byte offsets from its memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// What the layout follows from.
    pub counts: LayoutCounts,
    /// `i32` per component.
    pub counters: u32,
    /// Current state: `u64` words, bit i = base i.
    pub base_bits: u32,
    /// Legal moves: bit j = input j is legal.
    pub legal_bits: u32,
    /// Next state, kept up to date by triggers.
    pub next_bits: u32,
    /// A copy of the next state (stepping moves to it).
    pub scratch_bits: u32,
    /// `u32` per role: the input currently played, or `u32::MAX`.
    pub role_input: u32,
    /// `u32` per role: the moves chosen by the native playout.
    pub moves: u32,
    /// `u64` per role: which of its move ORs are true.
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

impl Layout {
    pub fn new(c: LayoutCounts) -> Layout {
        let n = c.components;
        let (wb, wi) = (words(c.bases), words(c.inputs));
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
        let role_input = take(4 * c.roles, 4);
        let moves = take(4 * c.roles, 4);
        let move_ors = take(8 * c.roles, 8);
        let sp = take(4, 4);
        let pending = take(c.cycles, 1);
        let cycle_vals = take(4 * c.largest_cycle, 4);
        let goal_values = take(c.goal_components, 1);
        // A wave of propagation pushes each flip once; the generated code
        // checks the room left before every pop.
        let stack_cap = (4 * n).max(4096);
        let stack = take(4 * stack_cap, 8);
        let size = at.div_ceil(8) * 8;
        Layout {
            counts: c,
            cycle_vals,
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

/// The memory of a whole machine: the header, then each engine's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineLayout {
    /// Byte offset of each engine's memory.
    pub regions: Vec<u32>,
    pub engines: Vec<Layout>,
    pub size: u32,
}

impl MachineLayout {
    /// Engines one after another after the header, each 64-byte aligned.
    pub fn new(engines: Vec<Layout>) -> MachineLayout {
        let mut at = HEADER;
        let mut regions = Vec::new();
        for l in &engines {
            regions.push(at);
            at = (at + l.size).div_ceil(64) * 64;
        }
        MachineLayout { regions, engines, size: at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_follow_the_header_and_fit_the_size() {
        let l = Layout::new(LayoutCounts { components: 100, bases: 70, inputs: 9, roles: 2, ..Default::default() });
        assert_eq!(l.base_bits, 0);
        assert_eq!(l.legal_bits, 16);
        assert!(l.stack + 4 * l.stack_cap <= l.size);
        let m = MachineLayout::new(vec![l.clone(), l.clone()]);
        assert_eq!(m.regions[0], HEADER);
        assert_eq!(m.regions[1] % 64, 0);
        assert!(m.regions[1] + l.size <= m.size);
    }
}
