//! Factored search: for a game that the analysis splits into independent
//! factors (sub-games whose next-state and legal logic do not touch each
//! other, such as dualConnect4's two boards), one search per factor, each
//! over that factor's moves alone (and the moves of no factor, such as
//! `noop`). Each tree is as wide as one factor instead of all of them put
//! together. Rollouts from its leaves are whole-game random playouts (the
//! machine's own, native where it can), so each tree's values are values
//! of the real game; the move played is the best move of the factor whose
//! tree promises the mover most.

use super::{Config, Search, Stats};
use crate::machine::{MachineError, StateMachine};
use crate::rng::Rng;
use crate::simulate::Simulator;
use std::sync::Arc;
use std::time::Instant;

/// A machine whose legal moves are one factor's (and those of no factor).
/// Where that leaves a role without a move (its board is full), the role
/// keeps all its moves: the tree must not end a game that goes on.
#[derive(Clone)]
pub struct FactorMachine<M> {
    inner: M,
    /// By move index: may this tree play it.
    allowed: Arc<[bool]>,
}

impl<M: Simulator> StateMachine for FactorMachine<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    type State = M::State;
    type Move = M::Move;

    fn roles(&self) -> &[String] {
        self.inner.roles()
    }
    fn initial_state(&mut self) -> Result<M::State, MachineError> {
        self.inner.initial_state()
    }
    fn is_terminal(&mut self, s: &M::State) -> Result<bool, MachineError> {
        self.inner.is_terminal(s)
    }
    fn legal_moves(&mut self, s: &M::State, role: usize, out: &mut Vec<M::Move>) -> Result<(), MachineError> {
        self.inner.legal_moves(s, role, out)?;
        self.restrict_moves(role, out);
        Ok(())
    }
    fn next_state(&mut self, s: &M::State, joint: &[M::Move]) -> Result<M::State, MachineError> {
        self.inner.next_state(s, joint)
    }
    fn goal_values(&mut self, s: &M::State, role: usize, out: &mut Vec<u8>) -> Result<(), MachineError> {
        self.inner.goal_values(s, role, out)
    }
    fn state_kif(&mut self, s: &M::State) -> Vec<String> {
        self.inner.state_kif(s)
    }
    fn move_kif(&self, m: M::Move) -> String {
        self.inner.move_kif(m)
    }
}

impl<M: Simulator> Simulator for FactorMachine<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    fn rollout(&mut self, s: &M::State, rng: &mut Rng, goals: &mut [f64]) -> Result<u32, MachineError> {
        self.inner.rollout(s, rng, goals)
    }
    fn rollouts(
        &mut self,
        s: &M::State,
        count: u32,
        rng: &mut Rng,
        sums: &mut [f64],
        stop: &dyn Fn() -> bool,
    ) -> Result<u32, MachineError> {
        self.inner.rollouts(s, count, rng, sums, stop)
    }
    fn preferred_batch(&self) -> u32 {
        self.inner.preferred_batch()
    }
    fn state_hash(&self, s: &M::State) -> u64 {
        self.inner.state_hash(s)
    }
    fn portable_states(&self) -> bool {
        self.inner.portable_states()
    }
    fn base_bits<'a>(&self, s: &'a M::State) -> Option<&'a [u64]> {
        self.inner.base_bits(s)
    }
    fn move_index(&self, m: M::Move) -> Option<u32> {
        self.inner.move_index(m)
    }
    fn lane_runner(&self) -> Option<crate::native::LaneRunner> {
        self.inner.lane_runner()
    }
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn move_from_index(&self, i: u32) -> Option<M::Move> {
        self.inner.move_from_index(i)
    }
    fn state_from_bits(&self, bits: &[u64]) -> Option<M::State> {
        self.inner.state_from_bits(bits)
    }
    /// The factor's moves, where the role has any legal here (else all:
    /// the tree must not end a game that goes on).
    fn restrict_moves(&self, _role: usize, moves: &mut Vec<M::Move>) {
        let allowed = |mv: &M::Move| {
            self.inner.move_index(*mv).is_none_or(|i| self.allowed.get(i as usize).copied().unwrap_or(true))
        };
        if moves.iter().any(allowed) {
            moves.retain(allowed);
        }
    }
}

/// One search per factor, searched in turn.
pub struct Factored<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    searches: Vec<Search<FactorMachine<M>>>,
    /// For the player's own questions (legal moves, move names).
    machine: M,
}

impl<M: Simulator> Factored<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    /// `factors`: each factor's move indices (as [`Simulator::move_index`]
    /// gives them); moves in none of them are in every tree.
    pub fn new(machine: M, root: M::State, config: Config, factors: &[Vec<u32>]) -> Result<Self, MachineError> {
        let inputs = factors.iter().flatten().map(|&i| i as usize + 1).max().unwrap_or(0);
        let in_some: Vec<bool> = {
            let mut v = vec![false; inputs];
            for &i in factors.iter().flatten() {
                if let Some(x) = v.get_mut(i as usize) {
                    *x = true;
                }
            }
            v
        };
        let k = factors.len().max(1);
        let mut searches = Vec::with_capacity(k);
        for (n, f) in factors.iter().enumerate() {
            let mut allowed: Vec<bool> = in_some.iter().map(|&x| !x).collect();
            for &i in f {
                if let Some(x) = allowed.get_mut(i as usize) {
                    *x = true;
                }
            }
            let m = FactorMachine { inner: machine.clone(), allowed: allowed.into() };
            // The node pool is shared out between the trees.
            let cfg = Config {
                pool: (config.pool / k).max(1024),
                seed: config.seed.wrapping_add(n as u64),
                factors: Vec::new(),
                ..config.clone()
            };
            searches.push(Search::new(m, root.clone(), cfg)?);
        }
        Ok(Factored { searches, machine })
    }

    pub fn factors(&self) -> usize {
        self.searches.len()
    }

    pub fn machine(&mut self) -> &mut M {
        &mut self.machine
    }

    pub fn set_root(&mut self, state: M::State) -> Result<(), MachineError> {
        for s in &mut self.searches {
            s.set_root(state.clone())?;
        }
        Ok(())
    }

    /// Searches every factor, the time shared equally, until `deadline`.
    pub fn run(&mut self, deadline: Instant) -> Result<Stats, MachineError> {
        let mut total = Stats::default();
        let k = self.searches.len();
        for (i, s) in self.searches.iter_mut().enumerate() {
            let now = Instant::now();
            let left = deadline.saturating_duration_since(now);
            let st = s.run(now + left / (k - i) as u32)?;
            total.seconds += st.seconds;
            total.iterations += st.iterations;
            total.rollouts += st.rollouts;
            total.nodes += st.nodes;
            total.pool += st.pool;
            total.search_busy += st.search_busy / k as f64;
            total.rollout_idle += st.rollout_idle / k as f64;
            total.per_request = total.per_request.max(st.per_request);
            // The factors' searches share one configuration.
            total.rollout_policy = st.rollout_policy;
            total.expand_after = st.expand_after;
        }
        Ok(total)
    }

    /// `role`'s move: the best of the factor whose tree values it most.
    pub fn best(&self, role: usize) -> Option<(M::Move, f64, u32)> {
        self.searches.iter().filter_map(|s| s.best(role)).filter(|b| b.2 > 0).max_by(|a, b| a.1.total_cmp(&b.1))
    }
}
