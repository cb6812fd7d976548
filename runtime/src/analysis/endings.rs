//! Which moves end a game, and how: random games replayed, and at every
//! turn-taking decision each of the mover's moves tried one ply ahead.
//! Greedy rollouts read the moves seen to end a game (`terminating`);
//! win-first lanes the moves that won at once every time they were tried
//! (`winning`).

use crate::machine::MachineError;
use crate::rng::Rng;
use crate::simulate::Simulator;
use propel_compiler::Deadline;
use std::time::{Duration, Instant};

/// Tries a winning move needs: a move seen once may have won by chance
/// (in speedChess a king move that happened to capture once).
const MIN_WINS: u32 = 3;

/// What the one-ply tries found.
#[derive(Clone, Debug, Default)]
pub(super) struct Endings {
    /// Turn-taking decisions sampled (one role with several moves).
    pub(super) decisions: u32,
    /// Decisions where the mover had a win one move away and the random
    /// move was not one.
    pub(super) missed: u32,
    /// Next states a check that stops at the first win would have cost.
    pub(super) extra_steps: u64,
    /// By move index: the move ended the game at least once.
    pub(super) terminating: Vec<bool>,
    /// By move index: tries that won at once for the mover, and whether a
    /// try did anything else (did not end the game, or ended it without
    /// a win).
    won: Vec<u32>,
    spoiled: Vec<bool>,
    /// The legal moves (indices) of the decisions sampled, up to a limit.
    pub(super) sampled: Vec<Vec<u32>>,
    /// A state gave two roles a choice at once: the sampling stopped there.
    pub(super) simultaneous: bool,
    /// (move index, base) pairs: a try of the move removed that piece of
    /// another role (the `foes` of [`sample`]).
    took: std::collections::BTreeSet<(u32, u32)>,
}

impl Endings {
    /// The moves that won at once for the role that played them every
    /// time they were tried (and were tried [`MIN_WINS`] times or more),
    /// ascending.
    /// Only such moves are safe to play blindly: a lane that plays one
    /// does not check what it did.
    pub(super) fn winning(&self) -> Vec<u32> {
        if self.simultaneous {
            return Vec::new();
        }
        (0..self.won.len()).filter(|&i| self.won[i] >= MIN_WINS && !self.spoiled[i]).map(|i| i as u32).collect()
    }

    /// The moves seen to take a piece, ascending, each with the pieces
    /// (bases, ascending) it took.
    pub(super) fn captures(&self) -> Vec<(u32, Vec<u32>)> {
        let mut out: Vec<(u32, Vec<u32>)> = Vec::new();
        for &(i, b) in &self.took {
            match out.last_mut() {
                Some((j, bases)) if *j == i => bases.push(b),
                _ => out.push((i, vec![b])),
            }
        }
        out
    }

    fn note(&mut self, i: usize) {
        if i >= self.won.len() {
            self.won.resize(i + 1, 0);
            self.spoiled.resize(i + 1, false);
            self.terminating.resize(i + 1, false);
        }
    }
}

/// Random games from `s0` on `m` for up to `budget` (or until `stop`),
/// every turn-taking decision's moves tried one ply ahead; `inputs`:
/// the number of move indices (the vectors' length); at most
/// `max_sampled` decisions' moves are kept; `foes`, per role, the bases
/// of the other roles' pieces whose removal by a move is noted (empty:
/// none).
#[allow(clippy::too_many_arguments)]
pub(super) fn sample<M: Simulator>(
    m: &mut M,
    s0: &M::State,
    inputs: usize,
    budget: Duration,
    rng: &mut Rng,
    stop: &Deadline,
    max_sampled: usize,
    foes: &[Vec<u32>],
) -> Result<Endings, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let t = Instant::now();
    let nr = m.roles().len();
    let mut e = Endings::default();
    e.note(inputs.saturating_sub(1));
    let mut per_role: Vec<Vec<M::Move>> = vec![Vec::new(); nr];
    let mut joint = Vec::with_capacity(nr);
    let index = |m: &M, mv| m.move_index(mv).map(|i| i as usize).ok_or(MachineError::NoMoveIndex);
    'outer: while t.elapsed() < budget && !stop.passed() {
        let mut s = s0.clone();
        let mut len = 0u64;
        while !m.is_terminal(&s)? {
            joint.clear();
            for (r, mv) in per_role.iter_mut().enumerate() {
                m.legal_moves(&s, r, mv)?;
                if mv.is_empty() {
                    return Err(MachineError::NoLegalMove { role: Some(m.roles()[r].clone()) });
                }
                joint.push(mv[rng.below(mv.len())]);
            }
            let mut choosers = (0..nr).filter(|&r| per_role[r].len() > 1);
            let first = choosers.next();
            if choosers.next().is_some() {
                e.simultaneous = true;
                break 'outer;
            }
            // One role to move (the others forced): is one of its moves an immediate win?
            if let Some(r) = first {
                let played = joint[r];
                let mut win = None;
                for (k, &mv) in per_role[r].iter().enumerate() {
                    let i = index(m, mv)?;
                    e.note(i);
                    joint[r] = mv;
                    let n = m.next_state(&s, &joint)?;
                    if let (Some(foes), Some(before), Some(after)) = (foes.get(r), m.base_bits(&s), m.base_bits(&n)) {
                        let on =
                            |bits: &[u64], b: u32| bits.get(b as usize / 64).is_some_and(|w| w >> (b % 64) & 1 == 1);
                        for &b in foes.iter().filter(|&&b| on(before, b) && !on(after, b)) {
                            e.took.insert((i as u32, b));
                        }
                    }
                    if !m.is_terminal(&n)? {
                        e.spoiled[i] = true;
                        continue;
                    }
                    e.terminating[i] = true;
                    if m.goal(&n, r)?.score() == 100 {
                        e.won[i] += 1;
                        if win.is_none() {
                            // What a check that stops at the first win costs.
                            e.extra_steps += k as u64 + 1;
                            win = Some(mv);
                        }
                    } else {
                        e.spoiled[i] = true;
                    }
                }
                if win.is_none() {
                    e.extra_steps += per_role[r].len() as u64;
                }
                joint[r] = played;
                e.decisions += 1;
                if win.is_some_and(|w| w != played) {
                    e.missed += 1;
                }
                if e.sampled.len() < max_sampled {
                    let moves: Result<Vec<u32>, _> =
                        per_role[r].iter().map(|&mv| index(m, mv).map(|i| i as u32)).collect();
                    e.sampled.push(moves?);
                }
            }
            s = m.next_state(&s, &joint)?;
            len += 1;
            if len > crate::playout::MAX_PLAYOUT_STEPS {
                return Err(MachineError::StepLimit { steps: crate::playout::MAX_PLAYOUT_STEPS });
            }
            if t.elapsed() > budget || stop.passed() {
                break 'outer;
            }
        }
    }
    Ok(e)
}

/// The moves (by [`Simulator::move_index`]) that won at once for the role
/// that played them every time they were tried in random games played
/// on `m` for about `budget` (at least 3 wins, never a draw, loss or
/// game that went on): the set that
/// win-first lanes take. Empty for games where two roles choose at once.
pub fn winning_moves<M: Simulator>(m: &mut M, budget: Duration, seed: u64) -> Result<Vec<u32>, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let s0 = m.initial_state()?;
    let mut rng = Rng::new(seed);
    Ok(sample(m, &s0, 0, budget, &mut rng, &Deadline::none(), 0, &[])?.winning())
}
