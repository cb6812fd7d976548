//! A player's view of one match on one state machine: the current state,
//! moves in KIF, and the strategy that picks a move. Object-safe, so that a
//! match can switch machines (prover, then propnet, then JIT) as they are
//! built, replaying the moves so far on the new one.

use anyhow::{anyhow, Result};
use propel_runtime::mcts::uct::PlainUct;
use propel_runtime::mcts::{Config, Factored, Interrupt, Search, Stats};
use propel_runtime::simulate::Simulator;
use propel_runtime::Rng;
use std::time::{Duration, Instant};

/// A joint move from the manager that is not legal here (or has the
/// wrong number of moves): the manager's mistake, not the machine's.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Illegal(pub String);

/// Searches that cannot be interrupted run in slices of this length, so
/// that a command or an abort waits for one slice at most.
const SLICE: Duration = Duration::from_millis(50);

/// How a player picks its moves.
#[derive(Clone, Debug)]
pub enum Strategy {
    Mcts(Config),
    /// Plain single-threaded UCT (the strength tests' baseline).
    Uct,
    /// A uniformly random legal move.
    Random,
    /// The first legal move.
    Legal,
}

/// The move to play, with what the search knows of it.
#[derive(Clone, Debug)]
pub struct Choice {
    pub mv: String,
    /// Expected goal (0..100) when searched.
    pub value: Option<f64>,
    pub visits: u32,
}

pub trait Brain: Send {
    /// The machine's name (prover, propnet, jit).
    fn machine(&self) -> &'static str;
    fn roles(&self) -> &[String];
    /// `role`'s legal moves in the current state, canonical KIF.
    fn legal(&mut self, role: usize) -> Result<Vec<String>>;
    /// `role`'s move where it has only one (none written out otherwise:
    /// a state can have millions).
    fn only_move(&mut self, role: usize) -> Result<Option<String>>;
    fn terminal(&mut self) -> Result<bool>;
    /// Goals in the current state (for the log at the end).
    fn goals(&mut self) -> Result<Vec<u8>>;
    /// Plays a joint move (KIF, one per role in role order). Refuses, and
    /// keeps the state, when a move is not legal.
    fn advance(&mut self, joint: &[String]) -> Result<()>;
    /// Searches until `deadline`, or until `interrupt` says so (some
    /// searches return earlier, after a slice: call again); `None` for
    /// strategies that do not search.
    fn think(&mut self, deadline: Instant, interrupt: &Interrupt<'_>) -> Result<Option<Stats>>;
    /// `role`'s move now.
    fn choose(&mut self, role: usize) -> Result<Choice>;
    /// Whether the search has solved the current state (its value is
    /// known; further iterations are trivial). False without a search.
    fn solved(&self) -> bool {
        false
    }
    /// Searches from now on with `threads` threads (where the strategy
    /// searches with several).
    fn set_threads(&mut self, _threads: usize) {}
}

enum Engine<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    Search(Box<Search<M>>),
    Factored(Box<Factored<M>>),
    Uct(Box<PlainUct<M>>),
    Plain(M),
}

/// A [`Brain`] over any machine.
pub struct MachineBrain<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    name: &'static str,
    roles: Vec<String>,
    state: M::State,
    engine: Engine<M>,
    rng: Rng,
    /// The `legal` strategy: always the first legal move.
    first_legal: bool,
    scratch: Vec<M::Move>,
}

impl<M: Simulator> MachineBrain<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub fn new(name: &'static str, mut m: M, strategy: &Strategy, seed: u64) -> Result<Self> {
        let roles = m.roles().to_vec();
        let state = m.initial_state()?;
        // Factors need moves the machine can index (not the prover's).
        let mut indexed = || -> Result<bool> {
            let mut moves = Vec::new();
            m.legal_moves(&state, 0, &mut moves)?;
            Ok(moves.first().is_some_and(|&mv| m.move_index(mv).is_some()))
        };
        let engine = match strategy {
            Strategy::Mcts(cfg) if cfg.factors.len() > 1 && indexed()? => {
                Engine::Factored(Box::new(Factored::new(m, state.clone(), cfg.clone(), &cfg.factors)?))
            }
            Strategy::Mcts(cfg) => Engine::Search(Box::new(Search::new(m, state.clone(), cfg.clone())?)),
            Strategy::Uct => Engine::Uct(Box::new(PlainUct::new(m, state.clone(), seed)?)),
            _ => Engine::Plain(m),
        };
        let first_legal = matches!(strategy, Strategy::Legal);
        Ok(MachineBrain { name, roles, state, engine, rng: Rng::new(seed), first_legal, scratch: Vec::new() })
    }

    fn m(&mut self) -> &mut M {
        match &mut self.engine {
            Engine::Search(s) => s.machine(),
            Engine::Factored(f) => f.machine(),
            Engine::Uct(u) => u.machine(),
            Engine::Plain(m) => m,
        }
    }

    fn legal_moves(&mut self, role: usize) -> Result<Vec<M::Move>> {
        let mut out = std::mem::take(&mut self.scratch);
        let s = self.state.clone();
        self.m().legal_moves(&s, role, &mut out)?;
        Ok(out)
    }
}

