//! The search graph: a pool of nodes owned by the search thread alone (no
//! locks: the single-writer principle), one node per distinct state found
//! through a hash table (transpositions make it a DAG).
//!
//! Decisions are per role (decoupled UCT): at each node every role picks
//! its own move by UCB on its own value, so simultaneous moves and n-player
//! games with goal vectors need nothing special; in turn-based games the
//! roles not to move have one move (a noop).
//!
//! The pool has a fixed size. When it is full, the least recently visited
//! of a sample of nodes is recycled; its generation is bumped, so every
//! edge to it, and every pending rollout path through it, goes stale
//! instead of dangling. A recycled slot keeps its vectors' memory, so a
//! full pool allocates nothing more.

use crate::heuristic::{Evaluator, Material};
use crate::machine::MachineError;
use crate::rng::Rng;
use crate::simulate::Simulator;
use hashbrown::HashTable;
use smallvec::SmallVec;
use std::sync::Arc;

/// [`Node::proof`] of a node not solved from its children.
const NO_PROOF: u16 = u16::MAX;

/// A reference to a node that knows which life of the slot it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef {
    pub idx: u32,
    pub gen: u32,
}

/// The natural logarithm of `x` (positive, finite), to about 1e-7: from
/// its binary exponent and a polynomial in the mantissa; several times
/// cheaper than the library's, and UCB asks for one at every node it
/// passes.
fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
    // The mantissa in [1, 2), then m = sqrt(2)-centred: [0.707, 1.414).
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let mut e = exponent as f64;
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1.0;
    }
    // ln(m) = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.172.
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let series = 1.0 + t2 * (1.0 / 3.0 + t2 * (1.0 / 5.0 + t2 * (1.0 / 7.0 + t2 * (1.0 / 9.0))));
    e * std::f64::consts::LN_2 + 2.0 * t * series
}

/// Visit totals with a precomputed exploration term (128 KiB: the few
/// nodes above it are the ones every selection passes, near the root).
const EXPLORE_TABLE: usize = 16384;

/// Edge visit counts with a precomputed `1 / sqrt(visits)` (8 KiB).
const INV_SQRT_TABLE: usize = 1024;

/// No node (an index no pool reaches).
const NONE: NodeRef = NodeRef { idx: u32::MAX, gen: 0 };

/// With RAVE, an untried move's value before its AMAF samples count
/// (Sancho's "very high value for unplayed" moves).
const UNTRIED: f64 = 10.0;

/// With RAVE, how much less a move's exploration counts in the part of
/// its value that its AMAF samples give (Sancho's
/// `RAVE_EXPLORATION_REDUCTION_FACTOR`).
const RAVE_EXPLORATION_CUT: f64 = 7.0;

/// UCB's score of an untried move with `a` AMAF samples summing to
/// `sum` (RAVE): [`UNTRIED`] blended with the AMAF mean plus 0.5 by the
/// weight `a / (a + 1)` that RAVE gives `a` samples and no visits, as
/// Sancho does. Without samples it is [`UNTRIED`], above every tried
/// move; with a few, the moves the rollouts found good are tried first,
/// and with many bad ones a move waits behind the tried moves that do
/// well.
fn rave_untried(a: u32, sum: f32) -> f64 {
    if a == 0 {
        return UNTRIED;
    }
    let a = a as f64;
    let w = a / (a + 1.0);
    (1.0 - w) * UNTRIED + w * (sum as f64 / a + 0.5)
}

/// The change RAVE makes to a tried move's UCB score (mean plus
/// `explore`) for `n` visits with mean `mean` and `a` AMAF samples with
/// mean `amaf`, bias `b`: Sancho's blend `(1 - w) (mean + explore) + w
/// (amaf + explore / 7)` with `w = a / (a + n + b n a + 1)`.
fn rave_shift(n: f64, mean: f64, explore: f64, a: f64, amaf: f64, b: f64) -> f64 {
    let w = a / (a + n + b * n * a + 1.0);
    w * (amaf - mean) - w * explore * (1.0 - 1.0 / RAVE_EXPLORATION_CUT)
}

/// One role's move at a node, with its statistics.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Edge<Mv> {
    pub(crate) mv: Mv,
    pub(crate) visits: u32,
    /// Values backed up through the move (heuristic priors included):
    /// once no selection is in flight, equal to `visits`.
    pub(crate) backed: u32,
    /// Sum of the role's values (0..1) over the visits.
    pub(crate) sum: f64,
    /// Where the move leads, at a node where only this role chooses (the
    /// others' moves are forced); `NONE` until known, or elsewhere.
    child: NodeRef,
    /// The child is solved with a goal of 0 for this role: no move can do
    /// worse, so selection and the move played pass it by (MCTS-Solver's
    /// proven losses, Winands et al. 2008). Set by [`Graph::solve`].
    lost: bool,
    /// The child is solved, so a visit learns nothing new; with settled
    /// children passed by ([`Graph::set_settle`]) selection takes the
    /// node's open moves while it has any. Set by [`Graph::solve`].
    settled: bool,
    /// RAVE (all moves as first): iterations through the node in which
    /// the role played this move there or later, and the sum of the
    /// role's values over them ([`Graph::set_rave`]).
    amaf: u32,
    amaf_sum: f32,
}

impl<Mv> Edge<Mv> {
    fn new(mv: Mv) -> Self {
        Edge { mv, visits: 0, backed: 0, sum: 0.0, child: NONE, lost: false, settled: false, amaf: 0, amaf_sum: 0.0 }
    }
}

pub(crate) struct Node<S, Mv> {
    gen: u32,
    live: bool,
    state: Option<S>,
    hash: u64,
    terminal: bool,
    solved: bool,
    /// Goals (0..1) of a terminal or solved node.
    value: SmallVec<[f64; 4]>,
    /// A node solved from its children: the chooser's move to the child
    /// that decided it ([`NO_PROOF`] otherwise). Kept here because that
    /// child, a leaf never visited again, is the first a full pool
    /// recycles: without the move the root's best would fall back on the
    /// most visited move, which need not win (a proven pentago win was
    /// lost that way).
    proof: u16,
    /// Where not solved: the best value (0..1) the chooser has among the
    /// solved children, and the move to it ([`NO_PROOF`]: none).
    floor: (f64, u16),
    expanded: bool,
    /// Every role's moves, role after role: role `r`'s are
    /// `edges[ends[r - 1]..ends[r]]` (one allocation for them all).
    edges: Vec<Edge<Mv>>,
    ends: SmallVec<[u32; 4]>,
    /// The one role that chooses here (the others have one move each),
    /// whose edges hold the children; `None` where several choose.
    single: Option<u8>,
    /// Where several roles choose: the children by joint move (boxed:
    /// where one role chooses, its edges hold them).
    joint: Option<Box<Joint>>,
    visits: u32,
    /// Prior visits given to the chooser's edges (heuristic
    /// initialisation): where one role chooses, its edges' visits add up
    /// to `visits + prior`, which UCB needs at every node it passes.
    prior: u32,
    touched: u64,
    /// The node's visits when its value was last normalised
    /// ([`Graph::set_normalize`]).
    normalized_at: u32,
    /// Implicit minimax: role 0's share of the material here, backed up
    /// by minimax from the children in the graph (±3 for a known win or
    /// loss); NaN where not evaluated.
    share: f32,
    /// Role 0's share of the material here and the material on the board,
    /// for material backups ([`Graph::set_material_backup`]); NaN where not
    /// evaluated.
    mat: (f32, f32),
}

/// The children of a node where several roles choose.
#[derive(Default)]
struct Joint {
    /// Joint move key ([`Graph::joint_key`]) to child, sorted by key.
    children: Vec<(u64, NodeRef)>,
    /// Where the product of the roles' move counts overflows a `u64`
    /// (many roles choosing at once): the joint moves met so far, whose
    /// positions are their keys.
    wide: Option<Vec<SmallVec<[u16; 4]>>>,
}

impl<S, Mv> Node<S, Mv> {
    fn empty() -> Self {
        Node {
            gen: 0,
            live: false,
            state: None,
            hash: 0,
            terminal: false,
            solved: false,
            value: SmallVec::new(),
            proof: NO_PROOF,
            floor: (0.0, NO_PROOF),
            expanded: false,
            edges: Vec::new(),
            ends: SmallVec::new(),
            single: None,
            joint: None,
            visits: 0,
            prior: 0,
            touched: 0,
            normalized_at: 0,
            share: f32::NAN,
            mat: (f32::NAN, f32::NAN),
        }
    }

