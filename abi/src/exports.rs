//! The functions a machine exports (C ABI), written once in one table
//! (the `exports!` invocation below): from it come the symbol names
//! ([`Export::name`]), the signatures ([`Export::params`],
//! [`Export::ret`]) the code generator declares, the typed function
//! pointers ([`Fns`]), the C header's declarations and the documentation's
//! table ([`crate::header`]).
//!
//! `inst` points to one machine instance: [`crate::Metadata::size`] bytes
//! (`PROPEL_INSTANCE_SIZE`), 8-byte aligned, one per thread.

use core::ffi::{c_char, c_void};
use core::ptr::NonNull;

/// The C type of a parameter or result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Void,
    /// `void *`: an instance.
    Inst,
    /// `const void *`: an instance only read.
    ConstInst,
    /// `uint64_t *`: a state's bits, written.
    Bits,
    /// `const uint64_t *`: a state's bits, read.
    ConstBits,
    /// `const uint32_t *`: one input per role.
    Moves,
    /// `uint32_t *`: inputs, written.
    MovesOut,
    /// `uint64_t *`: a goal mask (two words), written.
    GoalMask,
    /// `int32_t *`: one goal per role, written.
    GoalsOut,
    /// `uint64_t *`: lane words (16-byte aligned).
    Words,
    Int,
    U32,
    U64,
    /// `const char *`: a NUL-terminated text in the library, or NULL.
    Str,
    /// `const uint32_t *`: the lane plan behind its length.
    Plan,
}

impl Ty {
    /// The type in C.
    pub fn c(self) -> &'static str {
        match self {
            Ty::Void => "void",
            Ty::Inst => "void *",
            Ty::ConstInst => "const void *",
            Ty::Bits | Ty::GoalMask | Ty::Words => "uint64_t *",
            Ty::ConstBits => "const uint64_t *",
            Ty::Moves | Ty::Plan => "const uint32_t *",
            Ty::MovesOut => "uint32_t *",
            Ty::GoalsOut => "int32_t *",
            Ty::Int => "int",
            Ty::U32 => "uint32_t",
            Ty::U64 => "uint64_t",
            Ty::Str => "const char *",
        }
    }

    /// A declaration of `name` with this type, in C.
    pub fn c_decl(self, name: &str) -> String {
        let c = self.c();
        if c.ends_with('*') {
            format!("{c}{name}")
        } else {
            format!("{c} {name}")
        }
    }

    /// Whether values of this type are pointers (the code generator's
    /// pointer type); otherwise [`Ty::bits`] wide integers.
    pub fn is_pointer(self) -> bool {
        !matches!(self, Ty::Void | Ty::Int | Ty::U32 | Ty::U64)
    }

    /// Width of an integer type (0 for `void`; pointers are pointer-wide).
    pub fn bits(self) -> u32 {
        match self {
            Ty::Void => 0,
            Ty::Int | Ty::U32 => 32,
            _ => 64,
        }
    }
}

/// The Rust type of a [`Ty`].
macro_rules! rust_ty {
    (Void) => { () };
    (Inst) => { *mut u8 };
    (ConstInst) => { *const u8 };
    (Bits) => { *mut u64 };
    (ConstBits) => { *const u64 };
    (Moves) => { *const u32 };
    (MovesOut) => { *mut u32 };
    (GoalMask) => { *mut u64 };
    (GoalsOut) => { *mut i32 };
    (Words) => { *mut u64 };
    (Int) => { i32 };
    (U32) => { u32 };
    (U64) => { u64 };
    (Str) => { *const c_char };
    (Plan) => { *const u32 };
}

