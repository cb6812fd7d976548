//! Heuristic state evaluation learnt by the meta-game analysis: per role, a
//! linear model over counts of base-proposition groups (`count (cell _ _
//! white)`), fitted to the outcomes of random games. The search uses it to
//! initialise new nodes (a few virtual visits at the predicted value), so it
//! must be cheap: one bit test per proposition of at most 16 groups.

/// One term: how many of `bases` hold, times `weight`.
#[derive(Clone, Debug)]
pub struct Term {
    pub name: String,
    pub bases: Vec<u32>,
    /// Goal points (0..100) per proposition that holds.
    pub weight: f64,
    /// Pearson correlation of the count with the role's goal in the samples.
    pub correlation: f64,
}

/// A role's predicted goal: `intercept + Σ weight · count`, clamped.
#[derive(Clone, Debug)]
pub struct Model {
    pub intercept: f64,
    pub terms: Vec<Term>,
    /// Share of the outcome variance explained on held-out games.
    pub r2: f64,
}

impl Model {
    /// The predicted goal (0..100) in the state with these base bits.
    pub fn predict(&self, bits: &[u64]) -> f64 {
        let mut v = self.intercept;
        for t in &self.terms {
            let n =
                t.bases.iter().filter(|&&i| bits.get(i as usize / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)).count();
            v += t.weight * n as f64;
        }
        v.clamp(0.0, 100.0)
    }
}

/// Models per role (`None` where no candidate predicted the outcome), and
/// how much a prediction is worth in the search.
#[derive(Clone, Debug)]
pub struct Evaluator {
    pub models: Vec<Option<Model>>,
    /// Virtual visits a new node gets at its predicted value: the number of
    /// random rollouts the prediction is worth (see [`prior_visits`]).
    pub prior_visits: u32,
}

impl Evaluator {
    /// Each role's predicted value (0..1) into `out`; NaN for roles
    /// without a model.
    pub fn evaluate(&self, bits: &[u64], out: &mut [f64]) {
        for (o, m) in out.iter_mut().zip(&self.models) {
            *o = m.as_ref().map_or(f64::NAN, |m| m.predict(bits) / 100.0);
        }
    }
}

/// Material in a two-player capture game: each role's pieces (base
/// propositions, each with a value), found by the analysis where a role's
/// pieces are only ever lost and the pieces left at the end go with
/// winning. Read relative to a reference state (the search's root), as
/// Sancho's piece heuristic does: what matters is what a line of play
/// gains or loses, not the balance the game already has.
#[derive(Clone, Debug)]
pub struct Material {
    /// Per role (two): its pieces' bases and their values.
    pub pieces: Vec<Vec<(u32, f64)>>,
    /// Per role: the groups the pieces came from, e.g. `(cell _ _ white)`.
    pub names: Vec<Vec<String>>,
    /// Virtual visits a new node gets at its material value.
    pub weight: u32,
}

impl Material {
    /// Per role, the bases of the other roles' pieces (what its moves can
    /// capture).
    pub fn foes(&self) -> Vec<Vec<u32>> {
        (0..self.pieces.len())
            .map(|r| {
                let others = self.pieces.iter().enumerate().filter(|&(o, _)| o != r);
                others.flat_map(|(_, ps)| ps.iter().map(|&(b, _)| b)).collect()
            })
            .collect()
    }

    /// Role `role`'s material in the state with these base bits.
    pub fn of(&self, role: usize, bits: &[u64]) -> f64 {
        let Some(pieces) = self.pieces.get(role) else { return 0.0 };
        pieces
            .iter()
            .filter(|&&(b, _)| bits.get(b as usize / 64).is_some_and(|w| w >> (b % 64) & 1 == 1))
            .map(|&(_, v)| v)
            .sum()
    }

    /// Role 0's value (0..1) of `bits` seen from `reference`: a logistic
    /// of how far the share of the material (role 0's minus role 1's, over
    /// both) moved since `reference`, scaled by the material on the board
    /// (a piece means more when few are left); 0.5 when it did not move.
    /// Role 1's value is one minus it.
    pub fn relative(&self, bits: &[u64], reference: &[u64]) -> f64 {
        let then = self.share(reference);
        Material::value(self.of(0, bits), self.of(1, bits), then)
    }

