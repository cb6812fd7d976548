//! One match as the player plays it: a thread that owns the match's brain
//! (single writer: nobody else touches the search), takes commands from the
//! HTTP handlers over a channel, searches while it waits for them
//! (pondering), and switches to faster machines as a background builder
//! finishes them (prover first, then interpreted propnet, then JIT).

use super::brain::{Brain, Choice, MachineBrain, Strategy};
use super::logs::match_dir;
use crate::machines::MachineKind;
use anyhow::{anyhow, Context as _, Result};
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender, TryRecvError};
use propel_compiler::Game;
use propel_runtime::analysis::analyse;
use propel_runtime::build::{prepare, BuildOptions};
use propel_runtime::mcts::Stats;
use propel_runtime::{Hybrid, Prover};
use serde_json::json;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{debug, info, info_span, warn};

/// What the background builder sends a match.
pub enum Built {
    /// A brain on a faster machine, at the initial state.
    Brain(Box<dyn Brain>),
    /// The meta-game analysis, for the statistics file.
    Analysis(serde_json::Value),
    /// A puzzle's winning line, found by the solver.
    Solution(Vec<String>),
    /// The build plan, for the statistics file.
    Plan(serde_json::Value),
}

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
    /// Initialise new nodes from the analysis's heuristic evaluator.
    pub heuristics: bool,
    /// Search the analysis's factors one by one.
    pub factored: bool,
    /// Use the hybrid machine (tree on the propnet, rollouts in batches on
    /// the JIT's lanes) where the lanes measure far faster.
    pub lanes: bool,
    pub seed: u64,
    /// How the background builder builds (grounding, passes, code generation).
    pub build: BuildOptions,
}

impl PlayerConfig {
    /// The time kept in hand on a clock of `clock` seconds.
    pub fn margin_for(&self, clock: f64) -> Duration {
        Duration::from_secs_f64(self.margin.min(0.3 * clock).max(0.0))
    }
}

/// A request from an HTTP handler. Replies are the response body, or an
/// error message.
pub enum Command {
    Play { moves: Option<Vec<String>>, deadline: Instant, reply: Sender<Result<String, String>> },
    Stop { moves: Option<Vec<String>>, reply: Sender<Result<String, String>> },
    Abort,
}

/// What the handlers can read without asking the match thread: our legal
/// moves in the latest state, for a move in time when the thread is late.
#[derive(Default)]
pub struct Snapshot {
    pub turn: usize,
    pub legal: Vec<String>,
}

/// The handlers' side of a running match.
pub struct MatchHandle {
    pub commands: Sender<Command>,
    pub snapshot: Arc<Mutex<Snapshot>>,
    pub play_clock: f64,
}

pub struct StartRequest {
    pub id: String,
    pub role: String,
    pub rules: String,
    pub start_clock: f64,
    pub play_clock: f64,
    pub received: Instant,
}

/// Starts a match thread. `ready` gets `Ok("ready")` shortly before the
/// start clock runs out, or the reason the match cannot be played.
pub fn spawn(cfg: Arc<PlayerConfig>, req: StartRequest, ready: Sender<Result<String, String>>) -> Result<MatchHandle> {
    let (tx, rx) = bounded(16);
    let snapshot = Arc::new(Mutex::new(Snapshot::default()));
    let handle = MatchHandle { commands: tx, snapshot: snapshot.clone(), play_clock: req.play_clock };
    let name = format!("match-{}", req.id);
    std::thread::Builder::new().name(name).spawn(move || {
        let dir = cfg.log_dir.as_ref().map(|d| match_dir(d, &cfg.name, &req.id));
        let span = info_span!("match", player = %cfg.name, id = %req.id);
        let _enter = span.enter();
        match Match::start(cfg, req, dir, rx, snapshot, &ready) {
            Ok(mut m) => m.serve(),
            Err(e) => {
                warn!("cannot play: {e:#}");
                let _ = ready.send(Err(format!("{e:#}")));
            }
        }
    })?;
    Ok(handle)
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
        })
    }
}

/// How long a match may wait for its next command before it gives up
/// (the manager has gone away).
fn abandon_after(play_clock: f64) -> Duration {
    Duration::from_secs_f64(60.0 + 10.0 * play_clock)
}

