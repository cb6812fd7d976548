//! Duels: short games between two search configurations on one machine,
//! each side with a fixed time per move. With two or more roles the
//! challenger takes each seat in turn and the base every other seat; a
//! puzzle (one role) is played by each side alone and the goals compared.
//! `propel duel` screens a setting before matches; the player duels its
//! analysed settings against plain ones in its start clock
//! ([`super::validate`]).

use super::{Config, Search};
use crate::machine::MachineError;
use crate::simulate::Simulator;
use propel_compiler::Deadline;
use std::time::{Duration, Instant};

/// Nodes in all the searches of a duel game together (each seat's search
/// gets its share, at least half of it with two roles): a duel's moves
/// are short, and the searches live beside the player's own.
pub const DUEL_POOL: usize = 400_000;

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
    /// Of those, the challenger's wins, draws and losses: its goal above,
    /// equal to or below the mean of the other seats' (with one role, the
    /// base's goal playing the same puzzle).
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// The challenger's score summed over the games: per game 0.5 plus
    /// half its goal's lead over the others' mean, in 0..1 (a win of a
    /// two-role zero-sum game 1, a draw 0.5).
    pub score: f64,
    /// The scores' squares summed (for their spread).
    pub squares: f64,
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

    /// The standard error of the mean score, with the per-game spread
    /// taken as at least 0.3 (a few games all won have no spread, and
    /// prove less than that says).
    pub fn std_error(&self) -> Option<f64> {
        let n = self.games as f64;
        let mean = self.mean()?;
        let var = (self.squares / n - mean * mean).max(0.0) * n / (n - 1.0).max(1.0);
        Some(var.sqrt().max(0.3) / n.sqrt())
    }

    /// Whether the challenger won the duel: at least [`MIN_GAMES`] games,
    /// and a mean score of at least [`ADOPT_SCORE`].
    pub fn adopt(&self) -> bool {
        self.games >= MIN_GAMES && self.mean().is_some_and(|m| m >= ADOPT_SCORE)
    }

    /// Whether the duel measured a gain for the challenger: at least
    /// [`MIN_GAMES`] games, and a mean score more than one standard error
    /// above even (about five chances in six that it is no accident).
    pub fn gain(&self) -> bool {
        self.games >= MIN_GAMES && self.mean().zip(self.std_error()).is_some_and(|(m, se)| m - se > 0.5)
    }

    /// Whether the games so far settle the question either way: two
    /// standard errors from even, after at least 6 games.
    pub fn settled(&self) -> bool {
        self.games >= 6 && self.mean().zip(self.std_error()).is_some_and(|(m, se)| (m - 0.5).abs() > 2.0 * se)
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
            "{challenger} {} in {} games (mean {:.2}): {verdict}",
            self.record(),
            self.games,
            self.mean().unwrap_or(0.0)
        )
    }

    /// Wins-draws-losses, `5-0-1`.
    pub fn record(&self) -> String {
        format!("{}-{}-{}", self.wins, self.draws, self.losses)
    }

    /// Adds another duel's games (of the same two sides) to this one's.
    pub fn merge(&mut self, o: &Duel) {
        self.games += o.games;
        self.wins += o.wins;
        self.draws += o.draws;
        self.losses += o.losses;
        self.score += o.score;
        self.squares += o.squares;
        self.plies += o.plies;
        self.cut_short |= o.cut_short;
    }

    fn add(&mut self, lead: f64) {
        let score = (0.5 + lead / 200.0).clamp(0.0, 1.0);
        self.games += 1;
        if lead > 1e-9 {
            self.wins += 1;
        } else if lead < -1e-9 {
            self.losses += 1;
        } else {
            self.draws += 1;
        }
        self.score += score;
        self.squares += score * score;
    }
}

