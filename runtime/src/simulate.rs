//! What search needs from a machine beyond the state-machine interface:
//! random playouts from any state (natively where the machine can), a
//! state hash for transpositions, and whether its states mean the same in
//! its clones (so that rollouts can run on other threads).

use crate::machine::{MachineError, StateMachine};
use crate::native::{LaneRunner, NativeMachine};
use crate::playout::{playout_from, PlayoutStats};
use crate::propnet::{NetState, PropnetMachine};
use crate::prover::Prover;
use crate::rng::Rng;
use std::hash::{Hash, Hasher};

pub trait Simulator: StateMachine + Clone + Send + 'static
where
    Self::State: Send + Sync + 'static,
    Self::Move: Send + Sync + 'static,
{
    /// A random playout from `s`: each role's goal (0..=100; undefined
    /// counts 0) into `goals`; returns the playout's length.
    fn rollout(&mut self, s: &Self::State, rng: &mut Rng, goals: &mut [f64]) -> Result<u32, MachineError> {
        let mut stats = PlayoutStats::default();
        let n = playout_from(self, s.clone(), rng, &mut stats)?;
        for (g, &v) in goals.iter_mut().zip(&stats.goal_sums) {
            *g = v as f64;
        }
        Ok(n as u32)
    }

    /// Up to `count` random playouts from `s` (at least one; fewer when
    /// `stop` says so between playouts): adds each role's goal / 100 to
    /// `sums` and returns how many ran.
    fn rollouts(
        &mut self,
        s: &Self::State,
        count: u32,
        rng: &mut Rng,
        sums: &mut [f64],
        stop: &dyn Fn() -> bool,
    ) -> Result<u32, MachineError> {
        one_at_a_time(self, s, count, rng, sums, stop, |m, s, rng, g| m.rollout(s, rng, g))
    }

    /// Rollouts per request that suit this machine (bit-parallel machines
    /// want batches).
    fn preferred_batch(&self) -> u32 {
        1
    }

    fn state_hash(&self, s: &Self::State) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        s.hash(&mut h);
        h.finish()
    }

    /// The state's base propositions as bits, in the order of the playout
    /// network's bases (what heuristic evaluators read); `None` for
    /// machines whose states are not such bitsets.
    fn base_bits<'a>(&self, _s: &'a Self::State) -> Option<&'a [u64]> {
        None
    }

    /// A move's index among the network's inputs (what the analysis's
    /// factors list); `None` for machines without such indices.
    fn move_index(&self, _m: Self::Move) -> Option<u32> {
        None
    }

    /// The move with index `i` ([`Simulator::move_index`]'s inverse).
    fn move_from_index(&self, _i: u32) -> Option<Self::Move> {
        None
    }

    /// The state with these base bits ([`Simulator::base_bits`]'s inverse).
    fn state_from_bits(&self, _bits: &[u64]) -> Option<Self::State> {
        None
    }

    /// Narrows a role's legal moves to those this machine's search may
    /// play (all of them, but in a factor's tree).
    fn restrict_moves(&self, _role: usize, _moves: &mut Vec<Self::Move>) {}

    /// Whether a state made by one instance means the same to its clones.
    fn portable_states(&self) -> bool {
        true
    }

    /// What kind of machine this is, for reports (prover, propnet,
    /// native, hybrid).
    fn kind(&self) -> &'static str;

    /// A runner for bit-parallel rollouts from this machine's states (their
    /// [`Simulator::base_bits`]), for machines with lane code.
    fn lane_runner(&self) -> Option<LaneRunner> {
        None
    }
}

/// [`Simulator::rollouts`] as a loop of single rollouts (`roll`).
pub fn one_at_a_time<M: Simulator>(
    m: &mut M,
    s: &M::State,
    count: u32,
    rng: &mut Rng,
    sums: &mut [f64],
    stop: &dyn Fn() -> bool,
    mut roll: impl FnMut(&mut M, &M::State, &mut Rng, &mut [f64]) -> Result<u32, MachineError>,
) -> Result<u32, MachineError>
where
    M::State: Send + Sync + 'static,
    M::Move: Send + Sync + 'static,
{
    let mut goals = vec![0.0; sums.len()];
    let mut done = 0;
    while done < count.max(1) && (done == 0 || !stop()) {
        roll(m, s, rng, &mut goals)?;
        for (sum, g) in sums.iter_mut().zip(&goals) {
            *sum += g / 100.0;
        }
        done += 1;
    }
    Ok(done)
}

