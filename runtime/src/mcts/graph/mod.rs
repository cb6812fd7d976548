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

mod backup;
mod material;
mod pool;
mod select;
mod solver;

use material::exchange_value;
use select::ln;

/// [`Node::proof`] of a node not solved from its children.
const NO_PROOF: u16 = u16::MAX;

/// A reference to a node that knows which life of the slot it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRef {
    pub idx: u32,
    pub gen: u32,
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

    /// Makes the node of `state` the root (reusing it if it is in the graph).
    pub fn set_root(&mut self, m: &mut M, state: M::State) -> Result<(), MachineError> {
        self.root = self.node_for(m, state)?;
        Ok(())
    }

    pub fn root_state(&self) -> Option<&M::State> {
        self.get(self.root).and_then(|n| n.state.as_ref())
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

    /// The role that has a choice at the root (the first with more than one
    /// legal move), or role 0.
    pub fn chooser(&self) -> usize {
        self.get(self.root).and_then(|n| (0..n.ends.len()).find(|&r| n.moves(r) > 1)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests;