/// One game from `root` with `sides[r]` searching for role `r`,
/// `per_move` wherever that role has more than one move: each role's
/// goal, or `None` when cut short (the stop came, or [`MAX_PLIES`]).
fn play_game<M: Simulator>(
    m: &mut M,
    root: &M::State,
    sides: &[&Config],
    seed: u64,
    per_move: Duration,
    stop: &Deadline,
    plies: &mut u64,
) -> Result<Option<Vec<u8>>, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let interrupt = || stop.cancelled();
    let pool = (DUEL_POOL / sides.len().max(2)).max(10_000);
    let mut searches = sides
        .iter()
        .enumerate()
        .map(|(r, c)| {
            let c = Config {
                threads: 1,
                pool: c.pool.min(pool),
                seed: c.seed ^ seed.wrapping_add(r as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                ..(*c).clone()
            };
            Search::new(m.clone(), root.clone(), c)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut state = root.clone();
    let mut legal = Vec::new();
    for _ in 0..MAX_PLIES {
        if m.is_terminal(&state)? {
            return Ok(Some((0..sides.len()).map(|r| m.goal(&state, r).map(|g| g.score())).collect::<Result<_, _>>()?));
        }
        if stop.passed() {
            return Ok(None);
        }
        let mut joint = Vec::with_capacity(sides.len());
        for (role, s) in searches.iter_mut().enumerate() {
            m.legal_moves(&state, role, &mut legal)?;
            let mv = match legal.as_slice() {
                [only] => *only,
                [] => return Err(MachineError::NoLegalMove { role: m.roles().get(role).cloned() }),
                _ => {
                    s.run_until(Instant::now() + per_move, &interrupt)?;
                    s.best(role).map_or(legal[0], |(mv, _, _)| mv)
                }
            };
            joint.push(mv);
        }
        state = m.next_state(&state, &joint)?;
        *plies += 1;
        for s in &mut searches {
            s.set_root(state.clone())?;
        }
    }
    Ok(None)
}

/// The two sides of a duel and its terms.
struct Pairing<'a> {
    base: &'a Config,
    challenger: &'a Config,
    per_move: Duration,
    stop: &'a Deadline,
}

/// Plays game `game` of a duel into `d`: with two or more roles the
/// challenger takes seat `game % roles`; with one, each side plays the
/// puzzle alone. False when it was cut short.
fn duel_game<M: Simulator>(
    m: &mut M,
    root: &M::State,
    p: &Pairing<'_>,
    game: u32,
    d: &mut Duel,
) -> Result<bool, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let Pairing { base, challenger, per_move, stop } = *p;
    let roles = m.roles().len();
    let seed = u64::from(game) + 1;
    let lead = if roles == 1 {
        let Some(c) = play_game(m, root, &[challenger], seed, per_move, stop, &mut d.plies)? else { return Ok(false) };
        let Some(b) = play_game(m, root, &[base], seed, per_move, stop, &mut d.plies)? else { return Ok(false) };
        f64::from(c[0]) - f64::from(b[0])
    } else {
        let seat = game as usize % roles;
        let sides: Vec<&Config> = (0..roles).map(|r| if r == seat { challenger } else { base }).collect();
        let Some(goals) = play_game(m, root, &sides, seed, per_move, stop, &mut d.plies)? else { return Ok(false) };
        let others = goals.iter().enumerate().filter(|&(r, _)| r != seat).map(|(_, &g)| f64::from(g));
        f64::from(goals[seat]) - others.sum::<f64>() / (roles - 1) as f64
    };
    d.add(lead);
    Ok(true)
}

/// Plays games of `challenger` against `base` from `root` on copies of
/// `m`, `per_move` of search for a side each time a role it plays has
/// more than one move: the games numbered `games` (the number chooses the
/// challenger's seat and the seeds), until they are played or `stop`
/// comes. Searches run on one thread each, with their shares of
/// [`DUEL_POOL`] nodes, and keep their trees from move to move as the
/// player's do.
pub fn duel<M: Simulator>(
    m: &M,
    root: &M::State,
    base: &Config,
    challenger: &Config,
    per_move: Duration,
    games: std::ops::Range<u32>,
    stop: &Deadline,
) -> Result<Duel, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    play_duel(m, root, &Pairing { base, challenger, per_move, stop }, games, false)
}

/// [`duel`] until `stop`, or until the games settle the question
/// ([`Duel::settled`]): what the player's validation plays.
pub fn duel_until_settled<M: Simulator>(
    m: &M,
    root: &M::State,
    base: &Config,
    challenger: &Config,
    per_move: Duration,
    stop: &Deadline,
) -> Result<Duel, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    play_duel(m, root, &Pairing { base, challenger, per_move, stop }, 0..u32::MAX, true)
}

/// The games of a duel, stopping early once settled where `settle`.
fn play_duel<M: Simulator>(
    m: &M,
    root: &M::State,
    p: &Pairing<'_>,
    games: std::ops::Range<u32>,
    settle: bool,
) -> Result<Duel, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let mut m = m.clone();
    let mut d = Duel::default();
    for game in games {
        if settle && d.settled() {
            break;
        }
        if !duel_game(&mut m, root, p, game, &mut d)? {
            d.cut_short = true;
            break;
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(scores: &[f64]) -> Duel {
        let mut d = Duel::default();
        for &s in scores {
            d.add(200.0 * (s - 0.5));
        }
        d
    }

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

    /// A gain is a mean more than a standard error above even: 4 of 4
    /// and 7 of 8 are, 5 of 8 and 6 of 10 are not; a duel settles at two
    /// standard errors either way.
    #[test]
    fn gains_and_settled_duels() {
        let wins = |w: usize, n: usize| of(&(0..n).map(|i| if i < w { 1.0 } else { 0.0 }).collect::<Vec<_>>());
        assert!(wins(4, 4).gain());
        assert!(!wins(3, 3).gain(), "too few games");
        assert!(wins(7, 8).gain());
        assert!(!wins(5, 8).gain());
        assert!(!wins(6, 10).gain());
        assert!(wins(8, 10).gain());
        assert!(wins(6, 6).settled() && wins(0, 6).settled());
        assert!(!wins(4, 6).settled());
        assert!(!wins(5, 5).settled(), "fewer than 6 games");
        let d = of(&[1.0, 0.5, 0.0, 0.75]);
        assert_eq!(d.record(), "2-1-1");
        assert!((d.mean().unwrap() - 0.5625).abs() < 1e-12);
    }
}
