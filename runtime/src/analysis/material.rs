//! Material: in two-player games where pieces are captured and never
//! made, the pieces a role has left go with winning, even where random
//! play says little else (breakthrough, knightThrough, checkers). Found
//! as Sancho's piece heuristic finds it: groups of base propositions that
//! share the value of one argument of few values (a colour or a piece
//! type, e.g. `(cellHolds _ _ white)`), kept for a role when their count
//! at the end of random games goes with its goal; then, unlike a fit to
//! random outcomes, checked to be material: each role's pieces are lost
//! over a game and (but for promotions) never gained.

use super::learn::pearson;
use crate::heuristic::Material;
use propel_compiler::propnet::Propnet;
use rustc_hash::FxHashMap;

/// A piece group has at least this many bases (board squares).
const MIN_PIECES: usize = 6;
/// The argument that names the piece takes at most this many values.
const MAX_VALUES: usize = 16;
/// The count left at the end correlates at least this well with the
/// role's goal (Sancho's bar).
const MIN_CORRELATION: f64 = 0.06;
/// A role's material may grow in at most this share of moves.
const MAX_GROWTH: f64 = 0.01;
/// ... and must shrink in at least this share (captures happen).
const MIN_LOSS: f64 = 0.005;
/// States whose counts are kept to check growth.
const MAX_STATES: usize = 100_000;
/// Virtual visits at a node's material value: Sancho's weight for an
/// even game (2 to 6 there, fewer the more one side is ahead).
const WEIGHT: u32 = 5;

