//! One match as the player plays it: a thread that owns the match's brain
//! (single writer: nobody else touches the search), takes commands from the
//! HTTP handlers over a channel, searches while it waits for them
//! (pondering), and switches to faster machines as a background builder
//! finishes them (prover first, then interpreted propnet, then JIT).
//!
//! Beside it a fallback thread follows the match on a machine of its own
//! (the prover, then the interpreted propnet) and answers each turn's
//! legal moves, so that a handler whose search is late still answers a
//! move legal in the current state. Every thread a match starts holds
//! [`Alive`]; the match's cancel flag stops them all (abort, stop, a
//! match thread that ends), and the build flag stops the builder alone
//! (the start clock, the server's memory).

use super::brain::{Brain, Choice, Illegal, MachineBrain, Strategy};
use super::budget::{Budget, Reservation};
use super::logs::match_dir;
use crate::machines::MachineKind;
use anyhow::{anyhow, Result};
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender, TryRecvError};
use propel_compiler::lower::Cancel;
use propel_compiler::{Deadline, Game};
use propel_runtime::analysis::analyse_until;
use propel_runtime::build::{prepare, BuildOptions};
use propel_runtime::mcts::validate::{validate, Pace};
use propel_runtime::mcts::Stats;
use propel_runtime::{Hybrid, Prover, Rng};
use rustc_hash::FxHashMap;
use serde_json::json;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tracing::{debug, info, info_span, warn};

/// What the background builder sends a match.
pub enum Built {
    /// A brain on a faster machine, at the initial state, and a plain
    /// brain on the same kind of machine for the fallback thread.
    Brain(Box<dyn Brain>, Option<Box<dyn Brain>>),
    /// The meta-game analysis, for the statistics file.
    Analysis(serde_json::Value),
    /// A puzzle's winning line, found by the solver.
    Solution(Vec<String>),
    /// The build plan, for the statistics file.
    Plan(serde_json::Value),
    /// What the validation of the analysis's settings found.
    Validation(serde_json::Value),
}

/// Seeds an in-process manager chose, by `"MATCH_ID ROLE"`.
pub type MatchSeeds = Arc<Mutex<FxHashMap<String, u64>>>;

/// How a player plays its matches.
#[derive(Clone, Debug)]
pub struct PlayerConfig {
    /// The name answered to `info`, and the log folder's name.
    pub name: String,
    pub strategy: Strategy,
    /// Seconds kept in hand on every clock (capped at 30% of the clock).
    pub margin: f64,
    /// Where match logs and statistics go (none: not written).
    pub log_dir: Option<PathBuf>,
    /// Machines built in the background after the prover, in order.
    pub machines: Vec<MachineKind>,
    /// Run the meta-game analysis during the start clock and use it.
    pub analysis: bool,
    /// Duel the analysis's settings against plain ones in the start clock
    /// and keep them only on a measured gain (`mcts::validate`).
    pub validation: bool,
    /// Initialise new nodes from the analysis's heuristic evaluator.
    pub heuristics: bool,
    /// Search the analysis's factors one by one.
    pub factored: bool,
    /// Search settings from the command line (what the analysis may turn on).
    pub tuning: propel_runtime::mcts::Tuning,
    /// Use the hybrid machine (tree on the propnet, lane-parallel rollouts
    /// and expansions on the JIT's lanes) wherever the JIT has lanes.
    pub lanes: bool,
    /// Every match's seed derives from it, the match id and the role
    /// (unless `seeds` holds one for the match).
    pub seed: u64,
    pub seeds: MatchSeeds,
    /// How the background builder builds (grounding, passes, code generation).
    pub build: BuildOptions,
    /// Clocks longer than this (seconds) are taken as this long.
    pub max_clock: f64,
    /// The server's memory limit in bytes, shared by its matches.
    pub max_memory: u64,
    pub http: super::http::Limits,
    /// Seconds a match waits for its next command, counted from the end
    /// of its start clock or from its last command, before it leaves
    /// (the manager has gone away); `None`: [`abandon_after`] of the play
    /// clock.
    pub abandon_after: Option<f64>,
    /// Test hook: the search never answers, so that every move comes
    /// from the handlers' fallback.
    pub stall_search: bool,
    /// How many threads a match's search runs.
    pub threads: Threads,
}

/// How many threads a match's search runs.
#[derive(Clone, Debug)]
pub enum Threads {
    /// As many as the strategy says (`--threads`).
    Fixed,
    /// The machine's cores shared by the matches being played: a match
    /// that starts or ends changes the others' share at their next search.
    Share { cores: usize, playing: Arc<AtomicUsize> },
}

impl Threads {
    /// The cores of this machine shared among the matches played.
    pub fn share(cores: usize) -> Threads {
        Threads::Share { cores: cores.max(1), playing: Arc::new(AtomicUsize::new(0)) }
    }

    /// Counts a match as played until the guard drops.
    fn playing(&self) -> Option<Playing> {
        match self {
            Threads::Fixed => None,
            Threads::Share { playing, .. } => {
                // Relaxed: the count only sizes thread pools; it guards no data.
                playing.fetch_add(1, Ordering::Relaxed);
                Some(Playing(playing.clone()))
            }
        }
    }

    /// A match's threads now (`None`: as configured).
    fn now(&self) -> Option<usize> {
        match self {
            Threads::Fixed => None,
            // Relaxed: as in `playing`.
            Threads::Share { cores, playing } => Some((cores / playing.load(Ordering::Relaxed).max(1)).max(1)),
        }
    }
}

/// A match being played, counted in [`Threads::Share`].
struct Playing(Arc<AtomicUsize>);

