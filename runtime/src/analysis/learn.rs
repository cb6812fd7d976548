//! Learning heuristics from random games: candidate groups of base
//! propositions, their correlations with the outcome, and each role's
//! linear model judged on held-out games (see [`crate::heuristic`]).

use crate::heuristic::{fit, prior_visits, r_squared, Model, Term};
use propel_compiler::propnet::Propnet;
use rustc_hash::FxHashMap;

/// Candidates whose correlation is weaker than this are not tried.
const MIN_CORRELATION: f64 = 0.1;
/// At most this many terms per role's model.
const MAX_TERMS: usize = 16;
/// A model explaining less of the held-out outcomes is dropped.
const MIN_R2: f64 = 0.02;
/// At most this many base-proposition groups are tried.
const MAX_GROUPS: usize = 400;

/// Groups of base propositions that look like piece counts: the bases of
/// one relation sharing the values of one or two arguments, e.g.
/// `(cell _ _ white)` (white pieces) or `(cell 7 _ white)` (white pieces
/// on row 7).
pub(super) fn base_groups(net: &Propnet) -> Vec<(String, Vec<usize>)> {
    type Key = (String, Vec<(usize, String)>);
    let mut groups: FxHashMap<Key, Vec<usize>> = FxHashMap::default();
    let mut per_rel: FxHashMap<String, (usize, usize)> = FxHashMap::default();
    for (i, b) in net.bases.iter().enumerate() {
        // Nested terms make positions ambiguous; flat facts are the common case.
        if b.name.len() < 2 || b.name[1..].contains('(') {
            continue;
        }
        let toks: Vec<&str> = b.name.trim_start_matches('(').trim_end_matches(')').split_whitespace().collect();
        let Some((rel, args)) = toks.split_first() else { continue };
        let e = per_rel.entry(rel.to_string()).or_insert((0, args.len()));
        e.0 += 1;
        for p in 0..args.len() {
            groups.entry((rel.to_string(), vec![(p, args[p].to_string())])).or_default().push(i);
            for q in p + 1..args.len() {
                let key = vec![(p, args[p].to_string()), (q, args[q].to_string())];
                groups.entry((rel.to_string(), key)).or_default().push(i);
            }
        }
    }
    let mut out: Vec<(String, Vec<usize>)> = groups
        .into_iter()
        .filter(|((rel, _), v)| v.len() >= 2 && v.len() < per_rel[rel].0)
        .map(|((rel, fixed), v)| {
            let arity = per_rel[&rel].1;
            let pat: Vec<&str> =
                (0..arity).map(|q| fixed.iter().find(|f| f.0 == q).map_or("_", |f| f.1.as_str())).collect();
            (format!("count ({rel} {})", pat.join(" ")), v)
        })
        .collect();
    out.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    out.truncate(MAX_GROUPS);
    out
}

pub(super) fn pearson(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len() as f64;
    if xs.len() < 30 {
        return None;
    }
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs.iter().zip(ys) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx).powi(2);
        syy += (y - my).powi(2);
    }
    if sxx < 1e-12 || syy < 1e-12 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Each role's model over the candidate groups (`features[i][g]`: group
/// g's count in sample i; `outcomes[r][i]`: role r's goal), fitted on the
/// samples `test` leaves out and judged on the others: (refitted on every
/// game, as fitted on the training games only). A role without a model
/// that explains enough gets `None` in both.
pub(super) fn fit_models(
    groups: &[(String, Vec<usize>)],
    features: &[Vec<f64>],
    outcomes: &[Vec<f64>],
    test_game: &dyn Fn(usize) -> bool,
    roles: &[String],
) -> (Vec<Option<Model>>, Vec<Option<Model>>) {
    let nr = roles.len();
    let mut models: Vec<Option<Model>> = vec![None; nr];
    // The models fitted on three games in four measure what a prediction
    // is worth below (on states of the fourth).
    let mut train_models: Vec<Option<Model>> = vec![None; nr];
    let train_rows: Vec<usize> = (0..features.len()).filter(|&i| !test_game(i)).collect();
    for r in 0..nr {
        let ys = &outcomes[r];
        // Candidates are picked on the training games too, or their chance
        // correlations with the held-out outcomes would inflate R².
        let ys_train: Vec<f64> = train_rows.iter().map(|&i| ys[i]).collect();
        let mut cands: Vec<(usize, f64)> = (0..groups.len())
            .filter_map(|g| {
                let xs: Vec<f64> = train_rows.iter().map(|&i| features[i][g]).collect();
                pearson(&xs, &ys_train).filter(|c| c.abs() >= MIN_CORRELATION).map(|c| (g, c))
            })
            .collect();
        cands.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
        cands.truncate(MAX_TERMS);
        let cols: Vec<usize> = cands.iter().map(|c| c.0).collect();
        if cols.is_empty() {
            continue;
        }
        let model = |b: f64, w: Vec<f64>, r2: f64| Model {
            intercept: b,
            terms: cands
                .iter()
                .zip(w)
                .map(|(&(g, c), w)| Term {
                    name: groups[g].0.clone(),
                    bases: groups[g].1.iter().map(|&i| i as u32).collect(),
                    weight: w,
                    correlation: c,
                })
                .collect(),
            r2,
        };
        let Some((b, w)) = fit(features, ys, &cols, &|i| !test_game(i)) else { continue };
        let pred = |i: usize| b + cols.iter().zip(&w).map(|(&c, w)| w * features[i][c]).sum::<f64>();
        let r2 = r_squared(ys, &pred, &test_game);
        tracing::debug!("heuristic model for {}: {} terms, held-out R² {r2:?}", roles[r], cols.len());
        let Some(r2) = r2.filter(|&r2| r2 >= MIN_R2) else { continue };
        train_models[r] = Some(model(b, w, r2));
        // Judged; now fitted on every game.
        let Some((b, w)) = fit(features, ys, &cols, &|_| true) else { continue };
        models[r] = Some(model(b, w, r2));
    }
    (models, train_models)
}

/// What each role's model is worth in rollouts (from the calibration
/// pairs measured with its training-games model).
pub(super) fn worth(pairs: &[Vec<(f64, f64, f64)>], models: &[Option<Model>]) -> Vec<f64> {
    // Worth is measured against random play, whose values differ
    // little between states in many games; the search's values differ
    // more, and of that the model says only the share it explains (in
    // matches the full worth, up to 10 visits on a 10% model, lost
    // pawnWhopping 1-6). So the worth is scaled by that share.
    pairs.iter().zip(models).filter_map(|(p, m)| m.as_ref().map(|m| prior_visits(p) * m.r2)).collect()
}