/// Piece groups: the bases of one flat relation of three or more
/// arguments, grouped by the value of its argument with the fewest values
/// (2..=MAX_VALUES), with at least MIN_PIECES bases each.
pub(super) fn piece_groups(net: &Propnet) -> Vec<(String, Vec<usize>)> {
    // Per relation: its facts' arguments and base indices.
    let mut rels: FxHashMap<&str, Vec<(Vec<&str>, usize)>> = FxHashMap::default();
    for (i, b) in net.bases.iter().enumerate() {
        if b.name.len() < 2 || b.name[1..].contains('(') {
            continue;
        }
        let toks: Vec<&str> = b.name.trim_start_matches('(').trim_end_matches(')').split_whitespace().collect();
        let Some((rel, args)) = toks.split_first() else { continue };
        if args.len() >= 3 {
            rels.entry(rel).or_default().push((args.to_vec(), i));
        }
    }
    let mut out = Vec::new();
    let mut names: Vec<&&str> = rels.keys().collect();
    names.sort();
    for rel in names {
        let facts = &rels[*rel];
        let arity = facts[0].0.len();
        if facts.iter().any(|f| f.0.len() != arity) {
            continue;
        }
        let values = |p: usize| {
            let mut v: Vec<&str> = facts.iter().map(|f| f.0[p]).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        // The narrowest argument, but two arguments of one width of 4 or
        // more are a board's coordinates, whatever the pieces' width (as
        // Sancho decides; skirmish: 8 by 8 squares, 12 kinds of piece);
        // the last of equals, as pieces usually come after coordinates.
        let widths: Vec<usize> = (0..arity).map(|p| values(p).len()).collect();
        let board = |p: usize| widths[p] >= 4 && widths.iter().filter(|&&w| w == widths[p]).count() >= 2;
        let Some(p) = (0..arity).rev().filter(|&p| !board(p)).min_by_key(|&p| widths[p]) else { continue };
        let vals = values(p);
        if !(2..=MAX_VALUES).contains(&vals.len()) {
            continue;
        }
        for v in vals {
            let bases: Vec<usize> = facts.iter().filter(|f| f.0[p] == v).map(|f| f.1).collect();
            if bases.len() >= MIN_PIECES {
                let pat: Vec<&str> = (0..arity).map(|q| if q == p { v } else { "_" }).collect();
                out.push((format!("({rel} {})", pat.join(" ")), bases));
            }
        }
    }
    out
}

/// Counts of the piece groups over random games.
pub(super) struct Sampler {
    groups: Vec<(String, Vec<usize>)>,
    /// Per game: the counts at its end and each role's goal.
    ends: Vec<(Vec<f64>, Vec<f64>)>,
    /// Counts in the states of games (for growth), game by game.
    states: Vec<Vec<u16>>,
    /// Where each game's states start in `states`.
    starts: Vec<usize>,
    last: Vec<f64>,
}

impl Sampler {
    pub(super) fn new(net: &Propnet, roles: usize) -> Sampler {
        let groups = if roles == 2 { piece_groups(net) } else { Vec::new() };
        Sampler { groups, ends: Vec::new(), states: Vec::new(), starts: Vec::new(), last: Vec::new() }
    }

    pub(super) fn candidates(&self) -> usize {
        self.groups.len()
    }

    fn counts(&self, bits: &[u64]) -> Vec<u16> {
        let on = |i: &usize| bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1);
        self.groups.iter().map(|(_, g)| g.iter().filter(|i| on(i)).count() as u16).collect()
    }

    pub(super) fn start_game(&mut self) {
        if !self.groups.is_empty() && self.states.len() < MAX_STATES {
            self.starts.push(self.states.len());
        }
    }

    /// A state of the current game (every state, terminal included).
    pub(super) fn state(&mut self, bits: &[u64]) {
        if self.groups.is_empty() {
            return;
        }
        let c = self.counts(bits);
        self.last = c.iter().map(|&x| x as f64).collect();
        if self.states.len() < MAX_STATES && !self.starts.is_empty() {
            self.states.push(c);
        }
    }

    /// The current game ended (after its terminal state) with these goals.
    pub(super) fn end_game(&mut self, goals: &[f64]) {
        if !self.groups.is_empty() {
            self.ends.push((std::mem::take(&mut self.last), goals.to_vec()));
        }
    }

    /// The material model, or why there is none.
    pub(super) fn finish(self) -> (Option<Material>, String) {
        if self.groups.is_empty() {
            return (None, "no piece groups (two roles, a board relation of three or more arguments)".into());
        }
        let n = self.ends.len();
        // A role's pieces: the groups whose count at the end goes with its
        // goal, or against the other role's (where goals count captures,
        // as in skirmish, the second is what shows).
        let corr: Vec<Vec<f64>> = (0..2)
            .map(|r| {
                let goals: Vec<f64> = self.ends.iter().map(|e| e.1[r]).collect();
                (0..self.groups.len())
                    .map(|g| {
                        let counts: Vec<f64> = self.ends.iter().map(|e| e.0[g]).collect();
                        pearson(&counts, &goals).unwrap_or(0.0)
                    })
                    .collect()
            })
            .collect();
        for (g, (name, bases)) in self.groups.iter().enumerate() {
            tracing::debug!(
                "piece group {name} ({} bases): correlation {:+.3} and {:+.3}",
                bases.len(),
                corr[0][g],
                corr[1][g]
            );
        }
        let sets: Vec<Vec<usize>> = (0..2)
            .map(|r| {
                (0..self.groups.len())
                    .filter(|&g| corr[r][g] >= MIN_CORRELATION || corr[1 - r][g] <= -MIN_CORRELATION)
                    .collect()
            })
            .collect();
        let list = |set: &[usize]| set.iter().map(|&g| self.groups[g].0.clone()).collect::<Vec<_>>().join(" + ");
        if sets.iter().any(Vec::is_empty) || sets[0].iter().any(|g| sets[1].contains(g)) {
            return (
                None,
                format!(
                    "no piece groups whose count at the end goes with one role's goal alone and against the other's ({} groups, {n} games)",
                    self.groups.len()
                ),
            );
        }
        // Material is lost, not made: each role's total shrinks in some
        // moves and (promotions aside, which keep it) grows in almost none.
        for set in &sets {
            let (mut moves, mut grew, mut shrank) = (0usize, 0usize, 0usize);
            for (k, &from) in self.starts.iter().enumerate() {
                let to = self.starts.get(k + 1).copied().unwrap_or(self.states.len());
                let total = |i: usize| set.iter().map(|&g| self.states[i][g] as u32).sum::<u32>();
                for i in from + 1..to {
                    moves += 1;
                    grew += (total(i) > total(i - 1)) as usize;
                    shrank += (total(i) < total(i - 1)) as usize;
                }
            }
            let share = |x: usize| x as f64 / moves.max(1) as f64;
            if moves == 0 || share(grew) > MAX_GROWTH || share(shrank) < MIN_LOSS {
                return (
                    None,
                    format!(
                        "{} goes with winning but is not material: it grows in {:.1}% of moves and shrinks in {:.1}%",
                        list(set),
                        100.0 * share(grew),
                        100.0 * share(shrank)
                    ),
                );
            }
        }
        let reason = format!("{} against {} ({n} games)", list(&sets[0]), list(&sets[1]));
        let material = Material {
            pieces: sets
                .iter()
                .map(|set| set.iter().flat_map(|&g| self.groups[g].1.iter().map(|&b| (b as u32, 1.0))).collect())
                .collect(),
            names: sets.iter().map(|set| set.iter().map(|&g| self.groups[g].0.clone()).collect()).collect(),
            weight: WEIGHT,
        };
        (Some(material), reason)
    }
}