/// The table: `Variant / field = "symbol" (arg: Ty, ...) -> Ty;`, each
/// with its documentation (used in the C header and the docs).
macro_rules! exports {
    ($( $(#[doc = $doc:literal])+ $variant:ident / $field:ident = $name:literal ($($arg:ident : $ty:ident),*) -> $ret:ident ; )*) => {
        /// One exported function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Export { $($variant),* }

        impl Export {
            /// Every export, in the table's order.
            pub const ALL: &'static [Export] = &[$(Export::$variant),*];

            /// Its position in [`Export::ALL`] (the variants' order, as
            /// both come from the table).
            pub const fn index(self) -> usize {
                self as usize
            }

            /// Its symbol.
            pub const fn name(self) -> &'static str {
                match self { $(Export::$variant => $name),* }
            }

            /// Its parameters: (name, type).
            pub fn params(self) -> &'static [(&'static str, Ty)] {
                match self { $(Export::$variant => &[$((stringify!($arg), Ty::$ty)),*]),* }
            }

            /// Its result.
            pub fn ret(self) -> Ty {
                match self { $(Export::$variant => Ty::$ret),* }
            }

            /// What it does (the table's documentation, one text).
            pub fn doc(self) -> String {
                let lines: &[&str] = match self { $(Export::$variant => &[$($doc),+]),* };
                lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
            }
        }

        /// The exported functions of one machine, typed. Built only from
        /// addresses that a caller vouches for ([`Fns::resolve`]); neither
        /// `Copy` nor `Clone`, and its pointers never leave it: the owner
        /// of the code (the JIT module, the loaded library) keeps a `Fns`
        /// and lends it, so every call happens while the code is alive.
        pub struct Fns {
            $($field: unsafe extern "C" fn($(rust_ty!($ty)),*) -> rust_ty!($ret)),*
        }

        impl Fns {
            /// Types the address of every export, which `address` gives
            /// for each; the first it has none for is the error.
            ///
            /// # Safety
            /// Each address must be the entry of a function with exactly
            /// the export's signature and behaviour (code generated by
            /// Propel's emitter for this [`crate::FORMAT_VERSION`]), and it
            /// must stay valid for as long as the returned value lives.
            pub unsafe fn resolve(
                mut address: impl FnMut(Export) -> Option<NonNull<c_void>>,
            ) -> Result<Fns, Export> {
                Ok(Fns {
                    $($field: {
                        let p = address(Export::$variant).ok_or(Export::$variant)?;
                        // SAFETY: the caller vouches that `p` is this
                        // export's function, with this signature.
                        unsafe {
                            core::mem::transmute::<*mut c_void, unsafe extern "C" fn($(rust_ty!($ty)),*) -> rust_ty!($ret)>(
                                p.as_ptr(),
                            )
                        }
                    }),*
                })
            }

            $(
                $(#[doc = $doc])+
                ///
                /// # Safety
                /// Pointer arguments must be valid for what the function
                /// reads and writes (see the crate's documentation and the
                /// C header): an instance of the machine's size, 8-byte
                /// aligned and used by one thread at a time; state bitsets
                /// of the machine's words.
                #[allow(clippy::too_many_arguments)]
                pub unsafe fn $field(&self, $($arg: rust_ty!($ty)),*) -> rust_ty!($ret) {
                    // SAFETY: the function is this export (`resolve`'s
                    // contract); the arguments are the caller's to vouch for.
                    unsafe { (self.$field)($($arg),*) }
                }
            )*
        }
    };
}

