//! The player's HTTP server: the GGP protocol over POST (KIF bodies,
//! `text/acl`, CORS headers as ggp.org's web tools expect), a thread per
//! request, one thread per match. `GET /matches/ID/stats` and
//! `GET /matches/ID/log` serve a match's statistics and log.

use super::logs::match_dir;
use super::matches::{self, Command, MatchHandle, PlayerConfig, StartRequest};
use super::protocol::{parse, Message};
use anyhow::{anyhow, Result};
use crossbeam_channel::bounded;
use rustc_hash::FxHashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tiny_http::{Header, Method, Request, Response};
use tracing::{debug, info, warn};

/// Largest request body accepted (the biggest public games are well under 1 MiB).
pub const MAX_BODY: usize = 16 << 20;

/// A running player.
pub struct Server {
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `addr` (port 0: any free port) and serves until stopped.
    pub fn start(addr: &str, cfg: PlayerConfig) -> Result<Server> {
        let http = Arc::new(tiny_http::Server::http(addr).map_err(|e| anyhow!("cannot listen on {addr}: {e}"))?);
        let addr = http.server_addr().to_ip().ok_or_else(|| anyhow!("{addr} is not an IP address"))?;
        if let Some(d) = &cfg.log_dir {
            super::logs::register(&cfg.name, d);
        }
        let player = Arc::new(Player { cfg: Arc::new(cfg), matches: Mutex::new(FxHashMap::default()) });
        let h = http.clone();
        let thread = std::thread::Builder::new().name("http".into()).spawn(move || {
            for rq in h.incoming_requests() {
                let p = player.clone();
                if let Err(e) = std::thread::Builder::new().name("request".into()).spawn(move || p.handle(rq)) {
                    warn!("cannot start a request thread: {e}");
                }
            }
        })?;
        Ok(Server { http, addr, thread: Some(thread) })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.http.unblock();
    }
}

enum Entry {
    Running(MatchHandle),
    Finished,
}

struct Player {
    cfg: Arc<PlayerConfig>,
    matches: Mutex<FxHashMap<String, Entry>>,
}

/// An HTTP answer: status and body.
type Answer = (u16, String);