/// Pondering is done in slices so that commands and new machines are
/// picked up quickly.
const SLICE: Duration = Duration::from_millis(100);

struct Match {
    id: String,
    role: usize,
    game: Arc<Game>,
    brain: Box<dyn Brain>,
    /// Joint moves so far (replayed on a new machine).
    history: Vec<Vec<String>>,
    builds: Receiver<Built>,
    /// A puzzle's solution: the moves to play, turn by turn.
    plan: Option<Vec<String>>,
    commands: Receiver<Command>,
    snapshot: Arc<Mutex<Snapshot>>,
    play_clock: f64,
    stats: Option<std::fs::File>,
    acc: Acc,
    started: Instant,
    last_command: Instant,
    search: bool,
}

impl Match {
    fn start(
        cfg: Arc<PlayerConfig>,
        req: StartRequest,
        dir: Option<PathBuf>,
        commands: Receiver<Command>,
        snapshot: Arc<Mutex<Snapshot>>,
        ready: &Sender<Result<String, String>>,
    ) -> Result<Match> {
        let ready_at = req.received + Duration::from_secs_f64(req.start_clock) - cfg.margin_for(req.start_clock);
        let game = propel_compiler::load(&format!("match {}", req.id), req.rules.as_bytes())
            .map_err(|e| anyhow!("the rules: {e}"))?;
        let game = Arc::new(game);
        let roles = game.role_names();
        let role = roles
            .iter()
            .position(|r| *r == req.role)
            .ok_or_else(|| anyhow!("`{}` is not a role of this game (roles: {})", req.role, roles.join(", ")))?;
        info!(role = %req.role, start_clock = req.start_clock, play_clock = req.play_clock, "start");
        let prover = Prover::new(game.clone())?;
        let brain: Box<dyn Brain> = Box::new(MachineBrain::new("prover", prover, &cfg.strategy, cfg.seed)?);
        let (btx, builds) = bounded(4);
        let search = matches!(cfg.strategy, Strategy::Mcts(_) | Strategy::Uct);
        if search {
            spawn_builder(cfg.clone(), game.clone(), req.start_clock, btx)?;
        }
        let stats = match &dir {
            Some(d) => {
                std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
                Some(std::fs::File::create(d.join("stats.jsonl")).context("creating stats.jsonl")?)
            }
            None => None,
        };
        let mut m = Match {
            id: req.id,
            role,
            game,
            brain,
            history: Vec::new(),
            builds,
            plan: None,
            commands,
            snapshot,
            play_clock: req.play_clock,
            stats,
            acc: Acc::default(),
            started: req.received,
            last_command: req.received,
            search,
        };
        m.publish()?;
        // Use the whole start clock: build, switch, and search the first move.
        m.think_until(ready_at)?;
        m.record(json!({"phase": "start", "machine": m.brain.machine()}));
        let _ = ready.send(Ok("ready".into()));
        Ok(m)
    }