impl<M: Simulator> Brain for MachineBrain<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    fn machine(&self) -> &'static str {
        self.name
    }

    fn roles(&self) -> &[String] {
        &self.roles
    }

    fn legal(&mut self, role: usize) -> Result<Vec<String>> {
        let moves = self.legal_moves(role)?;
        let m = self.m();
        let kif = moves.iter().map(|&mv| m.move_kif(mv)).collect();
        self.scratch = moves;
        Ok(kif)
    }

    fn only_move(&mut self, role: usize) -> Result<Option<String>> {
        let moves = self.legal_moves(role)?;
        let only = match moves.as_slice() {
            [only] => Some(self.m().move_kif(*only)),
            _ => None,
        };
        self.scratch = moves;
        Ok(only)
    }

    fn terminal(&mut self) -> Result<bool> {
        let s = self.state.clone();
        Ok(self.m().is_terminal(&s)?)
    }

    fn goals(&mut self) -> Result<Vec<u8>> {
        let s = self.state.clone();
        let n = self.roles.len();
        let m = self.m();
        (0..n).map(|r| Ok(m.goal(&s, r)?.score())).collect()
    }

    fn advance(&mut self, joint: &[String]) -> Result<()> {
        if joint.len() != self.roles.len() {
            return Err(Illegal(format!("{} moves for {} roles", joint.len(), self.roles.len())).into());
        }
        let mut chosen = Vec::with_capacity(joint.len());
        for (r, kif) in joint.iter().enumerate() {
            let moves = self.legal_moves(r)?;
            let found = moves.iter().copied().find(|&mv| self.m().move_kif(mv) == *kif);
            self.scratch = moves;
            match found {
                Some(mv) => chosen.push(mv),
                None => return Err(Illegal(format!("`{kif}` is not a legal move of {}", self.roles[r])).into()),
            }
        }
        let s = self.state.clone();
        let next = self.m().next_state(&s, &chosen)?;
        match &mut self.engine {
            Engine::Search(search) => search.set_root(next.clone())?,
            Engine::Factored(f) => f.set_root(next.clone())?,
            Engine::Uct(u) => u.set_root(next.clone())?,
            Engine::Plain(_) => {}
        }
        self.state = next;
        Ok(())
    }

    fn think(&mut self, deadline: Instant, interrupt: &Interrupt<'_>) -> Result<Option<Stats>> {
        match &mut self.engine {
            Engine::Search(s) => Ok(Some(s.run_until(deadline, interrupt)?)),
            Engine::Factored(f) => Ok(Some(f.run(deadline.min(Instant::now() + SLICE))?)),
            Engine::Uct(u) => {
                let t = Instant::now();
                let iterations = u.run(deadline.min(t + SLICE))?;
                Ok(Some(Stats {
                    seconds: t.elapsed().as_secs_f64(),
                    iterations,
                    rollouts: iterations,
                    nodes: u.nodes(),
                    search_busy: 1.0,
                    per_request: 1,
                    ..Stats::default()
                }))
            }
            Engine::Plain(_) => Ok(None),
        }
    }

    fn solved(&self) -> bool {
        match &self.engine {
            Engine::Search(s) => s.root_solved().is_some(),
            _ => false,
        }
    }

    fn set_threads(&mut self, threads: usize) {
        if let Engine::Search(s) = &mut self.engine {
            s.set_threads(threads);
        }
    }

    fn choose(&mut self, role: usize) -> Result<Choice> {
        // A move with no visits is no answer (the search has not run),
        // unless the root is solved: then its best move is known, though
        // the proof may have come without a visit to it (the root solved
        // when it was made, or carried over from an earlier turn).
        let searched = match &mut self.engine {
            Engine::Search(s) => {
                let solved = s.root_solved().is_some();
                s.best(role).map(|(mv, v, n)| (s.machine().move_kif(mv), v, n, solved))
            }
            Engine::Factored(f) => f.best(role).map(|(mv, v, n)| (f.machine().move_kif(mv), v, n, false)),
            Engine::Uct(u) => u.best(role).map(|(mv, v, n)| (u.machine().move_kif(mv), v, n, false)),
            Engine::Plain(_) => None,
        };
        if let Some((mv, v, n, _)) = searched.filter(|&(_, _, n, solved)| n > 0 || solved) {
            return Ok(Choice { mv, value: Some(v * 100.0), visits: n });
        }
        // One move printed, not all of them (a state can have millions).
        let legal = self.legal_moves(role)?;
        let pick = if self.first_legal { 0 } else { self.rng.below(legal.len().max(1)) };
        let mv = legal.get(pick).copied();
        self.scratch = legal;
        let mv = mv.ok_or_else(|| anyhow!("{} has no legal move", self.roles[role]))?;
        Ok(Choice { mv: self.m().move_kif(mv), value: None, visits: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::{Brain, MachineBrain, Strategy};
    use propel_runtime::mcts::{Config, Mode};
    use propel_runtime::Prover;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// x to move wins with (1 3). With terminal children made at
    /// expansion the root is solved before any visit reaches the winning
    /// move: the player must still play it (it played a random move).
    #[test]
    fn a_solved_root_plays_its_win_though_the_move_has_no_visits() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../games/tictactoe.kif");
        let game = Arc::new(propel_compiler::load_file(&path).unwrap());
        let cfg = Config { threads: 1, mode: Mode::Pipeline, expand_terminal: true, seed: 3, ..Config::default() };
        for seed in 0..8 {
            let mut b =
                MachineBrain::new("prover", Prover::new(game.clone()).unwrap(), &Strategy::Mcts(cfg.clone()), seed)
                    .unwrap();
            for joint in
                [["(mark 1 1)", "noop"], ["noop", "(mark 2 1)"], ["(mark 1 2)", "noop"], ["noop", "(mark 2 2)"]]
            {
                b.advance(&joint.map(String::from)).unwrap();
            }
            b.think(Instant::now() + Duration::from_millis(50), &|| false).unwrap();
            assert!(b.solved());
            let c = b.choose(0).unwrap();
            assert_eq!(c.mv, "(mark 1 3)", "seed {seed}: {c:?}");
            assert_eq!(c.value, Some(100.0));
        }
    }
}
