//! The player's HTTP server: the GGP protocol over POST (KIF bodies,
//! `text/acl`, CORS headers as ggp.org's web tools expect), matches
//! admitted within the server's memory, and a watchdog that ends builds at
//! the start clock or when the process is over its memory.
//! `GET /matches/ID/stats` and `GET /matches/ID/log` serve a match's
//! statistics and log.

use super::budget::{resident, Memory};
use super::http::{self, Request, Response};
use super::logs::match_dir;
use super::matches::{self, Command, Job, Life, MatchHandle, PlayerConfig, Refusal, StartRequest};
use super::protocol::{parse, peek_start_id, Message};
use anyhow::{anyhow, Result};
use crossbeam_channel::{bounded, never, select, Receiver};
use rustc_hash::FxHashMap;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// How often the watchdog looks at the matches and the memory.
const WATCH: Duration = Duration::from_millis(100);

/// How long a `start` of an id waits for an aborted match of the same id
/// to end before it is refused.
const RESTART_WAIT: Duration = Duration::from_secs(2);

/// A running player.
pub struct Server {
    http: http::Server,
}

impl Server {
    /// Listens on `addr` (port 0: any free port) and serves until stopped.
    pub fn start(addr: &str, cfg: PlayerConfig) -> Result<Server> {
        if let Some(d) = &cfg.log_dir {
            super::logs::register(&cfg.name, d);
        }
        let limits = cfg.http.clone();
        let memory = Memory::new(cfg.max_memory);
        let player = Arc::new(Player {
            cfg: Arc::new(cfg),
            matches: Mutex::new(FxHashMap::default()),
            starting: Mutex::new(FxHashMap::default()),
            memory,
        });
        let p = player.clone();
        let handler: Arc<http::Handler> = Arc::new(move |rq: Request| p.handle(rq));
        let http = http::Server::bind(addr, limits, handler).map_err(|e| anyhow!("cannot listen on {addr}: {e}"))?;
        let weak = Arc::downgrade(&player);
        std::thread::Builder::new().name("watchdog".into()).spawn(move || watchdog(weak))?;
        Ok(Server { http })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    pub fn addr(&self) -> SocketAddr {
        self.http.addr()
    }

    /// Serves until the process ends.
    pub fn wait(self) {
        self.http.wait();
    }
}

enum Entry {
    Running(MatchHandle),
    /// Stopped or aborted; its threads may still be ending.
    Finished(Arc<Life>),
}

struct Player {
    cfg: Arc<PlayerConfig>,
    matches: Mutex<FxHashMap<String, Entry>>,
    /// Starts whose request is still being read, by id: raised when aborted.
    starting: Mutex<FxHashMap<String, Arc<AtomicBool>>>,
    memory: Arc<Memory>,
}

/// Forgets a start being read when its handler is done with it.
struct Reading<'a> {
    player: &'a Player,
    id: Option<String>,
    aborted: Arc<AtomicBool>,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if let (Some(id), Ok(mut s)) = (&self.id, self.player.starting.lock()) {
            if s.get(id).is_some_and(|f| Arc::ptr_eq(f, &self.aborted)) {
                s.remove(id);
            }
        }
    }
}

/// An HTTP answer: status and body.
type Answer = (u16, String);

fn error(status: u16, msg: impl std::fmt::Display) -> Answer {
    (status, format!("error: {msg}"))
}

