//! The state-machine interface every reasoner implements (the prover, the
//! interpreted propnet, the JIT and AOT machines), in ggp-base's vocabulary.

use propel_compiler::eval::EvalError;
use std::fmt::Debug;
use std::hash::Hash;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error("goal value `{value}` of role `{role}` is not an integer from 0 to 100")]
    BadGoal { role: String, value: String },
    #[error("{0}")]
    Other(String),
}

/// A role's goal in a state, as the rules give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Goal {
    Value(u8),
    /// The rules give no goal value for the role here.
    Undefined,
    /// The rules give several (the game is broken); sorted.
    Several(Vec<u8>),
}

impl Goal {
    fn from_values(v: &[u8]) -> Goal {
        match v {
            [] => Goal::Undefined,
            [x] => Goal::Value(*x),
            _ => Goal::Several(v.to_vec()),
        }
    }

    /// The value used in play: undefined counts as 0, several as the
    /// largest (both are reported elsewhere as errors in the game).
    pub fn score(&self) -> u8 {
        match self {
            Goal::Value(v) => *v,
            Goal::Undefined => 0,
            Goal::Several(v) => v.iter().copied().max().unwrap_or(0),
        }
    }
}

/// A game's rules as a state machine. Roles are numbered in declaration
/// order; a joint move lists one move per role in that order.
///
/// Methods take `&mut self` so that machines can keep the last state they
/// evaluated. States are only meaningful to the machine that made them
/// (and to its clones).
pub trait StateMachine {
    type State: Clone + Eq + Hash + Debug;
    type Move: Copy + Eq + Hash + Debug;

    /// Role names, canonical (lower case), in declaration order.
    fn roles(&self) -> &[String];

    fn initial_state(&mut self) -> Result<Self::State, MachineError>;

    fn is_terminal(&mut self, s: &Self::State) -> Result<bool, MachineError>;

    /// Replaces `out` with the legal moves of `role` in `s` (no duplicates).
    fn legal_moves(&mut self, s: &Self::State, role: usize, out: &mut Vec<Self::Move>) -> Result<(), MachineError>;

    /// The state after `joint` (one move per role, in role order).
    fn next_state(&mut self, s: &Self::State, joint: &[Self::Move]) -> Result<Self::State, MachineError>;

    /// Replaces `out` with the goal values the rules give `role` in `s`,
    /// sorted, without duplicates (normally exactly one).
    fn goal_values(&mut self, s: &Self::State, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError>;

    /// The state's facts (the arguments of `true`) in canonical KIF, sorted.
    fn state_kif(&mut self, s: &Self::State) -> Vec<String>;

    /// A move in canonical KIF.
    fn move_kif(&self, m: Self::Move) -> String;

    fn goal(&mut self, s: &Self::State, role: usize) -> Result<Goal, MachineError> {
        let mut v = Vec::new();
        self.goal_values(s, role, &mut v)?;
        Ok(Goal::from_values(&v))
    }
}