    /// Role `r`'s moves and their statistics.
    fn role(&self, r: usize) -> &[Edge<Mv>] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] as usize };
        &self.edges[start..self.ends[r] as usize]
    }

    /// [`Node::role`], to change.
    fn role_mut(&mut self, r: usize) -> &mut [Edge<Mv>] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] as usize };
        &mut self.edges[start..self.ends[r] as usize]
    }

    /// The number of legal moves of role `r`.
    fn moves(&self, r: usize) -> usize {
        let start = if r == 0 { 0 } else { self.ends[r - 1] } as usize;
        self.ends[r] as usize - start
    }

    /// The edge of role `r`'s `i`-th move.
    fn edge_mut(&mut self, r: usize, i: usize) -> Option<&mut Edge<Mv>> {
        let start = if r == 0 { 0 } else { *self.ends.get(r - 1)? } as usize;
        let end = *self.ends.get(r)? as usize;
        (start + i < end).then(|| &mut self.edges[start + i])
    }

    /// Calls `f` with the edge of each role's move in `moves` where the
    /// role has a choice (a forced move's statistics are only reported,
    /// so only [`Graph::backprop`] keeps them).
    fn each_choice(&mut self, moves: &[u16], mut f: impl FnMut(&mut Edge<Mv>)) {
        self.each_role_choice(moves, |_, e| f(e));
    }

    fn each_role_choice(&mut self, moves: &[u16], mut f: impl FnMut(usize, &mut Edge<Mv>)) {
        match self.single {
            Some(c) => {
                let c = c as usize;
                if self.moves(c) > 1 {
                    if let Some(e) = moves.get(c).and_then(|&mv| self.edge_mut(c, mv as usize)) {
                        f(c, e);
                    }
                }
            }
            None => {
                for (role, &mv) in moves.iter().enumerate() {
                    if self.moves(role) > 1 {
                        if let Some(e) = self.edge_mut(role, mv as usize) {
                            f(role, e);
                        }
                    }
                }
            }
        }
    }

    /// `f` on the edge of each role whose move here is forced (its one
    /// legal move): selection never looks at them, and their values are
    /// kept only so that such a role's value can be reported.
    fn each_forced(&mut self, mut f: impl FnMut(usize, &mut Edge<Mv>)) {
        for role in 0..self.ends.len() {
            if self.moves(role) == 1 {
                if let Some(e) = self.edge_mut(role, 0) {
                    f(role, e);
                }
            }
        }
    }

    /// The one role with a choice here; `None` where two or more choose.
    fn chooser(&self, roles: usize) -> Option<usize> {
        let mut choosers = (0..roles).filter(|&r| self.moves(r) > 1);
        let first = choosers.next();
        if choosers.next().is_some() {
            return None;
        }
        Some(first.unwrap_or(0))
    }

    /// Makes the node fresh for a new state, keeping its vectors' memory.
    fn reset(&mut self, state: S, hash: u64, touched: u64) {
        self.live = true;
        self.state = Some(state);
        self.hash = hash;
        self.terminal = false;
        self.solved = false;
        self.value.clear();
        self.proof = NO_PROOF;
        self.floor = (0.0, NO_PROOF);
        self.expanded = false;
        self.edges.clear();
        self.ends.clear();
        self.single = None;
        self.joint = None;
        self.visits = 0;
        self.prior = 0;
        self.touched = touched;
        self.normalized_at = 0;
        self.share = f32::NAN;
        self.mat = (f32::NAN, f32::NAN);
    }

    /// Records the roles' legal moves (an expanded node).
    fn set_moves(&mut self, moves: &[Vec<Mv>])
    where
        Mv: Copy,
    {
        self.edges.clear();
        self.ends.clear();
        self.edges.reserve_exact(moves.iter().map(Vec::len).sum());
        for role in moves {
            self.edges.extend(role.iter().map(|&mv| Edge::new(mv)));
            self.ends.push(self.edges.len() as u32);
        }
        self.single = self.chooser(moves.len()).map(|c| c as u8);
        let mut counts = (0..self.ends.len()).map(|r| self.moves(r) as u64);
        let fits = counts.try_fold(1u64, |p, k| p.checked_mul(k));
        self.joint = self
            .single
            .is_none()
            .then(|| Box::new(Joint { children: Vec::new(), wide: fits.is_none().then(Vec::new) }));
        self.expanded = true;
    }
}

/// A role's moves at the root and their statistics, move by move.
pub struct RootStats<Mv> {
    pub moves: Vec<Mv>,
    pub visits: Vec<u32>,
    /// Sums of the role's values (0..1) over the visits.
    pub sums: Vec<f64>,
    /// Proven losses (see `Edge::lost`).
    pub lost: Vec<bool>,
    /// RAVE's sample counts ([`Graph::set_rave`]; zeros when off).
    pub amaf: Vec<u32>,
}

/// Which of `n` moves to play: the most visited, passing proven losses by
/// unless every move is one.
pub(crate) fn move_to_play(n: usize, visits: impl Fn(usize) -> u32, lost: impl Fn(usize) -> bool) -> Option<usize> {
    let open = (0..n).filter(|&i| !lost(i)).max_by_key(|&i| visits(i));
    open.or_else(|| (0..n).max_by_key(|&i| visits(i)))
}

/// One step of a selection path: the node and each role's move there.
#[derive(Clone, Debug)]
pub struct Step {
    pub node: NodeRef,
    pub moves: SmallVec<[u16; 4]>,
}

/// Where a selection ended.
pub enum Leaf<S> {
    /// Value known (terminal or solved): back it up now, with
    /// [`Graph::backprop_known`].
    Known(SmallVec<[f64; 4]>),
    /// A node whose value a rollout from this state estimates.
    Rollout(S),
    /// ([`Graph::select_lazy`]) The path's last move leads to a child not
    /// in the graph yet: the caller rolls out from the child, which it
    /// computes from `parent` and the joint move (each role's move index,
    /// [`Simulator::move_index`]), and [`Graph::attach`]es it where
    /// `attach` is set or the child is terminal (see
    /// [`Graph::set_expand_after`]).
    Expand { parent: S, joint: SmallVec<[u32; 4]>, attach: bool },
}

/// What [`Graph::attach`] is told of a new child.
pub enum Outcome<'a> {
    /// The game ends there with these goals (0..1 per role).
    Terminal(&'a [f64]),
    /// Each role's legal moves there, by index.
    Legal(&'a [Vec<u32>]),
}

pub struct Graph<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    nodes: Vec<Node<M::State, M::Move>>,
    free: Vec<u32>,
    /// Every live node as (its state's hash, its index): 16 bytes an
    /// entry, several per hash where states collide.
    table: HashTable<(u64, u32)>,
    capacity: usize,
    pub(crate) root: NodeRef,
    iteration: u64,
    roles: usize,
    pub(crate) rng: Rng,
    exploration: f64,
    /// `exploration * sqrt(ln n)` for the visit totals `n` below
    /// [`EXPLORE_TABLE`] (every node below the first few levels): UCB
    /// needs it at every node it passes, and the logarithm and the root
    /// cost about a quarter of a small node's selection.
    explore: Box<[f64]>,
    /// `1 / sqrt(v)` for the edge visit counts `v` below
    /// [`INV_SQRT_TABLE`]: UCB's score `mean + c / sqrt(v)` is then
    /// `sum * r * r + c * r`, with no division or root per edge.
    inv_sqrt: Box<[f64]>,
    live: usize,
    scratch: Vec<M::Move>,
    /// Each role's moves of the child being attached (reused).
    legal: Vec<Vec<M::Move>>,
    heuristic: Option<Arc<Evaluator>>,
    /// Material relative to the root (two-player capture games): new
    /// nodes start with its value, before any `heuristic`.
    material: Option<Arc<Material>>,
    /// Implicit minimax backups (Lanctot et al. 2014) of the material
    /// share: UCB reads a child's value as this much of its minimax
    /// material value and the rest its mean (0: off).
    minimax: f64,
    /// The root's material share and scale (see [`Material::relative`]),
    /// read at every selection.
    root_share: (f64, f64),
    /// Per role, the best value (0..1) the game can give it: a node where
    /// a child gives the chooser that much is solved.
    goal_max: SmallVec<[f64; 4]>,
    /// On expansion, make the children that end the game (where one role
    /// chooses), so that a win one move away is seen at once.
    expand_terminal: bool,
    /// Moves (by [`Simulator::move_index`], ascending) that won at once
    /// where they were seen (the analysis's `winning`): on expansion, the
    /// children of these moves alone are made when they end the game, so
    /// that wins one move away are known at the cost of a next state per
    /// such move legal (see [`Graph::set_winning`]).
    winning: Option<Arc<[u32]>>,
    /// A child joins the graph once the move to it has this many visits
    /// (the selection included); before, a selection that takes the move
    /// rolls out from the child without keeping it. See
    /// [`Graph::set_expand_after`].
    expand_after: u32,
    /// RAVE's bias `b` (0: off): see [`Graph::set_rave`].
    rave: f64,
    /// Periodic value normalisation ([`Graph::set_normalize`]).
    normalize: bool,
    /// Material seeds relative to the parent ([`Graph::set_local_material`]).
    local_material: bool,
    /// Rollout values moved by the material won in the path's exchanges
    /// ([`Graph::set_material_backup`]).
    material_backup: bool,
    /// Proven losses not backed up ([`Graph::set_drop_lost`]).
    drop_lost: bool,
    /// Solved children passed by while a move is open, values lifted to
    /// what the chooser has secured ([`Graph::set_settle`]).
    settle: bool,
    /// Every terminal state met so far has goals that add up to the
    /// maximum (two roles): one role's value is the other's complement.
    fixed_sum: bool,
    /// Normalisations made (read by the tests).
    normalized: u64,
    /// Moves played below the node being backed up (reused).
    amaf_seen: Vec<u64>,
}