impl Drop for Playing {
    fn drop(&mut self) {
        // Relaxed: see `Threads::playing`.
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PlayerConfig {
    /// The time kept in hand on a clock of `clock` seconds.
    pub fn margin_for(&self, clock: f64) -> Duration {
        Duration::from_secs_f64(self.margin.min(0.3 * clock).max(0.0))
    }

    /// The seed of `role`'s play in match `id`: the one an in-process
    /// manager registered, else one derived from `seed`, the id and the role.
    pub fn match_seed(&self, id: &str, role: &str) -> u64 {
        let key = format!("{id} {role}");
        if let Some(s) = self.seeds.lock().ok().and_then(|mut m| m.remove(&key)) {
            return s;
        }
        mix(mix(self.seed, text_hash(id)), text_hash(role))
    }
}

/// SplitMix64's finaliser over the two words: seeds that differ in one
/// bit give unrelated streams.
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a: the same on every run and platform (unlike std's hasher).
fn text_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Why a request got no move: the manager's mistake (400) or ours.
#[derive(Clone, Debug)]
pub enum Refusal {
    Bad(String),
    Failed(String),
}

impl Refusal {
    fn of(e: anyhow::Error) -> Refusal {
        if e.downcast_ref::<Illegal>().is_some() {
            Refusal::Bad(format!("{e:#}"))
        } else {
            Refusal::Failed(format!("{e:#}"))
        }
    }
}

/// A request from an HTTP handler to the match thread.
pub enum Command {
    Play { moves: Option<Vec<String>>, deadline: Instant, reply: Sender<Result<String, Refusal>> },
    Stop { moves: Option<Vec<String>>, reply: Sender<Result<(), Refusal>> },
    Abort,
}

/// A request to the fallback thread.
pub enum Job {
    /// Apply the turn's joint move (none on the first turn) and answer
    /// our legal moves in the new state.
    Turn { moves: Option<Vec<String>>, reply: Sender<Result<Vec<String>, Refusal>> },
    /// Go on on this machine (at the initial state), once it has replayed
    /// the moves so far.
    Upgrade(Box<dyn Brain>),
}

/// The threads a match started that are still running, and the memory
/// they hold: given back, and the allocator trimmed, when the last ends.
#[derive(Default)]
pub struct Life {
    threads: AtomicUsize,
    memory: Mutex<Option<Reservation>>,
}

/// Held by each thread of a match.
pub struct Alive(Arc<Life>);

impl Life {
    pub fn enter(self: &Arc<Self>) -> Alive {
        // Relaxed: counting up needs no order; see `Alive::drop`.
        self.threads.fetch_add(1, Ordering::Relaxed);
        Alive(self.clone())
    }

    pub fn threads(&self) -> usize {
        self.threads.load(Ordering::Acquire)
    }

    /// Gives `bytes` of the match's reservation back (at most what it holds).
    fn give_back(&self, bytes: u64) {
        if let Ok(mut m) = self.memory.lock() {
            if let Some(r) = m.as_mut() {
                r.shrink(bytes);
            }
        }
    }
}

/// The build's memory, given back when the builder ends (after what it
/// built and dropped is freed), less what the machines it built keep.
struct BuildMemory<'a> {
    shared: &'a Shared,
    kept: u64,
}

impl Drop for BuildMemory<'_> {
    fn drop(&mut self) {
        self.shared.life.give_back(self.shared.budget.build_bytes.saturating_sub(self.kept));
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        // AcqRel: the last thread out acquires every other thread's
        // release, so all that they freed is freed before the trim.
        if self.0.threads.fetch_sub(1, Ordering::AcqRel) == 1 {
            let held = self.0.memory.lock().ok().and_then(|mut m| m.take());
            drop(held);
            super::budget::trim();
        }
    }
}

/// What the handlers and the match's threads share.
pub struct Shared {
    pub id: String,
    /// Raised: every thread of the match stops.
    pub cancel: Arc<AtomicBool>,
    /// Raised: the builder stops (grounding, analysis, code generation).
    pub build_cancel: Arc<AtomicBool>,
    /// When the builder must be done (the end of the start clock).
    pub build_deadline: Instant,
    pub life: Arc<Life>,
    pub budget: Budget,
    pub play_clock: f64,
    /// The match's log span, once the rules are accepted (the handlers
    /// log fallbacks in it).
    pub span: OnceLock<tracing::Span>,
    stats: OnceLock<Mutex<std::fs::File>>,
    /// Why the match could not go on, for the handlers' answers.
    pub failure: Mutex<Option<String>>,
    /// Picks the fallback's moves.
    pub rng: Mutex<Rng>,
}

impl Shared {
    /// Stops every thread of the match.
    pub fn cancel(&self) {
        // Relaxed: the flags publish no data; a thread reads them at its
        // next check, which bounds how long it runs on.
        self.build_cancel.store(true, Ordering::Relaxed);
        self.cancel.store(true, Ordering::Relaxed);
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Writes one line to `stats.jsonl`.
    pub fn record(&self, line: &serde_json::Value) {
        if let Some(f) = self.stats.get() {
            if let Ok(mut f) = f.lock() {
                // A line lost to a full disk is not worth stopping a match for.
                let _ = writeln!(f, "{line}");
            }
        }
    }

    fn fail(&self, why: &str) {
        if let Ok(mut f) = self.failure.lock() {
            f.get_or_insert_with(|| why.to_string());
        }
    }
}

/// Raises the match's cancel flag when the match thread ends, however it ends.
struct CancelOnDrop(Arc<Shared>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The handlers' side of a running match.
pub struct MatchHandle {
    pub commands: Sender<Command>,
    pub jobs: Sender<Job>,
    pub shared: Arc<Shared>,
}

pub struct StartRequest {
    pub id: String,
    pub role: String,
    pub rules: String,
    pub start_clock: f64,
    pub play_clock: f64,
    pub received: Instant,
}

/// Starts a match thread with `budget` (what `memory` holds). `ready`
/// gets `Ok` shortly before the start clock runs out, or the reason the
/// match cannot be played.
pub fn spawn(
    cfg: Arc<PlayerConfig>,
    req: StartRequest,
    budget: Budget,
    memory: Reservation,
    ready: Sender<Result<(), Refusal>>,
) -> Result<MatchHandle> {
    let (commands, command_rx) = unbounded();
    let (jobs, job_rx) = unbounded();
    let ready_at = req.received + Duration::from_secs_f64(req.start_clock) - cfg.margin_for(req.start_clock);
    let seed = cfg.match_seed(&req.id, &req.role);
    let life = Arc::new(Life::default());
    if let Ok(mut m) = life.memory.lock() {
        *m = Some(memory);
    }
    let shared = Arc::new(Shared {
        id: req.id.clone(),
        cancel: Arc::new(AtomicBool::new(false)),
        build_cancel: Arc::new(AtomicBool::new(false)),
        build_deadline: ready_at,
        life: life.clone(),
        budget,
        play_clock: req.play_clock,
        span: OnceLock::new(),
        stats: OnceLock::new(),
        failure: Mutex::new(None),
        rng: Mutex::new(Rng::new(mix(seed, 0xfa11))),
    });
    let handle = MatchHandle { commands, jobs: jobs.clone(), shared: shared.clone() };
    let alive = life.enter();
    std::thread::Builder::new().name(thread_name("m", &req.id)).spawn(move || {
        let _alive = alive;
        let _stop = CancelOnDrop(shared.clone());
        let r = Match::start(cfg, req, seed, ready_at, shared.clone(), command_rx, jobs, job_rx, &ready);
        match r {
            Ok(mut m) => {
                let span = m.shared.span.get().cloned().unwrap_or_else(tracing::Span::none);
                span.in_scope(|| m.serve());
            }
            Err(e) => {
                let why = match &e {
                    Refusal::Bad(s) | Refusal::Failed(s) => s.clone(),
                };
                debug!(match_id = %shared.id, "cannot play: {why}");
                shared.fail(&why);
                let _ = ready.send(Err(e));
            }
        }
    })?;
    Ok(handle)
}

/// A match thread's name: `KIND:ID` (what `/proc/PID/task/*/comm` shows,
/// cut at 15 bytes there), printable ASCII only.
fn thread_name(kind: &str, id: &str) -> String {
    let id: String = id.chars().map(|c| if c.is_ascii_graphic() { c } else { '_' }).take(40).collect();
    format!("{kind}:{id}")
}

/// Search totals between two replies.
#[derive(Default)]
struct Acc {
    seconds: f64,
    iterations: u64,
    rollouts: u64,
    busy: f64,
    idle: f64,
    last: Option<Stats>,
}

impl Acc {
    fn add(&mut self, s: Stats) {
        self.seconds += s.seconds;
        self.iterations += s.iterations;
        self.rollouts += s.rollouts;
        self.busy += s.search_busy * s.seconds;
        self.idle += s.rollout_idle * s.seconds;
        self.last = Some(s);
    }

    fn iterations_per_s(&self) -> f64 {
        self.iterations as f64 / self.seconds.max(1e-9)
    }

    fn json(&self) -> serde_json::Value {
        let t = self.seconds.max(1e-9);
        let last = self.last.clone().unwrap_or_default();
        json!({
            "search_seconds": self.seconds,
            "iterations": self.iterations,
            "rollouts": self.rollouts,
            "iterations_per_s": self.iterations as f64 / t,
            "rollouts_per_s": self.rollouts as f64 / t,
            "search_busy": self.busy / t,
            "rollout_idle": self.idle / t,
            "nodes": last.nodes,
            "pool": last.pool,
            "rollouts_per_request": last.per_request,
            "rollout_policy": last.rollout_policy,
            "expand_after": last.expand_after,
        })
    }
}

/// How long a match waits for its next command before it gives up (the
/// manager has gone away), unless `--abandon-after` says otherwise.
fn abandon_after(play_clock: f64) -> Duration {
    Duration::from_secs_f64(60.0 + 10.0 * play_clock)
}

/// Pondering is done in slices so that commands and new machines are
/// picked up quickly.
const SLICE: Duration = Duration::from_millis(100);

/// How often waiting threads look at the cancel flag.
const POLL: Duration = Duration::from_millis(20);

struct Match {
    role: usize,
    game: Arc<Game>,
    brain: Box<dyn Brain>,
    /// Joint moves so far (replayed on a new machine).
    history: Vec<Vec<String>>,
    builds: Receiver<Built>,
    /// A puzzle's solution: the moves to play, turn by turn.
    plan: Option<Vec<String>>,
    commands: Receiver<Command>,
    /// New machines for the fallback thread.
    jobs: Sender<Job>,
    shared: Arc<Shared>,
    acc: Acc,
    started: Instant,
    last_command: Instant,
    /// How long to wait for the next command ([`PlayerConfig::abandon_after`]).
    idle: Duration,
    search: bool,
    stall: bool,
    threads: Threads,
    _playing: Option<Playing>,
    /// How far past its deadline the search lately returned: later
    /// searches stop this much earlier, so that the search answers and
    /// not the fallback (a lane batch or a prover iteration under load
    /// can finish well after the clock was read).
    late: Duration,
}

impl Match {
    /// Reads the rules, builds the prover, starts the fallback thread and
    /// the builder, and searches until the start clock (less the margin)
    /// runs out. Nothing is written to the log folder before the rules,
    /// the role and the prover are accepted.
    #[allow(clippy::too_many_arguments)]
    fn start(
        cfg: Arc<PlayerConfig>,
        req: StartRequest,
        seed: u64,
        ready_at: Instant,
        shared: Arc<Shared>,
        commands: Receiver<Command>,
        jobs: Sender<Job>,
        job_rx: Receiver<Job>,
        ready: &Sender<Result<(), Refusal>>,
    ) -> Result<Match, Refusal> {
        let aborted = || Refusal::Bad("the match was aborted while it started".into());
        let game = propel_compiler::load(&format!("match {}", req.id), req.rules.as_bytes())
            .map_err(|e| Refusal::Bad(format!("the rules: {e}")))?;
        drop(req.rules);
        if shared.cancelled() {
            return Err(aborted());
        }
        let game = Arc::new(game);
        let roles = game.role_names();
        let role = roles.iter().position(|r| *r == req.role).ok_or_else(|| {
            Refusal::Bad(format!("`{}` is not a role of this game (roles: {})", req.role, roles.join(", ")))
        })?;
        // The prover derives the static facts and the initial state by the
        // first play's deadline (the handler answers `ready` at the end of
        // the start clock whatever it does, and the first play waits for
        // the fallback's legal moves); its flag stays with it (and its clone).
        let first_play = ready_at + Duration::from_secs_f64(shared.play_clock);
        let stop = Deadline::at(first_play).with_cancel(Some(shared.cancel.clone()));
        let prover = Prover::with_limits(game.clone(), shared.budget.prover_facts, stop).map_err(|e| {
            if shared.cancelled() {
                aborted()
            } else {
                Refusal::Failed(format!("the prover: {e}"))
            }
        })?;

        let span = info_span!("match", player = %cfg.name, id = %req.id);
        let _ = shared.span.set(span.clone());
        let _enter = span.enter();
        if let Some(d) = &cfg.log_dir {
            let dir = match_dir(d, &cfg.name, &req.id);
            match std::fs::create_dir_all(&dir).and_then(|_| std::fs::File::create(dir.join("stats.jsonl"))) {
                Ok(f) => {
                    let _ = shared.stats.set(Mutex::new(f));
                }
                // The answer names no path of ours; the log does.
                Err(e) => {
                    warn!("cannot write statistics in {}: {e}", dir.display());
                    return Err(Refusal::Failed("cannot write the match's statistics".into()));
                }
            }
        }
        let b = &shared.budget;
        info!(
            role = %req.role, start_clock = req.start_clock, play_clock = req.play_clock, seed,
            "start (budget {} MiB: prover {} facts, {}, pool {} nodes)",
            b.bytes >> 20, b.prover_facts,
            if b.build { format!("builds up to {} rules", b.max_rules) } else { "no builds: the prover alone".into() },
            b.pool
        );
        let mut strategy = cfg.strategy.clone();
        if let Strategy::Mcts(c) = &mut strategy {
            c.seed = seed;
            c.pool = c.pool.min(b.pool);
        }
        let twin = MachineBrain::new("prover", prover.clone(), &Strategy::Legal, seed).map_err(Refusal::of)?;
        spawn_fallback(Box::new(twin), role, job_rx, shared.clone()).map_err(Refusal::of)?;
        let brain: Box<dyn Brain> =
            Box::new(MachineBrain::new("prover", prover, &strategy, seed).map_err(Refusal::of)?);
        let (btx, builds) = crossbeam_channel::bounded(4);
        let search = matches!(cfg.strategy, Strategy::Mcts(_) | Strategy::Uct);
        if search && b.build {
            spawn_builder(cfg.clone(), strategy, seed, game.clone(), shared.clone(), btx).map_err(Refusal::of)?;
        }
        let mut m = Match {
            role,
            game,
            brain,
            history: Vec::new(),
            builds,
            plan: None,
            commands,
            jobs,
            shared,
            acc: Acc::default(),
            started: req.received,
            last_command: req.received,
            idle: cfg.abandon_after.map_or_else(|| abandon_after(req.play_clock), Duration::from_secs_f64),
            search,
            stall: cfg.stall_search,
            threads: cfg.threads.clone(),
            _playing: cfg.threads.playing(),
            late: Duration::ZERO,
        };
        // Use the whole start clock: build, switch, and search the first move.
        m.think_until(ready_at).map_err(Refusal::of)?;
        if m.shared.cancelled() {
            return Err(aborted());
        }
        m.record(json!({"phase": "start", "machine": m.brain.machine()}));
        // The wait for the first play starts now: a manager sends it only
        // once every player's start has answered or run out its clock,
        // so a long start clock must not count against it.
        m.last_command = Instant::now();
        let _ = ready.send(Ok(()));
        Ok(m)
    }

    fn serve(&mut self) {
        loop {
            if self.shared.cancelled() {
                return;
            }
            let cmd = if self.search && !self.brain.terminal().unwrap_or(true) {
                match self.commands.try_recv() {
                    Ok(c) => c,
                    Err(TryRecvError::Empty) => {
                        // Ponders until a command (or a new machine) comes.
                        if let Err(e) = self.think_until(self.last_command + self.idle) {
                            warn!("pondering: {e:#}");
                            std::thread::sleep(POLL);
                        }
                        if self.last_command.elapsed() > self.idle {
                            warn!("no command for too long; leaving the match");
                            return;
                        }
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return,
                }
            } else {
                match self.commands.recv_timeout(POLL * 5) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => {
                        if self.last_command.elapsed() > self.idle {
                            warn!("no command for too long; leaving the match");
                            return;
                        }
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            self.last_command = Instant::now();
            match cmd {
                Command::Play { moves, deadline, reply } => {
                    let r = self.play(moves, deadline).map_err(|e| {
                        warn!("play: {e:#}");
                        Refusal::of(e)
                    });
                    let _ = reply.send(r);
                }
                Command::Stop { moves, reply } => {
                    let _ = reply.send(self.stop(moves).map_err(Refusal::of));
                    return;
                }
                Command::Abort => {
                    info!("aborted");
                    self.record(json!({"phase": "abort"}));
                    return;
                }
            }
        }
    }

    fn advance(&mut self, moves: Option<Vec<String>>) -> Result<()> {
        match moves {
            None if self.history.is_empty() => Ok(()),
            None => Err(Illegal(format!("`nil` moves after turn {}", self.history.len())).into()),
            Some(joint) => {
                self.brain.advance(&joint)?;
                debug!(turn = self.history.len(), "moves {}", joint.join(" "));
                self.history.push(joint);
                Ok(())
            }
        }
    }

    fn play(&mut self, moves: Option<Vec<String>>, deadline: Instant) -> Result<String> {
        self.advance(moves)?;
        if self.brain.terminal()? {
            return Err(Illegal("asked to play in a terminal state".into()).into());
        }
        let only = self.brain.only_move(self.role)?;
        let Choice { mv, value, visits } = match (self.planned(), only) {
            (Some(mv), _) => Choice { mv, value: Some(100.0), visits: 0 },
            // Nothing to decide: answered at once (the search goes on
            // pondering until the next command).
            (None, Some(mv)) => Choice { mv, value: None, visits: 0 },
            (None, None) => {
                if self.search {
                    // Stops early by what the last searches ran over, at
                    // most half of the time there is.
                    let room = deadline.saturating_duration_since(Instant::now());
                    let target = deadline - self.late.min(room / 2);
                    self.think_until(target)?;
                    let over = Instant::now().saturating_duration_since(target);
                    // Up at once, down slowly.
                    self.late = over.max(self.late.mul_f64(0.8));
                }
                self.brain.choose(self.role)?
            }
        };
        let turn = self.history.len();
        match value {
            Some(v) => {
                info!(turn, "plays {mv} (value {v:.1}, {visits} visits, {:.0} it/s)", self.acc.iterations_per_s())
            }
            None => info!(turn, "plays {mv}"),
        }
        let solved = self.brain.solved();
        self.record(json!({"phase": "play", "turn": turn, "machine": self.brain.machine(), "move": mv, "value": value, "visits": visits, "solved": solved}));
        Ok(mv)
    }

    fn stop(&mut self, moves: Option<Vec<String>>) -> Result<()> {
        self.advance(moves)?;
        let goals = self.brain.goals()?;
        info!("done: goals {goals:?} (we are role {})", self.role);
        self.record(json!({"phase": "stop", "turn": self.history.len(), "goals": goals, "role": self.role}));
        Ok(())
    }

    /// Searches (or just waits, for strategies that do not search) until
    /// `deadline`, until a command comes or until the match is cancelled,
    /// switching to new machines as they arrive. The search runs without a
    /// break in between (its threads and rollouts in flight live on),
    /// interrupted only by those.
    fn think_until(&mut self, deadline: Instant) -> Result<()> {
        if self.stall {
            // The test hook: a search that never answers (until the match ends).
            while !self.shared.cancelled() {
                std::thread::sleep(POLL);
            }
            return Ok(());
        }
        loop {
            self.take_builds();
            let now = Instant::now();
            if now >= deadline || !self.commands.is_empty() || self.shared.cancelled() {
                return Ok(());
            }
            if self.search && !self.brain.terminal()? {
                if let Some(n) = self.threads.now() {
                    self.brain.set_threads(n);
                }
                let Match { commands, builds, brain, shared, .. } = self;
                let cancel = &shared.cancel;
                // Relaxed: see `Shared::cancel`.
                let interrupt = || !commands.is_empty() || !builds.is_empty() || cancel.load(Ordering::Relaxed);
                match brain.think(deadline, &interrupt) {
                    Ok(Some(s)) => self.acc.add(s),
                    Ok(None) => {}
                    // A game the search cannot take (a million moves in a
                    // state): the match goes on with random legal moves.
                    Err(e) if !self.shared.cancelled() => {
                        warn!("the search failed, playing on without it: {e:#}");
                        self.search = false;
                    }
                    Err(_) => return Ok(()),
                }
            } else {
                let until = deadline.min(now + SLICE);
                match self.builds.recv_deadline(until) {
                    Ok(b) => self.take(b),
                    Err(_) => std::thread::sleep(until.saturating_duration_since(Instant::now()).min(POLL)),
                }
            }
        }
    }

    fn take_builds(&mut self) {
        while let Ok(b) = self.builds.try_recv() {
            self.take(b);
        }
    }

    fn take(&mut self, b: Built) {
        match b {
            Built::Brain(b, twin) => self.switch(b, twin),
            Built::Analysis(a) => self.record(json!({"event": "analysis", "analysis": a})),
            Built::Solution(p) => {
                info!("puzzle solved in {} moves; following the solution", p.len());
                self.plan = Some(p);
            }
            Built::Plan(p) => self.record(json!({"event": "plan", "plan": p})),
            Built::Validation(v) => self.record(json!({"event": "validation", "validation": v})),
        }
    }

    /// The solution's move for this turn, if it is still legal here.
    fn planned(&mut self) -> Option<String> {
        let mv = self.plan.as_ref()?.get(self.history.len())?.clone();
        self.brain.legal(self.role).ok()?.contains(&mv).then_some(mv)
    }

    /// Moves to a new machine if it agrees with the current one on the
    /// moves so far; its twin goes to the fallback thread.
    fn switch(&mut self, mut b: Box<dyn Brain>, twin: Option<Box<dyn Brain>>) {
        let mut check = || -> Result<()> {
            for joint in &self.history {
                b.advance(joint)?;
            }
            for r in 0..self.brain.roles().len() {
                let (mut a, mut c) = (self.brain.legal(r)?, b.legal(r)?);
                a.sort();
                c.sort();
                if a != c {
                    return Err(anyhow!("legal moves of role {r} differ: {a:?} vs {c:?}"));
                }
            }
            Ok(())
        };
        match check() {
            Ok(()) => {
                info!(at = format!("{:.2}", self.started.elapsed().as_secs_f64()), "now on the {}", b.machine());
                let at = self.started.elapsed().as_secs_f64();
                self.record(json!({"event": "machine", "machine": b.machine(), "turn": self.history.len(), "at": at}));
                let from_prover = self.brain.machine() == "prover";
                self.brain = b;
                if from_prover {
                    // The prover is gone (the fallback's too, with the twin).
                    self.shared.life.give_back(self.shared.budget.prover_bytes);
                }
                if let Some(t) = twin {
                    let _ = self.jobs.send(Job::Upgrade(t));
                }
            }
            Err(e) => warn!("not switching to the {}: {e:#}", b.machine()),
        }
    }

    /// Writes one stats line: `line` plus the search totals since the last.
    fn record(&mut self, mut line: serde_json::Value) {
        if let (Some(obj), serde_json::Value::Object(acc)) = (line.as_object_mut(), self.acc.json()) {
            if obj.contains_key("phase") {
                obj.extend(acc);
                self.acc = Acc::default();
            }
        }
        self.shared.record(&line);
        debug!(match_id = %self.shared.id, game = %self.game.name, "stats {line}");
    }
}

/// Follows the match on its own machine and answers each turn's legal
/// moves (see [`Job`]).
fn spawn_fallback(brain: Box<dyn Brain>, role: usize, jobs: Receiver<Job>, shared: Arc<Shared>) -> Result<()> {
    let alive = shared.life.enter();
    let span = tracing::Span::current();
    std::thread::Builder::new().name(thread_name("f", &shared.id)).spawn(move || {
        let _alive = alive;
        // Moved into locals, dropped before `_alive` (the closure's own
        // captures would go after it, and after the allocator's trim).
        let mut brain = brain;
        let jobs = jobs;
        let _enter = span.enter();
        let mut history: Vec<Vec<String>> = Vec::new();
        while !shared.cancelled() {
            match jobs.recv_timeout(POLL * 5) {
                Ok(Job::Turn { moves, reply }) => {
                    let r = (|| -> Result<Vec<String>> {
                        match moves {
                            None if history.is_empty() => {}
                            None => return Err(Illegal(format!("`nil` moves after turn {}", history.len())).into()),
                            Some(joint) => {
                                brain.advance(&joint)?;
                                history.push(joint);
                            }
                        }
                        if brain.terminal()? {
                            return Err(Illegal("asked to play in a terminal state".into()).into());
                        }
                        brain.legal(role)
                    })();
                    let _ = reply.send(r.map_err(Refusal::of));
                }
                Ok(Job::Upgrade(mut b)) => {
                    let replayed = history.iter().try_for_each(|j| b.advance(j));
                    match replayed {
                        Ok(()) => {
                            debug!("fallback moves now on the {}", b.machine());
                            brain = b;
                        }
                        Err(e) => warn!("fallback stays on the {}: {e:#}", brain.machine()),
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    })?;
    Ok(())
}

/// Where no propnet builds: the prover or the top-down reasoner, whichever
/// makes more state changes a second on a sample of random play (the same
/// seed on both, a second each at most, by `deadline`). Rules written for a
/// top-down prover are where networks fail, and there the top-down reasoner
/// can be the faster (chess as written: perft to depth 3 in 6.5 s against
/// 10.1 s). Hands over a brain on it when it is at least a fifth faster.
fn choose_reasoner(
    game: &Arc<Game>,
    strategy: &Strategy,
    seed: u64,
    shared: &Shared,
    deadline: Instant,
    out: &Sender<Built>,
) {
    let stop = Deadline::at(deadline).with_cancel(Some(shared.cancel.clone()));
    let prover = Prover::with_limits(game.clone(), shared.budget.prover_facts, stop.clone());
    let topdown = propel_runtime::topdown::TopDownMachine::new(game.clone());
    let (mut prover, topdown) = match (prover, topdown) {
        (Ok(p), Ok(t)) => (p, t),
        (_, Err(e)) | (Err(e), _) => {
            warn!("staying on the prover (no top-down reasoner to compare: {e})");
            return;
        }
    };
    let slice = Duration::from_secs(1);
    let p = sample_rate(&mut prover, seed, slice, &stop);
    let t = sample_rate(&mut topdown.clone(), seed, slice, &stop);
    let rate = |r: Option<f64>| r.map_or_else(|| "failed".to_string(), |r| format!("{r:.0} states/s"));
    let faster = matches!((p, t), (Some(p), Some(t)) if t > 1.2 * p);
    if !faster {
        info!("plan: no propnet; search on the prover ({}; top-down reasoner {})", rate(p), rate(t));
        return;
    }
    let brains = MachineBrain::new("topdown", topdown.clone(), strategy, seed)
        .and_then(|b| Ok((b, MachineBrain::new("topdown", topdown, &Strategy::Legal, seed)?)));
    match brains {
        Ok((b, twin)) => {
            info!("plan: no propnet; search on the top-down reasoner ({}; prover {})", rate(t), rate(p));
            let _ = out.send(Built::Brain(Box::new(b), Some(Box::new(twin))));
        }
        Err(e) => warn!("staying on the prover: {e:#}"),
    }
}

/// State changes a second of random play on `m` from the initial state
/// (games restarted as they end) for `slice` at most; `None` when a step
/// fails or `stop` passes first.
fn sample_rate<M: propel_runtime::StateMachine>(m: &mut M, seed: u64, slice: Duration, stop: &Deadline) -> Option<f64> {
    let t = Instant::now();
    let mut rng = Rng::new(seed);
    let roles = m.roles().len();
    let (mut moves, mut joint) = (Vec::new(), Vec::with_capacity(roles));
    let mut steps = 0u64;
    let mut s = m.initial_state().ok()?;
    while t.elapsed() < slice {
        if stop.passed() {
            return None;
        }
        if m.is_terminal(&s).ok()? {
            s = m.initial_state().ok()?;
            continue;
        }
        joint.clear();
        for r in 0..roles {
            m.legal_moves(&s, r, &mut moves).ok()?;
            joint.push(*moves.get(rng.below(moves.len().max(1)))?);
        }
        s = m.next_state(&s, &joint).ok()?;
        steps += 1;
    }
    Some(steps as f64 / t.elapsed().as_secs_f64())
}

/// Hands over a brain searching on the propnet with its lookups answered
/// by a prover of its own (built by `deadline`). No analysis: its random
/// games run on the network, which cannot end a game without its terminal
/// logic, and one step at a time through the prover they would take the
/// start clock for a handful of games.
fn search_with_lookups(
    prepared: &propel_runtime::build::Prepared,
    game: &Arc<Game>,
    strategy: &Strategy,
    seed: u64,
    shared: &Shared,
    deadline: Instant,
    out: &Sender<Built>,
) {
    let what = prepared.lookups().describe();
    let stop = Deadline::at(deadline).with_cancel(Some(shared.cancel.clone()));
    let machine = Prover::with_limits(game.clone(), shared.budget.prover_facts, stop)
        .and_then(|p| prepared.lookup_machine(p))
        .map_err(anyhow::Error::from);
    let brains = machine.and_then(|m| {
        let twin = MachineBrain::new("propnet+lookups", m.clone(), &Strategy::Legal, seed)?;
        Ok((MachineBrain::new("propnet+lookups", m, strategy, seed)?, twin))
    });
    match brains {
        Ok((b, twin)) => {
            match prepared.lookups().questions {
                true => info!(
                    "plan: search on the propnet, its questions of the state ({}) answered top-down, rollouts one at a time",
                    prepared.asked().join(", ")
                ),
                false => info!("plan: search on the propnet, {what} answered by lookups on the rules, rollouts one at a time"),
            }
            let _ = out.send(Built::Brain(Box::new(b), Some(Box::new(twin))));
        }
        Err(e) => warn!("no propnet with lookups, staying on the prover: {e:#}"),
    }
}

/// Builds the faster machines one after the other and sends a brain for
/// each (at the initial state; the match replays the moves), within the
/// match's budget and by the end of the start clock (the build flag,
/// raised then, stops grounding, the analysis and code generation).
fn spawn_builder(
    cfg: Arc<PlayerConfig>,
    strategy: Strategy,
    seed: u64,
    game: Arc<Game>,
    shared: Arc<Shared>,
    out: Sender<Built>,
) -> Result<()> {
    let span = tracing::Span::current();
    let alive = shared.life.enter();
    std::thread::Builder::new().name(thread_name("b", &shared.id)).spawn(move || {
        let _alive = alive;
        // Locals go before `_alive` (see `spawn_fallback`).
        let (cfg, game, out) = (cfg, game, out);
        let mut strategy = strategy;
        let mut held = BuildMemory { shared: &shared, kept: 0 };
        let _enter = span.enter();
        let wants = |k: &MachineKind| cfg.machines.contains(k);
        if !wants(&MachineKind::Propnet) && !wants(&MachineKind::Jit) {
            return;
        }
        let budget = &shared.budget;
        let flag = shared.build_cancel.clone();
        // Relaxed: see `Shared::cancel`.
        let stopped = || flag.load(Ordering::Relaxed);
        let deadline = shared.build_deadline;
        let mut opts = cfg.build.clone();
        opts.limits.max_atoms = opts.limits.max_atoms.min(budget.max_atoms);
        opts.limits.max_rules = opts.limits.max_rules.min(budget.max_rules);
        opts.limits.time = opts.limits.time.min(deadline.saturating_duration_since(Instant::now()));
        opts.limits.cancel = Some(flag.clone());
        opts.codegen.cancel = Cancel(Some(flag.clone()));
        // A goal or terminal test over the budget is left to lookups on
        // the rules (`search_with_lookups`).
        opts.lookups = true;
        let t = Instant::now();
        let prepared = match prepare(&game, &opts) {
            Ok(p) => p,
            Err(e) => {
                if stopped() {
                    warn!("no propnet, staying on the prover: {e} (the build was stopped: abort, the start clock or memory)");
                } else {
                    warn!("no propnet: {e}");
                    choose_reasoner(&game, &strategy, seed, &shared, deadline, &out);
                }
                return;
            }
        };
        for r in prepared.report() {
            debug!("{}: {:.3} s, {}", r.stage, r.seconds, r.counts);
        }
        info!("propnet built in {:.2} s", t.elapsed().as_secs_f64());
        let edges = prepared.net().counts().edges as u64;
        held.kept = (edges * super::budget::KEPT_BYTES_PER_EDGE).min(budget.build_bytes);
        let plan = propel_runtime::plan::Plan::of(&prepared);
        info!("plan: {}", plan.to_string().replace('\n', "; "));
        let _ = out.send(Built::Plan(plan.json()));
        if prepared.lookups().any() {
            if wants(&MachineKind::Propnet) {
                search_with_lookups(&prepared, &game, &strategy, seed, &shared, deadline, &out);
            }
            return;
        }
        // The fallback thread gets the first interpreted machine.
        let mut twin = MachineBrain::new("propnet", prepared.propnet(), &Strategy::Legal, seed)
            .ok()
            .map(|b| Box::new(b) as Box<dyn Brain>);
        // Hands over an interpreted brain; false when the match has gone.
        let mut send_propnet = |strategy: &Strategy| match MachineBrain::new("propnet", prepared.propnet(), strategy, seed) {
            Ok(b) => out.send(Built::Brain(Box::new(b), twin.take())).is_ok(),
            Err(e) => {
                warn!("propnet machine: {e:#}");
                true
            }
        };
        // Search on the propnet while the analysis runs (a quarter of the
        // start clock): the prover can be a thousand times slower. The
        // analysed brain replaces this one below.
        if cfg.analysis && wants(&MachineKind::Propnet) && !send_propnet(&strategy) {
            return;
        }
        // The analysis's settings and the plain ones, until validated on
        // the machine the match will search on.
        let mut pending: Option<Pending> = None;
        let until = deadline.checked_sub(VALIDATION_RESERVE).unwrap_or(deadline);
        let stop = Deadline::at(deadline).with_cancel(Some(flag.clone()));
        if cfg.analysis && !stopped() {
            // A quarter of the start clock at most: the rest is for search.
            let budget = Duration::from_secs_f64((0.25 * deadline.saturating_duration_since(t).as_secs_f64()).clamp(0.1, 10.0));
            // Puzzles are solved factor by factor whatever `--no-factors` says
            // (a solution found that way is checked on the whole game).
            match analyse_until(prepared.net(), prepared.goal_net(), &prepared.propnet(), budget, seed, true, &stop) {
                Ok(a) => {
                    info!(
                        "analysis: {} games, mean length {:.1}, exploration {:.2}, greedy rollouts {}, {} heuristics, {} factors",
                        a.games,
                        a.avg_length,
                        a.exploration,
                        a.greedy_rollouts,
                        a.heuristics.len(),
                        a.factors.len()
                    );
                    if let Strategy::Mcts(c) = &mut strategy {
                        let mut plain = c.clone();
                        cfg.tuning.configure(c, &a, cfg.heuristics, cfg.factored);
                        cfg.tuning.configure_plain(&mut plain, &a);
                        if cfg.validation {
                            pending = Some(Pending {
                                analysed: c.clone(),
                                plain,
                                avg_length: a.avg_length,
                                simultaneous: a.simultaneous,
                            });
                        }
                    }
                    let summary = json!({
                        "games": a.games, "avg_length": a.avg_length, "branching": a.branching,
                        "simultaneous": a.simultaneous, "playouts_per_s": a.playouts_per_s,
                        "exploration": a.exploration, "greedy_rollouts": a.greedy_rollouts,
                        "expand_terminal": a.expand_terminal, "goal_bounds": a.goal_bounds,
                        "heuristics": a.heuristics.len(), "prior_visits": a.prior_visits,
                        "heuristics_used": cfg.heuristics && a.evaluator.is_some(),
                        "material": a.material_reason, "greedy_moves": a.terminating_moves,
                        "greedy_check_cost": a.greedy_check_cost, "winning_moves": a.winning.len(),
                        "capturing_moves": a.captures.len(),
                        "factors": a.factors.len(), "factored_search": cfg.factored && a.factors.len() > 1,
                        "puzzle": a.puzzle_note,
                        // What each feature's checks measured and decided.
                        "checks": {
                            "exploration": a.exploration_reason, "material": a.material_reason,
                            "greedy": a.greedy_reason, "decisive": a.decisive_reason,
                            "terminal_children": a.expand_terminal_reason,
                            "heuristics": format!("held-out R² {:?}, worth {} visits", a.heuristic_r2, a.prior_visits),
                        },
                    });
                    let _ = out.send(Built::Analysis(summary));
                    if let Some(s) = a.puzzle {
                        let _ = out.send(Built::Solution(s.moves));
                    }
                }
                Err(e) => warn!("analysis: {e}"),
            }
        }
        if wants(&MachineKind::Propnet) && !send_propnet(&strategy) {
            return;
        }
        // Where the search stays on the interpreted network: validated
        // there, and its brain sent again where the plain settings won.
        let mut on_propnet = |pending: Option<Pending>| {
            if let Some(p) = pending.filter(|_| wants(&MachineKind::Propnet)) {
                let chosen = p.validated(&prepared.propnet(), false, until, &stop, &out);
                if chosen.plain_won {
                    send_propnet(&chosen.strategy);
                }
            }
        };
        if !wants(&MachineKind::Jit) {
            on_propnet(pending);
            return;
        }
        if stopped() {
            info!("no native code: the build was stopped (abort or the start clock)");
            return;
        }
        let updates = prepared.lower_machine().updates();
        if updates > budget.max_updates {
            info!("no native code: {updates} counter updates are over the match's budget ({})", budget.max_updates);
            on_propnet(pending);
            return;
        }
        let t = Instant::now();
        match prepared.jit(&game.name) {
            Ok((m, code)) => {
                info!("JIT compiled in {:.2} s ({} functions)", t.elapsed().as_secs_f64(), code.functions);
                // The plan, from what was built (no timing): where the
                // analysis chose greedy rollouts, lanes that take wins
                // first stand in for them (unless `win-first=off` or no
                // winning moves were found); else greedy rollouts run one
                // leaf at a time on the interpreted network, which the
                // match already searches (native code one state at a time
                // gains 1.2-2.3x, docs/native.md, and is kept for lanes).
                let (greedy, win_first, safe, decisive, rave, capture, table) = match &strategy {
                    Strategy::Mcts(c) => (
                        c.greedy,
                        c.win_first.as_ref().map_or(0, |w| w.len()),
                        c.safe_first,
                        c.decisive,
                        c.rave,
                        c.capture,
                        c.capture_table.as_ref().map(|t| t.len()),
                    ),
                    _ => (false, 0, false, false, 0.0, 0.0, None),
                };
                if cfg.lanes && (!greedy || win_first > 0 || decisive) && m.has_lanes() && wants(&MachineKind::Propnet)
                {
                    let lanes = if safe { "safe-first" } else { "win-first" };
                    let policy = match (win_first, greedy) {
                        _ if decisive && safe => {
                            "decisive safe-first lanes (every move tried one ply ahead for a win; a move that leaves one taken back)".to_string()
                        }
                        _ if decisive => "decisive lanes (every move tried one ply ahead for a win)".to_string(),
                        (0, _) => "uniform lane rollouts".to_string(),
                        (n, true) => format!("{lanes} lanes instead of greedy rollouts ({n} winning moves)"),
                        (n, false) => format!("{lanes} lanes ({n} winning moves)"),
                    };
                    let rave = if rave > 0.0 { format!(", RAVE (bias {rave})") } else { String::new() };
                    let rave = match table {
                        _ if capture <= 0.0 => rave,
                        Some(n) => format!(
                            ", captures first (played with chance {capture}; {n} capturing moves in the analysis's table){rave}"
                        ),
                        None => format!(", capture-first (a capture played with chance {capture}){rave}"),
                    };
                    info!("plan: lane-parallel search, tree on the propnet, rollouts and expansions on the JIT's lanes: {policy}{rave}");
                    let mut lanes = strategy.clone();
                    if let Strategy::Mcts(c) = &mut lanes {
                        c.lanes = true;
                    }
                    let hand = Handover { until, stop: &stop, out: &out, seed };
                    hand.send("hybrid", Hybrid::new(prepared.propnet(), m), lanes, pending, twin.take());
                    return;
                }
                if wants(&MachineKind::Propnet) {
                    info!(
                        "plan: rollouts one leaf at a time on the propnet ({})",
                        if greedy { "greedy rollouts: win-first=off, or no winning moves found" } else { "no lanes" }
                    );
                    on_propnet(pending);
                    return;
                }
                let hand = Handover { until, stop: &stop, out: &out, seed };
                hand.send("jit", m, strategy.clone(), pending, twin.take());
            }
            Err(e) if stopped() => info!("no native code: {e} (abort or the start clock)"),
            Err(e) => {
                warn!("no JIT, staying on the propnet: {e}");
                on_propnet(pending);
            }
        }
    })?;
    Ok(())
}

/// The validation ends this long before the start clock, so that its
/// brain is in place for the first move.
const VALIDATION_RESERVE: Duration = Duration::from_millis(300);

/// The analysis's settings and the plain ones, to be validated on the
/// machine the match will search on (`mcts::validate`).
struct Pending {
    analysed: propel_runtime::mcts::Config,
    plain: propel_runtime::mcts::Config,
    avg_length: f64,
    simultaneous: bool,
}

/// Where and when the builder hands a validated brain over.
struct Handover<'a> {
    until: Instant,
    stop: &'a Deadline,
    out: &'a Sender<Built>,
    seed: u64,
}

impl Handover<'_> {
    /// Sends a brain called `name` on `m` searching with `strategy`, or
    /// with what validating `pending` on `m` chose (on its lanes where
    /// `strategy` has them).
    fn send<M: propel_runtime::simulate::Simulator + 'static>(
        &self,
        name: &'static str,
        m: M,
        mut strategy: Strategy,
        pending: Option<Pending>,
        twin: Option<Box<dyn Brain>>,
    ) where
        M::State: Send + Sync,
        M::Move: Send + Sync,
    {
        if let Some(p) = pending {
            let lanes = matches!(&strategy, Strategy::Mcts(c) if c.lanes);
            strategy = p.validated(&m, lanes, self.until, self.stop, self.out).strategy;
        }
        match MachineBrain::new(name, m, &strategy, self.seed) {
            Ok(b) => {
                let _ = self.out.send(Built::Brain(Box::new(b), twin));
            }
            Err(e) => warn!("{name} machine: {e:#}"),
        }
    }
}

/// What a validation chose.
struct Validated {
    strategy: Strategy,
    /// The plain settings won: a brain with the analysed ones must go.
    plain_won: bool,
}

impl Pending {
    /// Duels the analysed settings against the plain ones on `m` (with
    /// `lanes`, as the brain will search) until `until`, logs and records
    /// the verdict, and gives the strategy to search with. A duel that
    /// fails keeps the analysed settings (the analysis's checks passed).
    fn validated<M: propel_runtime::simulate::Simulator>(
        self,
        m: &M,
        lanes: bool,
        until: Instant,
        stop: &Deadline,
        out: &Sender<Built>,
    ) -> Validated
    where
        M::State: Send + Sync,
        M::Move: Send + Sync,
    {
        let Pending { mut analysed, mut plain, avg_length, simultaneous } = self;
        analysed.lanes = lanes;
        plain.lanes = lanes;
        let mut m = m.clone();
        let verdict = m
            .initial_state()
            .and_then(|root| validate(&m, &root, &analysed, &plain, Pace { avg_length, simultaneous }, until, stop));
        match verdict {
            Ok(v) => {
                info!("validation: {}", v.describe());
                let _ = out.send(Built::Validation(v.json()));
                if v.adopted {
                    Validated { strategy: Strategy::Mcts(analysed), plain_won: false }
                } else {
                    Validated { strategy: Strategy::Mcts(plain), plain_won: true }
                }
            }
            Err(e) => {
                warn!("validation: {e:#}; the analysis's settings are kept");
                Validated { strategy: Strategy::Mcts(analysed), plain_won: false }
            }
        }
    }
}