    /// Role 0's share of the material in `bits` (role 0's minus role 1's,
    /// over both): what [`Material::relative`] compares.
    pub fn share(&self, bits: &[u64]) -> f64 {
        let (x, y) = (self.of(0, bits) + 1e-6, self.of(1, bits) + 1e-6);
        (x - y) / (x + y)
    }

    /// [`Material::relative`] from the two roles' material `x` and `y` and
    /// the reference's share `then`.
    pub fn value(x: f64, y: f64, then: f64) -> f64 {
        // A small constant keeps an empty board finite.
        let (x, y) = (x + 1e-6, y + 1e-6);
        Material::value_of_share((x - y) / (x + y), x + y, then)
    }

    /// [`Material::value`] from role 0's share `now` of the material and
    /// the material `total` on the board.
    pub fn value_of_share(now: f64, total: f64, then: f64) -> f64 {
        1.0 / (1.0 + (-(total / 4.0) * (now - then)).exp())
    }
}

/// How many random rollouts a prediction is worth. A rollout from state s
/// is a sample of the random-play value m(s) with variance σ²(s); the
/// prediction h(s) misses m(s) by a bias b(s). Averaging k rollouts leaves
/// an error of σ²/k, so the prediction is worth k = E\[σ²\] / E\[b²\] of them.
/// Two rollouts per state give E\[σ²\] (half the mean squared difference of
/// the pair) and, with it, E\[b²\] = E\[(h - y)²\] - E\[σ²\].
pub fn prior_visits(pairs: &[(f64, f64, f64)]) -> f64 {
    if pairs.len() < 20 {
        return 0.0;
    }
    let n = pairs.len() as f64;
    let noise = pairs.iter().map(|&(_, a, b)| (a - b).powi(2) / 2.0).sum::<f64>() / n;
    let mse = pairs.iter().map(|&(h, a, b)| ((h - a).powi(2) + (h - b).powi(2)) / 2.0).sum::<f64>() / n;
    // A bias below a tenth of the noise is not told apart from none in a
    // few hundred pairs: cap the worth there.
    let bias = (mse - noise).max(noise / 10.0);
    if bias <= 0.0 {
        return 0.0;
    }
    noise / bias
}

/// Ridge regression of `ys` on the columns `cols` of `xs` (rows are
/// samples), on the rows where `train` says so. Returns (intercept,
/// weights), or `None` when the system is degenerate.
pub fn fit(xs: &[Vec<f64>], ys: &[f64], cols: &[usize], train: &dyn Fn(usize) -> bool) -> Option<(f64, Vec<f64>)> {
    let d = cols.len();
    let rows: Vec<usize> = (0..xs.len()).filter(|&i| train(i)).collect();
    if rows.len() < 2 * d + 10 {
        return None;
    }
    let n = rows.len() as f64;
    let mean = |f: &dyn Fn(usize) -> f64| rows.iter().map(|&i| f(i)).sum::<f64>() / n;
    let mx: Vec<f64> = cols.iter().map(|&c| mean(&|i| xs[i][c])).collect();
    let my = mean(&|i| ys[i]);
    // Centred normal equations (X'X + λ·diag) w = X'y.
    let mut a = vec![vec![0.0; d + 1]; d];
    for &i in &rows {
        let x: Vec<f64> = cols.iter().zip(&mx).map(|(&c, m)| xs[i][c] - m).collect();
        for p in 0..d {
            for q in 0..d {
                a[p][q] += x[p] * x[q];
            }
            a[p][d] += x[p] * (ys[i] - my);
        }
    }
    for (p, row) in a.iter_mut().enumerate() {
        // A small ridge keeps collinear counts (a group and its complement) solvable.
        row[p] += 1e-3 * row[p].max(1e-9) + 1e-6;
    }
    let w = solve(a)?;
    let intercept = my - w.iter().zip(&mx).map(|(w, m)| w * m).sum::<f64>();
    Some((intercept, w))
}