impl<M: Simulator> Graph<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub fn new(m: &mut M, root: M::State, capacity: usize, exploration: f64, seed: u64) -> Result<Self, MachineError> {
        let mut g = Graph {
            nodes: Vec::new(),
            free: Vec::new(),
            table: HashTable::new(),
            capacity: capacity.max(16),
            root: NodeRef { idx: 0, gen: 0 },
            iteration: 0,
            roles: m.roles().len(),
            rng: Rng::new(seed),
            exploration,
            explore: (0..EXPLORE_TABLE).map(|n| exploration * ln(n.max(1) as f64).sqrt()).collect(),
            inv_sqrt: (0..INV_SQRT_TABLE).map(|v| 1.0 / (v.max(1) as f64).sqrt()).collect(),
            live: 0,
            scratch: Vec::new(),
            legal: Vec::new(),
            heuristic: None,
            material: None,
            minimax: 0.0,
            root_share: (0.0, 1.0),
            goal_max: SmallVec::from_elem(1.0, m.roles().len()),
            expand_terminal: false,
            winning: None,
            expand_after: 1,
            rave: 0.0,
            normalize: false,
            local_material: false,
            material_backup: false,
            drop_lost: false,
            settle: false,
            fixed_sum: true,
            normalized: 0,
            amaf_seen: Vec::new(),
        };
        g.root = g.node_for(m, root)?;
        Ok(g)
    }

    /// New nodes start with the evaluator's prediction (see [`Evaluator`]).
    pub fn set_heuristic(&mut self, h: Option<Arc<Evaluator>>) {
        self.heuristic = h.filter(|h| h.prior_visits > 0);
    }

    /// With material, seed only the moves that change it, relative to the
    /// node they leave and that node's mean (Sancho's reference node),
    /// instead of every new node relative to the root.
    pub fn set_local_material(&mut self, on: bool) {
        self.local_material = on;
    }

    /// With material, Sancho's heuristic-adjusted backups: a rollout's
    /// value, on its way up, is moved towards the side that came out of an
    /// exchange ahead, at the node that ends the exchange (the first whose
    /// move leaves the material as it is, after moves that changed it), by
    /// [`Material::relative`] of that node against the node before the
    /// exchange; that node and every node above it get the moved value.
    /// Unlike a seed, which a node's own rollouts outweigh, this stays in
    /// every value backed up through the exchange. Values of terminal or
    /// solved leaves are backed up as they are.
    pub fn set_material_backup(&mut self, on: bool) {
        self.material_backup = on;
    }

    /// Sancho's choke on anti-decisive propagation: a move found to lose
    /// (it leads to a terminal or solved node worth 0 to the role choosing
    /// it) at a node that the loss does not solve is marked lost and its
    /// value is not backed up: the selection's visits are taken back. The
    /// chooser will never play it, so its loss says nothing of the node's
    /// value; backed up, the losses found one by one among the moves that
    /// fail to answer a threat (all but one in breakthrough, when a pawn
    /// reaches the seventh rank) drag down the node and make the threat
    /// look strong to every node above.
    pub fn set_drop_lost(&mut self, on: bool) {
        self.drop_lost = on;
    }

    /// Score-bounded selection, its lower bound only (after Cazenave and
    /// Saffidine's score-bounded MCTS): at a node where one role chooses
    /// and that is not solved, a move whose child is solved (a draw, or
    /// any value short of the best) is no longer selected while the node
    /// has an open move: a visit there backs up a value already known and
    /// learns nothing, and a search can spend most of its iterations so
    /// (late connect four positions, RESULTS.md). The
    /// chooser can have the best solved child's value whatever the open
    /// moves are worth, so in a two-role game whose goals add up to the
    /// maximum, a value backed up through the node is lifted to at least
    /// that; and at the root the move played is that child where the
    /// most visited move's mean is lower.
    pub fn set_settle(&mut self, on: bool) {
        self.settle = on;
    }

    fn material_backup_on(&self) -> bool {
        self.material_backup && self.material.is_some() && self.roles == 2
    }

    /// New nodes start with their material relative to the root's (see
    /// [`Material`]), where the game has two roles.
    pub fn set_material(&mut self, material: Option<Arc<Material>>) {
        self.material = material.filter(|mat| mat.weight > 0 && self.roles == 2);
    }

    /// Implicit minimax backups of the material with weight `alpha`
    /// (0..1; 0 or no material: off).
    pub fn set_minimax(&mut self, alpha: f64) {
        self.minimax = if alpha.is_finite() { alpha.clamp(0.0, 1.0) } else { 0.0 };
    }

    /// Whether implicit minimax backups are on.
    fn minimax_on(&self) -> bool {
        self.minimax > 0.0 && self.material.is_some()
    }

    /// Role 0's material share in `n` (see [`Node::share`]): ±3 (or 0,
    /// a draw) where its value is known.
    fn share_of(&self, m: &M, n: &Node<M::State, M::Move>) -> f32 {
        if n.terminal || n.solved {
            return n.value.first().map_or(f32::NAN, |&v| (3.0 * (2.0 * v - 1.0)) as f32);
        }
        match (&self.material, n.state.as_ref().and_then(|s| m.base_bits(s))) {
            (Some(mat), Some(bits)) => {
                let (x, y) = (mat.of(0, bits) + 1e-6, mat.of(1, bits) + 1e-6);
                ((x - y) / (x + y)) as f32
            }
            _ => f32::NAN,
        }
    }

    /// Gives a new node its material share, when minimax backups or
    /// material backups are on.
    fn evaluate_share(&mut self, m: &M, r: NodeRef) {
        if self.minimax_on() {
            if let Some(n) = self.get(r) {
                let share = self.share_of(m, n);
                self.nodes[r.idx as usize].share = share;
            }
        }
        self.evaluate_mat(m, r);
    }

    /// Gives node `r` its material, when material backups are on.
    fn evaluate_mat(&mut self, m: &M, r: NodeRef) {
        if self.material_backup_on() {
            let bits = self.get(r).and_then(|n| n.state.as_ref()).and_then(|s| m.base_bits(s));
            if let (Some(mat), Some(bits)) = (&self.material, bits) {
                let (x, y) = (mat.of(0, bits) + 1e-6, mat.of(1, bits) + 1e-6);
                self.nodes[r.idx as usize].mat = (((x - y) / (x + y)) as f32, (x + y) as f32);
            }
        }
    }

    /// The root's material share and the scale of a change in it (a
    /// quarter of the material on the board, as [`Material::relative`]).
    fn root_material(&self, m: &M) -> (f64, f64) {
        let bits = self.get(self.root).and_then(|n| n.state.as_ref()).and_then(|s| m.base_bits(s));
        match (&self.material, bits) {
            (Some(mat), Some(bits)) => {
                let (x, y) = (mat.of(0, bits) + 1e-6, mat.of(1, bits) + 1e-6);
                ((x - y) / (x + y), (x + y) / 4.0)
            }
            _ => (0.0, 1.0),
        }
    }

    /// `role`'s value (0..1) of a minimax share, against the root's.
    fn share_value(&self, share: f32, role: usize) -> f64 {
        let v0 = if share.abs() >= 2.5 {
            (share > 0.0) as u8 as f64
        } else {
            let (root, scale) = self.root_share;
            1.0 / (1.0 + (-scale * (share as f64 - root)).exp())
        };
        if role == 0 {
            v0
        } else {
            1.0 - v0
        }
    }

    /// Backs the minimax share up into `r` from its children in the graph:
    /// the best for the one role that chooses there.
    fn back_up_share(&mut self, r: NodeRef) {
        let Some(n) = self.get(r) else { return };
        let Some(c) = n.single.map(usize::from) else { return };
        if n.solved || n.moves(c) < 2 {
            return;
        }
        let mut best = f32::NAN;
        for e in n.role(c) {
            let Some(child) = self.get(e.child) else { continue };
            let v = child.share;
            if v.is_nan() {
                continue;
            }
            if best.is_nan() || (c == 0 && v > best) || (c == 1 && v < best) {
                best = v;
            }
        }
        if !best.is_nan() {
            self.nodes[r.idx as usize].share = best;
        }
    }

    /// Each role's greatest reachable goal (0..1), from the analysis's goal bounds.
    pub fn set_goal_max(&mut self, max: &[f64]) {
        if max.len() == self.roles {
            self.goal_max = max.iter().map(|&x| x.clamp(0.0, 1.0)).collect();
        }
    }

    pub fn set_expand_terminal(&mut self, on: bool) {
        self.expand_terminal = on;
    }

    /// Moves that are known to win at once where they were seen (the
    /// analysis's `winning`, by [`Simulator::move_index`]): when a node is
    /// expanded, the children of such moves legal there are computed and,
    /// if they end the game, joined at once, so that a node with a win one
    /// move away is solved when it is made, not after its moves have been
    /// tried one by one (a proof a few moves deep needs that at every node
    /// of it). The set only chooses which children to compute: their
    /// values are the game's.
    pub fn set_winning(&mut self, winning: Option<Arc<[u32]>>) {
        self.winning = winning.map(|w| {
            let mut w = w.to_vec();
            w.sort_unstable();
            w.dedup();
            Arc::from(w)
        });
    }

    /// RAVE (Gelly and Silver 2007): each move also keeps the values of
    /// every iteration through its node in which its role played it
    /// there or later in the game (all moves as first), and UCB reads a
    /// move's score as Sancho 1.61d does: `(1 - w) * (mean + exploration)
    /// + w * (amaf mean + exploration / 7)`, with `w = a / (a + n + b n a
    /// + 1)` for a move of `n` visits and `a` AMAF samples (Silver's
    /// minimum-error schedule; Sancho's bias `b` is 0.05): early on the
    /// many AMAF samples decide, later the move's own. An untried move
    /// scores 10 blended the same way with its AMAF mean plus 0.5, so
    /// that the moves the rollouts found good are tried first. `b` = 0:
    /// off. The moves come with the rollouts
    /// ([`Graph::backprop_moves`]); where they do not, nothing changes.
    pub fn set_rave(&mut self, b: f64) {
        self.rave = if b.is_finite() && b > 0.0 { b } else { 0.0 };
    }

    /// Keeps a child in the graph only from the `n`-th visit of the move
    /// to it (1: at once; 0 counts as 1): the expansion threshold of
    /// Coulom's CrazyStone and of Fuego. Until then the move's visits and
    /// values are kept on its edge and its rollouts start from the child,
    /// which is not made: fewer nodes to make and walk, and a pool that
    /// holds the part of the tree that is visited again. A terminal child
    /// joins at once (an eager walk tests the child it computed; lanes
    /// report terminal children). Where heuristics initialise new nodes
    /// (material, the evaluator) children join at once, since their prior
    /// is only given to a move with no value yet.
    pub fn set_expand_after(&mut self, n: u32) {
        self.expand_after = n.max(1);
    }

    /// The visit of a move at which its child joins the graph, as set
    /// ([`Graph::set_expand_after`]), or 1 where heuristics start new
    /// nodes.
    pub fn expand_after(&self) -> u32 {
        if self.heuristic.is_some() || self.material.is_some() {
            1
        } else {
            self.expand_after
        }
    }

    /// Whether the child that `moves` lead to from `n` joins the graph now
    /// (see [`Graph::set_expand_after`]).
    fn joins(&self, n: &Node<M::State, M::Move>, moves: &[u16]) -> bool {
        let threshold = self.expand_after();
        if threshold <= 1 {
            return true;
        }
        let visits = match n.single {
            // Several roles choose: children by joint move, at once.
            None => return true,
            Some(c) if n.moves(c as usize) > 1 => {
                n.role(c as usize).get(moves[c as usize] as usize).map_or(u32::MAX, |e| e.visits)
            }
            // Every move forced: the node's visits are the move's.
            Some(_) => n.visits,
        };
        visits >= threshold
    }

    /// Each role's predicted value of `child` (NaN where there is none)
    /// and how many visits it is worth: its material relative to the
    /// root's, else the learnt evaluator's prediction.
    fn predict(&self, m: &M, parent: NodeRef, child: NodeRef) -> Option<(SmallVec<[f64; 4]>, u32)> {
        let c = self.get(child).filter(|c| !c.terminal && !c.solved)?;
        let bits = m.base_bits(c.state.as_ref()?)?;
        if let (Some(mat), true) = (&self.material, self.local_material) {
            let p = self.get(parent)?;
            let h = mat.relative(bits, m.base_bits(p.state.as_ref()?)?);
            // A move that leaves the material as it is gets no seed.
            if (h - 0.5).abs() < 1e-9 {
                return None;
            }
            let v = [h, 1.0 - h];
            let mut out = SmallVec::from_elem(f64::NAN, self.roles);
            for (r, o) in out.iter_mut().enumerate() {
                *o = Self::shift(self.reference_mean(p, r), v[r]);
            }
            return Some((out, mat.weight));
        }
        if let Some(mat) = &self.material {
            let root = self.get(self.root)?;
            let h = mat.relative(bits, m.base_bits(root.state.as_ref()?)?);
            let v = [h, 1.0 - h];
            let mut out = SmallVec::from_elem(f64::NAN, self.roles);
            for (r, o) in out.iter_mut().enumerate() {
                *o = self.recentre(r, v[r]);
            }
            return Some((out, mat.weight));
        }
        let h = self.heuristic.as_ref()?;
        let mut v = SmallVec::from_elem(f64::NAN, self.roles);
        h.evaluate(bits, &mut v);
        Some((v, h.prior_visits))
    }

    /// A relative value `h` (0.5: no change since the root) of role `r`
    /// as an absolute one: the root's mean value for `r`, moved towards 1
    /// (or 0) by the share `h` moved from 0.5 towards it (Sancho's
    /// normalisation), once the root has enough visits to have a mean.
    fn recentre(&self, r: usize, h: f64) -> f64 {
        let Some(root) = self.get(self.root).filter(|n| n.expanded && n.visits > 50) else { return h };
        match self.chooser_mean(root, r) {
            Some((mean, _)) => Self::shift(mean, h),
            None => h,
        }
    }

    /// Role `r`'s mean value at node `n` over its chooser's moves, and the
    /// values it is taken over; `None` without a chooser or values. Two
    /// roles (material is only found there): the other role's mean is the
    /// complement, as goals in these games sum to 100.
    fn chooser_mean(&self, n: &Node<M::State, M::Move>, r: usize) -> Option<(f64, u32)> {
        let c = n.chooser(self.roles)?;
        let (sum, visits) = n.role(c).iter().fold((0.0, 0u32), |(s, v), e| (s + e.sum, v + e.backed));
        if visits == 0 {
            return None;
        }
        let mean = sum / visits as f64;
        Some((if r == c { mean } else { 1.0 - mean }, visits))
    }

    /// `mean` moved towards 1 by the share `h` moved from 0.5 towards 1
    /// (towards 0 below 0.5): Sancho's seeding of a relative value.
    fn shift(mean: f64, h: f64) -> f64 {
        if h > 0.5 {
            mean + (1.0 - mean) * (h - 0.5) * 2.0
        } else {
            mean - mean * (0.5 - h) * 2.0
        }
    }

    /// Role `r`'s mean value at node `n` (two roles, goals summing to the
    /// maximum), drawn towards 0.5 while `n` has few visits: weight
    /// visits/50 against 1, as Sancho weighs its reference node.
    fn reference_mean(&self, n: &Node<M::State, M::Move>, r: usize) -> f64 {
        let Some((mean, visits)) = self.chooser_mean(n, r) else { return 0.5 };
        let w = visits as f64 / 50.0;
        (mean * w + 0.5) / (w + 1.0)
    }

    /// The virtual visits the root's moves hold from heuristic seeds.
    pub fn root_prior(&self) -> u32 {
        self.get(self.root).map_or(0, |n| n.prior)
    }

    pub fn live_nodes(&self) -> usize {
        self.live
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn get(&self, r: NodeRef) -> Option<&Node<M::State, M::Move>> {
        self.nodes.get(r.idx as usize).filter(|n| n.live && n.gen == r.gen)
    }

    fn get_mut(&mut self, r: NodeRef) -> Option<&mut Node<M::State, M::Move>> {
        self.nodes.get_mut(r.idx as usize).filter(|n| n.live && n.gen == r.gen)
    }

    /// Makes the node of `state` the root (reusing it if it is in the graph).
    pub fn set_root(&mut self, m: &mut M, state: M::State) -> Result<(), MachineError> {
        self.root = self.node_for(m, state)?;
        Ok(())
    }

    pub fn root_state(&self) -> Option<&M::State> {
        self.get(self.root).and_then(|n| n.state.as_ref())
    }

    /// The live node of `state` (with hash `hash`), if any.
    fn find(&self, hash: u64, state: &M::State) -> Option<NodeRef> {
        let &(_, i) = self.table.find(hash, |&(h, i)| {
            let n = &self.nodes[i as usize];
            h == hash && n.live && n.state.as_ref() == Some(state)
        })?;
        Some(NodeRef { idx: i, gen: self.nodes[i as usize].gen })
    }

    /// A slot for a new node of `state`, fresh and in the table (recycling
    /// a node when the pool is full).
    fn make(&mut self, state: M::State, hash: u64) -> NodeRef {
        let idx = match self.free.pop() {
            Some(i) => i,
            None if self.nodes.len() < self.capacity => {
                self.nodes.push(Node::empty());
                self.nodes.len() as u32 - 1
            }
            None => self.evict(),
        };
        let n = &mut self.nodes[idx as usize];
        n.reset(state, hash, self.iteration);
        // The hashes are the machine's state hashes, already mixed.
        self.table.insert_unique(hash, (hash, idx), |&(h, _)| h);
        self.live += 1;
        NodeRef { idx, gen: n.gen }
    }

    /// The node of `state`: found through the table, or made (recycling a
    /// node when the pool is full) with its terminal flag and goals from
    /// the machine.
    fn node_for(&mut self, m: &mut M, state: M::State) -> Result<NodeRef, MachineError> {
        let hash = m.state_hash(&state);
        if let Some(r) = self.find(hash, &state) {
            return Ok(r);
        }
        let terminal = m.is_terminal(&state)?;
        let mut value = SmallVec::new();
        if terminal {
            for r in 0..self.roles {
                value.push(m.goal(&state, r)?.score() as f64 / 100.0);
            }
        }
        let r = self.make(state, hash);
        let n = &mut self.nodes[r.idx as usize];
        n.terminal = terminal;
        n.solved = terminal;
        n.value = value;
        self.evaluate_share(m, r);
        Ok(r)
    }

    /// Recycles the least recently visited of a sample of nodes (never the
    /// root, never one visited in this iteration).
    fn evict(&mut self) -> u32 {
        let mut best: Option<(u64, u32)> = None;
        for _ in 0..32 {
            let i = self.rng.below(self.nodes.len()) as u32;
            let n = &self.nodes[i as usize];
            if i == self.root.idx || !n.live || n.touched >= self.iteration {
                continue;
            }
            if best.is_none_or(|(t, _)| n.touched < t) {
                best = Some((n.touched, i));
            }
        }
        let i = match best {
            Some((_, i)) => i,
            // A sample of only fresh nodes: take any that is not the root.
            None => {
                (0..self.nodes.len() as u32).find(|&i| i != self.root.idx && self.nodes[i as usize].live).unwrap_or(0)
            }
        };
        self.kill(i);
        i
    }

    fn kill(&mut self, i: u32) {
        let n = &mut self.nodes[i as usize];
        if !n.live {
            return;
        }
        if let Ok(entry) = self.table.find_entry(n.hash, |&(_, x)| x == i) {
            entry.remove();
        }
        n.live = false;
        n.gen = n.gen.wrapping_add(1);
        n.state = None;
        self.live -= 1;
    }

    fn expand(&mut self, m: &mut M, r: NodeRef) -> Result<(), MachineError> {
        let state =
            self.nodes[r.idx as usize].state.clone().ok_or(MachineError::SearchBug("a node without a state"))?;
        let mut moves: SmallVec<[Vec<M::Move>; 4]> = SmallVec::new();
        for role in 0..self.roles {
            m.legal_moves(&state, role, &mut self.scratch)?;
            if self.scratch.len() > u16::MAX as usize {
                // Paths name moves by a u16 index.
                let role = m.roles()[role].clone();
                return Err(MachineError::TooManyMoves { role, moves: self.scratch.len(), max: u16::MAX as usize });
            }
            moves.push(self.scratch.clone());
        }
        let n = &mut self.nodes[r.idx as usize];
        if moves.iter().any(|m| m.is_empty()) {
            // A role without a legal move in a non-terminal state (a broken
            // game): treat it as the end, with the goals the rules give.
            n.terminal = true;
            n.solved = true;
            n.value = (0..self.roles)
                .map(|role| m.goal(&state, role).map(|g| g.score() as f64 / 100.0))
                .collect::<Result<_, _>>()?;
            return Ok(());
        }
        n.set_moves(&moves);
        self.link_terminal_children(m, r, &state)
    }

    /// Makes the children of `r` that are terminal, where one role chooses
    /// (the others have one move each): every child with `expand_terminal`,
    /// else those of the `winning` moves (nothing without either).
    fn link_terminal_children(&mut self, m: &mut M, r: NodeRef, state: &M::State) -> Result<(), MachineError> {
        if !self.expand_terminal && self.winning.is_none() {
            return Ok(());
        }
        let n = &self.nodes[r.idx as usize];
        let Some(chooser) = n.chooser(self.roles).filter(|&c| n.moves(c) > 1) else { return Ok(()) };
        // The chooser's moves whose children are computed (usually none
        // of them by the winning set: then nothing more is done).
        let tries: SmallVec<[usize; 8]> = match (&self.winning, self.expand_terminal) {
            (Some(w), false) => (0..n.moves(chooser))
                .filter(|&i| m.move_index(n.role(chooser)[i].mv).is_some_and(|x| w.binary_search(&x).is_ok()))
                .collect(),
            _ => (0..n.moves(chooser)).collect(),
        };
        if tries.is_empty() {
            return Ok(());
        }
        let mut joint: Vec<M::Move> = (0..self.roles).map(|x| n.role(x)[0].mv).collect();
        let mut linked = false;
        for i in tries {
            let Some(n) = self.get(r) else { return Ok(()) };
            joint[chooser] = n.role(chooser)[i].mv;
            let next = m.next_state(state, &joint)?;
            if !m.is_terminal(&next)? {
                continue;
            }
            let child = self.node_for(m, next)?;
            let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
            moves[chooser] = i as u16;
            self.link(r, &moves, child);
            linked = true;
        }
        // A win one move away solves the node now.
        if linked {
            self.solve(r);
        }
        Ok(())
    }

    /// Records `child` as where `moves` lead from `parent` (if it is still live).
    fn link(&mut self, parent: NodeRef, moves: &[u16], child: NodeRef) {
        let Some(n) = self.get_mut(parent) else { return };
        if let Some(c) = n.single {
            if let Some(e) = n.edge_mut(c as usize, moves[c as usize] as usize) {
                e.child = child;
            }
            return;
        }
        let key = Self::joint_key(n, moves);
        let Some(joint) = n.joint.as_deref_mut() else { return };
        let key = match (key, &mut joint.wide) {
            (Some(k), _) => k,
            (None, Some(wide)) => {
                wide.push(moves.iter().copied().collect());
                wide.len() as u64 - 1
            }
            (None, None) => return,
        };
        let children = &mut joint.children;
        let at = children.binary_search_by_key(&key, |&(j, _)| j).unwrap_or_else(|e| e);
        if children.get(at).is_some_and(|&(j, _)| j == key) {
            children[at].1 = child;
        } else {
            children.insert(at, (key, child));
        }
    }

    /// The key of the joint move `moves` (each role's move index) among
    /// `n`'s children: the mixed-radix number of the move indices, or on a
    /// wide node its position in the node's list (`None` if not there).
    fn joint_key(n: &Node<M::State, M::Move>, moves: &[u16]) -> Option<u64> {
        match n.joint.as_deref().and_then(|j| j.wide.as_ref()) {
            None => Some(moves.iter().enumerate().fold(0u64, |j, (r, &m)| j * n.moves(r) as u64 + m as u64)),
            Some(wide) => wide.iter().position(|w| w[..] == *moves).map(|i| i as u64),
        }
    }

    /// The live child that `moves` lead to from `n`, if it is known.
    fn child(&self, n: &Node<M::State, M::Move>, moves: &[u16]) -> Option<NodeRef> {
        if let Some(c) = n.single {
            let c = n.role(c as usize).get(moves[c as usize] as usize)?.child;
            return self.get(c).map(|_| c);
        }
        let key = Self::joint_key(n, moves)?;
        let children = &n.joint.as_deref()?.children;
        let i = children.binary_search_by_key(&key, |&(j, _)| j).ok()?;
        let c = children[i].1;
        self.get(c).map(|_| c)
    }

    /// Each role's move at `r` by UCB; unvisited moves first, at random.
    fn choose(&mut self, r: NodeRef) -> SmallVec<[u16; 4]> {
        let mut out = SmallVec::from_elem(0, self.roles);
        match self.nodes[r.idx as usize].single {
            Some(c) => out[c as usize] = self.ucb(r, c as usize),
            None => {
                for (role, mv) in out.iter_mut().enumerate() {
                    *mv = self.ucb(r, role);
                }
            }
        }
        out
    }

    /// Role `role`'s move at `r` by UCB1 on its own values; unvisited
    /// moves first (ties to the first met from a random offset), except
    /// with RAVE, where an unvisited move with AMAF samples is ranked by
    /// them ([`rave_untried`]).
    fn ucb(&mut self, r: NodeRef, role: usize) -> u16 {
        let k = self.nodes[r.idx as usize].moves(role);
        if k == 1 {
            return 0;
        }
        let offset = self.rng.below(k);
        let node = &self.nodes[r.idx as usize];
        let edges = node.role(role);
        let total = match node.single {
            Some(_) => node.visits + node.prior,
            None => edges.iter().map(|e| e.visits).sum(),
        };
        let c = match self.explore.get(total as usize) {
            Some(&c) => c,
            None => self.exploration * ln(total as f64).sqrt(),
        };
        // Implicit minimax: part of a child's value is its minimax share.
        let alpha = if self.minimax_on() && node.single.is_some() { self.minimax } else { 0.0 };
        let rave = self.rave;
        let settle = self.settle;
        let (mut best, mut best_score) = (offset, f64::NEG_INFINITY);
        // From `offset` to the end, then from the start: the first of equal
        // scores wins, so ties go to a random one.
        let mut i = offset;
        for _ in 0..k {
            let e = &edges[i];
            if e.lost {
                // A proven loss is never worth a visit (were every move
                // lost, the node would be solved and not walked through).
                i = if i + 1 == k { 0 } else { i + 1 };
                continue;
            }
            let score = if settle && e.settled {
                // Below every open move's score (means and exploration
                // are not negative), so taken only where no move is open
                // (children recycled before the node was solved).
                let mean = if e.visits > 0 { e.sum / e.visits as f64 } else { 0.0 };
                mean - 10.0
            } else if e.visits == 0 {
                if rave == 0.0 || e.amaf == 0 {
                    return i as u16;
                }
                rave_untried(e.amaf, e.amaf_sum)
            } else {
                // The mean plus c / sqrt(visits).
                let v = e.visits as f64;
                let (mut score, explore) = match self.inv_sqrt.get(e.visits as usize) {
                    Some(&r) => ((e.sum * r + c) * r, c * r),
                    None => ((e.sum + c * v.sqrt()) / v, c / v.sqrt()),
                };
                if rave > 0.0 && e.amaf > 0 {
                    let a = e.amaf as f64;
                    score += rave_shift(v, e.sum / v, explore, a, e.amaf_sum as f64 / a, rave);
                }
                if alpha > 0.0 {
                    if let Some(share) = self.get(e.child).map(|ch| ch.share).filter(|x| !x.is_nan()) {
                        score += alpha * (self.share_value(share, role) - e.sum / v);
                    }
                }
                score
            };
            if score > best_score {
                (best, best_score) = (i, score);
            }
            i += 1;
            if i == k {
                i = 0;
            }
        }
        best as u16
    }

    /// Walks down from the root by UCB, adding a visit to every move taken
    /// (a virtual loss until the value is backed up), and returns the path
    /// and where it ended. Expands the first node it meets that has no
    /// moves yet, and creates the child it moves to.
    pub fn select(&mut self, m: &mut M, path: &mut Vec<Step>) -> Result<Leaf<M::State>, MachineError> {
        self.walk(m, path, false)
    }

    /// [`Graph::select`], except that a child not in the graph yet is left
    /// for the caller to compute ([`Leaf::Expand`], where the machine
    /// indexes its moves).
    pub fn select_lazy(&mut self, m: &mut M, path: &mut Vec<Step>) -> Result<Leaf<M::State>, MachineError> {
        self.walk(m, path, true)
    }

    fn walk(&mut self, m: &mut M, path: &mut Vec<Step>, lazy: bool) -> Result<Leaf<M::State>, MachineError> {
        self.iteration += 1;
        path.clear();
        if self.minimax_on() {
            self.root_share = self.root_material(m);
        }
        // The first root was made before the material was set.
        if self.material_backup_on() && self.get(self.root).is_some_and(|n| n.mat.0.is_nan()) {
            self.evaluate_mat(m, self.root);
        }
        let mut cur = self.root;
        let no_state = || MachineError::SearchBug("a node without a state");
        loop {
            let it = self.iteration;
            let Some(n) = self.get_mut(cur) else {
                return Err(MachineError::SearchBug("the search root was recycled"));
            };
            n.touched = it;
            if n.terminal || n.solved {
                return Ok(Leaf::Known(n.value.clone()));
            }
            if !n.expanded {
                self.expand(m, cur)?;
                // Making terminal children may have recycled this node
                // (a full pool of nodes all used in this iteration).
                if self.get(cur).is_none() {
                    return self.walk(m, path, lazy);
                }
                let n = &self.nodes[cur.idx as usize];
                if n.terminal {
                    return Ok(Leaf::Known(n.value.clone()));
                }
            }
            let moves = self.choose(cur);
            let n = &mut self.nodes[cur.idx as usize];
            n.visits += 1;
            n.each_choice(&moves, |e| e.visits += 1);
            let existing = self.child(&self.nodes[cur.idx as usize], &moves);
            path.push(Step { node: cur, moves });
            let moves = &path[path.len() - 1].moves;
            match existing {
                // A move back to a state on this path (a pass, a repetition):
                // going on would walk the cycle; its value is a rollout's.
                Some(c) if path.iter().any(|s| s.node == c) => {
                    return Ok(Leaf::Rollout(self.nodes[c.idx as usize].state.clone().ok_or_else(no_state)?));
                }
                Some(c) => cur = c,
                None => {
                    let n = &self.nodes[cur.idx as usize];
                    let state = n.state.clone().ok_or_else(no_state)?;
                    let joins = self.joins(n, moves);
                    let jm: SmallVec<[M::Move; 4]> =
                        moves.iter().enumerate().map(|(r, &mv)| n.role(r)[mv as usize].mv).collect();
                    if lazy {
                        let joint: Option<SmallVec<[u32; 4]>> = jm.iter().map(|&mv| m.move_index(mv)).collect();
                        if let Some(joint) = joint {
                            return Ok(Leaf::Expand { parent: state, joint, attach: joins });
                        }
                    }
                    let moves = moves.clone();
                    let next = m.next_state(&state, &jm)?;
                    // A terminal child joins at once: its value is known,
                    // and proofs are made of such nodes.
                    if !joins && !m.is_terminal(&next)? {
                        return Ok(Leaf::Rollout(next));
                    }
                    let child = self.node_for(m, next)?;
                    // The parent may have been recycled while making the
                    // child (pool full): then the path is stale; start over.
                    if self.get(cur).is_none() {
                        return self.walk(m, path, lazy);
                    }
                    self.link(cur, &moves, child);
                    self.initialise(m, cur, &moves, child);
                    let cn = &mut self.nodes[child.idx as usize];
                    cn.touched = it;
                    if cn.terminal || cn.solved {
                        let v = cn.value.clone();
                        self.update_solved(path);
                        return Ok(Leaf::Known(v));
                    }
                    return Ok(Leaf::Rollout(cn.state.clone().ok_or_else(no_state)?));
                }
            }
        }
    }

    /// Heuristic initialisation: a move with no value backed up yet counts
    /// the evaluator's prior visits at its child's predicted value (once:
    /// not again for another reply of the other roles, nor for a recycled
    /// child).
    fn initialise(&mut self, m: &M, parent: NodeRef, moves: &[u16], child: NodeRef) {
        let Some((prior, prior_visits)) = self.predict(m, parent, child) else { return };
        let Some(n) = self.get_mut(parent) else { return };
        for (role, &v) in prior.iter().enumerate() {
            if !v.is_finite() || n.moves(role) < 2 {
                continue;
            }
            let chooser = n.single == Some(role as u8);
            if let Some(e) = n.edge_mut(role, moves[role] as usize).filter(|e| e.backed == 0) {
                e.visits += prior_visits;
                e.backed += prior_visits;
                e.sum += prior_visits as f64 * v;
                if chooser {
                    n.prior += prior_visits;
                }
            }
        }
    }

    /// Puts the child that the last step of `path` (a [`Leaf::Expand`])
    /// leads to into the graph, as computed elsewhere: its state, and
    /// either its goals (0..1, terminal) or each role's legal moves (by
    /// index, ascending, as [`Simulator::move_index`] numbers them). Does
    /// nothing when the parent was recycled since.
    pub fn attach(
        &mut self,
        m: &mut M,
        path: &[Step],
        state: M::State,
        outcome: Outcome<'_>,
    ) -> Result<(), MachineError> {
        let Some(step) = path.last() else { return Ok(()) };
        let (parent, moves) = (step.node, &step.moves);
        if self.get(parent).is_none() {
            return Ok(());
        }
        let hash = m.state_hash(&state);
        let (child, new) = match self.find(hash, &state) {
            Some(c) => (c, false),
            None => (self.make(state, hash), true),
        };
        if new {
            let n = &mut self.nodes[child.idx as usize];
            match outcome {
                Outcome::Terminal(goals) => {
                    n.terminal = true;
                    n.solved = true;
                    n.value.extend(goals.iter().copied());
                }
                Outcome::Legal(legal) => {
                    // Into vectors kept from one expansion to the next.
                    let moves = &mut self.legal;
                    moves.resize_with(legal.len(), Vec::new);
                    for (role, (ids, mv)) in legal.iter().zip(moves.iter_mut()).enumerate() {
                        mv.clear();
                        mv.extend(ids.iter().filter_map(|&i| m.move_from_index(i)));
                        m.restrict_moves(role, mv);
                    }
                    // Left unexpanded (the machine expands it when it is
                    // reached) if a role has none, or too many to index.
                    if moves.len() == self.roles
                        && moves.iter().all(|mv| !mv.is_empty() && mv.len() <= u16::MAX as usize)
                    {
                        n.set_moves(moves);
                    }
                }
            }
        }
        if new {
            self.evaluate_share(m, child);
        }
        // Making the child may have recycled the parent (a full pool).
        if self.get(parent).is_none() {
            return Ok(());
        }
        self.link(parent, moves, child);
        if new {
            self.initialise(m, parent, moves, child);
            let c = &self.nodes[child.idx as usize];
            if c.expanded {
                if let Some(state) = c.state.clone() {
                    self.link_terminal_children(m, child, &state)?;
                }
            }
        }
        if self.get(child).is_some_and(|c| c.solved) {
            self.update_solved(path);
        }
        Ok(())
    }

    /// Adds a rollout's `value` (per role, 0..1) to every move on `path`;
    /// steps whose node was recycled since are skipped.
    pub fn backprop(&mut self, path: &[Step], value: &[f64]) {
        self.add_values(path, value, self.material_backup_on());
    }

    /// [`Graph::backprop`], with material backups where `adjust`.
    fn add_values(&mut self, path: &[Step], value: &[f64], adjust: bool) {
        if self.roles == 2 && value.len() == 2 && (value[0] + value[1] - 1.0).abs() > 1e-6 {
            self.fixed_sum = false;
        }
        let mut v: SmallVec<[f64; 4]> = SmallVec::from_slice(value);
        let lift = self.settle && self.roles == 2 && v.len() == 2 && self.fixed_sum;
        // The material of the path's nodes, then of the node the last step
        // leads to.
        let mut mats: SmallVec<[(f32, f32); 32]> = SmallVec::new();
        if adjust && v.len() == 2 {
            mats.extend(path.iter().map(|s| self.get(s.node).map_or((f32::NAN, f32::NAN), |n| n.mat)));
            let leaf = path.last().and_then(|s| self.get(s.node).and_then(|n| self.child(n, &s.moves)));
            mats.push(leaf.and_then(|c| self.get(c)).map_or((f32::NAN, f32::NAN), |n| n.mat));
        }
        for (i, s) in path.iter().enumerate().rev() {
            if !mats.is_empty() {
                if let Some(h) = exchange_value(&mats, i + 1) {
                    v[0] = Self::shift(v[0], h);
                    v[1] = Self::shift(v[1], 1.0 - h);
                }
            }
            let Some(n) = self.get_mut(s.node) else { continue };
            n.each_role_choice(&s.moves, |role, e| {
                e.sum += v.get(role).copied().unwrap_or(0.0);
                e.backed += 1;
            });
            // No selection adds a visit to a forced move: the visit comes
            // with its value.
            n.each_forced(|role, e| {
                e.sum += v.get(role).copied().unwrap_or(0.0);
                e.backed += 1;
                e.visits += 1;
            });
            // The chooser here has the best solved child's value whatever
            // this path's move was worth: the node above gets no less.
            if lift && n.floor.1 != NO_PROOF {
                if let Some(c) = n.single.map(usize::from).filter(|&c| c < 2) {
                    if v[c] < n.floor.0 {
                        v[c] = n.floor.0;
                        v[1 - c] = 1.0 - n.floor.0;
                    }
                }
            }
        }
        if self.minimax_on() {
            for s in path.iter().rev() {
                self.back_up_share(s.node);
            }
        }
        if self.normalize && self.roles == 2 && self.fixed_sum {
            for w in path.windows(2).rev() {
                self.normalize_edge(&w[0], w[1].node);
            }
        }
    }

    /// Periodic value normalisation (Sancho's "node score normalisation"):
    /// every 100 visits of a node with at least 500, the value its parent's
    /// move holds is recomputed from the node's moves, each weighted by the
    /// visits UCB would give it if the moves' current means never changed
    /// (the best move keeps its visits; a move whose mean fell since its
    /// visits were spent counts for less). A mean over every visit keeps
    /// the weight of moves tried while they looked good; this follows the
    /// best move sooner, as minimax would. Two roles whose goals add up
    /// to the maximum only: the parent's chooser values the node as the
    /// node's chooser's complement (or as it, when both are one role).
    pub fn set_normalize(&mut self, on: bool) {
        self.normalize = on;
    }

    /// How many times a value was normalised ([`Graph::set_normalize`]).
    pub fn normalizations(&self) -> u64 {
        self.normalized
    }

    /// [`Graph::set_normalize`]: renormalises `child`'s value held by the
    /// move of `step`'s chooser that leads to it, when it is due.
    fn normalize_edge(&mut self, step: &Step, child: NodeRef) {
        const WARMUP: u32 = 500;
        const PERIOD: u32 = 100;
        const MIN_VISITS: u32 = 20;
        let Some(x) = self.get(child) else { return };
        if x.solved || x.visits < WARMUP || x.visits < x.normalized_at + PERIOD {
            return;
        }
        let Some(c) = x.single.map(usize::from).filter(|&c| x.moves(c) > 1) else { return };
        let edges = x.role(c);
        let mean = |e: &Edge<M::Move>| e.sum / e.backed as f64;
        let Some(pivot) =
            edges.iter().filter(|e| !e.lost && e.backed >= MIN_VISITS).max_by(|a, b| mean(a).total_cmp(&mean(b)))
        else {
            return;
        };
        let ln_n = ln(x.visits as f64);
        let top = mean(pivot) + self.exploration * (ln_n / pivot.backed as f64).sqrt();
        let (mut total, mut weight) = (0.0, 0.0);
        for e in edges.iter().filter(|e| !e.lost && e.backed > 0) {
            let m = mean(e);
            let gap = top - m;
            let w = if e.backed >= MIN_VISITS && gap > 1e-9 {
                self.exploration * self.exploration * ln_n / (gap * gap)
            } else {
                e.backed as f64
            };
            total += w * m;
            weight += w;
        }
        if weight <= 0.0 {
            return;
        }
        let value = total / weight;
        let xi = child.idx as usize;
        self.nodes[xi].normalized_at = self.nodes[xi].visits;
        let Some(parent) = self.get_mut(step.node) else { return };
        let Some(p) = parent.single.map(usize::from) else { return };
        let v = if p == c { value } else { 1.0 - value };
        if let Some(e) = step.moves.get(p).and_then(|&mv| parent.edge_mut(p, mv as usize)) {
            if e.backed > 0 {
                e.sum = v * e.backed as f64;
                self.normalized += 1;
            }
        }
    }

    /// [`Graph::backprop`], and with RAVE on ([`Graph::set_rave`]) the
    /// AMAF statistics: at each node of `path`, every move of a role with
    /// a choice that the role played there or below, in the path or in
    /// the rollout (`rollout`: one bit per move index,
    /// [`Simulator::move_index`]), gets the role's value.
    pub fn backprop_moves(&mut self, m: &M, path: &[Step], value: &[f64], rollout: &[u64]) {
        self.backprop(path, value);
        if self.rave == 0.0 {
            return;
        }
        let mut seen = std::mem::take(&mut self.amaf_seen);
        seen.clear();
        seen.extend_from_slice(rollout);
        for s in path.iter().rev() {
            let Some(n) = self.get_mut(s.node) else { continue };
            // The path's own moves here count as played.
            n.each_role_choice(&s.moves, |_, e| {
                if let Some(k) = m.move_index(e.mv) {
                    let w = k as usize / 64;
                    if w >= seen.len() {
                        seen.resize(w + 1, 0);
                    }
                    seen[w] |= 1 << (k % 64);
                }
            });
            for role in 0..n.ends.len() {
                if n.moves(role) < 2 {
                    continue;
                }
                let v = value.get(role).copied().unwrap_or(0.0) as f32;
                for e in n.role_mut(role) {
                    let Some(k) = m.move_index(e.mv) else { continue };
                    if seen.get(k as usize / 64).is_some_and(|w| w >> (k % 64) & 1 == 1) {
                        e.amaf += 1;
                        e.amaf_sum += v;
                    }
                }
            }
        }
        self.amaf_seen = seen;
    }

    /// [`Graph::backprop`] of the value of a terminal or solved leaf
    /// ([`Leaf::Known`]), then solves what it decides on the way up (only
    /// such a value can solve a node).
    pub fn backprop_known(&mut self, path: &[Step], value: &[f64]) {
        // Solved first, so that minimax backups carry the exact values up.
        self.update_solved(path);
        if self.drop_lost && self.loses_unsolved(path) {
            self.unvisit(path);
            return;
        }
        self.add_values(path, value, false);
    }

    /// Whether the lowest node of `path` that is not solved (those below
    /// it are: the path ends in a known value, and they were solved as far
    /// as it decides) chose a move whose solved child is a loss for its
    /// chooser.
    fn loses_unsolved(&self, path: &[Step]) -> bool {
        let Some(i) = path.iter().rposition(|s| self.get(s.node).is_none_or(|n| !n.solved)) else { return false };
        let Some(n) = self.get(path[i].node) else { return false };
        let child = match path.get(i + 1) {
            Some(s) => Some(s.node),
            None => self.child(n, &path[i].moves),
        };
        let Some(c) = child.and_then(|c| self.get(c)).filter(|c| c.solved) else { return false };
        n.chooser(self.roles).and_then(|r| c.value.get(r)).is_some_and(|&v| v <= 1e-9)
    }

    /// Takes back the visits a selection added along `path` whose value
    /// will never be backed up (steps whose node was recycled since are
    /// skipped: their statistics went with them).
    pub fn unvisit(&mut self, path: &[Step]) {
        for s in path {
            let Some(n) = self.get_mut(s.node) else { continue };
            n.visits = n.visits.saturating_sub(1);
            n.each_choice(&s.moves, |e| e.visits = e.visits.saturating_sub(1));
        }
    }

    /// Each move a role chose among several along `path`, with the role
    /// (for move statistics such as MAST), appended to `out`.
    pub fn path_moves(&self, path: &[Step], out: &mut Vec<(usize, M::Move)>) {
        for st in path {
            let Some(n) = self.get(st.node) else { continue };
            for (role, &i) in st.moves.iter().enumerate() {
                if role < n.ends.len() && n.moves(role) > 1 {
                    if let Some(e) = n.role(role).get(i as usize) {
                        out.push((role, e.mv));
                    }
                }
            }
        }
    }

    /// Checks that every move's visits equal the values backed up through
    /// it (true whenever no selection is in flight), and that where one
    /// role chooses, its moves' visits add up to the node's and its priors
    /// (always true); the first place where they differ, if any.
    pub fn check_visits(&self) -> Result<(), String> {
        for (i, n) in self.nodes.iter().enumerate().filter(|(_, n)| n.live) {
            for role in 0..n.ends.len() {
                for (k, e) in n.role(role).iter().enumerate() {
                    if e.visits != e.backed {
                        return Err(format!(
                            "node {i}, role {role}, move {k}: {} visits, {} values backed up",
                            e.visits, e.backed
                        ));
                    }
                }
            }
            if let Some(c) = n.single.map(usize::from).filter(|&c| n.moves(c) > 1) {
                let sum: u32 = n.role(c).iter().map(|e| e.visits).sum();
                if sum != n.visits + n.prior {
                    return Err(format!(
                        "node {i}: its chooser's moves have {sum} visits, the node {} and {} prior",
                        n.visits, n.prior
                    ));
                }
            }
        }
        Ok(())
    }

    /// Solves nodes on `path` from the bottom up, as far as their value is
    /// determined: a node where one role chooses (the others have one move)
    /// is solved once a child gives the chooser the best possible value
    /// (its greatest reachable goal, `goal_max`), or once every child is
    /// solved (the chooser takes the best). Nodes where two or more roles
    /// choose at once are not solved: their value under best play is a
    /// mixed strategy's, which needs more than the children's values.
    fn update_solved(&mut self, path: &[Step]) {
        for s in path.iter().rev() {
            if !self.solve(s.node) {
                return;
            }
        }
    }

    /// Solves node `r` if its children decide its value (see
    /// [`Graph::update_solved`]); whether it is solved.
    fn solve(&mut self, r: NodeRef) -> bool {
        let Some(n) = self.get(r) else { return false };
        if n.solved {
            return true;
        }
        if !n.expanded {
            return false;
        }
        let Some(chooser) = n.chooser(self.roles) else { return false };
        // The best solved child (its value for the chooser and where it
        // is), whether every child is solved, and the moves that lose.
        let mut best: Option<(f64, NodeRef, u16)> = None;
        let mut all = true;
        let mut lost: SmallVec<[u16; 8]> = SmallVec::new();
        let mut settled: SmallVec<[u16; 8]> = SmallVec::new();
        let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
        for i in 0..n.moves(chooser) {
            moves[chooser] = i as u16;
            let solved = self.child(n, &moves).and_then(|c| Some((c, self.get(c)?))).filter(|(_, c)| c.solved);
            match solved {
                Some((at, c)) => {
                    let v = c.value.get(chooser).copied().unwrap_or(0.0);
                    if best.is_none_or(|(b, _, _)| v > b) {
                        best = Some((v, at, i as u16));
                    }
                    if v <= 0.0 && !n.role(chooser)[i].lost {
                        lost.push(i as u16);
                    }
                    if !n.role(chooser)[i].settled {
                        settled.push(i as u16);
                    }
                }
                None => all = false,
            }
        }
        let done = match best {
            Some((b, _, _)) if b >= self.goal_max[chooser] - 1e-9 => true,
            Some(_) => all,
            None => false,
        };
        if !done {
            let n = &mut self.nodes[r.idx as usize];
            for i in lost {
                if let Some(e) = n.edge_mut(chooser, i as usize) {
                    e.lost = true;
                }
            }
            for i in settled {
                if let Some(e) = n.edge_mut(chooser, i as usize) {
                    e.settled = true;
                }
            }
            n.floor = best.map_or((0.0, NO_PROOF), |(v, _, i)| (v, i));
            return false;
        }
        let value = best.and_then(|(_, at, _)| self.get(at)).map(|c| c.value.clone()).unwrap_or_default();
        let n = &mut self.nodes[r.idx as usize];
        n.solved = true;
        n.value = value;
        n.proof = best.map_or(NO_PROOF, |(_, _, i)| i);
        if self.minimax_on() {
            let v = self.nodes[r.idx as usize].value.first().copied();
            self.nodes[r.idx as usize].share = v.map_or(f32::NAN, |v| (3.0 * (2.0 * v - 1.0)) as f32);
        }
        true
    }

    /// At the root, `role`'s move to play: where the root is solved, the
    /// move that proved it (the most visited where it is a proven loss),
    /// else the most visited. With its value (0..1: the proven one, or the
    /// move's mean) and visits.
    pub fn best(&self, role: usize) -> Option<(M::Move, f64, u32)> {
        let n = self.get(self.root)?;
        if role >= n.ends.len() {
            return None;
        }
        let edges = n.role(role);
        let proven = n.solved.then(|| n.value.get(role).copied().unwrap_or(0.0));
        // A proven loss: every move loses against best play, so play the
        // one the search believed in longest (the most visited), not the
        // first, which may lose at once against a fallible opponent.
        if let Some(v) = proven.filter(|&v| v > 0.0) {
            if n.chooser(self.roles) == Some(role) {
                if let Some(e) = edges.get(n.proof as usize) {
                    return Some((e.mv, v, e.visits));
                }
            }
            // The chooser's best solved child; others: any move.
            let mut moves: SmallVec<[u16; 4]> = SmallVec::from_elem(0, self.roles);
            for (i, e) in edges.iter().enumerate() {
                moves[role] = i as u16;
                if let Some(c) = self.child(n, &moves).and_then(|c| self.get(c)) {
                    if c.solved && c.value.get(role) == n.value.get(role) {
                        return Some((e.mv, v, e.visits));
                    }
                }
            }
        }
        let e = &edges[move_to_play(edges.len(), |i| edges[i].visits, |i| edges[i].lost)?];
        let mean = if e.visits > 0 { e.sum / e.visits as f64 } else { 0.0 };
        // With settled children passed by, the most visited move is an
        // open one; the best solved child, less visited, may be worth more.
        if self.settle && n.chooser(self.roles) == Some(role) && n.floor.0 > mean {
            if let Some(f) = edges.get(n.floor.1 as usize) {
                return Some((f.mv, n.floor.0, f.visits));
            }
        }
        Some((e.mv, proven.unwrap_or(mean), e.visits))
    }

    /// The root's move statistics of `role` (for merging root-parallel graphs).
    pub fn root_stats(&self, role: usize) -> Option<RootStats<M::Move>> {
        let n = self.get(self.root)?;
        if role >= n.ends.len() {
            return None;
        }
        let edges = n.role(role);
        Some(RootStats {
            moves: edges.iter().map(|e| e.mv).collect(),
            visits: edges.iter().map(|e| e.visits).collect(),
            sums: edges.iter().map(|e| e.sum).collect(),
            lost: edges.iter().map(|e| e.lost).collect(),
            amaf: edges.iter().map(|e| e.amaf).collect(),
        })
    }

    pub fn root_solved(&self) -> Option<SmallVec<[f64; 4]>> {
        self.get(self.root).filter(|n| n.solved).map(|n| n.value.clone())
    }

    /// Whether the root is solved (no allocation, for hot loops).
    pub fn is_root_solved(&self) -> bool {
        self.get(self.root).is_some_and(|n| n.solved)
    }

    /// The role that has a choice at the root (the first with more than one
    /// legal move), or role 0.
    pub fn chooser(&self) -> usize {
        self.get(self.root).and_then(|n| (0..n.ends.len()).find(|&r| n.moves(r) > 1)).unwrap_or(0)
    }
}

