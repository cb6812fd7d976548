//! Random playouts from the initial state, measured as gdl-perf measures
//! them: terminal test, legal moves, one uniformly random move per role,
//! next state; goals at the end.

use crate::machine::{Goal, MachineError, StateMachine};
use crate::rng::Rng;
use std::time::{Duration, Instant};

/// A playout longer than this is taken to mean the game never ends.
pub const MAX_PLAYOUT_STEPS: u64 = 100_000;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlayoutStats {
    pub playouts: u64,
    /// State changes (joint moves applied).
    pub states: u64,
    pub seconds: f64,
    /// Terminal states where some role's goal was undefined (counted as 0).
    pub undefined_goals: u64,
    /// Sum of the goal scores per role.
    pub goal_sums: Vec<u64>,
}

impl PlayoutStats {
    pub fn playouts_per_s(&self) -> f64 {
        self.playouts as f64 / self.seconds.max(1e-9)
    }
    pub fn states_per_s(&self) -> f64 {
        self.states as f64 / self.seconds.max(1e-9)
    }
    pub fn avg_length(&self) -> f64 {
        self.states as f64 / (self.playouts.max(1)) as f64
    }
}

/// One random playout; returns its length and adds goals to `stats`.
pub fn playout<M: StateMachine>(m: &mut M, rng: &mut Rng, stats: &mut PlayoutStats) -> Result<u64, MachineError> {
    let s = m.initial_state()?;
    playout_from(m, s, rng, stats)
}

/// One random playout from `s`; returns its length and adds goals to `stats`.
pub fn playout_from<M: StateMachine>(
    m: &mut M,
    s: M::State,
    rng: &mut Rng,
    stats: &mut PlayoutStats,
) -> Result<u64, MachineError> {
    let roles = m.roles().len();
    let mut s = s;
    let mut moves = Vec::new();
    let mut joint = Vec::with_capacity(roles);
    let mut len = 0u64;
    while !m.is_terminal(&s)? {
        joint.clear();
        for r in 0..roles {
            m.legal_moves(&s, r, &mut moves)?;
            if moves.is_empty() {
                return Err(MachineError::NoLegalMove { role: Some(m.roles()[r].clone()) });
            }
            joint.push(moves[rng.below(moves.len())]);
        }
        s = m.next_state(&s, &joint)?;
        len += 1;
        if len > MAX_PLAYOUT_STEPS {
            return Err(MachineError::StepLimit { steps: MAX_PLAYOUT_STEPS });
        }
    }
    stats.goal_sums.resize(roles, 0);
    let mut undefined = false;
    for r in 0..roles {
        let g = m.goal(&s, r)?;
        undefined |= g == Goal::Undefined;
        stats.goal_sums[r] += g.score() as u64;
    }
    stats.undefined_goals += undefined as u64;
    stats.playouts += 1;
    stats.states += len;
    Ok(len)
}

/// Plays random games for `duration` (at least one).
pub fn playouts<M: StateMachine>(m: &mut M, duration: Duration, seed: u64) -> Result<PlayoutStats, MachineError> {
    let mut rng = Rng::new(seed);
    let mut stats = PlayoutStats::default();
    let start = Instant::now();
    loop {
        playout(m, &mut rng, &mut stats)?;
        if start.elapsed() >= duration {
            break;
        }
    }
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(stats)
}
