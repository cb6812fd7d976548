//! Standings of a set of match records (what `propel match` prints and
//! writes, what `propel report` shows first, and the table of the Python
//! package's tournaments: one implementation for all three): per player the mean goal
//! with a 95% interval, wins, draws and losses, the score with a 95%
//! Wilson interval, a Bradley-Terry rating on the Elo scale with a 95%
//! interval, and how many of its moves the manager had to substitute.
//!
//! Ratings: every match is split into its pairs of seats (a win, a draw
//! counted half to each, or a loss by goal); Bradley-Terry strengths are
//! fitted by Newton's method on the log-likelihood, with one virtual draw
//! of each player against a fixed opponent (a prior that keeps the
//! ratings finite when a player wins every match). Ratings are relative:
//! they are shifted so that the players' mean is 0, and each interval is
//! that of the rating relative to the mean (the inverse of the
//! information matrix projected on ratings that sum to zero). Elo = 400
//! log10(strength): a difference of 200 means an expected score of 76%.

use serde_json::{json, Value};

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Elo points per unit of natural log-strength.
const ELO: f64 = 400.0 / std::f64::consts::LN_10;

/// One player's line.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub player: String,
    pub matches: usize,
    goals: Vec<f64>,
    pub wins: usize,
    pub draws: usize,
    pub losses: usize,
    /// Errors of any kind: substituted moves and failed starts.
    pub errors: usize,
    /// Turns this player was to move (one move per turn per role).
    pub moves: usize,
    /// Of those, moves the manager substituted (timeouts, illegal or
    /// malformed answers).
    pub substituted: usize,
    pub start_errors: usize,
    /// Rating on the Elo scale and the half-width of its 95% interval.
    pub elo: Option<(f64, f64)>,
}

impl Row {
    /// Mean goal and the half-width of its 95% interval (normal).
    pub fn mean_goal(&self) -> (f64, f64) {
        mean_ci(&self.goals)
    }

    /// Score (a win 1, a draw 1/2, a loss 0) with its 95% Wilson interval,
    /// or `None` in one-player games.
    pub fn score(&self) -> Option<(f64, f64, f64)> {
        let n = (self.wins + self.draws + self.losses) as f64;
        if n == 0.0 {
            return None;
        }
        let p = (self.wins as f64 + 0.5 * self.draws as f64) / n;
        let (lo, hi) = wilson(p, n);
        Some((p, lo, hi))
    }

    /// Whether every move of this player was a substitute (it never
    /// answered a `play` in time with a legal move).
    pub fn never_answered(&self) -> bool {
        self.moves > 0 && self.substituted == self.moves
    }
}

/// The standings of some matches.
#[derive(Clone, Debug, Default)]
pub struct Standings {
    pub rows: Vec<Row>,
    pub matches: usize,
    /// Games played, by name, in order of first appearance.
    pub games: Vec<String>,
}

/// Mean and the half-width of a normal 95% confidence interval.
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, Z95 * (var / n).sqrt())
}

/// Wilson's 95% interval for a proportion `p` of `n` trials: unlike the
/// normal one it is not zero wide when every match went the same way.
fn wilson(p: f64, n: f64) -> (f64, f64) {
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect()).unwrap_or_default()
}