impl Simulator for PropnetMachine {
    fn kind(&self) -> &'static str {
        "propnet"
    }
    fn base_bits<'a>(&self, s: &'a NetState) -> Option<&'a [u64]> {
        Some(s.bits())
    }
    fn move_index(&self, m: u32) -> Option<u32> {
        Some(m)
    }
    fn move_from_index(&self, i: u32) -> Option<u32> {
        Some(i)
    }
    fn state_from_bits(&self, bits: &[u64]) -> Option<NetState> {
        Some(NetState::from_slice(bits))
    }
}

impl Simulator for NativeMachine {
    fn kind(&self) -> &'static str {
        "native"
    }
    /// The generated code keeps the bases in the network's order.
    fn base_bits<'a>(&self, s: &'a NetState) -> Option<&'a [u64]> {
        Some(s.bits())
    }

    fn move_index(&self, m: u32) -> Option<u32> {
        Some(m)
    }
    fn move_from_index(&self, i: u32) -> Option<u32> {
        Some(i)
    }
    fn state_from_bits(&self, bits: &[u64]) -> Option<NetState> {
        Some(NetState::from_slice(bits))
    }

    fn rollout(&mut self, s: &NetState, rng: &mut Rng, goals: &mut [f64]) -> Result<u32, MachineError> {
        let mut g = Vec::with_capacity(goals.len());
        let n = self.native_playout(s, rng.next_u64(), crate::playout::MAX_PLAYOUT_STEPS as u32, &mut g)?;
        for (out, &v) in goals.iter_mut().zip(&g) {
            *out = v.max(0) as f64;
        }
        Ok(n)
    }

    fn preferred_batch(&self) -> u32 {
        if self.batches_on_lanes() {
            MIN_LANE_BATCH
        } else {
            1
        }
    }

    fn lane_runner(&self) -> Option<LaneRunner> {
        NativeMachine::lane_runner(self)
    }

    /// Batches of [`MIN_LANE_BATCH`] or more run bit-parallel where the
    /// machine runs batches on lanes (one at a time otherwise);
    /// a lane batch runs whole, whatever `stop` says (search asks for
    /// [`crate::hybrid::LANE_BATCH`] playouts at most).
    fn rollouts(
        &mut self,
        s: &NetState,
        count: u32,
        rng: &mut Rng,
        sums: &mut [f64],
        stop: &dyn Fn() -> bool,
    ) -> Result<u32, MachineError> {
        if count < MIN_LANE_BATCH || !self.batches_on_lanes() {
            return one_at_a_time(self, s, count, rng, sums, stop, |m, s, rng, g| m.rollout(s, rng, g));
        }
        let (mut goals, mut lengths) = (Vec::new(), Vec::new());
        self.playouts(
            s,
            count as usize,
            rng.next_u64(),
            crate::playout::MAX_PLAYOUT_STEPS as u32,
            &mut goals,
            &mut lengths,
        )?;
        let roles = sums.len().max(1);
        for g in goals.chunks(roles) {
            for (sum, &v) in sums.iter_mut().zip(g) {
                *sum += v.max(0) as f64 / 100.0;
            }
        }
        Ok(count)
    }
}

/// The smallest rollout request run on lanes: a lane step costs the same
/// for 1 game as for 128.
pub const MIN_LANE_BATCH: u32 = 16;

impl Simulator for Prover {
    fn kind(&self) -> &'static str {
        "prover"
    }
    /// A prover's states are ids in its own term pool: clones may number
    /// new terms differently, so rollouts stay on the search thread.
    fn portable_states(&self) -> bool {
        false
    }
}

/// Which moves greedy rollouts try one ply ahead ([`greedy_rollout`]).
#[derive(Clone, Debug, Default)]
pub struct Greedy {
    /// By move index ([`Simulator::move_index`]): whether the move was
    /// seen to end a game (the analysis's sample). Only these are tried,
    /// so that a state where no move can end the game costs nothing (in
    /// breakthrough, only moves onto the last row). Empty: every move is
    /// tried (also on machines without move indices).
    pub terminating: Vec<bool>,
}

impl Greedy {
    /// Whether `mv` may end the game (and so is worth trying).
    fn may_end<M: Simulator>(&self, m: &M, mv: M::Move) -> bool
    where
        M::State: Send + Sync,
        M::Move: Send + Sync,
    {
        if self.terminating.is_empty() {
            return true;
        }
        match m.move_index(mv) {
            Some(i) => self.terminating.get(i as usize).copied().unwrap_or(false),
            None => true,
        }
    }
}

