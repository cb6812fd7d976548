//! One state machine of any kind behind one enum, with each role's moves
//! numbered: the Python API's moves are (role, id) pairs, ids stable for a
//! game and machine kind.

use propel_compiler::propnet::Propnet;
use propel_compiler::Game;
use propel_compiler::TermId;
use propel_runtime::build::{prepare, BuildOptions};
use propel_runtime::lookup::LookupMachine;
use propel_runtime::propnet::NetState;
use propel_runtime::prover::ProverState;
use propel_runtime::topdown::{TopDownMachine, TopDownState};
use propel_runtime::NativeCode;
use propel_runtime::{MachineError, NativeMachine, PropnetMachine, Prover, StateMachine};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Which machine a game runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Prover,
    /// The rules asked top-down, with tabling (`--machine topdown`).
    TopDown,
    Propnet,
    Jit,
}

impl Kind {
    pub(crate) fn parse(s: &str) -> Option<Kind> {
        match s {
            "prover" => Some(Kind::Prover),
            "topdown" => Some(Kind::TopDown),
            "propnet" => Some(Kind::Propnet),
            "jit" => Some(Kind::Jit),
            _ => None,
        }
    }

    /// Whether the machine numbers its terms per instance (the reasoners):
    /// a clone may not know the terms of a newer state.
    pub(crate) fn own_terms(self) -> bool {
        matches!(self, Kind::Prover | Kind::TopDown)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Prover => "prover",
            Kind::TopDown => "topdown",
            Kind::Propnet => "propnet",
            Kind::Jit => "jit",
        }
    }
}

// One per game and a few spares: the variants' sizes do not matter, and
// boxing would add an indirection to every call.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(crate) enum Machine {
    Prover(Prover),
    TopDown(TopDownMachine),
    Propnet(PropnetMachine),
    /// The propnet of a game whose goal or terminal test is over the
    /// grounding budget, that test answered by the rules.
    Lookups(LookupMachine<PropnetMachine>),
    Jit(NativeMachine),
}

/// A state of one of the machines.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Repr {
    Net(NetState),
    Prover(ProverState),
    TopDown(TopDownState),
}

/// A move as the machine takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Mv {
    Input(u32),
    Term(TermId),
}

/// One role's moves, numbered.
#[derive(Default)]
pub(crate) struct RoleMoves {
    pub(crate) names: Vec<String>,
    pub(crate) by_name: FxHashMap<String, u32>,
    /// The machine's move for each id.
    pub(crate) moves: Vec<Mv>,
    pub(crate) by_move: FxHashMap<Mv, u32>,
}

impl RoleMoves {
    fn add(&mut self, name: String, mv: Mv) -> u32 {
        let id = self.names.len() as u32;
        self.by_name.insert(name.clone(), id);
        self.by_move.insert(mv, id);
        self.names.push(name);
        self.moves.push(mv);
        id
    }
}

/// Each role's moves. Networks know every move when they are built (the
/// inputs, numbered by role, then name); the prover learns moves as it
/// meets them, so its ids count in the order moves were first seen.
pub(crate) struct Moves {
    pub(crate) roles: Vec<RoleMoves>,
    pub(crate) complete: bool,
}

impl Moves {
    fn from_inputs(roles: usize, inputs: impl Iterator<Item = (u32, String)>) -> Moves {
        let mut t: Vec<RoleMoves> = (0..roles).map(|_| RoleMoves::default()).collect();
        for (i, (role, name)) in inputs.enumerate() {
            if let Some(r) = t.get_mut(role as usize) {
                r.add(name, Mv::Input(i as u32));
            }
        }
        Moves { roles: t, complete: true }
    }

    /// The id of `mv` for `role`, numbering it if it is new (the prover's).
    pub(crate) fn id_of(&mut self, role: usize, mv: Mv, name: impl FnOnce() -> String) -> u32 {
        let r = &mut self.roles[role];
        match r.by_move.get(&mv) {
            Some(&id) => id,
            None => r.add(name(), mv),
        }
    }
}

/// A machine built for a game, with its move and base tables.
pub(crate) struct BuiltMachine {
    pub(crate) machine: Machine,
    pub(crate) moves: Moves,
    /// Base propositions (canonical KIF), where the machine has a fixed set.
    pub(crate) bases: Option<Vec<String>>,
}

fn net_tables(net: &Propnet) -> (Moves, Vec<String>) {
    let moves = Moves::from_inputs(net.roles.len(), net.inputs.iter().map(|i| (i.role, i.name.clone())));
    (moves, net.bases.iter().map(|b| b.name.clone()).collect())
}

fn code_tables(code: &NativeCode) -> (Moves, Vec<String>) {
    // Each role's inputs are one contiguous range, in role order.
    let role_of = |i: usize| code.role_range().iter().position(|&(lo, hi)| (lo as usize..hi as usize).contains(&i));
    let inputs = code
        .input_names()
        .iter()
        .enumerate()
        .map(|(i, name)| (role_of(i).map_or(u32::MAX, |r| r as u32), name.clone()));
    (Moves::from_inputs(code.roles().len(), inputs), code.base_names().to_vec())
}

