//! Random games as step-by-step records: the `trace` command's data, laid
//! out so that any two machines (or an outside reasoner) can be compared.
//! Moves are chosen from each role's legal moves sorted by their canonical
//! KIF, so one seed gives the same game on every machine.

use crate::machine::{Goal, MachineError, StateMachine};
use crate::rng::Rng;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    pub step: usize,
    /// Sorted canonical KIF of the state's facts.
    pub state: Vec<String>,
    /// Per role, its legal moves, sorted.
    pub legal: Vec<Vec<String>>,
    pub terminal: bool,
    /// Per role, on terminal steps only.
    pub goals: Option<Vec<Goal>>,
    /// Per role, the move played (non-terminal steps, except a last step
    /// cut off by the step limit or by a role without legal moves).
    pub joint: Option<Vec<String>>,
}

/// How a trace ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEnd {
    Terminal,
    StepLimit,
    /// A role had no legal move in a non-terminal state.
    NoLegalMove {
        step: usize,
        role: String,
    },
}

pub fn trace<M: StateMachine>(
    m: &mut M,
    seed: u64,
    max_steps: usize,
    emit: &mut dyn FnMut(&TraceStep),
) -> Result<TraceEnd, MachineError> {
    let mut rng = Rng::new(seed);
    let roles = m.roles().to_vec();
    let mut s = m.initial_state()?;
    let mut moves = Vec::new();
    for step in 0.. {
        let terminal = m.is_terminal(&s)?;
        let mut legal: Vec<Vec<(String, M::Move)>> = Vec::with_capacity(roles.len());
        for r in 0..roles.len() {
            m.legal_moves(&s, r, &mut moves)?;
            let mut l: Vec<(String, M::Move)> = moves.iter().map(|&mv| (m.move_kif(mv), mv)).collect();
            l.sort_by(|a, b| a.0.cmp(&b.0));
            legal.push(l);
        }
        let mut rec = TraceStep {
            step,
            state: m.state_kif(&s),
            legal: legal.iter().map(|l| l.iter().map(|(k, _)| k.clone()).collect()).collect(),
            terminal,
            goals: None,
            joint: None,
        };
        if terminal {
            let goals = (0..roles.len()).map(|r| m.goal(&s, r)).collect::<Result<_, _>>()?;
            rec.goals = Some(goals);
            emit(&rec);
            return Ok(TraceEnd::Terminal);
        }
        if let Some(r) = legal.iter().position(|l| l.is_empty()) {
            emit(&rec);
            return Ok(TraceEnd::NoLegalMove { step, role: roles[r].clone() });
        }
        if step + 1 >= max_steps {
            emit(&rec);
            return Ok(TraceEnd::StepLimit);
        }
        let picks: Vec<usize> = legal.iter().map(|l| rng.below(l.len())).collect();
        rec.joint = Some(picks.iter().zip(&legal).map(|(&i, l)| l[i].0.clone()).collect());
        emit(&rec);
        let joint: Vec<M::Move> = picks.iter().zip(&legal).map(|(&i, l)| l[i].1).collect();
        s = m.next_state(&s, &joint)?;
    }
    unreachable!("the step loop only ends by returning")
}