    fn serve(&mut self) {
        loop {
            let cmd = if self.search && !self.brain.terminal().unwrap_or(true) {
                match self.commands.try_recv() {
                    Ok(c) => Some(c),
                    Err(TryRecvError::Empty) => {
                        // Ponders until a command (or a new machine) comes.
                        let _ = self.think_until(self.last_command + abandon_after(self.play_clock));
                        if self.last_command.elapsed() > abandon_after(self.play_clock) {
                            warn!("no command for too long; leaving the match");
                            return;
                        }
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return,
                }
            } else {
                match self.commands.recv_timeout(abandon_after(self.play_clock)) {
                    Ok(c) => Some(c),
                    Err(RecvTimeoutError::Timeout) => {
                        warn!("no command for too long; leaving the match");
                        return;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            self.last_command = Instant::now();
            match cmd {
                Some(Command::Play { moves, deadline, reply }) => {
                    let r = self.play(moves, deadline).map_err(|e| {
                        warn!("play: {e:#}");
                        format!("{e:#}")
                    });
                    let _ = reply.send(r);
                }
                Some(Command::Stop { moves, reply }) => {
                    let r = self.stop(moves);
                    let _ = reply.send(r.map(|_| "done".into()).map_err(|e| format!("{e:#}")));
                    return;
                }
                Some(Command::Abort) => {
                    info!("aborted");
                    self.record(json!({"phase": "abort"}));
                    return;
                }
                None => {}
            }
        }
    }

    fn advance(&mut self, moves: Option<Vec<String>>) -> Result<()> {
        match moves {
            None if self.history.is_empty() => Ok(()),
            None => Err(anyhow!("`nil` moves after turn {}", self.history.len())),
            Some(joint) => {
                self.brain.advance(&joint)?;
                debug!(turn = self.history.len(), "moves {}", joint.join(" "));
                self.history.push(joint);
                self.publish()
            }
        }
    }

    fn play(&mut self, moves: Option<Vec<String>>, deadline: Instant) -> Result<String> {
        self.advance(moves)?;
        if self.brain.terminal()? {
            return Err(anyhow!("asked to play in a terminal state"));
        }
        let Choice { mv, value, visits } = match self.planned() {
            Some(mv) => Choice { mv, value: Some(100.0), visits: 0 },
            None => {
                if self.search {
                    self.think_until(deadline)?;
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

    /// Our legal moves, for the handlers' fallback.
    fn publish(&mut self) -> Result<()> {
        let legal = if self.brain.terminal()? { Vec::new() } else { self.brain.legal(self.role)? };
        if let Ok(mut s) = self.snapshot.lock() {
            s.turn = self.history.len();
            s.legal = legal;
        }
        Ok(())
    }

    /// Searches (or just waits, for strategies that do not search) until
    /// `deadline` or until a command comes, switching to new machines as
    /// they arrive. The search runs without a break in between (its
    /// threads and rollouts in flight live on), interrupted only by those.
    fn think_until(&mut self, deadline: Instant) -> Result<()> {
        loop {
            self.take_builds();
            let now = Instant::now();
            if now >= deadline || !self.commands.is_empty() {
                return Ok(());
            }
            if self.search && !self.brain.terminal()? {
                let Match { commands, builds, brain, .. } = self;
                let interrupt = || !commands.is_empty() || !builds.is_empty();
                if let Some(s) = brain.think(deadline, &interrupt)? {
                    self.acc.add(s);
                }
            } else {
                let until = deadline.min(now + SLICE);
                match self.builds.recv_deadline(until) {
                    Ok(b) => self.take(b),
                    Err(_) => std::thread::sleep(until.saturating_duration_since(Instant::now())),
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
            Built::Brain(b) => self.switch(b),
            Built::Analysis(a) => self.record(json!({"event": "analysis", "analysis": a})),
            Built::Solution(p) => {
                info!("puzzle solved in {} moves; following the solution", p.len());
                self.plan = Some(p);
            }
            Built::Plan(p) => self.record(json!({"event": "plan", "plan": p})),
        }
    }

    /// The solution's move for this turn, if it is still legal here.
    fn planned(&mut self) -> Option<String> {
        let mv = self.plan.as_ref()?.get(self.history.len())?.clone();
        self.brain.legal(self.role).ok()?.contains(&mv).then_some(mv)
    }

    /// Moves to a new machine if it agrees with the current one on the
    /// moves so far.
    fn switch(&mut self, mut b: Box<dyn Brain>) {
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
                self.brain = b;
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
        if let Some(f) = &mut self.stats {
            let _ = writeln!(f, "{line}");
        }
        debug!(match_id = %self.id, game = %self.game.name, "stats {line}");
    }
}

/// Builds the faster machines one after the other and sends a brain for
/// each (at the initial state; the match replays the moves).
fn spawn_builder(cfg: Arc<PlayerConfig>, game: Arc<Game>, start_clock: f64, out: Sender<Built>) -> Result<()> {
    let span = tracing::Span::current();
    std::thread::Builder::new().name("builder".into()).spawn(move || {
        let _enter = span.enter();
        let wants = |k: &MachineKind| cfg.machines.contains(k);
        if !wants(&MachineKind::Propnet) && !wants(&MachineKind::Jit) {
            return;
        }
        let t = Instant::now();
        let prepared = match prepare(&game, &cfg.build) {
            Ok(p) => p,
            Err(e) => {
                warn!("no propnet, staying on the prover: {e}");
                return;
            }
        };
        for r in prepared.report() {
            debug!("{}: {:.3} s, {}", r.stage, r.seconds, r.counts);
        }
        info!("propnet built in {:.2} s", t.elapsed().as_secs_f64());
        let plan = propel_runtime::plan::Plan::of(&prepared);
        info!("plan: {}", plan.to_string().replace('\n', "; "));
        let _ = out.send(Built::Plan(plan.json()));
        let mut strategy = cfg.strategy.clone();
        // Hands over an interpreted brain; false when the match has gone.
        let send_propnet = |strategy: &Strategy| match MachineBrain::new("propnet", prepared.propnet(), strategy, cfg.seed) {
            Ok(b) => out.send(Built::Brain(Box::new(b))).is_ok(),
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
        if cfg.analysis {
            // A quarter of the start clock at most: the rest is for search.
            let budget = Duration::from_secs_f64((0.25 * start_clock).clamp(0.1, 10.0));
            // Puzzles are solved factor by factor whatever `--no-factors` says
            // (a solution found that way is checked on the whole game).
            match analyse(prepared.net(), prepared.goal_net(), &prepared.propnet(), budget, cfg.seed, true) {
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
                        c.exploration = a.exploration;
                        c.greedy = a.greedy_rollouts;
                        c.expand_terminal = a.expand_terminal;
                        c.goal_max = a.goal_bounds.iter().map(|&(_, hi)| hi as f64 / 100.0).collect();
                        if cfg.heuristics {
                            c.heuristic = a.evaluator.clone().map(Arc::new);
                        }
                        if cfg.factored {
                            c.factors = a.factors.iter().map(|f| f.moves.clone()).collect();
                        }
                    }
                    let summary = json!({
                        "games": a.games, "avg_length": a.avg_length, "branching": a.branching,
                        "simultaneous": a.simultaneous, "playouts_per_s": a.playouts_per_s,
                        "exploration": a.exploration, "greedy_rollouts": a.greedy_rollouts,
                        "expand_terminal": a.expand_terminal, "goal_bounds": a.goal_bounds,
                        "heuristics": a.heuristics.len(), "prior_visits": a.prior_visits,
                        "heuristics_used": cfg.heuristics && a.evaluator.is_some(),
                        "factors": a.factors.len(), "factored_search": cfg.factored && a.factors.len() > 1,
                        "puzzle": a.puzzle_note,
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
        if wants(&MachineKind::Jit) {
            let t = Instant::now();
            match prepared.jit(&game.name) {
                Ok((m, code)) => {
                    info!("JIT compiled in {:.2} s ({} functions)", t.elapsed().as_secs_f64(), code.functions);
                    // The plan, from what was built (no timing): lanes play
                    // random games, so where the analysis chose greedy
                    // rollouts the search rolls out one leaf at a time,
                    // and one state at a time the interpreter is the faster
                    // machine on most games (docs/native.md).
                    let greedy = matches!(&strategy, Strategy::Mcts(c) if c.greedy);
                    if cfg.lanes && !greedy && m.has_lanes() && wants(&MachineKind::Propnet) {
                        info!("plan: lane-parallel search, tree on the propnet, rollouts and expansions on the JIT's lanes");
                        let mut lanes = strategy.clone();
                        if let Strategy::Mcts(c) = &mut lanes {
                            c.lanes = true;
                        }
                        match MachineBrain::new("hybrid", Hybrid::new(prepared.propnet(), m), &lanes, cfg.seed) {
                            Ok(b) => {
                                let _ = out.send(Built::Brain(Box::new(b)));
                            }
                            Err(e) => warn!("hybrid machine: {e:#}"),
                        }
                        return;
                    }
                    if wants(&MachineKind::Propnet) {
                        info!(
                            "plan: rollouts one leaf at a time on the propnet ({})",
                            if greedy { "greedy rollouts" } else { "no lanes" }
                        );
                        return;
                    }
                    match MachineBrain::new("jit", m, &strategy, cfg.seed) {
                        Ok(b) => {
                            let _ = out.send(Built::Brain(Box::new(b)));
                        }
                        Err(e) => warn!("JIT machine: {e:#}"),
                    }
                }
                Err(e) => warn!("no JIT, staying on the propnet: {e}"),
            }
        }
    })?;
    Ok(())
}
