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

mod builder;
mod fallback;
mod threads;
mod totals;

use super::brain::{Brain, Choice, Illegal, MachineBrain, Strategy};
use super::budget::{Budget, Reservation};
use super::logs::match_dir;
use crate::machines::MachineKind;
use anyhow::{anyhow, Result};
use builder::spawn_builder;
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender, TryRecvError};
use fallback::spawn_fallback;
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
use threads::Playing;
pub use threads::Threads;
use totals::Acc;
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