/// Ends builds whose start clock has run out, and every build while the
/// process is over its memory limit; forgets matches whose threads have
/// all ended.
fn watchdog(player: Weak<Player>) {
    let mut over = false;
    loop {
        std::thread::sleep(WATCH);
        let Some(p) = player.upgrade() else { return };
        let rss = resident().unwrap_or(0);
        let now_over = rss > p.memory.limit();
        if now_over && !over {
            warn!(
                "resident memory {} MiB is over the limit of {} MiB: stopping every build",
                rss >> 20,
                p.memory.limit() >> 20
            );
        }
        over = now_over;
        let Ok(mut all) = p.matches.lock() else { return };
        // A match all of whose threads have ended (finished, or left by
        // its manager, or failed) is forgotten: its id can start again.
        all.retain(|_, e| match e {
            Entry::Finished(l) => l.threads() > 0,
            Entry::Running(h) => h.shared.life.threads() > 0,
        });
        let now = Instant::now();
        for e in all.values() {
            if let Entry::Running(h) = e {
                if over || now >= h.shared.build_deadline {
                    // Relaxed: see `Shared::cancel`.
                    h.shared.build_cancel.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

/// `%XX` escapes decoded (a match id in a URL).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).and_then(|&c| hex(c)), b.get(i + 2).and_then(|&c| hex(c))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Player {
    fn handle(&self, rq: Request) -> Response {
        let (status, body) = match rq.method.as_str() {
            "OPTIONS" => (200, String::new()),
            "GET" => self.get(&rq.path),
            "POST" => match String::from_utf8(rq.body) {
                Ok(text) => self.post(&text, rq.received),
                Err(_) => error(400, "the request is not UTF-8"),
            },
            m => error(405, format!("method {m} not allowed")),
        };
        if status >= 400 {
            warn!("{} {}: {status} {body}", rq.method, rq.path);
        }
        Response::new(status, body)
    }

    fn get(&self, url: &str) -> Answer {
        let parts: Vec<&str> = url.trim_matches('/').split('/').collect();
        match parts.as_slice() {
            [""] => (200, self.info()),
            ["matches", id, what @ ("stats" | "log")] => {
                let Some(dir) = &self.cfg.log_dir else { return error(404, "this player keeps no logs") };
                let id = percent_decode(id).to_lowercase();
                let file = if *what == "stats" { "stats.jsonl" } else { "log.txt" };
                match std::fs::read_to_string(match_dir(dir, &self.cfg.name, &id).join(file)) {
                    Ok(s) => (200, s),
                    Err(_) => error(404, format!("no {what} for match {id}")),
                }
            }
            _ => error(404, "nothing here"),
        }
    }

    fn info(&self) -> String {
        format!("((name {}) (status available))", self.cfg.name)
    }

    fn post(&self, text: &str, received: Instant) -> Answer {
        // A start is known by its id before its rules are read, so that
        // an abort can find it meanwhile.
        let aborted = Arc::new(AtomicBool::new(false));
        let id = peek_start_id(text);
        if let (Some(id), Ok(mut s)) = (&id, self.starting.lock()) {
            s.insert(id.clone(), aborted.clone());
        }
        let reading = Reading { player: self, id, aborted };
        let msg = match parse(text) {
            Ok(m) => m,
            Err(e) => return error(400, e),
        };
        debug!("{} {}", msg.kind(), msg.match_id().unwrap_or(""));
        match msg {
            Message::Info => (200, self.info()),
            Message::Preview { .. } => (200, "ready".into()),
            Message::Start { id, role, rules, start_clock, play_clock } => {
                // Relaxed: the flag publishes no data.
                if reading.aborted.load(Ordering::Relaxed) {
                    return error(409, format!("match `{id}` was aborted while its request was read"));
                }
                // `reading` lives until the match is in the table, so an
                // abort finds one or the other.
                self.start(StartRequest { id, role, rules, start_clock, play_clock, received }, &reading.aborted)
            }
            Message::Play { id, moves } => self.play(&id, moves, received),
            Message::Stop { id, moves } => self.stop(&id, moves),
            Message::Abort { id } => match self.finish(&id) {
                Some(h) => {
                    h.shared.cancel();
                    let _ = h.commands.send(Command::Abort);
                    info!(match_id = %id, "aborted");
                    (200, "aborted".into())
                }
                None => match self.starting.lock().ok().and_then(|s| s.get(&id).cloned()) {
                    Some(flag) => {
                        // Relaxed: the flag publishes no data.
                        flag.store(true, Ordering::Relaxed);
                        info!(match_id = %id, "aborted while its start was read");
                        (200, "aborted".into())
                    }
                    None => error(404, format!("unknown match `{id}`")),
                },
            },
        }
    }

    /// A clock as the player takes it: at most `--max-clock`.
    fn clamp(&self, id: &str, what: &str, clock: f64) -> f64 {
        if clock > self.cfg.max_clock {
            warn!(match_id = %id, "{what} clock of {clock} s taken as {} s (--max-clock)", self.cfg.max_clock);
        }
        clock.min(self.cfg.max_clock)
    }

    /// Waits (a little) for an aborted match of the same id to end; false
    /// when it is still running.
    fn id_free(&self, id: &str) -> bool {
        let until = Instant::now() + RESTART_WAIT;
        loop {
            let busy = match self.matches.lock() {
                Ok(all) => match all.get(id) {
                    Some(Entry::Running(_)) => return false,
                    Some(Entry::Finished(l)) => l.threads() > 0,
                    None => false,
                },
                Err(_) => return false,
            };
            if !busy {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn start(&self, mut req: StartRequest, aborted: &AtomicBool) -> Answer {
        let id = req.id.clone();
        req.start_clock = self.clamp(&id, "start", req.start_clock);
        req.play_clock = self.clamp(&id, "play", req.play_clock);
        if !self.id_free(&id) {
            return error(409, format!("match `{id}` is already running"));
        }
        let pool = match &self.cfg.strategy {
            super::brain::Strategy::Mcts(c) => c.pool,
            _ => 0,
        };
        let (memory, budget) = match self.memory.admit(req.rules.len(), req.start_clock, pool) {
            Ok(x) => x,
            Err(e) => return error(503, e),
        };
        debug!(match_id = %id, "admitted with {} MiB; {} MiB left", budget.bytes >> 20, self.memory.left() >> 20);
        let margin = self.cfg.margin_for(req.start_clock);
        let deadline = req.received + Duration::from_secs_f64(req.start_clock) - margin / 2;
        let (tx, rx) = bounded(1);
        {
            let Ok(mut all) = self.matches.lock() else { return error(500, "player state poisoned") };
            if matches!(all.get(&id), Some(Entry::Running(_))) {
                return error(409, format!("match `{id}` is already running"));
            }
            match matches::spawn(self.cfg.clone(), req, budget, memory, tx) {
                // Relaxed: the flag publishes no data.
                Ok(h) if aborted.load(Ordering::Relaxed) => {
                    h.shared.cancel();
                    all.insert(id.clone(), Entry::Finished(h.shared.life.clone()));
                    return error(409, format!("match `{id}` was aborted while it started"));
                }
                Ok(h) => all.insert(id.clone(), Entry::Running(h)),
                Err(e) => return error(500, format!("cannot start the match: {e}")),
            };
        }
        match rx.recv_deadline(deadline) {
            Ok(Ok(())) => (200, "ready".into()),
            Ok(Err(Refusal::Bad(e))) => {
                self.finish(&id);
                error(400, e)
            }
            Ok(Err(Refusal::Failed(e))) => {
                self.finish(&id);
                error(500, format!("cannot play this match: {e}"))
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                warn!(match_id = %id, "still preparing at the end of the start clock; answering ready");
                (200, "ready".into())
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                self.finish(&id);
                error(500, "the match ended before it was ready")
            }
        }
    }

    /// Marks a match finished, returning its handle if it was running.
    fn finish(&self, id: &str) -> Option<MatchHandle> {
        let mut all = self.matches.lock().ok()?;
        match all.remove(id) {
            Some(Entry::Running(h)) => {
                all.insert(id.to_string(), Entry::Finished(h.shared.life.clone()));
                Some(h)
            }
            Some(e) => {
                all.insert(id.to_string(), e);
                None
            }
            None => None,
        }
    }

    fn running(
        &self,
        id: &str,
    ) -> Option<(crossbeam_channel::Sender<Command>, crossbeam_channel::Sender<Job>, Arc<matches::Shared>)> {
        let all = self.matches.lock().ok()?;
        match all.get(id) {
            Some(Entry::Running(h)) => Some((h.commands.clone(), h.jobs.clone(), h.shared.clone())),
            _ => None,
        }
    }

    /// The search's move when it comes by the deadline (and is legal in
    /// the current state, when the fallback thread has said what is),
    /// else a move among the current state's legal moves from the
    /// fallback thread; never a move of an earlier turn.
    fn play(&self, id: &str, moves: Option<Vec<String>>, received: Instant) -> Answer {
        let Some((commands, jobs, shared)) = self.running(id) else {
            return error(404, format!("unknown match `{id}`"));
        };
        let clock = Duration::from_secs_f64(shared.play_clock);
        let margin = self.cfg.margin_for(shared.play_clock);
        let deadline = (received + clock).checked_sub(margin).unwrap_or(received);
        // The search may answer until `late`; legal moves are waited for until `last`.
        let late = deadline + margin / 4;
        let last = deadline + margin / 2;
        let (ftx, frx) = bounded(1);
        let (mtx, mrx) = bounded(1);
        let mut frx: Receiver<_> =
            if jobs.send(Job::Turn { moves: moves.clone(), reply: ftx }).is_ok() { frx } else { never() };
        let mut mrx: Receiver<_> =
            if commands.send(Command::Play { moves, deadline, reply: mtx }).is_ok() { mrx } else { never() };
        let (mut f_open, mut m_open) = (true, true);
        let mut legal: Option<Vec<String>> = None;
        let mut failure = None;
        loop {
            let now = Instant::now();
            if legal.is_some() && (now >= late || !m_open) {
                break;
            }
            if now >= last || (!f_open && !m_open) {
                break;
            }
            let until = if legal.is_some() { late } else { last };
            select! {
                recv(mrx) -> r => match r {
                    Ok(Ok(mv)) if legal.as_ref().is_none_or(|l| l.contains(&mv)) => return (200, mv),
                    Ok(Ok(mv)) => {
                        warn!(match_id = %id, "the search's move {mv} is not legal in the current state; not playing it");
                        (mrx, m_open) = (never(), false);
                    }
                    Ok(Err(Refusal::Bad(e))) => return error(400, e),
                    Ok(Err(Refusal::Failed(e))) => {
                        failure = Some(e);
                        (mrx, m_open) = (never(), false);
                    }
                    Err(_) => (mrx, m_open) = (never(), false),
                },
                recv(frx) -> r => {
                    match r {
                        Ok(Ok(l)) => legal = Some(l),
                        Ok(Err(Refusal::Bad(e))) => return error(400, e),
                        Ok(Err(Refusal::Failed(e))) => failure = Some(e),
                        Err(_) => {}
                    }
                    (frx, f_open) = (never(), false);
                },
                default(until.saturating_duration_since(now)) => {},
            }
        }
        self.fallback(id, &shared, legal, failure, received)
    }

    /// A random move among `legal`, logged (console, the match's log and
    /// its statistics); an error when there is none.
    fn fallback(
        &self,
        id: &str,
        shared: &matches::Shared,
        legal: Option<Vec<String>>,
        failure: Option<String>,
        received: Instant,
    ) -> Answer {
        let span = shared.span.get().cloned().unwrap_or_else(tracing::Span::none);
        let _enter = span.enter();
        let ms = received.elapsed().as_millis() as u64;
        match legal.filter(|l| !l.is_empty()) {
            Some(l) => {
                let pick = shared.rng.lock().map_or(0, |mut r| r.below(l.len()));
                let mv = l[pick].clone();
                let why = failure.as_deref().unwrap_or("no move from the search in time");
                warn!(match_id = %id, "fallback: {why}; playing {mv}, one of the current state's {} legal moves", l.len());
                shared.record(&json!({"event": "fallback", "move": mv, "legal": l.len(), "reason": why, "ms": ms}));
                (200, mv)
            }
            None => {
                let why = failure
                    .or_else(|| shared.failure.lock().ok().and_then(|f| f.clone()))
                    .unwrap_or_else(|| "no legal move computed in time".into());
                warn!(match_id = %id, "fallback: no move at all: {why}");
                shared.record(&json!({"event": "fallback", "move": null, "reason": why, "ms": ms}));
                error(503, format!("no move: {why}"))
            }
        }
    }

    fn stop(&self, id: &str, moves: Option<Vec<String>>) -> Answer {
        let Some(h) = self.finish(id) else { return error(404, format!("unknown match `{id}`")) };
        let (tx, rx) = bounded(1);
        // The goals are computed on the match's machine; a match thread
        // that does not answer in a play clock is stopped all the same.
        let wait = Duration::from_secs_f64(h.shared.play_clock.clamp(0.5, 10.0));
        if h.commands.send(Command::Stop { moves, reply: tx }).is_ok() {
            match rx.recv_timeout(wait) {
                Ok(Err(Refusal::Bad(e) | Refusal::Failed(e))) => warn!(match_id = %id, "stop: {e}"),
                Ok(Ok(())) => info!(match_id = %id, "finished"),
                Err(_) => warn!(match_id = %id, "stop: the match did not answer"),
            }
        }
        h.shared.cancel();
        (200, "done".into())
    }
}