/// Builds the `kind` machine for `game` (grounding and compiling it for
/// the networks).
pub(crate) fn build(game: &Arc<Game>, kind: Kind, opts: &BuildOptions) -> Result<BuiltMachine, String> {
    match kind {
        Kind::Prover => {
            let p = Prover::new(game.clone()).map_err(|e| e.to_string())?;
            let roles = game.roles.len();
            let moves = Moves { roles: (0..roles).map(|_| RoleMoves::default()).collect(), complete: false };
            Ok(BuiltMachine { machine: Machine::Prover(p), moves, bases: None })
        }
        Kind::TopDown => {
            let m = TopDownMachine::new(game.clone()).map_err(|e| e.to_string())?;
            let roles = game.roles.len();
            let moves = Moves { roles: (0..roles).map(|_| RoleMoves::default()).collect(), complete: false };
            Ok(BuiltMachine { machine: Machine::TopDown(m), moves, bases: None })
        }
        Kind::Propnet => {
            let opts = BuildOptions { lookups: true, ..opts.clone() };
            let p = prepare(game, &opts).map_err(|e| e.to_string())?;
            let (moves, bases) = net_tables(p.net());
            let machine = match p.lookups().any() {
                true => {
                    let prover = Prover::new(game.clone()).map_err(|e| e.to_string())?;
                    Machine::Lookups(p.lookup_machine(prover).map_err(|e| e.to_string())?)
                }
                false => Machine::Propnet(p.propnet()),
            };
            Ok(BuiltMachine { machine, moves, bases: Some(bases) })
        }
        Kind::Jit => {
            let p = prepare(game, opts).map_err(|e| e.to_string())?;
            let (m, _) = p.jit(&game.name).map_err(|e| e.to_string())?;
            let (moves, bases) = code_tables(m.code());
            Ok(BuiltMachine { machine: Machine::Jit(m), moves, bases: Some(bases) })
        }
    }
}

fn wrong_state() -> MachineError {
    MachineError::WrongGame
}

/// Runs `$body` with `$m` the machine and `$s` the state of the same kind.
macro_rules! with_state {
    ($machine:expr, $state:expr, |$m:ident, $s:ident| $body:expr) => {
        match ($machine, $state) {
            (Machine::Prover($m), Repr::Prover($s)) => $body,
            (Machine::TopDown($m), Repr::TopDown($s)) => $body,
            (Machine::Propnet($m), Repr::Net($s)) => $body,
            (Machine::Lookups($m), Repr::Net($s)) => $body,
            (Machine::Jit($m), Repr::Net($s)) => $body,
            _ => Err(wrong_state()),
        }
    };
}

fn input(m: Mv) -> Result<u32, MachineError> {
    match m {
        Mv::Input(i) => Ok(i),
        Mv::Term(_) => Err(wrong_state()),
    }
}

fn term(m: Mv) -> Result<TermId, MachineError> {
    match m {
        Mv::Term(t) => Ok(t),
        Mv::Input(_) => Err(wrong_state()),
    }
}

impl Machine {
    pub(crate) fn roles(&self) -> &[String] {
        match self {
            Machine::Prover(m) => m.roles(),
            Machine::TopDown(m) => m.roles(),
            Machine::Propnet(m) => m.roles(),
            Machine::Lookups(m) => m.roles(),
            Machine::Jit(m) => m.roles(),
        }
    }

    pub(crate) fn initial_state(&mut self) -> Result<Repr, MachineError> {
        match self {
            Machine::Prover(m) => m.initial_state().map(Repr::Prover),
            Machine::TopDown(m) => m.initial_state().map(Repr::TopDown),
            Machine::Propnet(m) => m.initial_state().map(Repr::Net),
            Machine::Lookups(m) => m.initial_state().map(Repr::Net),
            Machine::Jit(m) => m.initial_state().map(Repr::Net),
        }
    }

    pub(crate) fn is_terminal(&mut self, s: &Repr) -> Result<bool, MachineError> {
        with_state!(self, s, |m, s| m.is_terminal(s))
    }

    /// Legal moves of `role` in `s`, as machine moves.
    pub(crate) fn legal(&mut self, s: &Repr, role: usize, out: &mut Vec<Mv>) -> Result<(), MachineError> {
        out.clear();
        match (self, s) {
            (Machine::Prover(m), Repr::Prover(s)) => {
                let mut v = Vec::new();
                m.legal_moves(s, role, &mut v)?;
                out.extend(v.into_iter().map(Mv::Term));
            }
            (Machine::TopDown(m), Repr::TopDown(s)) => {
                let mut v = Vec::new();
                m.legal_moves(s, role, &mut v)?;
                out.extend(v.into_iter().map(Mv::Term));
            }
            (Machine::Propnet(m), Repr::Net(s)) => {
                let mut v = Vec::new();
                m.legal_moves(s, role, &mut v)?;
                out.extend(v.into_iter().map(Mv::Input));
            }
            (Machine::Lookups(m), Repr::Net(s)) => {
                let mut v = Vec::new();
                m.legal_moves(s, role, &mut v)?;
                out.extend(v.into_iter().map(Mv::Input));
            }
            (Machine::Jit(m), Repr::Net(s)) => {
                let mut v = Vec::new();
                m.legal_moves(s, role, &mut v)?;
                out.extend(v.into_iter().map(Mv::Input));
            }
            _ => return Err(wrong_state()),
        }
        Ok(())
    }

