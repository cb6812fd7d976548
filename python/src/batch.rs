//! Batched work run without the GIL: random playouts on several threads
//! (each with its own machine instance), observations and legal-move masks
//! of many states.

use crate::machine::{Machine, Mv, Repr};
use propel_runtime::{MachineError, Rng};

/// Playouts per call of the native batch: lanes are refilled as games end,
/// so only the last game of a call leaves lanes idle (as `propel playouts
/// --fast` runs them).
const BATCH: usize = 32 * propel_runtime::lanes::LANES;

/// `goals[p * roles + r]`: role r's goal at the end of playout p (the
/// largest value given, -1 when the rules give none); `lengths[p]`: its
/// joint moves.
pub(crate) struct Playouts {
    pub(crate) goals: Vec<i32>,
    pub(crate) lengths: Vec<u32>,
}

/// `n` random playouts from `s`, one thread per machine in `machines`
/// (the calling thread when there is one). Seeded: the same arguments give
/// the same results on the same machine kind and number of machines.
pub(crate) fn playouts(
    machines: &mut [Machine],
    s: &Repr,
    n: usize,
    seed: u64,
    max_steps: u32,
) -> Result<Playouts, MachineError> {
    let Some(roles) = machines.first().map(|m| m.roles().len()) else {
        return Err(MachineError::NoMachine);
    };
    let mut goals = filled(n.checked_mul(roles), -1i32)?;
    let mut lengths = filled(Some(n), 0u32)?;
    let chunk = n.div_ceil(machines.len()).max(1);
    let mut seeds = Rng::new(seed);
    let mut jobs: Vec<_> = goals
        .chunks_mut(chunk * roles)
        .zip(lengths.chunks_mut(chunk))
        .zip(machines.iter_mut())
        .map(|((g, l), m)| (m, seeds.next_u64(), g, l))
        .collect();
    if let [(m, seed, g, l)] = &mut jobs[..] {
        run_chunk(m, s, *seed, max_steps, g, l)?;
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .into_iter()
                .map(|(m, seed, g, l)| scope.spawn(move || run_chunk(m, s, seed, max_steps, g, l)))
                .collect();
            handles
                .into_iter()
                .try_for_each(|h| h.join().unwrap_or(Err(MachineError::ThreadPanicked { what: "playout" })))
        })?;
    }
    Ok(Playouts { goals, lengths })
}

/// `n` copies of `x`, or an error when that much memory cannot be had
/// (instead of the abort a failed allocation is).
fn filled<T: Clone>(n: Option<usize>, x: T) -> Result<Vec<T>, MachineError> {
    let too_many = || MachineError::OutOfMemory { what: "playouts" };
    let n = n.ok_or_else(too_many)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| too_many())?;
    v.resize(n, x);
    Ok(v)
}

/// Fills `lengths.len()` playouts' results.
fn run_chunk(
    m: &mut Machine,
    s: &Repr,
    seed: u64,
    max_steps: u32,
    goals: &mut [i32],
    lengths: &mut [u32],
) -> Result<(), MachineError> {
    let roles = m.roles().len();
    if let (Machine::Jit(native), Repr::Net(state)) = (&mut *m, s) {
        let mut rng = Rng::new(seed);
        let (mut g, mut l) = (Vec::new(), Vec::new());
        for (gs, ls) in goals.chunks_mut(BATCH * roles.max(1)).zip(lengths.chunks_mut(BATCH)) {
            native.playouts(state, ls.len(), rng.next_u64(), max_steps, &mut g, &mut l)?;
            gs.copy_from_slice(&g);
            ls.copy_from_slice(&l);
        }
        return Ok(());
    }
    let mut rng = Rng::new(seed);
    let (mut moves, mut joint, mut values) = (Vec::new(), Vec::with_capacity(roles), Vec::new());
    for (gs, len) in goals.chunks_mut(roles.max(1)).zip(lengths.iter_mut()) {
        let mut st = s.clone();
        let mut steps = 0u32;
        while !m.is_terminal(&st)? {
            if steps >= max_steps {
                return Err(MachineError::StepLimit { steps: max_steps.into() });
            }
            joint.clear();
            for r in 0..roles {
                m.legal(&st, r, &mut moves)?;
                if moves.is_empty() {
                    return Err(MachineError::NoLegalMove { role: Some(m.roles()[r].clone()) });
                }
                joint.push(moves[rng.below(moves.len())]);
            }
            st = m.next(&st, &joint)?;
            steps += 1;
        }
        for (r, g) in gs.iter_mut().enumerate() {
            m.goal_values(&st, r, &mut values)?;
            *g = values.last().map_or(-1, |&v| v as i32);
        }
        *len = steps;
    }
    Ok(())
}

/// Each state's base propositions as 0/1 bytes, `bases` per state.
pub(crate) fn observations(states: &[&Repr], bases: usize) -> Vec<u8> {
    let mut out = vec![0u8; states.len() * bases];
    for (row, s) in out.chunks_mut(bases.max(1)).zip(states) {
        if let Repr::Net(s) = s {
            for (i, x) in row.iter_mut().enumerate() {
                *x = (s.bits()[i / 64] >> (i % 64) & 1) as u8;
            }
        }
    }
    out
}

/// Legal-move masks of `role` in each state: `ids` bytes per state, 1
/// where the move with that id is legal. `id_of` numbers a machine move.
pub(crate) fn masks(
    m: &mut Machine,
    states: &[&Repr],
    role: usize,
    ids: usize,
    mut id_of: impl FnMut(Mv) -> Option<u32>,
) -> Result<Vec<u8>, MachineError> {
    let mut out = vec![0u8; states.len() * ids];
    let mut moves = Vec::new();
    for (row, s) in out.chunks_mut(ids.max(1)).zip(states) {
        m.legal(s, role, &mut moves)?;
        for &mv in &moves {
            if let Some(x) = id_of(mv).and_then(|id| row.get_mut(id as usize)) {
                *x = 1;
            }
        }
    }
    Ok(out)
}
