//! A network machine whose goal or terminal output is a lookup on the
//! rules (`propel_compiler::lookup`): the network plays legal moves and
//! next states; the outputs it was built without are answered by the
//! prover, evaluated on the state's facts when they are asked.

use crate::machine::{MachineError, StateMachine};
use crate::native::LaneRunner;
use crate::propnet::NetState;
use crate::prover::{Prover, ProverState};
use crate::simulate::Simulator;
use propel_compiler::lookup::Lookups;
use propel_compiler::TermId;
use std::sync::Arc;

/// `M` (a machine whose states are base bitsets) with the outputs named in
/// `lookups` answered by a prover of the whole game.
#[derive(Clone)]
pub struct LookupMachine<M> {
    inner: M,
    prover: Prover,
    /// The prover's term for each base, in the network's order.
    base_terms: Arc<[TermId]>,
    lookups: Lookups,
    facts: Vec<TermId>,
    /// The last state converted, and the prover's state for it (a search
    /// asks terminal and then each role's goal of one state).
    last: Option<(NetState, ProverState)>,
}

impl<M: Simulator<State = NetState, Move = u32>> LookupMachine<M> {
    /// `inner`, with `base_names` its bases in order (canonical KIF, as the
    /// network names them) and `prover` built from the whole game.
    pub fn new(inner: M, mut prover: Prover, base_names: &[String], lookups: Lookups) -> Result<Self, MachineError> {
        let base_terms = base_names.iter().map(|b| prover.term_from_kif(b)).collect::<Result<Vec<_>, _>>()?;
        if inner.roles() != prover.roles() {
            return Err(MachineError::WrongGame);
        }
        Ok(LookupMachine { inner, prover, base_terms: base_terms.into(), lookups, facts: Vec::new(), last: None })
    }

    pub fn lookups(&self) -> Lookups {
        self.lookups
    }

    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// The prover's state with the facts of `s`.
    fn prover_state(&mut self, s: &NetState) -> Result<ProverState, MachineError> {
        if let Some((n, p)) = &self.last {
            if n == s {
                return Ok(p.clone());
            }
        }
        self.facts.clear();
        for (w, &word) in s.bits().iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.facts.push(*self.base_terms.get(i).ok_or(MachineError::WrongGame)?);
            }
        }
        let p = ProverState::from_terms(&mut self.facts);
        self.last = Some((s.clone(), p.clone()));
        Ok(p)
    }
}

impl<M: Simulator<State = NetState, Move = u32>> StateMachine for LookupMachine<M> {
    type State = NetState;
    type Move = u32;

    fn roles(&self) -> &[String] {
        self.inner.roles()
    }

    fn initial_state(&mut self) -> Result<NetState, MachineError> {
        self.inner.initial_state()
    }

    fn is_terminal(&mut self, s: &NetState) -> Result<bool, MachineError> {
        if !self.lookups.terminal {
            return self.inner.is_terminal(s);
        }
        let p = self.prover_state(s)?;
        self.prover.is_terminal(&p)
    }

    fn legal_moves(&mut self, s: &NetState, role: usize, out: &mut Vec<u32>) -> Result<(), MachineError> {
        self.inner.legal_moves(s, role, out)
    }

    fn next_state(&mut self, s: &NetState, joint: &[u32]) -> Result<NetState, MachineError> {
        self.inner.next_state(s, joint)
    }

    fn goal_values(&mut self, s: &NetState, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        if !self.lookups.goal {
            return self.inner.goal_values(s, role, out);
        }
        let p = self.prover_state(s)?;
        self.prover.goal_values(&p, role, out)
    }

    fn state_kif(&mut self, s: &NetState) -> Vec<String> {
        self.inner.state_kif(s)
    }

    fn move_kif(&self, m: u32) -> String {
        self.inner.move_kif(m)
    }
}

/// Rollouts go through the machine interface one at a time (the inner
/// machine's own playout code and lanes read the network's outputs, which
/// lack the lookups).
impl<M: Simulator<State = NetState, Move = u32>> Simulator for LookupMachine<M> {
    fn state_hash(&self, s: &NetState) -> u64 {
        self.inner.state_hash(s)
    }

    fn base_bits<'a>(&self, s: &'a NetState) -> Option<&'a [u64]> {
        self.inner.base_bits(s)
    }

    fn move_index(&self, m: u32) -> Option<u32> {
        self.inner.move_index(m)
    }

    fn move_from_index(&self, i: u32) -> Option<u32> {
        self.inner.move_from_index(i)
    }

    fn state_from_bits(&self, bits: &[u64]) -> Option<NetState> {
        self.inner.state_from_bits(bits)
    }

    fn restrict_moves(&self, role: usize, moves: &mut Vec<u32>) {
        self.inner.restrict_moves(role, moves)
    }

    fn kind(&self) -> &'static str {
        "propnet+lookups"
    }

    fn lane_runner(&self) -> Option<LaneRunner> {
        None
    }
}