fn error(status: u16, msg: impl std::fmt::Display) -> Answer {
    (status, format!("error: {msg}"))
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

impl Player {
    fn handle(&self, mut rq: Request) {
        let received = Instant::now();
        let (status, body) = match rq.method() {
            Method::Options => (200, String::new()),
            Method::Get => self.get(rq.url()),
            Method::Post => match read_body(&mut rq) {
                Ok(text) => self.post(&text, received),
                Err(a) => a,
            },
            m => error(405, format!("method {m} not allowed")),
        };
        if status >= 400 {
            warn!("{} {}: {status} {body}", rq.method(), rq.url());
        }
        let mut resp = Response::from_string(body).with_status_code(status);
        for (k, v) in [
            ("Content-Type", "text/acl"),
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Allow-Methods", "POST, GET, OPTIONS"),
            ("Access-Control-Allow-Headers", "Content-Type"),
            ("Access-Control-Allow-Age", "86400"),
        ] {
            if let Some(h) = header(k, v) {
                resp.add_header(h);
            }
        }
        if let Err(e) = rq.respond(resp) {
            debug!("response lost: {e}");
        }
    }

    fn get(&self, url: &str) -> Answer {
        let parts: Vec<&str> = url.trim_matches('/').split('/').collect();
        match parts.as_slice() {
            [""] => (200, self.info()),
            ["matches", id, what @ ("stats" | "log")] => {
                let Some(dir) = &self.cfg.log_dir else { return error(404, "this player keeps no logs") };
                let file = if *what == "stats" { "stats.jsonl" } else { "log.txt" };
                let path = match_dir(dir, &self.cfg.name, &id.to_lowercase()).join(file);
                match std::fs::read_to_string(&path) {
                    Ok(s) => (200, s),
                    Err(_) => error(404, format!("no {what} for match {id}")),
                }
            }
            _ => error(404, format!("nothing at {url}")),
        }
    }

    fn info(&self) -> String {
        format!("((name {}) (status available))", self.cfg.name)
    }

    fn post(&self, text: &str, received: Instant) -> Answer {
        let msg = match parse(text) {
            Ok(m) => m,
            Err(e) => return error(400, e),
        };
        debug!("{} {}", msg.kind(), msg.match_id().unwrap_or(""));
        match msg {
            Message::Info => (200, self.info()),
            Message::Preview { .. } => (200, "ready".into()),
            Message::Start { id, role, rules, start_clock, play_clock } => {
                self.start(StartRequest { id, role, rules, start_clock, play_clock, received })
            }
            Message::Play { id, moves } => self.play(&id, moves, received),
            Message::Stop { id, moves } => self.stop(&id, moves),
            Message::Abort { id } => match self.finish(&id) {
                Some(h) => {
                    let _ = h.commands.send_timeout(Command::Abort, Duration::from_secs(1));
                    (200, "aborted".into())
                }
                None => error(404, format!("unknown match `{id}`")),
            },
        }
    }

    fn start(&self, req: StartRequest) -> Answer {
        let id = req.id.clone();
        let margin = self.cfg.margin_for(req.start_clock);
        let deadline = req.received + Duration::from_secs_f64(req.start_clock) - margin / 2;
        let (tx, rx) = bounded(1);
        {
            let Ok(mut all) = self.matches.lock() else { return error(500, "player state poisoned") };
            if matches!(all.get(&id), Some(Entry::Running(_))) {
                return error(409, format!("match `{id}` is already running"));
            }
            match matches::spawn(self.cfg.clone(), req, tx) {
                Ok(h) => all.insert(id.clone(), Entry::Running(h)),
                Err(e) => return error(500, e),
            };
        }
        match rx.recv_deadline(deadline) {
            Ok(Ok(r)) => (200, r),
            Ok(Err(e)) => {
                self.finish(&id);
                error(400, e)
            }
            Err(_) => {
                warn!(match_id = %id, "still preparing at the end of the start clock; answering ready");
                (200, "ready".into())
            }
        }
    }

    /// A handle to a running match.
    fn running(&self, id: &str) -> Option<(crossbeam_channel::Sender<Command>, Arc<Mutex<matches::Snapshot>>, f64)> {
        let all = self.matches.lock().ok()?;
        match all.get(id) {
            Some(Entry::Running(h)) => Some((h.commands.clone(), h.snapshot.clone(), h.play_clock)),
            _ => None,
        }
    }

    /// Marks a match finished, returning its handle if it was running.
    fn finish(&self, id: &str) -> Option<MatchHandle> {
        let mut all = self.matches.lock().ok()?;
        match all.insert(id.to_string(), Entry::Finished) {
            Some(Entry::Running(h)) => Some(h),
            _ => None,
        }
    }

    fn play(&self, id: &str, moves: Option<Vec<String>>, received: Instant) -> Answer {
        let Some((commands, snapshot, clock)) = self.running(id) else {
            return error(404, format!("unknown match `{id}`"));
        };
        let margin = self.cfg.margin_for(clock);
        let deadline = received + Duration::from_secs_f64(clock) - margin;
        let (tx, rx) = bounded(1);
        let sent = commands.send_deadline(Command::Play { moves, deadline, reply: tx }, deadline);
        let late = deadline + margin / 2;
        match sent.ok().map(|_| rx.recv_deadline(late)) {
            Some(Ok(Ok(mv))) => (200, mv),
            Some(Ok(Err(e))) => error(400, e),
            _ => {
                // The match thread is late (a slow machine call): any legal move beats none.
                let legal = snapshot.lock().map(|s| s.legal.clone()).unwrap_or_default();
                let pick = received.elapsed().subsec_nanos() as usize % legal.len().max(1);
                match legal.get(pick) {
                    Some(mv) => {
                        warn!(match_id = %id, "no move in time; playing {mv} from the last known legal moves");
                        (200, mv.clone())
                    }
                    None => error(500, "no move in time and no legal move known"),
                }
            }
        }
    }

    fn stop(&self, id: &str, moves: Option<Vec<String>>) -> Answer {
        let Some(h) = self.finish(id) else { return error(404, format!("unknown match `{id}`")) };
        let (tx, rx) = bounded(1);
        let wait = Duration::from_secs(10);
        if h.commands.send_timeout(Command::Stop { moves, reply: tx }, wait).is_ok() {
            match rx.recv_timeout(wait) {
                Ok(Err(e)) => warn!(match_id = %id, "stop: {e}"),
                Ok(Ok(_)) => info!(match_id = %id, "finished"),
                Err(_) => warn!(match_id = %id, "stop: the match did not answer"),
            }
        }
        (200, "done".into())
    }
}

fn read_body(rq: &mut Request) -> Result<String, Answer> {
    if rq.body_length().is_some_and(|n| n > MAX_BODY) {
        return Err(error(413, format!("request body over {MAX_BODY} bytes")));
    }
    let mut buf = Vec::new();
    if let Err(e) = rq.as_reader().take(MAX_BODY as u64 + 1).read_to_end(&mut buf) {
        return Err(error(400, format!("reading the request: {e}")));
    }
    if buf.len() > MAX_BODY {
        return Err(error(413, format!("request body over {MAX_BODY} bytes")));
    }
    String::from_utf8(buf).map_err(|_| error(400, "the request is not UTF-8"))
}
