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
/// role's goal (Sancho's bar), and at least two standard errors of a
/// correlation over the games sampled (2/sqrt(n): 0.17 over 143 games of
/// chess, where 0.06 either way is noise).
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

/// Counts of the piece groups over random games, and who changes them.
pub(super) struct Sampler {
    groups: Vec<(String, Vec<usize>)>,
    /// Per game: the counts at its end and each role's goal.
    ends: Vec<(Vec<f64>, Vec<f64>)>,
    /// Counts in the states of games (for growth), game by game.
    states: Vec<Vec<u16>>,
    /// Where each game's states start in `states`.
    starts: Vec<usize>,
    last: Vec<f64>,
    /// The previous state of the current game (its bits and the role
    /// alone to choose there), to see what the move from it changed.
    prev: Option<(Vec<u64>, Option<usize>)>,
    /// Per role: the moves it chose alone.
    moves_by: [usize; 2],
    /// Per role and group: its moves that turned a base of the group on
    /// (it put or moved such a piece).
    placed: [Vec<usize>; 2],
    /// Per role and group: its moves after which the group had fewer
    /// pieces (it took one).
    took: [Vec<usize>; 2],
}

/// A role owns a group when its moves put its pieces in at least this
/// share of them ...
const MIN_OWN_MOVES: f64 = 0.05;
/// ... and the other role's moves do in at most this share of theirs.
const MAX_OTHER_MOVES: f64 = 0.01;

fn on(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

impl Sampler {
    pub(super) fn new(net: &Propnet, roles: usize) -> Sampler {
        let groups = if roles == 2 { piece_groups(net) } else { Vec::new() };
        let n = groups.len();
        Sampler {
            groups,
            ends: Vec::new(),
            states: Vec::new(),
            starts: Vec::new(),
            last: Vec::new(),
            prev: None,
            moves_by: [0; 2],
            placed: [vec![0; n], vec![0; n]],
            took: [vec![0; n], vec![0; n]],
        }
    }

    pub(super) fn candidates(&self) -> usize {
        self.groups.len()
    }

    fn counts(&self, bits: &[u64]) -> Vec<u16> {
        self.groups.iter().map(|(_, g)| g.iter().filter(|&&i| on(bits, i)).count() as u16).collect()
    }

    pub(super) fn start_game(&mut self) {
        self.prev = None;
        if !self.groups.is_empty() && self.states.len() < MAX_STATES {
            self.starts.push(self.states.len());
        }
    }

    /// A state of the current game (every state, terminal included), with
    /// the role that alone chooses the move from it (`None`: none or
    /// several).
    pub(super) fn state(&mut self, bits: &[u64], mover: Option<usize>) {
        if self.groups.is_empty() {
            return;
        }
        let c = self.counts(bits);
        if let Some((prev, Some(r))) = &self.prev {
            let r = (*r).min(1);
            self.moves_by[r] += 1;
            for (g, (_, bases)) in self.groups.iter().enumerate() {
                if bases.iter().any(|&i| on(bits, i) && !on(prev, i)) {
                    self.placed[r][g] += 1;
                }
                if (c[g] as f64) < self.last.get(g).copied().unwrap_or(0.0) {
                    self.took[r][g] += 1;
                }
            }
        }
        self.prev = Some((bits.to_vec(), mover));
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

    /// The role whose moves alone put pieces of group `g`, if one does.
    fn owner(&self, g: usize) -> Option<usize> {
        let share = |r: usize| self.placed[r][g] as f64 / self.moves_by[r].max(1) as f64;
        (0..2).find(|&r| share(r) >= MIN_OWN_MOVES && share(1 - r) <= MAX_OTHER_MOVES)
    }

    /// The material model, or why there is none.
    ///
    /// A role's material is the groups of pieces it owns (its moves, and
    /// not the other role's, put them on the board) whose count at the
    /// end of random games goes with its goal or against the other's;
    /// owned groups that go the other way (a game where pieces are a
    /// burden: fewer is better) are not material, whatever their
    /// correlation's size. Then, as Sancho checks, material must be what a
    /// role's own decisions change: each role's moves take the other's
    /// pieces now and then. And it must behave like material: lost over a
    /// game, (promotions aside) never gained.
    pub(super) fn finish(self) -> (Option<Material>, String) {
        if self.groups.is_empty() {
            return (None, "no piece groups (two roles, a board relation of three or more arguments)".into());
        }
        let n = self.ends.len();
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
        let owners: Vec<Option<usize>> = (0..self.groups.len()).map(|g| self.owner(g)).collect();
        for (g, (name, bases)) in self.groups.iter().enumerate() {
            tracing::debug!(
                "piece group {name} ({} bases): owner {:?}, correlation {:+.3} and {:+.3}",
                bases.len(),
                owners[g],
                corr[0][g],
                corr[1][g]
            );
        }
        let list = |set: &[usize]| set.iter().map(|&g| self.groups[g].0.clone()).collect::<Vec<_>>().join(" + ");
        // For its owner: good to have (with its goal, or against the
        // other's), a burden (the reverse), or neither.
        let bar = MIN_CORRELATION.max(2.0 / (n.max(1) as f64).sqrt());
        let good = |g: usize, r: usize| corr[r][g] >= bar || corr[1 - r][g] <= -bar;
        let burden = |g: usize, r: usize| corr[r][g] <= -bar || corr[1 - r][g] >= bar;
        let owned: Vec<Vec<usize>> =
            (0..2).map(|r| (0..self.groups.len()).filter(|&g| owners[g] == Some(r)).collect()).collect();
        if owned.iter().any(Vec::is_empty) {
            return (
                None,
                format!(
                    "no pieces that one role's moves alone put on the board, for each role ({} groups, {n} games)",
                    self.groups.len()
                ),
            );
        }
        let burdens: Vec<usize> =
            (0..2).flat_map(|r| owned[r].iter().copied().filter(move |&g| burden(g, r))).collect();
        let sets: Vec<Vec<usize>> =
            (0..2).map(|r| owned[r].iter().copied().filter(|&g| good(g, r) && !burden(g, r)).collect()).collect();
        if !burdens.is_empty() {
            return (
                None,
                format!(
                    "{} go with losing for the role that owns them: more pieces are not better here ({n} games)",
                    list(&burdens)
                ),
            );
        }
        if sets.iter().any(Vec::is_empty) {
            return (
                None,
                format!(
                    "a role's own pieces ({} against {}) do not go with its goal at the end of random games (|r| under {bar:.3}, {n} games)",
                    list(&owned[0]),
                    list(&owned[1])
                ),
            );
        }
        // Sancho's second check: a role's decisions change the balance (its
        // moves take the other's pieces), else the material says nothing
        // about which move it should choose.
        for r in 0..2 {
            let took: usize = sets[1 - r].iter().map(|&g| self.took[r][g]).max().unwrap_or(0);
            let share = took as f64 / self.moves_by[r].max(1) as f64;
            if share < MIN_LOSS {
                return (
                    None,
                    format!(
                        "role {r}'s moves take the other's pieces ({}) in {:.2}% of them (under {:.1}%): no decision of its changes the material",
                        list(&sets[1 - r]),
                        100.0 * share,
                        100.0 * MIN_LOSS
                    ),
                );
            }
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