/// Gaussian elimination with partial pivoting on an augmented matrix.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let d = a.len();
    for col in 0..d {
        let piv = (col..d).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[piv][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, piv);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            if r != col && f != 0.0 {
                for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= f * p;
                }
            }
        }
    }
    let w: Vec<f64> = (0..d).map(|i| a[i][d] / a[i][i]).collect();
    w.iter().all(|x| x.is_finite()).then_some(w)
}

/// Share of the variance of `ys` that `pred` explains on the rows `test`
/// selects (1 - SSE/SST); `None` with too few rows or no variance.
pub fn r_squared(ys: &[f64], pred: &dyn Fn(usize) -> f64, test: &dyn Fn(usize) -> bool) -> Option<f64> {
    let rows: Vec<usize> = (0..ys.len()).filter(|&i| test(i)).collect();
    if rows.len() < 20 {
        return None;
    }
    let my = rows.iter().map(|&i| ys[i]).sum::<f64>() / rows.len() as f64;
    let sst: f64 = rows.iter().map(|&i| (ys[i] - my).powi(2)).sum();
    let sse: f64 = rows.iter().map(|&i| (ys[i] - pred(i).clamp(0.0, 100.0)).powi(2)).sum();
    (sst > 1e-9).then(|| 1.0 - sse / sst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_linear_law() {
        // y = 10 + 3·x0 - 2·x1, x2 is noise-free but irrelevant.
        let xs: Vec<Vec<f64>> =
            (0..200).map(|i| vec![(i % 7) as f64, (i % 5) as f64, ((i * 13) % 11) as f64]).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 10.0 + 3.0 * x[0] - 2.0 * x[1]).collect();
        let (b, w) = fit(&xs, &ys, &[0, 1, 2], &|_| true).unwrap();
        assert!((b - 10.0).abs() < 0.05, "{b}");
        assert!((w[0] - 3.0).abs() < 0.01 && (w[1] + 2.0).abs() < 0.01 && w[2].abs() < 0.01, "{w:?}");
        let r2 = r_squared(&ys, &|i| b + w[0] * xs[i][0] + w[1] * xs[i][1] + w[2] * xs[i][2], &|i| i % 2 == 0);
        assert!(r2.unwrap() > 0.999);
    }

    #[test]
    fn constant_column_gets_no_weight_and_tiny_samples_are_refused() {
        let xs: Vec<Vec<f64>> = (0..100).map(|_| vec![1.0]).collect();
        let ys: Vec<f64> = (0..100).map(|i| i as f64).collect();
        // A constant column has no variance; the ridge keeps it solvable at weight 0.
        let (b, w) = fit(&xs, &ys, &[0], &|_| true).unwrap();
        assert!(w[0].abs() < 1e-3 && (b - 49.5).abs() < 1e-6);
        assert!(fit(&xs[..5], &ys[..5], &[0], &|_| true).is_none());
    }

    #[test]
    fn prior_visits_weigh_bias_against_noise() {
        // Rollouts of ±10 around a value the prediction hits: worth many (capped at 10).
        let exact: Vec<(f64, f64, f64)> = (0..100).map(|i| (50.0, 40.0 + (i % 2) as f64 * 20.0, 60.0)).collect();
        assert!(prior_visits(&exact) >= 5.0);
        // A prediction 30 off on noise-free rollouts: worth nothing.
        let off: Vec<(f64, f64, f64)> = (0..100).map(|_| (80.0, 50.0, 50.0)).collect();
        assert!(prior_visits(&off) < 0.01);
        assert_eq!(prior_visits(&exact[..5]), 0.0);
    }

    #[test]
    fn model_counts_bits() {
        let m = Model {
            intercept: 50.0,
            terms: vec![Term { name: "t".into(), bases: vec![0, 3, 64], weight: 10.0, correlation: 0.5 }],
            r2: 0.1,
        };
        assert_eq!(m.predict(&[0b1001, 1]), 80.0);
        assert_eq!(m.predict(&[0, 0]), 50.0);
        let e = Evaluator { models: vec![Some(m), None], prior_visits: 3 };
        let mut out = [0.0; 2];
        e.evaluate(&[1, 0], &mut out);
        assert_eq!(out[0], 0.6);
        assert!(out[1].is_nan());
    }
}
