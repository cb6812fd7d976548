//! What search needs from a machine beyond the state-machine interface:
//! random playouts from any state (natively where the machine can), a
//! state hash for transpositions, and whether its states mean the same in
//! its clones (so that rollouts can run on other threads).

use crate::machine::{MachineError, StateMachine};
use crate::native::NativeMachine;
use crate::playout::{playout_from, PlayoutStats};
use crate::propnet::{NetState, PropnetMachine};
use crate::prover::Prover;
use crate::rng::Rng;
use std::hash::{Hash, Hasher};

pub trait Simulator: StateMachine + Clone + Send + 'static
where
    Self::State: Send + Sync + 'static,
    Self::Move: Send + Sync + 'static,
{
    /// A random playout from `s`: each role's goal (0..=100; undefined
    /// counts 0) into `goals`; returns the playout's length.
    fn rollout(&mut self, s: &Self::State, rng: &mut Rng, goals: &mut [f64]) -> Result<u32, MachineError> {
        let mut stats = PlayoutStats::default();
        let n = playout_from(self, s.clone(), rng, &mut stats)?;
        for (g, &v) in goals.iter_mut().zip(&stats.goal_sums) {
            *g = v as f64;
        }
        Ok(n as u32)
    }

    fn state_hash(&self, s: &Self::State) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        s.hash(&mut h);
        h.finish()
    }

    /// Whether a state made by one instance means the same to its clones.
    fn portable_states(&self) -> bool {
        true
    }
}

impl Simulator for PropnetMachine {}

impl Simulator for NativeMachine {
    fn rollout(&mut self, s: &NetState, rng: &mut Rng, goals: &mut [f64]) -> Result<u32, MachineError> {
        let mut g = Vec::with_capacity(goals.len());
        let n = self.native_playout(s, rng.next_u64(), crate::playout::MAX_PLAYOUT_STEPS as u32, &mut g)?;
        for (out, &v) in goals.iter_mut().zip(&g) {
            *out = v.max(0) as f64;
        }
        Ok(n)
    }
}

impl Simulator for Prover {
    /// A prover's states are ids in its own term pool: clones may number
    /// new terms differently, so rollouts stay on the search thread.
    fn portable_states(&self) -> bool {
        false
    }
}
