//! Monte Carlo tree search, built as the Sancho posts describe: one search
//! thread owns the search graph ([`graph`]) and does select, expand and
//! back-propagation; rollout threads, each with its own machine instance,
//! run the simulations. They talk through two lock-free bounded ring
//! buffers (crossbeam's `ArrayQueue`): requests (a state, how many playouts)
//! one way, results (summed goals) the other. No lock is taken on the
//! graph, which only the search thread touches.
//!
//! Each request asks for several playouts, averaged into one result; the
//! number adapts so that the request queue stays about half full: the
//! rollout threads neither starve nor fall far behind.
//!
//! Root parallelisation (`Mode::Root`) is the other mode: independent
//! graphs, one per thread, merged at the root.

pub mod duel;
pub mod factored;
pub mod graph;
mod lanes;
pub mod mast;
mod modes;
pub mod tuning;
pub mod uct;
pub mod validate;

pub use factored::Factored;
pub use graph::{Graph, Leaf, NodeRef, Step};
pub use tuning::Tuning;

use crate::heuristic::{Evaluator, Material};
use crate::lanes::LANES;
use crate::machine::MachineError;
use crate::rng::Rng;
use crate::simulate::{policy_rollout, Greedy, Simulator};
use crossbeam_queue::ArrayQueue;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the threads are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Root parallelisation where the machine has lane code (each thread's
    /// lanes keep its own graph busy: one graph's tree work cannot feed
    /// more than about one core's lanes), the pipeline otherwise.
    Auto,
    /// One search thread and rollout threads around one graph.
    Pipeline,
    /// Independent searches, one graph per thread, merged at the root.
    Root,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "auto" => Ok(Mode::Auto),
            "pipeline" => Ok(Mode::Pipeline),
            "root" => Ok(Mode::Root),
            other => Err(format!("unknown mode `{other}` (auto, pipeline or root)")),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    /// Threads in all: with the pipeline, one searches and the others run
    /// rollouts (1: the search thread runs its rollouts itself).
    pub threads: usize,
    pub mode: Mode,
    /// Nodes in the pool (all graphs together in root mode).
    pub pool: usize,
    /// UCB exploration constant (values are 0..1).
    pub exploration: f64,
    /// Pin threads to cores.
    pub pin: bool,
    pub seed: u64,
    /// Greedy rollouts (take immediate wins, avoid immediate losses).
    pub greedy: bool,
    /// Which moves greedy rollouts try one ply ahead (the analysis's
    /// moves seen to end a game; `None`: all of them).
    pub greedy_moves: Option<Arc<Greedy>>,
    /// Rollouts in batches of the machine's preferred size (a JIT with
    /// bit-parallel lanes: 16 or more per leaf, averaged): several times
    /// the rollouts per second, but fewer iterations; off by default until
    /// matches show it plays better.
    pub batch: bool,
    /// Lane-parallel search: each lane of the machine's bit-parallel code
    /// plays one rollout from a different leaf (where the machine has lane
    /// code; else rollouts run one at a time).
    pub lanes: bool,
    /// With `lanes`: how many of a thread's lanes hold a selection at
    /// once (1..=128; the others idle). Fewer selections in flight means
    /// fewer virtual visits distorting the tree, and fewer rollouts.
    pub inflight: usize,
    /// Win-first lanes (with `lanes`): the inputs that win at once (the
    /// analysis's `winning` moves), played wherever one is legal
    /// (`lanes::Lanes::set_win_first`). Lane rollouts never run
    /// greedy rollouts; this is what they do instead.
    pub win_first: Option<Arc<[u32]>>,
    /// Safe-first lanes (with `win_first` or `decisive`): a lane's move after which
    /// another role has a winning move legal is taken back and another
    /// tried (`lanes::Lanes::set_safe_first`).
    pub safe_first: bool,
    /// Decisive lanes (with `lanes`): each rollout step tries the moves
    /// one ply ahead and takes one that wins at once
    /// (`lanes::Lanes::set_decisive`); in place of win-first moves.
    pub decisive: bool,
    /// Capture-first lanes (with `material` or `capture_table`): the
    /// chance that a rollout step with a capture legal plays one
    /// (`lanes::Lanes::set_capture_first`; 0: off). Without a table the
    /// decisive look-ahead finds the captures (it turns `decisive` on).
    pub capture: f64,
    /// The moves known to take a piece, with the pieces (bases) each
    /// takes (the analysis's `captures`): capture-first lanes read them
    /// instead of looking ahead (`lanes::Captures::Table`).
    pub capture_table: Option<Arc<crate::lanes::CaptureTable>>,
    /// Material-cutoff lane rollouts (with `material`): a rollout that has
    /// played this many steps without ending stops, valued by its
    /// material against the root's (`lanes::Lanes::set_cutoff`; 0: off).
    pub cutoff: u32,
    /// A learnt state evaluator (from the meta-game analysis): each new
    /// node starts with `prior_visits` virtual visits at its prediction.
    pub heuristic: Option<Arc<Evaluator>>,
    /// Material relative to the root (from the analysis, two-player
    /// capture games): new nodes start with its value; before `heuristic`.
    pub material: Option<Arc<Material>>,
    /// MAST rollouts (one search thread, rollouts one at a time): the
    /// share of random moves (`None`: uniformly random rollouts).
    pub mast: Option<f64>,
    /// Implicit minimax backups of the material (weight 0..1 of a child's
    /// minimax value in UCB; 0: off).
    pub minimax: f64,
    /// Independent factors found by the analysis (each factor's move
    /// indices): the player searches a game with two or more with
    /// [`Factored`] instead of [`Search`] (which does not read them).
    pub factors: Vec<Vec<u32>>,
    /// Per role, the greatest goal (0..1) the game can give (the analysis's
    /// goal bounds; empty: 1 for all): reaching it solves a node.
    pub goal_max: Vec<f64>,
    /// Make a node's terminal children when it is expanded, so that wins
    /// one move away solve it at once (the analysis turns it on where random
    /// play often misses such wins).
    pub expand_terminal: bool,
    /// A child joins the graph from this visit of the move to it on
    /// ([`Graph::set_expand_after`]; 1: at once).
    pub expand_after: u32,
    /// RAVE's bias (0: off; Sancho's is 0.05): lane rollouts report the
    /// moves they play and UCB blends in their all-moves-as-first values
    /// ([`Graph::set_rave`]).
    pub rave: f64,
    /// Periodic value normalisation where two roles' goals add up to the
    /// maximum ([`Graph::set_normalize`]).
    pub normalize: bool,
    /// Material seeds only where a move changes the material, relative to
    /// the node it leaves and that node's mean ([`Graph::set_local_material`]).
    pub local_material: bool,
    /// Rollout values moved by the material won in the exchanges on their
    /// path ([`Graph::set_material_backup`]).
    pub material_backup: bool,
    /// Proven losses at nodes they do not solve are not backed up
    /// ([`Graph::set_drop_lost`]).
    pub drop_lost: bool,
    /// Solved children passed by while a move is open, values lifted to
    /// the best solved child's ([`Graph::set_settle`]).
    pub settle: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads: 1,
            mode: Mode::Auto,
            pool: 1_000_000,
            exploration: 0.7,
            pin: false,
            seed: 1,
            greedy: false,
            greedy_moves: None,
            batch: false,
            lanes: false,
            inflight: LANES,
            win_first: None,
            safe_first: false,
            decisive: false,
            capture: 0.0,
            capture_table: None,
            cutoff: 0,
            heuristic: None,
            material: None,
            minimax: 0.0,
            mast: None,
            factors: Vec::new(),
            goal_max: Vec::new(),
            expand_terminal: false,
            expand_after: EXPAND_AFTER,
            rave: 0.0,
            normalize: false,
            local_material: false,
            material_backup: false,
            drop_lost: false,
            settle: false,
        }
    }
}

