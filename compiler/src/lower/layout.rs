//! The memory of one machine instance as the generated code lays it out:
//! the layout types are the ABI's ([`propel_abi::layout`]); here they are
//! computed from a network, with the memory `init` starts from.

use crate::propnet::{Kind, Propnet};
pub(crate) use propel_abi::layout::{words, Layout, LayoutCounts};
pub use propel_abi::FORMAT_VERSION;

/// The layout of an engine for `net` (with its goal network, `cycles`
/// cyclic components, the largest of `largest_cycle` components).
pub(crate) fn engine_layout(net: &Propnet, goal_net: Option<&Propnet>, cycles: u32, largest_cycle: u32) -> Layout {
    Layout::new(LayoutCounts {
        components: net.len() as u32,
        bases: net.bases.len() as u32,
        inputs: net.inputs.len() as u32,
        roles: net.roles.len() as u32,
        cycles,
        largest_cycle,
        goal_components: goal_net.map_or(0, |g| g.len() as u32),
    })
}

/// The starting value of a component's counter: with all its inputs
/// false, the top bit is the output (OR 0x7FFFFFFF, AND 0x80000000 - n,
/// NOR 0xFFFFFFFF, NAND -n; a leaf's counter is -1 when true, 0 when false).
pub(crate) fn counter0(kind: Kind, n: usize) -> i32 {
    let n = n as i32;
    match kind {
        Kind::Or => i32::MAX,
        Kind::And => i32::MIN.wrapping_sub(n),
        Kind::Not | Kind::Nor => i32::MIN,
        Kind::Nand => i32::MIN.wrapping_add(n - 1),
        Kind::True => -1,
        Kind::False | Kind::Base(_) | Kind::Input(_) | Kind::Query(_) => 0,
    }
}

/// Whether a gate counts down (NOT, NOR, NAND): each true input subtracts
/// one from its counter instead of adding one. Every gate's output then
/// flips exactly when its counter crosses between `i32::MAX` and
/// `i32::MIN`, that is when the update overflows, so the generated code
/// reads a flip off the overflow flag.
pub(crate) fn counts_down(kind: Kind) -> bool {
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
            Kind::Base(_) | Kind::Input(_) | Kind::Query(_) | Kind::False => 0,
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
    for r in 0..layout.counts.roles as usize {
        let at = layout.role_input as usize + 4 * r;
        mem[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    }
    mem
}
