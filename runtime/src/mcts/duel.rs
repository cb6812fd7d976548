//! Duels: short games between two search configurations on one machine,
//! each side with a fixed time per move, the challenger in each seat in
//! turn: a quick screen of a search setting before matches (`propel
//! duel`; docs/mcts.md, *Duels*, says why the player does not duel in its
//! start clock).

use super::{Config, Search};
use crate::machine::MachineError;
use crate::simulate::Simulator;
use propel_compiler::Deadline;
use std::time::{Duration, Instant};

/// Nodes in each side's pool: a duel's moves are short, and two searches
/// live beside the player's own.
pub const DUEL_POOL: usize = 200_000;

/// The least number of finished games a duel needs to decide anything.
pub const MIN_GAMES: u32 = 4;

/// The challenger's least mean score (0..1) over a duel's games for it to
/// be adopted: 3 wins in 4 games, 5 in 8. A challenger no better than the
/// base is adopted now and then; one clearly worse almost never.
pub const ADOPT_SCORE: f64 = 0.6;

/// A duel game longer than this is cut short (not counted).
pub const MAX_PLIES: u32 = 1000;

/// What a duel found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Duel {
    /// Games played to the end.
    pub games: u32,
    /// Of those, the challenger's wins, draws and losses (by goal values:
    /// more than the base's is a win).
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// The challenger's score summed over the games: 1 a win, 0.5 a draw.
    pub score: f64,
    /// Moves played in all (finished games and the one cut short).
    pub plies: u64,
    /// Whether the last game was cut short (the stop came, or it ran past
    /// [`MAX_PLIES`]); it is not counted.
    pub cut_short: bool,
}

impl Duel {
    /// The challenger's mean score, once a game has finished.
    pub fn mean(&self) -> Option<f64> {
        (self.games > 0).then(|| self.score / self.games as f64)
    }

    /// Whether the challenger won the duel: at least [`MIN_GAMES`] games,
    /// and a mean score of at least [`ADOPT_SCORE`].
    pub fn adopt(&self) -> bool {
        self.games >= MIN_GAMES && self.mean().is_some_and(|m| m >= ADOPT_SCORE)
    }

    /// `capture-first 5-0-1 in 6 games (mean 0.83): adopted`.
    pub fn describe(&self, challenger: &str) -> String {
        let verdict = if self.adopt() {
            "adopted".to_string()
        } else if self.games < MIN_GAMES {
            format!("not adopted (fewer than {MIN_GAMES} games)")
        } else {
            format!("not adopted (below {ADOPT_SCORE})")
        };
        format!(
            "{challenger} {}-{}-{} in {} games (mean {:.2}): {verdict}",
            self.wins,
            self.draws,
            self.losses,
            self.games,
            self.mean().unwrap_or(0.0)
        )
    }
}

/// Plays games of `challenger` against `base` from `root` on copies of
/// `m` (two roles), `per_move` of search for a side each time a role it
/// plays has more than one move, until `games` are played or `stop`
/// comes. The challenger plays the first role in even games. Searches run
/// on one thread each, with pools of [`DUEL_POOL`] nodes, and keep their
/// trees from move to move as the player's do.
pub fn duel<M: Simulator>(
    m: &M,
    root: &M::State,
    base: &Config,
    challenger: &Config,
    per_move: Duration,
    games: u32,
    stop: &Deadline,
) -> Result<Duel, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let mut m = m.clone();
    if m.roles().len() != 2 {
        return Ok(Duel::default());
    }
    let interrupt = || stop.cancelled();
    let side = |c: &Config, game: u32, m: &M| {
        let c = Config {
            threads: 1,
            pool: c.pool.min(DUEL_POOL),
            seed: c.seed ^ (u64::from(game) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ..c.clone()
        };
        Search::new(m.clone(), root.clone(), c)
    };
    let mut d = Duel::default();
    let mut legal = Vec::new();
    for game in 0..games {
        // sides[0] plays role 0.
        let mut sides = [side(base, game, &m)?, side(challenger, game, &m)?];
        let challenger_role = if game % 2 == 0 { 0 } else { 1 };
        if challenger_role == 0 {
            sides.swap(0, 1);
        }
        let mut state = root.clone();
        let mut finished = false;
        for _ in 0..MAX_PLIES {
            if m.is_terminal(&state)? {
                finished = true;
                break;
            }
            if stop.passed() {
                break;
            }
            let mut joint = Vec::with_capacity(2);
            for (role, s) in sides.iter_mut().enumerate() {
                m.legal_moves(&state, role, &mut legal)?;
                let only = match legal.as_slice() {
                    [only] => Some(*only),
                    [] => return Err(MachineError::NoLegalMove { role: m.roles().get(role).cloned() }),
                    _ => None,
                };
                let mv = match only {
                    Some(mv) => mv,
                    None => {
                        s.run_until(Instant::now() + per_move, &interrupt)?;
                        s.best(role).map_or(legal[0], |(mv, _, _)| mv)
                    }
                };
                joint.push(mv);
            }
            state = m.next_state(&state, &joint)?;
            d.plies += 1;
            for s in &mut sides {
                s.set_root(state.clone())?;
            }
        }
        if !finished {
            d.cut_short = true;
            break;
        }
        let (c, b) = (m.goal(&state, challenger_role)?.score(), m.goal(&state, 1 - challenger_role)?.score());
        d.games += 1;
        let (count, score) = match c.cmp(&b) {
            std::cmp::Ordering::Greater => (&mut d.wins, 1.0),
            std::cmp::Ordering::Equal => (&mut d.draws, 0.5),
            std::cmp::Ordering::Less => (&mut d.losses, 0.0),
        };
        *count += 1;
        d.score += score;
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A challenger is adopted from four games and a mean of 0.6 on.
    #[test]
    fn adopted_from_four_games_at_three_in_four() {
        let d = |games, score| Duel { games, score, ..Duel::default() };
        assert!(!d(3, 3.0).adopt(), "three games are too few");
        assert!(d(4, 3.0).adopt());
        assert!(!d(4, 2.0).adopt());
        assert!(!d(8, 4.5).adopt(), "0.5625 is below 0.6");
        assert!(d(8, 5.0).adopt());
        assert_eq!(Duel::default().mean(), None);
        assert!(d(4, 3.0).describe("x").ends_with("adopted"));
    }
}
