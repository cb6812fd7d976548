//! Propel's MCTS on any of the machines, for one decision.

use crate::machine::{Machine, Mv, Repr};
use propel_runtime::mcts::{Config, Search};
use propel_runtime::simulate::Simulator;
use propel_runtime::MachineError;
use std::time::{Duration, Instant};

fn run<M: Simulator>(
    m: M,
    s: M::State,
    time: Duration,
    config: Config,
    mv: impl Fn(M::Move) -> Mv,
) -> Result<Vec<(Mv, f64, u32)>, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let roles = m.roles().len();
    let mut search = Search::new(m, s, config)?;
    search.run(Instant::now() + time)?;
    (0..roles)
        .map(|r| {
            let (best, value, visits) = search.best(r).ok_or(MachineError::NoSearchMove("the state is terminal"))?;
            Ok((mv(best), value, visits))
        })
        .collect()
}

/// Each role's best move from `s` after searching for `time`.
pub(crate) fn search(
    m: Machine,
    s: Repr,
    time: Duration,
    threads: usize,
    seed: u64,
) -> Result<Vec<(Mv, f64, u32)>, MachineError> {
    let config = Config { threads, seed, ..Config::default() };
    match (m, s) {
        (Machine::Prover(m), Repr::Prover(s)) => run(m, s, time, config, Mv::Term),
        (Machine::TopDown(m), Repr::TopDown(s)) => run(m, s, time, config, Mv::Term),
        (Machine::Propnet(m), Repr::Net(s)) => run(m, s, time, config, Mv::Input),
        (Machine::Lookups(m), Repr::Net(s)) => run(m, s, time, config, Mv::Input),
        (Machine::Jit(m), Repr::Net(s)) => run(m, s, time, config, Mv::Input),
        _ => Err(MachineError::WrongGame),
    }
}
