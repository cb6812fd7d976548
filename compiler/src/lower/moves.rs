//! ORs over one role's moves, set from a table instead of propagated.
//!
//! Every role plays exactly one move a step, so an OR whose inputs are all
//! inputs of one role is true exactly when that role's move is in its
//! input set: a function of the move alone. chiaras `bandl10` has ten
//! buttons pressed three ways in one move (59,049 inputs), each input read
//! by the ten ORs saying what one button did; written out as fan-out that
//! is 590k counter updates, most of the engine's code, for a network that
//! changes 20 counters a step. Here each such OR gets a bit in a `u64` row
//! per input (the ORs that input is in); the generated `set_joint` XORs the
//! role's current row with the new move's and sets the ORs whose bit
//! changed as leaves, and the inputs no longer fan out to them.

use crate::propnet::{Kind, Propnet};

/// Roles whose move ORs read fewer input edges than this keep them as
/// fan-out: below it the fan-out code is small, and a table lookup per
/// move is not worth it. `CodegenOptions::move_table_edges` overrides it
/// (tests set 1 so every role with a move OR takes this path).
pub(crate) const MIN_EDGES: usize = 16_384;

/// Bits in a row: the ORs per role set from the table.
const ROW_BITS: usize = 64;

/// The move ORs of one network.
#[derive(Debug, Default)]
pub(crate) struct MoveOrs {
    /// For each role, the ORs set from the table (bit j of a row is
    /// `per_role[role][j]`).
    pub(crate) per_role: Vec<Vec<u32>>,
    /// For each input (by index), the ORs of its role it is in.
    pub(crate) rows: Vec<u64>,
    /// Input-to-OR edges taken out of the fan-out.
    pub(crate) edges: usize,
}

impl MoveOrs {
    pub(crate) fn is_empty(&self) -> bool {
        self.per_role.iter().all(Vec::is_empty)
    }
}

/// Finds the move ORs worth a table and takes their input edges out of
/// `fanout`.
pub(crate) fn take(net: &Propnet, fanout: &mut [Vec<u32>], min_edges: usize) -> MoveOrs {
    let roles = net.roles.len();
    let mut out = MoveOrs { per_role: vec![Vec::new(); roles], rows: vec![0; net.inputs.len()], edges: 0 };
    // (reads, component) of each role's move ORs.
    let mut found: Vec<Vec<(usize, u32)>> = vec![Vec::new(); roles];
    for c in 0..net.len() as u32 {
        if net.kind(c) != Kind::Or {
            continue;
        }
        let ins = net.inputs_of(c);
        let role_of = |i: u32| match net.kind(i) {
            Kind::Input(k) => Some(net.inputs[k as usize].role),
            _ => None,
        };
        let Some(r) = ins.first().and_then(|&i| role_of(i)) else { continue };
        if ins.iter().all(|&i| role_of(i) == Some(r)) {
            found[r as usize].push((ins.len(), c));
        }
    }
    let mut taken = vec![false; net.len()];
    for (r, mut ors) in found.into_iter().enumerate() {
        // The largest first, as many as a row holds; ties by id, so the
        // choice depends on the network alone.
        ors.sort_unstable_by_key(|&(n, c)| (std::cmp::Reverse(n), c));
        ors.truncate(ROW_BITS);
        let edges: usize = ors.iter().map(|o| o.0).sum();
        if ors.is_empty() || edges < min_edges.max(1) {
            continue;
        }
        for (j, &(_, c)) in ors.iter().enumerate() {
            taken[c as usize] = true;
            for &i in net.inputs_of(c) {
                if let Kind::Input(k) = net.kind(i) {
                    out.rows[k as usize] |= 1 << j;
                }
            }
        }
        out.edges += edges;
        out.per_role[r] = ors.into_iter().map(|o| o.1).collect();
    }
    if out.edges > 0 {
        for inp in &net.inputs {
            fanout[inp.comp as usize].retain(|&f| !taken[f as usize]);
        }
    }
    out
}
