//! Validation: whether the search settings the analysis derived from a
//! game play better on that game than plain settings. The analysis's own
//! checks come first (a signal must predict outcomes in random games and
//! be something a role's decisions change, docs/analysis.md); what passes
//! them is then played against the plain settings in a duel of short
//! games, and kept only where the duel measures a gain.

use super::duel::{duel_until_settled, Duel, MIN_GAMES};
use super::Config;
use crate::machine::MachineError;
use crate::simulate::Simulator;
use propel_compiler::Deadline;
use std::time::{Duration, Instant};

/// Games a validation plans for when it chooses its time per move.
const PLANNED_GAMES: f64 = 12.0;
/// The time per move of a validation's duel stays within these bounds.
const MIN_MOVE: Duration = Duration::from_millis(5);
const MAX_MOVE: Duration = Duration::from_millis(100);

/// What the player found out before a match about the analysis's
/// settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Validation {
    /// The features the analysed settings use that plain ones do not,
    /// e.g. `material`, `capture-first lanes (187 moves)`.
    pub features: Vec<String>,
    /// The duel of the analysed settings (challenger) against the plain
    /// ones, where there was one.
    pub duel: Option<Duel>,
    /// Its search time per move (seconds).
    pub per_move: f64,
    /// Whether the analysed settings are used.
    pub adopted: bool,
    /// Why, in words.
    pub reason: String,
}

impl Validation {
    /// One line for logs: `material, capture-first lanes: 9-0-1 in 10
    /// games at 0.04 s a move (mean 0.90 ± 0.10): adopted`.
    pub fn describe(&self) -> String {
        let features = if self.features.is_empty() { "no features".to_string() } else { self.features.join(", ") };
        format!("{features}: {}", self.reason)
    }

    /// The record for the match's statistics.
    pub fn json(&self) -> serde_json::Value {
        let duel = self.duel.as_ref().map(|d| {
            serde_json::json!({
                "games": d.games, "wins": d.wins, "draws": d.draws, "losses": d.losses,
                "mean": d.mean(), "std_error": d.std_error(), "plies": d.plies,
            })
        });
        serde_json::json!({
            "features": self.features, "duel": duel, "per_move": self.per_move,
            "adopted": self.adopted, "reason": self.reason,
        })
    }
}

/// How long a game runs, to size a duel's time per move: the analysis's
/// mean random game in joint moves, and whether roles move at once.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    pub avg_length: f64,
    pub simultaneous: bool,
}

/// The analysis's features that `c` uses and `plain` does not.
pub fn features(c: &Config, plain: &Config) -> Vec<String> {
    let mut f = Vec::new();
    if (c.exploration - plain.exploration).abs() > 0.005 {
        f.push(format!("exploration {:.2}", c.exploration));
    }
    if c.material.is_some() {
        f.push("material".to_string());
    }
    if c.capture > 0.0 {
        let n = c.capture_table.as_ref().map_or(String::new(), |t| format!(" ({} moves)", t.len()));
        f.push(format!("capture-first lanes{n}"));
    }
    // On lanes, win-first or decisive lanes stand in for greedy rollouts.
    if c.greedy && !plain.greedy && !c.lanes {
        f.push("greedy rollouts".to_string());
    }
    if let Some(w) = &c.win_first {
        f.push(format!("win-first lanes ({} moves)", w.len()));
    }
    if c.decisive && !plain.decisive {
        f.push("decisive lanes".to_string());
    }
    if c.safe_first && !plain.safe_first {
        f.push("safe-first lanes".to_string());
    }
    if c.expand_terminal && !plain.expand_terminal {
        f.push("terminal children".to_string());
    }
    if let Some(h) = &c.heuristic {
        f.push(format!("learnt heuristics ({} visits)", h.prior_visits));
    }
    if c.drop_lost && !plain.drop_lost {
        f.push("proven losses dropped".to_string());
    }
    if c.factors.len() > 1 {
        f.push(format!("{} factors", c.factors.len()));
    }
    f
}

/// Duels `analysed` (the challenger) against `plain` on `m` from `root`
/// until `until` (or `stop`), or until the games settle it, and says
/// whether the analysed settings are used: where no feature differs,
/// trivially; where there is no time for [`MIN_GAMES`] games at the
/// shortest move time, or fewer finished, on the analysis's checks alone;
/// else only on a measured gain ([`Duel::gain`]). The game's `pace`
/// sizes the time per move: about a dozen games in the time
/// given.
pub fn validate<M: Simulator>(
    m: &M,
    root: &M::State,
    analysed: &Config,
    plain: &Config,
    pace: Pace,
    until: Instant,
    stop: &Deadline,
) -> Result<Validation, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let features = features(analysed, plain);
    if features.is_empty() {
        return Ok(Validation {
            features,
            adopted: true,
            reason: "nothing to validate".into(),
            ..Validation::default()
        });
    }
    let roles = m.roles().len().max(1) as f64;
    // Searches per game: one per move where roles take turns, one per
    // role where they move at once; a puzzle is played twice.
    let searches =
        pace.avg_length.max(1.0) * if pace.simultaneous { roles } else { 1.0 } * if roles == 1.0 { 2.0 } else { 1.0 };
    let time = until.saturating_duration_since(Instant::now());
    let per_move = time.div_f64(PLANNED_GAMES * searches).clamp(MIN_MOVE, MAX_MOVE);
    if time < MIN_MOVE.mul_f64(f64::from(MIN_GAMES) * searches) {
        return Ok(Validation {
            features,
            adopted: true,
            reason: format!("no time for a duel ({:.1} s): the analysis's checks alone decide", time.as_secs_f64()),
            ..Validation::default()
        });
    }
    let stop = stop.min(until);
    let d = duel_until_settled(m, root, plain, analysed, per_move, &stop)?;
    let at = format!(
        "{} in {} games at {:.3} s a move (mean {:.2} ± {:.2})",
        d.record(),
        d.games,
        per_move.as_secs_f64(),
        d.mean().unwrap_or(0.0),
        d.std_error().unwrap_or(0.0)
    );
    let (adopted, reason) = if d.games < MIN_GAMES {
        (true, format!("{at}: too few games to decide, the analysis's checks alone decide"))
    } else if d.gain() {
        (true, format!("{at}: a gain, adopted"))
    } else {
        (false, format!("{at}: no measured gain, plain settings"))
    };
    Ok(Validation { features, duel: Some(d), per_move: per_move.as_secs_f64(), adopted, reason })
}