exports! {
    /// Every base false (not a game state yet), every counter consistent.
    Init / init = "propel_init" (inst: Inst) -> Void;
    /// `propel_init`, then the initial state. Returns 0.
    Reset / reset = "propel_reset" (inst: Inst) -> Int;
    /// Makes a state current: `bits` holds `PROPEL_STATE_WORDS` words, bit
    /// `i % 64` of word `i / 64` for base `i`. Returns 0, or 1 on a
    /// propagation stack overflow.
    SetState / set_state = "propel_set_state" (inst: Inst, bits: ConstBits) -> Int;
    /// Writes the current state to `bits` (`PROPEL_STATE_WORDS` words, as
    /// `propel_set_state` reads them).
    GetState / get_state = "propel_get_state" (inst: ConstInst, bits: Bits) -> Void;
    /// Plays one input per role (role order) in the current state, which
    /// stays current; its successor is then ready for `propel_get_next`.
    /// Returns 0; 3 if a move is not one of its role's inputs (that role
    /// is left without a move); 1 on a propagation stack overflow.
    SetJoint / set_joint = "propel_set_joint" (inst: Inst, moves: Moves) -> Int;
    /// Writes the successor of the current state under the joint move last
    /// played by `propel_set_joint` to `bits` (`PROPEL_STATE_WORDS` words).
    GetNext / get_next = "propel_get_next" (inst: ConstInst, bits: Bits) -> Void;
    /// Plays one input per role and makes the successor current
    /// (`propel_set_joint`, then `propel_set_state`). Returns as
    /// `propel_set_joint`; a refused move (3) leaves the state as it was.
    Step / step = "propel_step" (inst: Inst, moves: Moves) -> Int;
    /// 1 if the current state is terminal, else 0.
    Terminal / terminal = "propel_terminal" (inst: Inst) -> Int;
    /// Writes up to `cap` legal inputs of `role` in the current state, in
    /// ascending order, to `out`; returns how many there are.
    Legal / legal = "propel_legal" (inst: Inst, role: Int, out: MovesOut, cap: Int) -> Int;
    /// The goal values of `role` in the current state: bit `v % 64` of
    /// `out[v / 64]` (two words) set when the rules give value `v` (bit
    /// 127 for any value from 127 up; a value above 100 is not a GDL goal:
    /// the rules give one only where the game is broken).
    Goals / goals = "propel_goals" (inst: Inst, role: Int, out: GoalMask) -> Void;
    /// A random playout from the current state to a terminal one: writes
    /// each role's goal (the largest value given, -1 if none; above 100,
    /// at most 127, where the rules give a value GDL does not allow) to `goals`
    /// and returns its length; -1 if a role has no legal move, -2 after
    /// `max_steps` steps, -4 when a goal written is above 100. The playout's last state is then current. With a
    /// null `goals` nothing is written (the caller reads the goals of that
    /// state itself).
    Playout / playout = "propel_playout" (inst: Inst, seed: U64, goals: GoalsOut, max_steps: Int) -> Int;
    /// Copies instance `src` to `dst` (`PROPEL_INSTANCE_SIZE` bytes each,
    /// not overlapping): `dst` then has the same current state.
    CloneInstance / clone_instance = "propel_clone" (src: ConstInst, dst: Inst) -> Void;
    /// The name of role `role` (`PROPEL_ROLES` roles), or NULL.
    RoleName / role_name = "propel_role_name" (role: Int) -> Str;
    /// The name of base `base` (a GDL term, `PROPEL_BASES` bases), or NULL.
    BaseName / base_name = "propel_base_name" (base: U32) -> Str;
    /// The name of input (move) `input` (a GDL term, `PROPEL_INPUTS`
    /// inputs, numbered by role, then name), or NULL.
    InputName / input_name = "propel_input_name" (input: U32) -> Str;
    /// The role that plays input `input`, or -1.
    InputRole / input_role = "propel_input_role" (input: U32) -> Int;
    /// Bytes per instance (`PROPEL_INSTANCE_SIZE`).
    InstanceSize / instance_size = "propel_instance_size" () -> U32;
    /// Roles (`PROPEL_ROLES`).
    Roles / roles = "propel_roles" () -> U32;
    /// Bases (`PROPEL_BASES`); a state has (bases + 63) / 64 words.
    Bases / bases = "propel_bases" () -> U32;
    /// Inputs (`PROPEL_INPUTS`).
    Inputs / inputs = "propel_inputs" () -> U32;
    /// Metadata: format, game hash, processor, layout, names, lane plan (JSON).
    Info / info = "propel_info" () -> Str;
    /// Lanes: the state phase of 128 playouts at once (16-byte aligned words).
    LanesState / lanes_state = "propel_lanes_state" (words: Words) -> Void;
    /// Lanes: the next-state phase.
    LanesNext / lanes_next = "propel_lanes_next" (words: Words) -> Void;
    /// Lanes: the goal network.
    LanesGoals / lanes_goals = "propel_lanes_goals" (words: Words) -> Void;
    /// Lanes: where each output lies (a length word, then the plan; length
    /// 0 when the machine has no lane code).
    LanesPlan / lanes_plan = "propel_lanes_plan" () -> Plan;
}

impl Fns {
    /// The metadata text (`propel_info`).
    pub fn info_text(&self) -> &core::ffi::CStr {
        // SAFETY: `propel_info` takes nothing and returns a NUL-terminated
        // text in the code's read-only data, alive as long as the code,
        // which `resolve`'s contract ties to `self`.
        unsafe { core::ffi::CStr::from_ptr(self.info()) }
    }
}

impl core::fmt::Debug for Fns {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Fns").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prefixed() {
        let mut names: Vec<&str> = Export::ALL.iter().map(|e| e.name()).collect();
        assert!(names.iter().all(|n| n.starts_with("propel_")));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Export::ALL.len());
    }

    #[test]
    fn resolve_names_the_first_missing_export() {
        // SAFETY: no address is given, so nothing is typed or called.
        let r = unsafe { Fns::resolve(|_| None) };
        assert_eq!(r.err(), Some(Export::Init));
    }
}