    pub(crate) fn next(&mut self, s: &Repr, joint: &[Mv]) -> Result<Repr, MachineError> {
        match (self, s) {
            (Machine::Prover(m), Repr::Prover(s)) => {
                let j = joint.iter().map(|&x| term(x)).collect::<Result<Vec<_>, _>>()?;
                m.next_state(s, &j).map(Repr::Prover)
            }
            (Machine::TopDown(m), Repr::TopDown(s)) => {
                let j = joint.iter().map(|&x| term(x)).collect::<Result<Vec<_>, _>>()?;
                m.next_state(s, &j).map(Repr::TopDown)
            }
            (Machine::Propnet(m), Repr::Net(s)) => {
                let j = joint.iter().map(|&x| input(x)).collect::<Result<Vec<_>, _>>()?;
                m.next_state(s, &j).map(Repr::Net)
            }
            (Machine::Lookups(m), Repr::Net(s)) => {
                let j = joint.iter().map(|&x| input(x)).collect::<Result<Vec<_>, _>>()?;
                m.next_state(s, &j).map(Repr::Net)
            }
            (Machine::Jit(m), Repr::Net(s)) => {
                let j = joint.iter().map(|&x| input(x)).collect::<Result<Vec<_>, _>>()?;
                m.next_state(s, &j).map(Repr::Net)
            }
            _ => Err(wrong_state()),
        }
    }

    /// `role`'s goal values in `s` (sorted, normally one).
    pub(crate) fn goal_values(&mut self, s: &Repr, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        with_state!(self, s, |m, s| m.goal_values(s, role, out))
    }

    pub(crate) fn state_kif(&mut self, s: &Repr) -> Result<Vec<String>, MachineError> {
        with_state!(self, s, |m, s| Ok(m.state_kif(s)))
    }

    pub(crate) fn move_kif(&self, mv: Mv) -> Result<String, MachineError> {
        match (self, mv) {
            (Machine::Prover(m), Mv::Term(t)) => Ok(m.move_kif(t)),
            (Machine::TopDown(m), Mv::Term(t)) => Ok(m.move_kif(t)),
            (Machine::Propnet(m), Mv::Input(i)) => Ok(m.move_kif(i)),
            (Machine::Lookups(m), Mv::Input(i)) => Ok(m.move_kif(i)),
            (Machine::Jit(m), Mv::Input(i)) => Ok(m.move_kif(i)),
            _ => Err(wrong_state()),
        }
    }

    /// A reasoner's term for `text` (canonical KIF); `None` for networks,
    /// whose moves are all numbered when they are built.
    pub(crate) fn prover_term(&mut self, text: &str) -> Option<Result<TermId, MachineError>> {
        match self {
            Machine::Prover(m) => Some(m.term_from_kif(text)),
            Machine::TopDown(m) => Some(m.term_from_kif(text)),
            _ => None,
        }
    }

    /// The state with the facts `facts`; `bases` is the network's base
    /// table (unused by the prover).
    pub(crate) fn state_from_kif(
        &mut self,
        facts: &[String],
        base_index: &FxHashMap<String, usize>,
    ) -> Result<Repr, MachineError> {
        match self {
            Machine::Prover(m) => m.state_from_kif(facts).map(Repr::Prover),
            Machine::TopDown(m) => m.state_from_kif(facts).map(Repr::TopDown),
            Machine::Propnet(_) | Machine::Lookups(_) | Machine::Jit(_) => {
                let mut bits = vec![0u64; base_index.len().div_ceil(64)];
                for f in facts {
                    let Some(&i) = base_index.get(f.as_str()) else {
                        return Err(MachineError::NotATerm {
                            text: f.to_string(),
                            why: "not a base proposition".into(),
                        });
                    };
                    bits[i / 64] |= 1 << (i % 64);
                }
                Ok(Repr::Net(NetState::from_bits(bits)))
            }
        }
    }
}

/// `text` in canonical KIF spacing and case: lower case, single spaces,
/// none inside parentheses (`( Cell 1  2 )` -> `(cell 1 2)`).
pub(crate) fn canonical(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for tok in text.split_whitespace() {
        if !out.is_empty() && !out.ends_with('(') && !tok.starts_with(')') {
            out.push(' ');
        }
        out.push_str(&tok.to_lowercase());
    }
    // Parentheses glued to names inside a token keep their own spacing;
    // the remaining cases are `( a` and `a )` split across tokens.
    out.replace("( ", "(").replace(" )", ")")
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn canonical_spacing() {
        assert_eq!(canonical("( Cell 1  2 )"), "(cell 1 2)");
        assert_eq!(canonical("(mark 1 (f x))"), "(mark 1 (f x))");
        assert_eq!(canonical("  noop "), "noop");
    }
}
