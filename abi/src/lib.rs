//! The interface between Propel's generated machine code and whatever runs
//! it: the runtime (JIT code in memory, or a library written by `propel
//! compile`), a C program, Python through `ctypes`.
//!
//! Everything both sides must agree on lives here, with no code generator
//! behind it, so that loading a library needs only this crate:
//! - [`exports`]: the exported functions, from one table: their names,
//!   signatures and typed function pointers ([`Fns`]);
//! - [`header`]: the C header and the documentation's table, from it;
//! - [`layout`]: where a machine instance keeps its state;
//! - [`lanes`]: the bit-parallel playout code's plan;
//! - [`meta`]: the metadata a machine carries about itself, and its checks;
//! - [`cpu`]: the processor features code was generated for;
//! - [`file`](mod@file): the checks a library file passes before it is opened.

pub mod cpu;
pub mod exports;
pub mod file;
pub mod header;
pub mod lanes;
pub mod layout;
pub mod meta;

pub use exports::{Export, Fns, Ty};
pub use lanes::{LanePlan, LANES};
pub use layout::{Layout, LayoutCounts, MachineLayout};
pub use meta::{Interface, MetaError, Metadata};

/// Version of the generated interface and layout; a library built with
/// another version is refused. 6: the exports come from one table (state
/// read-back, stepping, cloning, names, counts), the metadata carries the
/// lane plan, and library files end with a checked trailer.
pub const FORMAT_VERSION: u32 = 6;

/// A stable hash of a game file's bytes (FNV-1a, 64 bits, hex), carried by
/// machines to recognise one built from another version of the game.
pub fn game_hash(text: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}
