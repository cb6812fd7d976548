//! The top-down reasoner as a state machine (`--machine topdown`): every
//! output asked of the rules with [`propel_compiler::topdown`], reading
//! only what the question needs.
//!
//! The reference prover derives each state's relations bottom up (with
//! demand rewrites where a relation is huge); this machine asks `legal`,
//! `next`, `terminal` and `goal` as questions, with tabling. It is a
//! second reasoner written independently of the first, for differential
//! testing (`propel compare --machine topdown`), and the faster of the two
//! on rules written for a top-down prover.

use crate::machine::{MachineError, StateMachine};
use crate::simulate::Simulator;
use propel_compiler::topdown::{Rules, TopDown};
use propel_compiler::{Game, RelId, TermId};
use std::sync::Arc;

/// A state: the sorted ids of its facts, in the machine's own terms.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopDownState(Arc<[TermId]>);

impl TopDownState {
    fn from_terms(mut v: Vec<TermId>) -> TopDownState {
        v.sort_unstable();
        v.dedup();
        TopDownState(Arc::from(v))
    }

    pub fn facts(&self) -> &[TermId] {
        &self.0
    }
}

#[derive(Clone)]
pub struct TopDownMachine {
    td: TopDown,
    game: Arc<Game>,
    role_names: Vec<String>,
    role_terms: Vec<TermId>,
    initial: TopDownState,
    /// The state the evaluator holds, and the joint move, if any.
    loaded: Option<TopDownState>,
    joint: Option<Vec<TermId>>,
}

impl TopDownMachine {
    pub fn new(game: Arc<Game>) -> Result<TopDownMachine, MachineError> {
        let rules = Rules::new(&game, &[])?;
        let mut td = TopDown::new(Arc::new(rules));
        let role_names = game.role_names();
        let role_terms = game.roles.iter().map(|&r| td.pool_mut().constant(r)).collect();
        td.set_state(&[]);
        let init = td.answers(RelId::INIT, &[None])?;
        let initial = TopDownState::from_terms(init.into_iter().map(|row| row[0]).collect());
        Ok(TopDownMachine { td, game, role_names, role_terms, initial, loaded: None, joint: None })
    }

    /// The term written `text` in canonical KIF (see
    /// [`crate::Prover::term_from_kif`]).
    pub fn term_from_kif(&mut self, text: &str) -> Result<TermId, MachineError> {
        self.td.term_from_kif(text).map_err(|why| MachineError::NotATerm { text: text.to_string(), why })
    }

    /// The state whose facts are `facts` (each in canonical KIF).
    pub fn state_from_kif(&mut self, facts: &[String]) -> Result<TopDownState, MachineError> {
        let v = facts.iter().map(|f| self.term_from_kif(f)).collect::<Result<Vec<_>, _>>()?;
        Ok(TopDownState::from_terms(v))
    }

    fn load(&mut self, s: &TopDownState) {
        if self.loaded.as_ref() != Some(s) {
            self.td.set_state(&s.0);
            self.loaded = Some(s.clone());
            self.joint = None;
        }
    }

    /// The values of a role's goal atoms, as the prover checks them.
    fn goal_numbers(&mut self, role: usize, rows: Vec<Vec<TermId>>) -> Result<Vec<u8>, MachineError> {
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let text = self.td.pool_mut().to_kif(row[1], &self.game.symbols);
            match text.parse::<u8>() {
                Ok(v) if v <= 100 => out.push(v),
                _ => return Err(MachineError::BadGoal { role: self.role_names[role].clone(), value: text }),
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

impl StateMachine for TopDownMachine {
    type State = TopDownState;
    type Move = TermId;

    fn roles(&self) -> &[String] {
        &self.role_names
    }

    fn initial_state(&mut self) -> Result<TopDownState, MachineError> {
        Ok(self.initial.clone())
    }

    fn is_terminal(&mut self, s: &TopDownState) -> Result<bool, MachineError> {
        self.load(s);
        Ok(self.td.holds(RelId::TERMINAL, &[])?)
    }

    fn legal_moves(&mut self, s: &TopDownState, role: usize, out: &mut Vec<TermId>) -> Result<(), MachineError> {
        let r = *self.role_terms.get(role).ok_or(MachineError::NoRole { role, roles: self.role_terms.len() })?;
        self.load(s);
        out.clear();
        out.extend(self.td.answers(RelId::LEGAL, &[Some(r), None])?.into_iter().map(|row| row[1]));
        Ok(())
    }

    fn next_state(&mut self, s: &TopDownState, joint: &[TermId]) -> Result<TopDownState, MachineError> {
        if joint.len() != self.role_terms.len() {
            return Err(MachineError::BadJoint { roles: self.role_terms.len() });
        }
        self.load(s);
        if self.joint.as_deref() != Some(joint) {
            let pairs: Vec<(TermId, TermId)> = self.role_terms.iter().copied().zip(joint.iter().copied()).collect();
            self.td.set_moves(&pairs)?;
            self.joint = Some(joint.to_vec());
        }
        let next = self.td.answers(RelId::NEXT, &[None])?;
        Ok(TopDownState::from_terms(next.into_iter().map(|row| row[0]).collect()))
    }

    fn goal_values(&mut self, s: &TopDownState, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        let r = *self.role_terms.get(role).ok_or(MachineError::NoRole { role, roles: self.role_terms.len() })?;
        self.load(s);
        let rows = self.td.answers(RelId::GOAL, &[Some(r), None])?;
        *out = self.goal_numbers(role, rows)?;
        Ok(())
    }

    fn state_kif(&mut self, s: &TopDownState) -> Vec<String> {
        let mut v: Vec<String> = s.0.iter().map(|&t| self.td.pool_mut().to_kif(t, &self.game.symbols)).collect();
        v.sort();
        v
    }

    fn move_kif(&self, m: TermId) -> String {
        self.td.kif(m)
    }
}

impl Simulator for TopDownMachine {
    fn kind(&self) -> &'static str {
        "topdown"
    }

    /// States are ids in the machine's own term pool: clones may number
    /// new terms differently, so rollouts stay on the search thread.
    fn portable_states(&self) -> bool {
        false
    }
}
