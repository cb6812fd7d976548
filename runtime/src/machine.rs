//! The state-machine interface every reasoner implements (the prover, the
//! interpreted propnet, the JIT and AOT machines), in ggp-base's vocabulary.

use propel_compiler::eval::EvalError;
use std::fmt::Debug;
use std::hash::Hash;

/// Why a state machine (or a search or playout on one) could not go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error("goal value `{value}` of role `{role}` is not an integer from 0 to 100")]
    BadGoal { role: String, value: String },
    /// A move that is not one of its role's moves (or not legal where it
    /// was played).
    #[error("`{mv}` is not a legal move of role `{role}`")]
    IllegalMove { role: String, mv: String },
    /// A non-terminal state in which a role has no legal move (the game
    /// is broken there). `None` when the code that found it (native
    /// playouts, lanes) does not say which role.
    #[error("{} has no legal move in a non-terminal state", role_name(role))]
    NoLegalMove { role: Option<String> },
    /// A role with more legal moves than a search can number.
    #[error("role `{role}` has {moves} legal moves; at most {max} are handled")]
    TooManyMoves { role: String, moves: usize, max: usize },
    /// A joint move without exactly one move per role, in role order.
    #[error("a joint move needs one move of each of the {roles} roles, in role order")]
    BadJoint { roles: usize },
    /// A role number the game does not have.
    #[error("no role {role} (the game has {roles})")]
    NoRole { role: usize, roles: usize },
    /// A playout or random game longer than its step limit.
    #[error("a playout went on for more than {steps} steps")]
    StepLimit { steps: u64 },
    /// A state (or instance) made by another game's or another kind of
    /// machine.
    #[error("a state of another game or machine")]
    WrongGame,
    /// Text that does not name a term (or base proposition) of the game.
    #[error("`{text}` is not a term of this game: {why}")]
    NotATerm { text: String, why: String },
    /// Lane (bit-parallel) work asked of a machine without lane code.
    #[error("this machine's code has no lane functions")]
    NoLaneCode,
    /// Lane rollouts need states as base bitsets, which this machine's
    /// states are not.
    #[error("lane rollouts need a machine whose states are base bitsets")]
    NoBaseBits,
    /// Work that reads moves by their index among the network's inputs
    /// (win-first lanes) asked of a machine without such indices.
    #[error("this machine's moves have no input indices (win-first lanes need them)")]
    NoMoveIndex,
    /// Native code's propagation ran out of its stack.
    #[error("{what}: propagation stack overflow")]
    StackOverflow { what: &'static str },
    /// Native code returned a code its ABI does not list, or its
    /// instance does not match its metadata (a corrupt library).
    #[error("{what}: native code failed ({code})")]
    Native { what: &'static str, code: i64 },
    /// Work asked of an empty set of machines.
    #[error("no machine to run on")]
    NoMachine,
    /// A worker thread panicked (the panic's own message went to stderr).
    #[error("a {what} thread panicked")]
    ThreadPanicked { what: &'static str },
    /// More memory than can be had for the work asked.
    #[error("too many {what} for the memory at hand")]
    OutOfMemory { what: &'static str },
    /// The search has no move to give (its root is terminal) or no root.
    #[error("the search has no move: {0}")]
    NoSearchMove(&'static str),
    /// A question of the network's rules that the top-down evaluator could
    /// not answer (`propel_compiler::topdown`).
    #[error("answering a question of the state: {0}")]
    Query(#[from] propel_compiler::topdown::QueryError),
    /// A network with query components on a machine built without the
    /// rules that answer them.
    #[error("the network asks questions of the state, but its machine was built without the rules that answer them")]
    NoQuestions,
    /// A broken invariant of the search tree: a bug in Propel, never in the
    /// game; the text says which.
    #[error("internal error in the search: {0}")]
    SearchBug(&'static str),
}

fn role_name(role: &Option<String>) -> String {
    match role {
        Some(r) => format!("role `{r}`"),
        None => "a role".to_string(),
    }
}

/// Checks a joint move of input indices against the network's owner
/// roles: one move per role, in role order, each one of its role's inputs.
pub(crate) fn check_joint(
    joint: &[u32],
    input_role: &[u32],
    roles: &[String],
    name: impl Fn(u32) -> String,
) -> Result<(), MachineError> {
    if joint.len() != roles.len() {
        return Err(MachineError::BadJoint { roles: roles.len() });
    }
    for (r, &m) in joint.iter().enumerate() {
        if input_role.get(m as usize) != Some(&(r as u32)) {
            return Err(MachineError::IllegalMove { role: roles[r].clone(), mv: name(m) });
        }
    }
    Ok(())
}

impl From<crate::lanes::LaneError> for MachineError {
    fn from(e: crate::lanes::LaneError) -> MachineError {
        match e {
            crate::lanes::LaneError::NoLegalMove => MachineError::NoLegalMove { role: None },
            crate::lanes::LaneError::TooLong(steps) => MachineError::StepLimit { steps: steps.into() },
            crate::lanes::LaneError::BadGoal { role, value } => {
                MachineError::BadGoal { role: format!("number {role}"), value: value.to_string() }
            }
        }
    }
}

/// The largest goal value GDL allows.
pub(crate) const GOAL_MAX: u8 = 100;

/// Fails as the prover does when `values` (a role's goals in a state)
/// hold one above [`GOAL_MAX`]: a network keeps such values where its
/// relaxed model admits them (see `propel_compiler::propnet::Goal`).
pub(crate) fn check_goal_values(role: &str, values: &[u8]) -> Result<(), MachineError> {
    match values.iter().find(|&&v| v > GOAL_MAX) {
        Some(v) => Err(MachineError::BadGoal { role: role.to_string(), value: v.to_string() }),
        None => Ok(()),
    }
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