impl Standings {
    /// Standings of `records` (ggp.org-style match records as `propel
    /// match` writes them); players listed in `order` first, then in order
    /// of appearance.
    pub fn of_records(records: &[Value], order: &[String]) -> Standings {
        let mut st = Standings::default();
        for p in order {
            st.row(p);
        }
        // Pairwise results: wins[a][b] (draws count half), games[a][b].
        let mut pairs: Vec<(usize, usize, f64)> = Vec::new();
        for r in records {
            let players = strs(&r["playerNamesFromHost"]);
            let goals: Vec<f64> =
                r["goalValues"].as_array().map(|g| g.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
            if players.is_empty() || goals.len() != players.len() {
                continue;
            }
            st.matches += 1;
            let game = r["gameName"].as_str().unwrap_or("?").to_string();
            if !st.games.contains(&game) {
                st.games.push(game);
            }
            let ids: Vec<usize> = players.iter().map(|p| st.row(p)).collect();
            let turns = r["moves"].as_array().map_or(0, Vec::len);
            let errors = r["errors"].as_array().cloned().unwrap_or_default();
            let start_errors = strs(&r["startErrors"]);
            for (i, &p) in ids.iter().enumerate() {
                let g = goals[i];
                let best_other = goals.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &x)| x).reduce(f64::max);
                let row = &mut st.rows[p];
                row.matches += 1;
                row.goals.push(g);
                match best_other {
                    Some(o) if g > o => row.wins += 1,
                    Some(o) if g == o => row.draws += 1,
                    Some(_) => row.losses += 1,
                    None => {}
                }
                let subs = errors
                    .iter()
                    .filter(|turn| turn.get(i).and_then(Value::as_str).is_some_and(|e| !e.is_empty()))
                    .count();
                let failed_start = start_errors.get(i).is_some_and(|e| !e.is_empty()) as usize;
                row.moves += turns;
                row.substituted += subs;
                row.start_errors += failed_start;
                row.errors += subs + failed_start;
            }
            for i in 0..ids.len() {
                for j in i + 1..ids.len() {
                    if ids[i] == ids[j] {
                        continue;
                    }
                    let s = match goals[i].partial_cmp(&goals[j]) {
                        Some(std::cmp::Ordering::Greater) => 1.0,
                        Some(std::cmp::Ordering::Less) => 0.0,
                        _ => 0.5,
                    };
                    pairs.push((ids[i], ids[j], s));
                }
            }
        }
        if !pairs.is_empty() {
            let ratings = bradley_terry(st.rows.len(), &pairs);
            for (row, r) in st.rows.iter_mut().zip(ratings) {
                // Players in no pair have only the prior: no rating.
                row.elo = r;
            }
        }
        st
    }

    fn row(&mut self, player: &str) -> usize {
        match self.rows.iter().position(|r| r.player == player) {
            Some(i) => i,
            None => {
                self.rows.push(Row { player: player.to_string(), ..Row::default() });
                self.rows.len() - 1
            }
        }
    }

    /// The table as text, one line per player, and a warning line for
    /// each player whose moves were substituted.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{:<28} {:>7} {:>16} {:>5} {:>5} {:>6} {:>16} {:>13} {:>6}\n",
            "player", "matches", "mean goal (95%)", "wins", "draws", "losses", "score (95%)", "Elo (95%)", "errors"
        );
        for r in &self.rows {
            let (mean, half) = r.mean_goal();
            s.push_str(&format!(
                "{:<28} {:>7} {:>9.1} ± {:<4.1} {:>5} {:>5} {:>6} {:>16} {:>13} {:>6}\n",
                r.player,
                r.matches,
                mean,
                half,
                r.wins,
                r.draws,
                r.losses,
                score_text(r),
                elo_text(r),
                r.errors
            ));
        }
        for w in self.warnings() {
            s.push_str(&format!("warning: {w}\n"));
        }
        s
    }

    /// Plain statements about players whose results are not their own play.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.rows {
            if r.never_answered() {
                out.push(format!(
                    "{} never answered with a legal move in time: all {} of its moves were the manager's random \
                     substitutes, so its results ({} wins, {} draws, {} losses) say nothing of its play",
                    r.player, r.moves, r.wins, r.draws, r.losses
                ));
            } else if r.substituted > 0 {
                out.push(format!(
                    "{}: {} of its {} moves were substituted by the manager (timeouts, illegal or malformed answers)",
                    r.player, r.substituted, r.moves
                ));
            }
            if r.start_errors > 0 {
                out.push(format!("{}: {} of its {} starts failed", r.player, r.start_errors, r.matches));
            }
        }
        out
    }

    pub fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let (mean, half) = r.mean_goal();
                let score = r.score();
                json!({
                    "player": r.player,
                    "matches": r.matches,
                    "meanGoal": mean,
                    "meanGoalHalfWidth95": half,
                    "wins": r.wins,
                    "draws": r.draws,
                    "losses": r.losses,
                    "score": score.map(|s| s.0),
                    "scoreLow95": score.map(|s| s.1),
                    "scoreHigh95": score.map(|s| s.2),
                    "elo": r.elo.map(|e| e.0),
                    "eloHalfWidth95": r.elo.map(|e| e.1),
                    "errors": r.errors,
                    "moves": r.moves,
                    "substitutedMoves": r.substituted,
                    "startErrors": r.start_errors,
                    "neverAnswered": r.never_answered(),
                })
            })
            .collect();
        json!({"matches": self.matches, "games": self.games, "players": rows, "warnings": self.warnings()})
    }
}