/// The default visit of a move at which its child joins the search graph
/// ([`Graph::set_expand_after`]; see docs/mcts.md, *Expansion*).
pub const EXPAND_AFTER: u32 = 3;

impl Config {
    /// Whether rollouts can run on lanes with these settings: greedy
    /// rollouts have no lane form unless win-first or decisive lanes stand
    /// in for them (the player's rule; else one leaf at a time).
    pub fn lanes_fit(&self) -> bool {
        !self.greedy || self.win_first.is_some() || self.decisive
    }

    /// What greedy rollouts try, when they are on (see [`Search::new`]).
    fn greedy_rollouts(&self) -> Option<&Greedy> {
        self.greedy_moves.as_deref().filter(|_| self.greedy)
    }
}

/// What a search did.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub seconds: f64,
    /// Selections (graph iterations).
    pub iterations: u64,
    pub rollouts: u64,
    pub nodes: usize,
    pub pool: usize,
    /// Share of the time the search thread spent on the graph (selection,
    /// expansion, back-propagation) rather than on rollouts of its own,
    /// which it runs when every rollout thread is busy: near 1, the search
    /// thread is the bottleneck.
    pub search_busy: f64,
    /// Share of the time the rollout threads waited for work (mean).
    pub rollout_idle: f64,
    /// Playouts per request at the end (adapted).
    pub per_request: u32,
    /// How rollouts chose their moves ([`Search::rollout_policy`]).
    pub rollout_policy: String,
    /// The visit of a move at which its child joins the graph
    /// ([`Graph::expand_after`]: 1 where heuristics start new nodes).
    pub expand_after: u32,
    /// Lane-parallel search: the most selections the search thread's
    /// lanes held at once ([`Config::inflight`] bounds it; 0 elsewhere).
    pub peak_inflight: usize,
}