/// How a rollout picks a role's move among several (an index into the
/// moves), when greedy rollouts do not decide.
pub trait Pick<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    fn pick(&mut self, m: &M, role: usize, moves: &[M::Move], rng: &mut Rng) -> usize;
}

/// Uniformly random moves.
pub struct Uniform;

impl<M: Simulator> Pick<M> for Uniform
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    fn pick(&mut self, _: &M, _: usize, moves: &[M::Move], rng: &mut Rng) -> usize {
        rng.below(moves.len())
    }
}

/// A greedy random playout from `s`: where one role has a choice, a move
/// that ends the game with goal 100 for it is taken, and a move that ends
/// the game with goal 0 for it is avoided when another exists; otherwise
/// moves are uniformly random. Only the moves `greedy` says may end the
/// game are tried one ply ahead (one state update each), so the analysis
/// decides when it pays.
pub fn greedy_rollout<M: Simulator>(
    m: &mut M,
    s: &M::State,
    rng: &mut Rng,
    goals: &mut [f64],
    greedy: &Greedy,
) -> Result<u32, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    policy_rollout(m, s, rng, goals, Some(greedy), &mut Uniform, None)
}

/// A playout from `s` whose moves `pick` chooses, greedy where `greedy`
/// says (see [`greedy_rollout`]); each role's goal (0..=100) into
/// `goals`, and, when `played` is given, every move a role chose among
/// several, with the role. Returns the playout's length.
pub fn policy_rollout<M: Simulator>(
    m: &mut M,
    s: &M::State,
    rng: &mut Rng,
    goals: &mut [f64],
    greedy: Option<&Greedy>,
    pick: &mut impl Pick<M>,
    mut played: Option<&mut Vec<(usize, M::Move)>>,
) -> Result<u32, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let roles = m.roles().len();
    let mut moves: Vec<Vec<M::Move>> = vec![Vec::new(); roles];
    let mut joint = Vec::with_capacity(roles);
    let mut losing: Vec<M::Move> = Vec::new();
    let mut s = s.clone();
    let mut len = 0u32;
    while !m.is_terminal(&s)? {
        joint.clear();
        let mut chooser = None;
        for (r, mv) in moves.iter_mut().enumerate() {
            m.legal_moves(&s, r, mv)?;
            if mv.is_empty() {
                return Err(MachineError::NoLegalMove { role: Some(m.roles()[r].clone()) });
            }
            if mv.len() > 1 {
                chooser = if chooser.is_none() { Some(r) } else { Some(usize::MAX) };
                joint.push(mv[pick.pick(m, r, mv, rng)]);
            } else {
                joint.push(mv[0]);
            }
        }
        let mut next = None;
        if let Some((r, greedy)) = chooser.filter(|&r| r != usize::MAX).zip(greedy) {
            let choice = joint[r];
            losing.clear();
            for &mv in &moves[r] {
                if !greedy.may_end(m, mv) {
                    continue;
                }
                joint[r] = mv;
                let n = m.next_state(&s, &joint)?;
                if m.is_terminal(&n)? {
                    match m.goal(&n, r)?.score() {
                        100 => {
                            next = Some(n);
                            break;
                        }
                        0 => losing.push(mv),
                        _ => {}
                    }
                }
            }
            if next.is_none() {
                joint[r] = choice;
            }
            // The chosen move loses at once: a random one that does not, if any.
            let ok = moves[r].len() - losing.len();
            if next.is_none() && losing.contains(&choice) && ok > 0 {
                let k = rng.below(ok);
                joint[r] = moves[r].iter().copied().filter(|mv| !losing.contains(mv)).nth(k).unwrap_or(choice);
            }
        }
        if let Some(p) = played.as_deref_mut() {
            p.extend((0..roles).filter(|&r| moves[r].len() > 1).map(|r| (r, joint[r])));
        }
        s = match next {
            Some(n) => n,
            None => m.next_state(&s, &joint)?,
        };
        len += 1;
        if len as u64 > crate::playout::MAX_PLAYOUT_STEPS {
            return Err(MachineError::StepLimit { steps: crate::playout::MAX_PLAYOUT_STEPS });
        }
    }
    for (r, g) in goals.iter_mut().enumerate() {
        *g = m.goal(&s, r)?.score() as f64;
    }
    Ok(len)
}
