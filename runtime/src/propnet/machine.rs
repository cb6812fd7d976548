//! The propnet as a [`StateMachine`]: each state set on an engine, the
//! engine of the split's copy where the network was split.

use super::*;

/// A propnet machine: one network, or (after the split pass) two copies
/// specialised on one base proposition, each state routed to the copy for
/// that proposition's value.
#[derive(Clone, Debug)]
pub struct PropnetMachine {
    engines: Vec<Engine>,
    /// The base the copies are specialised on (engine 1 when it holds).
    split: Option<u32>,
}

impl PropnetMachine {
    pub fn new(topo: Arc<Topology>) -> PropnetMachine {
        PropnetMachine { engines: vec![Engine::new(topo)], split: None }
    }

    /// Two copies: `when_false` for states without base `base`, `when_true`
    /// for states with it. Both must come from the same network (same
    /// bases, inputs and roles, in the same order).
    pub fn split(base: u32, when_false: Arc<Topology>, when_true: Arc<Topology>) -> PropnetMachine {
        PropnetMachine { engines: vec![Engine::new(when_false), Engine::new(when_true)], split: Some(base) }
    }

    /// Counter updates this instance has made: the interpreter's work,
    /// counted rather than timed (the same on every machine and load).
    pub fn updates(&self) -> u64 {
        self.engines.iter().map(|e| e.updates).sum()
    }

    /// The base the network is split on, if it is.
    pub fn split_base(&self) -> Option<u32> {
        self.split
    }

    pub fn topologies(&self) -> Vec<&Arc<Topology>> {
        self.engines.iter().map(|e| e.topology()).collect()
    }

    /// The engine for state `bits`, with that state set.
    #[inline]
    /// The engine for the state `bits`, set to it; an error for a state of
    /// another game (another number of words).
    fn engine(&mut self, bits: &[u64]) -> Result<&mut Engine, MachineError> {
        if bits.len() != self.engines[0].bases.len() {
            return Err(MachineError::WrongGame);
        }
        let i = match self.split {
            Some(b) => (bits[b as usize / 64] >> (b % 64) & 1) as usize,
            None => 0,
        };
        let e = &mut self.engines[i];
        e.set_state(bits);
        e.take_query_error()?;
        Ok(e)
    }

    fn check_role(&self, role: usize) -> Result<(), MachineError> {
        let roles = self.engines[0].topo.roles.len();
        if role >= roles {
            return Err(MachineError::NoRole { role, roles });
        }
        Ok(())
    }
}

impl StateMachine for PropnetMachine {
    type State = NetState;
    type Move = u32;

    fn roles(&self) -> &[String] {
        &self.engines[0].topo.roles
    }

    fn initial_state(&mut self) -> Result<NetState, MachineError> {
        Ok(NetState(Arc::from(self.engines[0].topo.initial.clone())))
    }

    fn is_terminal(&mut self, s: &NetState) -> Result<bool, MachineError> {
        Ok(self.engine(s.bits())?.terminal_now())
    }

    fn legal_moves(&mut self, s: &NetState, role: usize, out: &mut Vec<u32>) -> Result<(), MachineError> {
        self.check_role(role)?;
        self.engine(s.bits())?.legal_into(role, out);
        Ok(())
    }

    fn next_state(&mut self, s: &NetState, joint: &[u32]) -> Result<NetState, MachineError> {
        let topo = &self.engines[0].topo;
        crate::machine::check_joint(joint, &topo.input_role, &topo.roles, |m| self.move_kif(m))?;
        let e = self.engine(s.bits())?;
        e.set_joint(joint);
        e.take_query_error()?;
        Ok(NetState(Arc::from(e.next.clone())))
    }

    fn goal_values(&mut self, s: &NetState, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        self.check_role(role)?;
        self.engine(s.bits())?.goal_values_now(role, out);
        crate::machine::check_goal_values(&self.engines[0].topo.roles[role], out)
    }

    fn state_kif(&mut self, s: &NetState) -> Vec<String> {
        let names = &self.engines[0].topo.base_names;
        let mut v: Vec<String> = (0..names.len())
            .filter(|&i| s.bits().get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1))
            .map(|i| names[i].clone())
            .collect();
        v.sort();
        v
    }

    fn move_kif(&self, m: u32) -> String {
        match self.engines[0].topo.input_names.get(m as usize) {
            Some(name) => name.clone(),
            None => format!("(no input {m})"),
        }
    }
}