impl Stats {
    pub fn iterations_per_s(&self) -> f64 {
        self.iterations as f64 / self.seconds.max(1e-9)
    }
    pub fn rollouts_per_s(&self) -> f64 {
        self.rollouts as f64 / self.seconds.max(1e-9)
    }
}

/// A rollout request: estimate the value of `state`.
struct Request<S> {
    id: u32,
    state: S,
    count: u32,
    seed: u64,
}

/// Goals summed over `count` playouts.
struct Reply {
    id: u32,
    sums: SmallVec<[f64; 4]>,
    count: u32,
}

const QUEUE: usize = 256;

/// Asked at every selection whether to stop before the deadline (shared
/// by the threads of root parallelisation).
pub type Interrupt<'a> = dyn Fn() -> bool + Sync + 'a;

/// How long the pipeline waits at its deadline for the rollouts in flight.
const DRAIN: Duration = Duration::from_millis(20);

/// Up to `count` rollouts from `s` (fewer when `stop` says so), their
/// goals / 100 added to `sums`: greedy ones, or the machine's own (native,
/// in batches where it can). Returns how many ran.
fn simulate<M: Simulator>(
    m: &mut M,
    greedy: Option<&Greedy>,
    s: &M::State,
    count: u32,
    rng: &mut Rng,
    sums: &mut [f64],
    stop: &dyn Fn() -> bool,
) -> Result<u32, MachineError>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    match greedy {
        Some(g) => crate::simulate::one_at_a_time(m, s, count, rng, sums, stop, |m, s, rng, goals| {
            crate::simulate::greedy_rollout(m, s, rng, goals, g)
        }),
        None => m.rollouts(s, count, rng, sums, stop),
    }
}

/// A lane runner for `m`, win-first and cut by material where `config`
/// says (the run sets the state cut rollouts are valued against).
fn lane_runner<M: Simulator>(m: &M, config: &Config) -> Option<crate::native::LaneRunner>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let mut r = m.lane_runner()?;
    if let Some(w) = &config.win_first {
        r.set_win_first(w);
    }
    r.set_decisive(config.decisive);
    if config.capture > 0.0 {
        let captures = match (&config.capture_table, &config.material) {
            (Some(t), _) => Some(crate::lanes::Captures::Table(t.to_vec())),
            (None, Some(mat)) => Some(crate::lanes::Captures::LookAhead((**mat).clone())),
            (None, None) => None,
        };
        if let Some(c) = &captures {
            r.set_capture_first(Some((config.capture, c)));
        }
    }
    r.set_safe_first(config.safe_first);
    // The search waits for the lanes' games after its deadline.
    r.set_plain_after_stop(true);
    if let (Some(mat), true) = (&config.material, config.cutoff > 0) {
        r.set_cutoff(Some((config.cutoff, mat)));
    }
    r.set_record_moves(config.rave > 0.0);
    Some(r)
}