/// `62% [48, 75]`, or `-` in one-player games.
pub fn score_text(r: &Row) -> String {
    match r.score() {
        Some((p, lo, hi)) => format!("{:.0}% [{:.0}, {:.0}]", 100.0 * p, 100.0 * lo, 100.0 * hi),
        None => "-".into(),
    }
}

/// `+123 ± 85`, or `-` without pairwise results.
pub fn elo_text(r: &Row) -> String {
    match r.elo {
        Some((e, h)) => format!("{e:+.0} ± {h:.0}"),
        None => "-".into(),
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Bradley-Terry ratings (Elo scale, half-width of the 95% interval) of
/// `n` players from pairwise results `(a, b, score of a)`, with one
/// virtual draw of each player against a fixed opponent at 0; `None` for
/// players in no pair.
fn bradley_terry(n: usize, pairs: &[(usize, usize, f64)]) -> Vec<Option<(f64, f64)>> {
    let mut played = vec![false; n];
    for &(a, b, _) in pairs {
        played[a] = true;
        played[b] = true;
    }
    let mut theta = vec![0.0; n];
    let mut hess = vec![vec![0.0; n]; n];
    for _ in 0..100 {
        // Gradient and negative Hessian of the log-likelihood.
        let mut grad = vec![0.0; n];
        for row in hess.iter_mut() {
            row.iter_mut().for_each(|x| *x = 0.0);
        }
        for (a, t) in theta.iter().enumerate() {
            let p = sigmoid(*t);
            grad[a] += 0.5 - p;
            hess[a][a] += p * (1.0 - p);
        }
        for &(a, b, s) in pairs {
            let p = sigmoid(theta[a] - theta[b]);
            grad[a] += s - p;
            grad[b] -= s - p;
            let w = p * (1.0 - p);
            hess[a][a] += w;
            hess[b][b] += w;
            hess[a][b] -= w;
            hess[b][a] -= w;
        }
        let Some(step) = solve(&hess, &grad) else { break };
        // The log-likelihood is concave: Newton converges; a cap on the
        // step keeps the first iterations from overshooting.
        let longest = step.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let scale = if longest > 2.0 { 2.0 / longest } else { 1.0 };
        for (t, d) in theta.iter_mut().zip(&step) {
            *t += scale * d;
        }
        if longest < 1e-10 {
            break;
        }
    }
    // Relative to the mean of the players who played: shift the ratings,
    // and project the covariance on that subspace (P C P, P = I - 11'/k).
    let idx: Vec<usize> = (0..n).filter(|&a| played[a]).collect();
    let k = idx.len() as f64;
    let mean = idx.iter().map(|&a| theta[a]).sum::<f64>() / k;
    let cov = invert(&hess);
    let var = |a: usize| -> f64 {
        let Some(c) = &cov else { return f64::NAN };
        let row: f64 = idx.iter().map(|&j| c[a][j]).sum::<f64>() / k;
        let all: f64 = idx.iter().map(|&i| idx.iter().map(|&j| c[i][j]).sum::<f64>()).sum::<f64>() / (k * k);
        c[a][a] - 2.0 * row + all
    };
    (0..n).map(|a| played[a].then(|| (ELO * (theta[a] - mean), ELO * Z95 * var(a).max(0.0).sqrt()))).collect()
}

/// Solves `m x = v` by Gaussian elimination with partial pivoting; `None`
/// when `m` is singular.
fn solve(m: &[Vec<f64>], v: &[f64]) -> Option<Vec<f64>> {
    let n = v.len();
    let mut a: Vec<Vec<f64>> = m.iter().zip(v).map(|(row, &x)| row.iter().copied().chain([x]).collect()).collect();
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-300 {
            return None;
        }
        a.swap(c, p);
        let pivot = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            let f = row[c] / pivot[c];
            if r != c && f != 0.0 {
                for (x, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..n).map(|i| a[i][n] / a[i][i]).collect())
}

fn invert(m: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = m.len();
    let cols: Vec<Vec<f64>> = (0..n)
        .map(|j| solve(m, &(0..n).map(|i| if i == j { 1.0 } else { 0.0 }).collect::<Vec<_>>()))
        .collect::<Option<_>>()?;
    Some((0..n).map(|i| (0..n).map(|j| cols[j][i]).collect()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(players: &[&str], goals: &[u8], errors: &[&[&str]]) -> Value {
        json!({
            "matchId": "m", "gameName": "Test", "playerNamesFromHost": players, "goalValues": goals,
            "moves": errors.iter().map(|_| vec!["x"; players.len()]).collect::<Vec<_>>(),
            "errors": errors, "startErrors": vec![""; players.len()],
        })
    }

    #[test]
    fn scores_ratings_and_intervals() {
        // a beats b 15 times of 20 (5 draws... no: 5 losses).
        let mut recs = Vec::new();
        for i in 0..20 {
            let g: &[u8] = if i < 15 { &[100, 0] } else { &[0, 100] };
            recs.push(record(&["a", "b"], g, &[&["", ""]]));
        }
        let st = Standings::of_records(&recs, &[]);
        let (a, b) = (&st.rows[0], &st.rows[1]);
        assert_eq!((a.wins, a.losses, b.wins), (15, 5, 5));
        let (p, lo, hi) = a.score().unwrap();
        assert!((p - 0.75).abs() < 1e-12 && lo < 0.75 && hi > 0.75 && lo > 0.5, "{lo} {hi}");
        let (ea, ha) = a.elo.unwrap();
        let (eb, _) = b.elo.unwrap();
        // 3:1 odds are 191 Elo; the prior pulls both towards 0. The
        // difference's standard error is 1/sqrt(20 * 3/16) = 0.52 in
        // log-strength (90 Elo); each rating is half the difference.
        assert!(ea > 0.0 && eb < 0.0 && (ea - eb) > 120.0 && (ea - eb) < 191.0, "{ea} {eb}");
        assert!(ha > 60.0 && ha < 100.0, "{ha}");
        assert!((ea + eb).abs() < 1e-6, "symmetric");
    }

    #[test]
    fn a_clean_sweep_has_a_finite_rating_and_a_wide_interval() {
        let recs: Vec<Value> = (0..20).map(|_| record(&["r1", "r2"], &[100, 0], &[&["", ""]])).collect();
        let st = Standings::of_records(&recs, &[]);
        let (e, h) = st.rows[0].elo.unwrap();
        assert!(e.is_finite() && e > 200.0 && h.is_finite() && h > 50.0, "{e} {h}");
        let (_, lo, hi) = st.rows[0].score().unwrap();
        assert!(lo < 0.9 && hi == 1.0, "Wilson: not 100% ± 0 ({lo}, {hi})");
    }

    #[test]
    fn a_player_that_never_answers_is_named() {
        let recs: Vec<Value> = (0..3).map(|_| record(&["dead", "random"], &[100, 0], &[&["timeout", ""]])).collect();
        let st = Standings::of_records(&recs, &["dead".into(), "random".into()]);
        assert!(st.rows[0].never_answered());
        assert!(!st.rows[1].never_answered());
        let w = st.warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("dead never answered"), "{w:?}");
        assert!(st.text().contains("warning: dead never answered"));
    }

    #[test]
    fn puzzles_have_no_scores_or_ratings() {
        let recs = vec![record(&["solo"], &[100], &[&[""]])];
        let st = Standings::of_records(&recs, &[]);
        assert!(st.rows[0].score().is_none() && st.rows[0].elo.is_none());
        assert_eq!(st.rows[0].mean_goal().0, 100.0);
    }
}
