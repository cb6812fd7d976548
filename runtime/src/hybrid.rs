//! A machine that walks the search tree on the interpreted propnet and runs
//! rollouts as bit-parallel native playouts.
//!
//! The tree's states live on the interpreter, which any game builds, while
//! the lane code plays 128 games at once many times faster than one state
//! at a time: reversi's lanes ran 171k playouts/s against the
//! interpreter's 2.8k. Both machines come from one compiled
//! network, so they number bases and inputs alike and share states.

use crate::machine::{MachineError, StateMachine};
use crate::native::NativeMachine;
use crate::propnet::{NetState, PropnetMachine};
use crate::rng::Rng;
use crate::simulate::Simulator;

/// Rollouts per request: every lane of one batch.
pub const LANE_BATCH: u32 = crate::lanes::LANES as u32;

#[derive(Clone)]
pub struct Hybrid {
    tree: PropnetMachine,
    native: NativeMachine,
}

impl Hybrid {
    /// `tree` and `native` must be built from the same compiled network
    /// (`build::Prepared::propnet` and `build::Prepared::jit`), so that a
    /// state or move of one means the same to the other.
    pub fn new(tree: PropnetMachine, native: NativeMachine) -> Hybrid {
        Hybrid { tree, native }
    }
}

impl StateMachine for Hybrid {
    type State = NetState;
    type Move = u32;

    fn roles(&self) -> &[String] {
        self.tree.roles()
    }
    fn initial_state(&mut self) -> Result<NetState, MachineError> {
        self.tree.initial_state()
    }
    fn is_terminal(&mut self, s: &NetState) -> Result<bool, MachineError> {
        self.tree.is_terminal(s)
    }
    fn legal_moves(&mut self, s: &NetState, role: usize, out: &mut Vec<u32>) -> Result<(), MachineError> {
        self.tree.legal_moves(s, role, out)
    }
    fn next_state(&mut self, s: &NetState, joint: &[u32]) -> Result<NetState, MachineError> {
        self.tree.next_state(s, joint)
    }
    fn goal_values(&mut self, s: &NetState, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        self.tree.goal_values(s, role, out)
    }
    fn state_kif(&mut self, s: &NetState) -> Vec<String> {
        self.tree.state_kif(s)
    }
    fn move_kif(&self, m: u32) -> String {
        self.tree.move_kif(m)
    }
}

impl Simulator for Hybrid {
    fn kind(&self) -> &'static str {
        "hybrid"
    }
    fn rollout(&mut self, s: &NetState, rng: &mut Rng, goals: &mut [f64]) -> Result<u32, MachineError> {
        self.native.rollout(s, rng, goals)
    }

    fn rollouts(
        &mut self,
        s: &NetState,
        count: u32,
        rng: &mut Rng,
        sums: &mut [f64],
        stop: &dyn Fn() -> bool,
    ) -> Result<u32, MachineError> {
        self.native.rollouts(s, count, rng, sums, stop)
    }

    fn preferred_batch(&self) -> u32 {
        if self.native.batches_on_lanes() {
            LANE_BATCH
        } else {
            1
        }
    }

    fn base_bits<'a>(&self, s: &'a NetState) -> Option<&'a [u64]> {
        Some(s.bits())
    }

    fn move_index(&self, m: u32) -> Option<u32> {
        Some(m)
    }

    fn move_from_index(&self, i: u32) -> Option<u32> {
        Some(i)
    }

    fn state_from_bits(&self, bits: &[u64]) -> Option<NetState> {
        Some(NetState::from_slice(bits))
    }

    fn lane_runner(&self) -> Option<crate::native::LaneRunner> {
        self.native.lane_runner()
    }
}