fn pin(core: usize) {
    if let Some(ids) = core_affinity::get_core_ids() {
        if !ids.is_empty() {
            core_affinity::set_for_current(ids[core % ids.len()]);
        }
    }
}

/// A search: the graph and the machine of the search thread.
pub struct Search<M: Simulator>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub graph: Graph<M>,
    machine: M,
    config: Config,
    per_request: u32,
    /// Seeds each run, so that successive runs (pondering in slices) do
    /// not repeat the same playouts.
    seeds: Rng,
    /// The search thread's lane runner (lane-parallel search), kept
    /// between runs.
    runner: Option<crate::native::LaneRunner>,
    /// Root parallelisation: the other threads' searches, each with a
    /// graph of its own, kept between runs like this one's (so a player's
    /// trees carry over from turn to turn in every thread).
    peers: Vec<Search<M>>,
    /// MAST statistics (see [`Config::mast`]), kept from turn to turn.
    mast: Option<mast::Mast>,
    /// The moves of the current iteration (for MAST).
    played: Vec<(usize, M::Move)>,
}

impl<M: Simulator> Search<M>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    pub fn new(mut machine: M, root: M::State, mut config: Config) -> Result<Self, MachineError> {
        if config.greedy && config.greedy_moves.is_none() {
            // Greedy rollouts with no list of moves try them all.
            config.greedy_moves = Some(Arc::default());
        }
        let mut graph = Graph::new(&mut machine, root, config.pool, config.exploration, config.seed)?;
        graph.set_heuristic(config.heuristic.clone());
        graph.set_material(config.material.clone());
        graph.set_minimax(config.minimax);
        graph.set_goal_max(&config.goal_max);
        graph.set_expand_terminal(config.expand_terminal);
        graph.set_winning(config.win_first.clone());
        graph.set_expand_after(config.expand_after);
        graph.set_rave(config.rave);
        graph.set_normalize(config.normalize);
        graph.set_local_material(config.local_material);
        graph.set_material_backup(config.material_backup);
        graph.set_drop_lost(config.drop_lost);
        graph.set_settle(config.settle);
        let seeds = Rng::new(config.seed ^ 0x5eed);
        let per_request = if config.batch { machine.preferred_batch() } else { 1 };
        let runner = if config.lanes { lane_runner(&machine, &config) } else { None };
        let mast = config.mast.map(mast::Mast::new);
        Ok(Search { graph, machine, config, per_request, seeds, runner, peers: Vec::new(), mast, played: Vec::new() })
    }

    pub fn machine(&mut self) -> &mut M {
        &mut self.machine
    }

    /// Searches from the next run on with `threads` threads (at least
    /// one): a player sizes them to the matches it is playing. Root
    /// parallelisation's peers made for more threads keep their graphs
    /// (and count at the root) while fewer run.
    pub fn set_threads(&mut self, threads: usize) {
        self.config.threads = threads.max(1);
    }

    /// Moves the root to `state` (keeping what is known below it).
    pub fn set_root(&mut self, state: M::State) -> Result<(), MachineError> {
        for p in &mut self.peers {
            p.set_root(state.clone())?;
        }
        self.graph.set_root(&mut self.machine, state)
    }

    /// The mode a run uses: [`Mode::Auto`] resolved.
    pub fn mode(&self) -> Mode {
        match self.config.mode {
            Mode::Auto if self.config.threads > 1 && self.runner.is_some() => Mode::Root,
            Mode::Auto => Mode::Pipeline,
            m => m,
        }
    }

    /// The root's goals once solved (by this graph or any peer's).
    pub fn root_solved(&self) -> Option<SmallVec<[f64; 4]>> {
        self.graph.root_solved().or_else(|| self.peers.iter().find_map(|p| p.graph.root_solved()))
    }

    /// Searches until `deadline`.
    pub fn run(&mut self, deadline: Instant) -> Result<Stats, MachineError> {
        self.run_until(deadline, &|| false)
    }

    /// Searches until `deadline`, or until `interrupt` says so (it is asked
    /// at every selection: the player stops pondering when a request
    /// comes, so that its threads live as long as it has nothing else to
    /// do). Every selection's value is backed up, or its visits taken back,
    /// before this returns.
    pub fn run_until(&mut self, deadline: Instant, interrupt: &Interrupt<'_>) -> Result<Stats, MachineError> {
        let mut stats = self.run_any(deadline, interrupt)?;
        stats.rollout_policy = self.rollout_policy();
        stats.expand_after = self.graph.expand_after();
        Ok(stats)
    }

    /// [`Search::run_until`] in the mode and on the machine configured.
    fn run_any(&mut self, deadline: Instant, interrupt: &Interrupt<'_>) -> Result<Stats, MachineError> {
        let rollout_threads = self.config.threads.saturating_sub(1);
        if self.mode() == Mode::Root && self.config.threads > 1 {
            return self.run_root(deadline, interrupt);
        }
        if self.runner.is_some() {
            let n = if self.machine.portable_states() { rollout_threads } else { 0 };
            return self.run_lanes(deadline, interrupt, n);
        }
        if rollout_threads == 0 || !self.machine.portable_states() {
            return self.run_inline(deadline, interrupt);
        }
        self.run_pipeline(deadline, interrupt, rollout_threads)
    }

    /// Whether rollouts run lane-parallel ([`Config::lanes`] on a machine
    /// with lane code).
    pub fn lane_parallel(&self) -> bool {
        self.runner.is_some()
    }

    /// How rollouts choose their moves, for reports: `greedy` or `uniform`
    /// one at a time, or lanes with what they do besides uniform draws
    /// (`decisive safe-first lanes`, `win-first lanes, cut by material`,
    /// `win-first lanes, captures first by table`, ...).
    pub fn rollout_policy(&self) -> String {
        let Some(r) = &self.runner else {
            return if self.config.greedy_rollouts().is_some() { "greedy" } else { "uniform" }.into();
        };
        let mut p = String::new();
        if r.decisive() {
            p += "decisive ";
        }
        if r.safe_first() {
            p += "safe-first ";
        }
        if r.capture_first().is_some() && !r.capture_table() {
            p += "capture-first ";
        } else if !r.decisive() && !r.safe_first() && !r.win_first().is_empty() {
            p += "win-first ";
        }
        p += "lanes";
        if r.cutoff().is_some() {
            p += ", cut by material";
        }
        if r.capture_table() {
            p += ", captures first by table";
        }
        p
    }

    /// `role`'s move to play now, with its value (0..1) and visits.
    /// With peers (root parallelisation): a graph that solved the root
    /// decides; otherwise the move with the most visits summed over the
    /// graphs, valued by its summed mean.
    pub fn best(&self, role: usize) -> Option<(M::Move, f64, u32)> {
        if self.peers.is_empty() || self.graph.is_root_solved() {
            return self.graph.best(role);
        }
        if let Some(p) = self.peers.iter().find(|p| p.graph.is_root_solved()) {
            return p.graph.best(role);
        }
        let t = self.root_stats(role)?;
        let i = graph::move_to_play(t.moves.len(), |i| t.visits[i], |i| t.lost[i])?;
        let mean = if t.visits[i] > 0 { t.sums[i] / t.visits[i] as f64 } else { 0.0 };
        Some((t.moves[i], mean, t.visits[i]))
    }

    /// `role`'s move statistics at the root, summed over this search's
    /// graphs (root parallelisation keeps one per thread).
    pub fn root_stats(&self, role: usize) -> Option<graph::RootStats<M::Move>> {
        let mut t = self.graph.root_stats(role)?;
        for p in &self.peers {
            if let Some(o) = p.graph.root_stats(role).filter(|o| o.moves == t.moves) {
                for i in 0..t.visits.len() {
                    t.visits[i] += o.visits[i];
                    t.sums[i] += o.sums[i];
                    // A proof in one graph holds in all.
                    t.lost[i] |= o.lost[i];
                }
            }
        }
        Some(t)
    }

    /// The graphs of this search and its peers (root parallelisation).
    pub fn graphs(&self) -> impl Iterator<Item = &Graph<M>> {
        std::iter::once(&self.graph).chain(self.peers.iter().map(|p| &p.graph))
    }
}