/// Role 0's value (0..1) of the exchange that node `j` of a path ends
/// (`mats`: each node's role 0 share of the material and material on the
/// board, [`Node::mat`]), against the node before the exchange; `None`
/// where `j` ends none: its move changed the material, or the move before
/// did not. Sancho's heuristic sequences (`TreeNode.updateStats`).
fn exchange_value(mats: &[(f32, f32)], j: usize) -> Option<f64> {
    // Whether the move into node `k` changed the material (NaN: unknown,
    // taken as unchanged).
    let changed = |k: usize| k >= 1 && k < mats.len() && (mats[k].0 - mats[k - 1].0).abs() > 1e-6;
    if j < 2 || j >= mats.len() || changed(j) || !changed(j - 1) {
        return None;
    }
    let mut k = j - 1;
    while changed(k) {
        k -= 1;
    }
    let ((now, total), then) = (mats[j], mats[k].0);
    let h = Material::value_of_share(now as f64, total as f64, then as f64);
    ((h - 0.5).abs() > 1e-9).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::exchange_value;

    use super::{Graph, Leaf};
    use crate::machine::StateMachine;
    use crate::propnet::PropnetMachine;

    /// The bundled tic-tac-toe after these turns (one move per role).
    fn tictactoe(turns: &[[&str; 2]]) -> (PropnetMachine, crate::propnet::NetState) {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../games/tictactoe.kif");
        let game = std::sync::Arc::new(propel_compiler::load_file(&root).expect("tictactoe"));
        let mut m = crate::build::prepare(&game, &crate::build::BuildOptions::default()).expect("built").propnet();
        let mut s = m.initial_state().unwrap();
        let mut legal = Vec::new();
        for turn in turns {
            let mut joint = Vec::new();
            for (r, want) in turn.iter().enumerate() {
                m.legal_moves(&s, r, &mut legal).unwrap();
                joint.push(*legal.iter().find(|&&l| m.move_kif(l) == *want).unwrap());
            }
            s = m.next_state(&s, &joint).unwrap();
        }
        (m, s)
    }

    /// Eager iterations (terminal children made on expansion, rollouts
    /// valued as draws) until the root is solved.
    fn solve_root(m: &mut PropnetMachine, graph: &mut Graph<PropnetMachine>) {
        graph.set_expand_terminal(true);
        let mut path = Vec::new();
        for _ in 0..10_000 {
            match graph.select(m, &mut path).unwrap() {
                Leaf::Known(v) => graph.backprop_known(&path, &v),
                Leaf::Rollout(_) => graph.backprop(&path, &[0.5, 0.5]),
                Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
            }
            if graph.is_root_solved() {
                return;
            }
        }
        panic!("not solved in 10,000 iterations");
    }

    /// A root solved from a terminal child keeps its winning move after a
    /// full pool recycles that child (which nothing visits again).
    #[test]
    fn a_solved_root_keeps_its_move_when_the_proof_is_recycled() {
        // x has (1 1) and (1 2), o (2 1) and (2 2): x wins with (1 3).
        let (mut m, s) = tictactoe(&[
            ["(mark 1 1)", "noop"],
            ["noop", "(mark 2 1)"],
            ["(mark 1 2)", "noop"],
            ["noop", "(mark 2 2)"],
        ]);
        let mut graph = Graph::new(&mut m, s, 100, 0.7, 3).unwrap();
        solve_root(&mut m, &mut graph);
        assert_eq!(graph.root_solved().as_deref(), Some(&[1.0, 0.0][..]));
        let n = graph.get(graph.root).unwrap();
        let win = n.role(0)[n.proof as usize].child;
        assert!(graph.get(win).is_some_and(|c| c.terminal));
        // The other moves searched more before the win was found (as in a
        // real search), so the most visited move is not the win.
        let (proof, r) = (n.proof as usize, graph.root.idx as usize);
        for i in 0..graph.nodes[r].moves(0) {
            if i != proof {
                graph.nodes[r].edge_mut(0, i).unwrap().visits = 10;
            }
        }
        // Every node but the root recycled, as a full pool would.
        for i in 0..graph.nodes.len() as u32 {
            if i != graph.root.idx {
                graph.kill(i);
            }
        }
        assert!(graph.get(win).is_none());
        let (mv, value, _) = graph.best(0).unwrap();
        assert_eq!(m.move_kif(mv), "(mark 1 3)");
        assert_eq!(value, 1.0);
    }

    /// Where every move loses against best play (a proven loss), the root
    /// plays the move the search visited most, not the first legal one.
    #[test]
    fn a_proven_loss_plays_the_most_visited_move() {
        // x has (1 1), (1 2) and (2 2), o (3 1) and (1 3): o to move cannot
        // stop both (3 2) and (3 3).
        let (mut m, s) = tictactoe(&[
            ["(mark 1 1)", "noop"],
            ["noop", "(mark 3 1)"],
            ["(mark 1 2)", "noop"],
            ["noop", "(mark 1 3)"],
            ["(mark 2 2)", "noop"],
        ]);
        let mut graph = Graph::new(&mut m, s, 1000, 0.7, 3).unwrap();
        solve_root(&mut m, &mut graph);
        assert_eq!(graph.root_solved().as_deref(), Some(&[1.0, 0.0][..]));
        let r = graph.root.idx as usize;
        let moves = graph.nodes[r].moves(1);
        assert!(moves > 1);
        for i in 0..moves {
            graph.nodes[r].edge_mut(1, i).unwrap().visits = if i == moves - 1 { 50 } else { 10 };
        }
        let (mv, value, visits) = graph.best(1).unwrap();
        assert_eq!((value, visits), (0.0, 50));
        assert_eq!(mv, graph.nodes[r].role(1)[moves - 1].mv);
        // The other role's one move carries the proven win.
        assert_eq!(graph.best(0).unwrap().1, 1.0);
    }

    /// Iterations from the bundled tic-tac-toe's initial state, every
    /// rollout valued as a draw.
    fn searched(iterations: usize) -> (PropnetMachine, Graph<PropnetMachine>) {
        let (mut m, s) = tictactoe(&[]);
        let mut graph = Graph::new(&mut m, s, 10_000, 0.7, 3).unwrap();
        graph.set_settle(true);
        let mut path = Vec::new();
        for _ in 0..iterations {
            match graph.select(&mut m, &mut path).unwrap() {
                Leaf::Known(v) => graph.backprop_known(&path, &v),
                Leaf::Rollout(_) => graph.backprop(&path, &[0.5, 0.5]),
                Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
            }
        }
        (m, graph)
    }

    /// With settled children passed by, a move whose child is solved is
    /// not selected while another is open, and is once every other move is
    /// a proven loss; at the root, the best solved child is played where
    /// it is worth more than the most visited move's mean.
    #[test]
    fn settled_moves_wait_while_a_move_is_open() {
        let (_, mut graph) = searched(300);
        let r = graph.root;
        let k = graph.nodes[r.idx as usize].moves(0);
        assert_eq!(k, 9);
        let most = (0..k).max_by_key(|&i| graph.nodes[r.idx as usize].role(0)[i].visits).unwrap();
        // The best mean by far: off, UCB takes it at once.
        let e = graph.nodes[r.idx as usize].edge_mut(0, most).unwrap();
        (e.settled, e.sum) = (true, e.visits as f64);
        for _ in 0..200 {
            assert_ne!(graph.ucb(r, 0) as usize, most);
        }
        for i in (0..k).filter(|&i| i != most) {
            graph.nodes[r.idx as usize].edge_mut(0, i).unwrap().lost = true;
        }
        assert_eq!(graph.ucb(r, 0) as usize, most);
        // Off, the settled move is an ordinary one.
        graph.set_settle(false);
        for i in 0..k {
            graph.nodes[r.idx as usize].edge_mut(0, i).unwrap().lost = false;
        }
        assert_eq!(graph.ucb(r, 0) as usize, most);
        // The best solved child is played over a most visited move worth less.
        graph.set_settle(true);
        let e = graph.nodes[r.idx as usize].edge_mut(0, most).unwrap();
        e.sum = 0.5 * e.visits as f64;
        let other = (most + 1) % k;
        graph.nodes[r.idx as usize].floor = (0.9, other as u16);
        let (mv, value, _) = graph.best(0).unwrap();
        assert_eq!((mv, value), (graph.nodes[r.idx as usize].role(0)[other].mv, 0.9));
        graph.nodes[r.idx as usize].floor = (0.1, other as u16);
        assert_eq!(graph.best(0).unwrap().0, graph.nodes[r.idx as usize].role(0)[most].mv);
    }

    /// A value backed up through a node whose chooser has secured more
    /// (its best solved child) reaches the node above lifted to that.
    #[test]
    fn values_are_lifted_to_what_the_chooser_has_secured() {
        let (mut m, mut graph) = searched(300);
        let mut path = Vec::new();
        let leaf = graph.select(&mut m, &mut path).unwrap();
        assert!(matches!(leaf, Leaf::Rollout(_)));
        assert!(path.len() >= 2, "the search is two plies deep");
        // o chooses at the second node; say it has a draw secured there.
        let below = path[1].node;
        graph.nodes[below.idx as usize].floor = (0.5, 0);
        let root_edge = |g: &Graph<PropnetMachine>| {
            let n = g.get(g.root).unwrap();
            n.role(0)[path[0].moves[0] as usize].sum
        };
        let before = root_edge(&graph);
        // x wins the rollout: o's 0 is lifted to its draw on the way up.
        graph.backprop(&path, &[1.0, 0.0]);
        assert!((root_edge(&graph) - before - 0.5).abs() < 1e-9);
        // Off, the value goes up as it is.
        graph.set_settle(false);
        let before = root_edge(&graph);
        graph.backprop(&path, &[1.0, 0.0]);
        assert!((root_edge(&graph) - before - 1.0).abs() < 1e-9);
    }

    #[test]
    fn an_exchange_is_valued_where_it_ends() {
        let nan = (f32::NAN, f32::NAN);
        let even = (0.0, 32.0);
        // White (role 0) takes a pawn: 16 against 15.
        let up = (1.0 / 31.0, 31.0);
        // ... and black takes one back: 15 against 15.
        let back = (0.0, 30.0);
        // The node after the capture does not end it; the one after the
        // quiet reply does, in white's favour (the logistic of a quarter
        // of the material times the share won: about 0.56).
        let path = [even, even, up, up, up];
        assert_eq!(exchange_value(&path, 2), None);
        let h = exchange_value(&path, 3).expect("the exchange ends at node 3");
        assert!((h - 1.0 / (1.0 + (-(31.0 / 4.0) / 31.0f64).exp())).abs() < 1e-6, "{h}");
        assert_eq!(exchange_value(&path, 4), None, "node 4 ends no exchange");
        // Taken and taken back: the exchange ends even, and moves nothing.
        assert_eq!(exchange_value(&[even, up, back, back], 3), None);
        // Black takes one more: measured against the node before the
        // whole exchange, black is a pawn up.
        let down = (-1.0 / 29.0, 29.0);
        let h = exchange_value(&[even, up, back, down, down], 4).expect("the exchange ends at node 4");
        assert!(h < 0.5, "{h}");
        // Unknown material (a recycled node) ends nothing; nor does an
        // exchange without a quiet move after it.
        assert_eq!(exchange_value(&[even, nan, up, up], 3), None);
        assert_eq!(exchange_value(&[even, up, back], 2), None);
        assert_eq!(exchange_value(&[even], 0), None);
    }

    #[test]
    fn rave_ranks_untried_moves_by_their_samples() {
        use super::{rave_shift, rave_untried, UNTRIED};
        // No samples: above everything, as without RAVE.
        assert_eq!(rave_untried(0, 0.0), UNTRIED);
        // Few samples still put an untried move first ...
        assert!(rave_untried(1, 0.0) > 5.0);
        // ... many rank it by them: a move whose rollouts won goes before
        // a tried move (4 visits, mean 0.6, exploration 0.7 sqrt(ln 50) /
        // 2), and one whose rollouts lost waits behind it.
        let good = rave_untried(40, 36.0);
        let bad = rave_untried(40, 4.0);
        let tried = 0.6 + 0.7 * 50f64.ln().sqrt() / 2.0;
        assert!(good > tried && tried > bad, "{good} {tried} {bad}");
        // A tried move: many samples at its own mean leave its mean alone
        // and cut its exploration towards a seventh; none change nothing.
        let shift = rave_shift(10.0, 0.5, 0.3, 1000.0, 0.5, 0.05);
        assert!(shift < 0.0 && shift > -0.3 * 6.0 / 7.0, "{shift}");
        assert_eq!(rave_shift(10.0, 0.5, 0.3, 0.0, 0.0, 0.05), 0.0);
        // Samples that won lift a move that lost.
        assert!(rave_shift(3.0, 0.0, 0.3, 100.0, 0.9, 0.05) > 0.3);
    }

    #[test]
    fn ln_is_close_to_the_library() {
        for x in (1..100_000u32).chain([1 << 20, 123_456_789, u32::MAX]) {
            let x = x as f64;
            assert!((super::ln(x) - x.ln()).abs() < 1e-7, "{x}: {} vs {}", super::ln(x), x.ln());
        }
    }
}
