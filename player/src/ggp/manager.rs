//! A game manager: runs matches over HTTP against GGP players, with the
//! reference prover as referee. Clocks are enforced (a move later than the
//! play clock plus a small grace for the network is a timeout); a
//! timed-out, malformed or illegal move is replaced by a random legal one
//! and recorded as an error. Each match is written as JSON with the fields
//! of ggp.org's match records.

use super::matches::{mix, MatchSeeds};
use super::protocol::{forms, moves_kif, parse_move};
use anyhow::{anyhow, bail, Context as _, Result};
use propel_compiler::Game;
use propel_runtime::{Prover, Rng, StateMachine};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tracing::{info, warn};

/// A player taking part: its label in records and its address.
#[derive(Clone, Debug)]
pub struct Seat {
    pub label: String,
    pub url: String,
    /// A player in this process: where to put its seed for each match.
    pub seeds: Option<MatchSeeds>,
    /// Set when nothing listened at `url` for a whole wait: later matches
    /// of the run probe it once instead of waiting again, until it answers
    /// (shared by every match's copy of the seat).
    pub gave_up: Arc<AtomicBool>,
}

impl Seat {
    pub fn new(label: String, url: String, seeds: Option<MatchSeeds>) -> Seat {
        Seat { label, url, seeds, gave_up: Arc::new(AtomicBool::new(false)) }
    }
}

#[derive(Clone, Debug)]
pub struct Clocks {
    /// Seconds of the preview phase (`preview` sent before `start`), if any.
    pub preview: Option<f64>,
    pub start: f64,
    pub play: f64,
    /// Seconds allowed on top of each clock for the network.
    pub grace: f64,
    /// Seconds a match waits for a player whose connection is refused
    /// before it sends `start` ([`wait_until_up`]); a player that stays
    /// down that long is not waited for again until it answers.
    pub wait: f64,
}

/// The rules a match is played by, as its record names them.
#[derive(Clone, Debug)]
pub struct Rulesheet {
    /// Every top-level form in canonical KIF (what `start` sends).
    pub forms: Vec<String>,
    /// The game's name, from the rules' leading comment (or the file's stem).
    pub name: String,
    /// FNV-1a 64 of the canonical rules text, hex.
    pub hash: String,
    /// Where the rules are kept, relative to the records' folder.
    pub file: String,
    /// The game file the rules were read from, as given.
    pub source: String,
}

impl Rulesheet {
    pub fn new(forms: Vec<String>, text: &str, source: &str) -> Rulesheet {
        let canonical = forms.join(" ");
        let hash = propel_compiler::lower::game_hash(canonical.as_bytes());
        Rulesheet {
            name: propel_compiler::game_title(text, source),
            file: format!("rules/{hash}.kif"),
            hash,
            forms,
            source: source.to_string(),
        }
    }
}

/// A finished match: the record written (goals, errors per turn and
/// seat, start errors: what standings are computed from).
pub struct Outcome {
    pub record: serde_json::Value,
}

/// A token naming one match uniquely, as ggp.org's records carry: 22
/// characters of URL-safe base-64 (132 random bits).
fn random_token(seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let mut rng = Rng::new(seed ^ nanos.rotate_left(17) ^ std::process::id() as u64);
    (0..22).map(|_| ALPHABET[rng.below(64)] as char).collect()
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Seconds a match waits, by default, for a player whose connection is
/// refused before it sends `start` ([`Clocks::wait`]).
pub const WAIT_FOR_PLAYERS: f64 = 30.0;

/// One answer from a player: the body, or why there is none; and the time.
struct Answer {
    body: Result<String, String>,
    ms: u64,
    /// Nothing listened at the player's address (the connection was
    /// refused): the player is not up, as opposed to slow or wrong.
    refused: bool,
}

fn agent(timeout: f64) -> ureq::Agent {
    let cfg = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs_f64(timeout.max(0.05))))
        .http_status_as_error(false)
        .build();
    ureq::Agent::new_with_config(cfg)
}

fn post(url: &str, body: &str, timeout: f64) -> Answer {
    let t = Instant::now();
    let r = agent(timeout).post(url).header("Content-Type", "text/acl").send(body);
    let body = match r {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            match resp.body_mut().read_to_string() {
                Ok(s) if status == 200 => Ok(s),
                Ok(s) => Err(format!("HTTP {status}: {}", s.trim())),
                Err(e) => Err(format!("reading the answer: {e}")),
            }
        }
        Err(ureq::Error::Timeout(_)) => Err("timeout".into()),
        Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            let ms = t.elapsed().as_millis() as u64;
            return Answer { body: Err(format!("io: {e}")), ms, refused: true };
        }
        Err(e) => Err(e.to_string()),
    };
    let ms = t.elapsed().as_millis() as u64;
    let body = match body {
        Ok(_) if ms as f64 > timeout * 1000.0 => Err(format!("late ({ms} ms)")),
        b => b,
    };
    Answer { body, ms, refused: false }
}

/// Asks `url` for `(info)` every 250 ms while its connection is refused,
/// for at most `limit` seconds: whether it came up. A player may be
/// restarting between matches (Sancho's runner exits after each one), and
/// a `start` it misses, or gets late, costs it its start clock; ggp.org's
/// Tiltyard likewise asks players for `info` before a match.
fn wait_until_up(url: &str, limit: f64) -> bool {
    let t = Instant::now();
    loop {
        if !post(url, "(info)", 2.0).refused {
            return true;
        }
        if t.elapsed().as_secs_f64() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Waits up to `wait` seconds for `seat` to come up, or probes it once
/// where an earlier wait for it ran out; says whether it is up.
fn await_seat(seat: &Seat, wait: f64) -> bool {
    // Relaxed: the flag only shortens a wait; nothing else is published
    // through it.
    let limit = if seat.gave_up.load(Ordering::Relaxed) { 0.0 } else { wait };
    let up = wait_until_up(&seat.url, limit);
    if up {
        // Up again: a player that restarts between matches is waited for
        // the next time it is down.
        seat.gave_up.store(false, Ordering::Relaxed);
    } else if !seat.gave_up.swap(true, Ordering::Relaxed) {
        warn!("{}: nothing listens at {} (waited {limit} s; not again until it answers)", seat.label, seat.url);
    }
    up
}

/// One message per seat (`bodies[i]` to `seats[i]`), all at once.
fn post_each(seats: &[Seat], bodies: &[String], timeout: f64) -> Vec<Answer> {
    std::thread::scope(|s| {
        let hs: Vec<_> =
            seats.iter().zip(bodies).map(|(seat, body)| s.spawn(move || post(&seat.url, body, timeout))).collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or(Answer { body: Err("request thread failed".into()), ms: 0, refused: false }))
            .collect()
    })
}

/// The same message to every seat at once.
fn post_all(seats: &[Seat], body: &str, timeout: f64) -> Vec<Answer> {
    post_each(seats, &vec![body.to_string(); seats.len()], timeout)
}

/// Asks a player its name (`info`); `None` when it does not say.
pub fn player_name(url: &str) -> Option<String> {
    let body = post(url, "(info)", 5.0).body.ok()?;
    let f = forms("info", &body).ok()?;
    let text = f.first()?;
    let i = text.find("(name ")? + 6;
    let rest = &text[i..];
    Some(rest[..rest.find(')')?].to_string())
}

/// Plays one match; `dir` gets `MATCH_ID.json` and the players' statistics
/// (`MATCH_ID/SEAT.stats.jsonl`, when a player serves them).
pub fn run_match(
    game: &Arc<Game>,
    rules: &Rulesheet,
    seats: &[Seat],
    clocks: &Clocks,
    id: &str,
    dir: &Path,
    seed: u64,
) -> Result<Outcome> {
    let mut m = Prover::new(game.clone())?;
    let roles = m.roles().to_vec();
    if seats.len() != roles.len() {
        bail!("{} players for {} roles", seats.len(), roles.len());
    }
    let mut rng = Rng::new(seed);
    let start_time = now_ms();
    info!(
        "match {id}: {}",
        seats.iter().zip(&roles).map(|(s, r)| format!("{} as {r}", s.label)).collect::<Vec<_>>().join(", ")
    );

    // Players in this process play with a seed of this match and seat.
    for (i, (seat, role)) in seats.iter().zip(&roles).enumerate() {
        if let Some(Ok(mut m)) = seat.seeds.as_ref().map(|s| s.lock()) {
            m.insert(format!("{id} {role}"), mix(seed, i as u64 + 1));
        }
    }
    std::thread::scope(|s| {
        for seat in seats {
            s.spawn(move || await_seat(seat, clocks.wait));
        }
    });
    let mut start_errors = Vec::new();
    let rules_text = rules.forms.join(" ");
    if let Some(p) = clocks.preview {
        // Preview answers are not scored: a player may ignore previews.
        let msg = format!("(preview ({rules_text}) {p})");
        for (seat, a) in seats.iter().zip(post_all(seats, &msg, p + clocks.grace)) {
            if let Err(e) = a.body {
                warn!("{}: preview: {e}", seat.label);
            }
        }
    }
    let starts: Vec<String> = roles
        .iter()
        .map(|role| format!("(start {id} {role} ({rules_text}) {} {})", clocks.start, clocks.play))
        .collect();
    let answers = post_each(seats, &starts, clocks.start + clocks.grace);
    for (i, a) in answers.iter().enumerate() {
        let e = match &a.body {
            Ok(b) if b.trim().eq_ignore_ascii_case("ready") => String::new(),
            Ok(b) => format!("start: answered `{}`", b.trim()),
            Err(e) => format!("start: {e}"),
        };
        if !e.is_empty() {
            warn!("{}: {e}", seats[i].label);
        }
        start_errors.push(e);
    }

    let mut state = m.initial_state()?;
    let mut states = vec![state_text(&mut m, &state)];
    let mut state_times = vec![now_ms()];
    let (mut moves, mut errors, mut move_times) = (Vec::new(), Vec::new(), Vec::new());
    let mut last: Option<Vec<String>> = None;
    let mut legal = Vec::new();
    let max_turns = propel_runtime::playout::MAX_PLAYOUT_STEPS as usize;
    while !m.is_terminal(&state)? {
        if moves.len() >= max_turns {
            bail!("no terminal state after {max_turns} turns");
        }
        let msg = format!("(play {id} {})", last.as_ref().map_or("nil".to_string(), |j| moves_kif(j)));
        let answers = post_all(seats, &msg, clocks.play + clocks.grace);
        let (mut joint, mut kif, mut errs, mut times) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (r, a) in answers.iter().enumerate() {
            m.legal_moves(&state, r, &mut legal)?;
            if legal.is_empty() {
                bail!("role {} has no legal move in a non-terminal state", roles[r]);
            }
            let wanted = a.body.as_ref().map_err(|e| e.clone()).and_then(|b| {
                let mv = parse_move(b).ok_or_else(|| format!("malformed move `{}`", b.trim()))?;
                legal.iter().copied().find(|&l| m.move_kif(l) == mv).ok_or(format!("illegal move `{mv}`"))
            });
            let mv = match wanted {
                Ok(mv) => {
                    errs.push(String::new());
                    mv
                }
                Err(e) => {
                    warn!("{} (turn {}): {e}; playing a random legal move instead", seats[r].label, moves.len());
                    errs.push(e);
                    legal[rng.below(legal.len())]
                }
            };
            joint.push(mv);
            kif.push(m.move_kif(mv));
            times.push(a.ms);
        }
        state = m.next_state(&state, &joint)?;
        states.push(state_text(&mut m, &state));
        state_times.push(now_ms());
        moves.push(kif.clone());
        errors.push(errs);
        move_times.push(times);
        last = Some(kif);
    }
    let goals: Vec<u8> = (0..roles.len()).map(|r| Ok(m.goal(&state, r)?.score())).collect::<Result<_>>()?;
    let stop = format!("(stop {id} {})", last.as_ref().map_or("nil".to_string(), |j| moves_kif(j)));
    for (seat, a) in seats.iter().zip(post_all(seats, &stop, clocks.play + clocks.grace)) {
        if let Err(e) = a.body {
            warn!("{}: stop: {e}", seat.label);
        }
    }
    info!(
        "match {id}: goals {}",
        seats.iter().zip(&goals).map(|(s, g)| format!("{} {g}", s.label)).collect::<Vec<_>>().join(", ")
    );

    // Statistics, from players that serve them.
    let stats_dir = dir.join(id);
    let mut fallbacks = vec![0usize; seats.len()];
    for (i, (seat, role)) in seats.iter().zip(&roles).enumerate() {
        let url = format!("{}/matches/{id}/stats", seat.url.trim_end_matches('/'));
        if let Ok(mut resp) = agent(5.0).get(&url).call() {
            if resp.status() == 200 {
                if let Ok(text) = resp.body_mut().read_to_string() {
                    fallbacks[i] = text.lines().filter(|l| l.contains("\"event\":\"fallback\"")).count();
                    if fallbacks[i] > 0 {
                        warn!("{}: answered {} moves by its fallback (its search was late)", seat.label, fallbacks[i]);
                    }
                    std::fs::create_dir_all(&stats_dir)?;
                    std::fs::write(stats_dir.join(format!("{role}.stats.jsonl")), text)?;
                }
            }
        }
    }

    let record = json!({
        "matchId": id,
        "randomToken": random_token(seed),
        "gameName": rules.name,
        "gameRulesheetHash": rules.hash,
        "gameRulesheetFile": rules.file,
        "gameFile": rules.source,
        "gameRoleNames": roles,
        "playerNamesFromHost": seats.iter().map(|s| s.label.clone()).collect::<Vec<_>>(),
        "previewClock": clocks.preview.map_or(json!(-1), |p| json!(p)),
        "startClock": clocks.start,
        "playClock": clocks.play,
        "startTime": start_time,
        "states": states,
        "stateTimes": state_times,
        "moves": moves,
        "moveTimes": move_times,
        "errors": errors,
        "startErrors": start_errors,
        "playerFallbacks": fallbacks,
        "goalValues": goals,
        "isCompleted": true,
        "isAborted": false,
    });
    // Written under another name and renamed, so that a run stopped while
    // writing leaves no half record for `--resume` to count.
    let path = dir.join(format!("{id}.json"));
    let tmp = dir.join(format!("{id}.json.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(&record)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(Outcome { record })
}

fn state_text(m: &mut Prover, s: &<Prover as StateMachine>::State) -> String {
    format!("({})", m.state_kif(s).join(" "))
}

/// Seats for every match: `players` in order, or with `round_robin`
/// every ordered choice of distinct players for the roles.
pub fn pairings(players: usize, roles: usize, round_robin: bool) -> Result<Vec<Vec<usize>>> {
    if !round_robin {
        if players != roles {
            bail!("the game has {roles} roles but {players} players were given (or use --round-robin)");
        }
        return Ok(vec![(0..roles).collect()]);
    }
    if players < roles {
        bail!("a round robin needs at least {roles} players");
    }
    let mut out = Vec::new();
    let mut cur = Vec::new();
    fn rec(players: usize, roles: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == roles {
            out.push(cur.clone());
            return;
        }
        for p in 0..players {
            if !cur.contains(&p) {
                cur.push(p);
                rec(players, roles, cur, out);
                cur.pop();
            }
        }
    }
    rec(players, roles, &mut cur, &mut out);
    if out.len() > 10_000 {
        return Err(anyhow!("{} pairings: too many for a round robin", out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{await_seat, pairings, post, wait_until_up, Seat};
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    /// Answers one request on `l` with a name.
    fn answer_once(l: &TcpListener) {
        let (mut c, _) = l.accept().unwrap();
        let mut buf = [0u8; 4096];
        let mut got = Vec::new();
        // The request's headers and its short body.
        while !String::from_utf8_lossy(&got).contains("(info)") {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0, "the request ended early");
            got.extend_from_slice(&buf[..n]);
        }
        c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n((name x))").unwrap();
    }

    /// A seat down for a whole wait is probed once at the next match, not
    /// waited for; once it answers it is waited for again.
    #[test]
    fn a_seat_down_for_a_whole_wait_is_not_waited_for_until_it_answers() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let seat = Seat::new("p".into(), format!("http://127.0.0.1:{port}/"), None);
        let t = Instant::now();
        assert!(!await_seat(&seat, 0.5));
        assert!(t.elapsed() >= Duration::from_millis(500), "{:?}", t.elapsed());
        assert!(seat.gave_up.load(Ordering::Relaxed));
        // A wait of 60 s is not taken: one probe, refused at once.
        let copy = seat.clone();
        let t = Instant::now();
        assert!(!await_seat(&copy, 60.0));
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        // It comes up: found, and the next wait is a wait again.
        let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let server = std::thread::spawn(move || answer_once(&l));
        assert!(await_seat(&seat, 5.0));
        server.join().unwrap();
        assert!(!copy.gave_up.load(Ordering::Relaxed), "the flag is the run's, shared by copies");
    }

    /// A player that comes up 600 ms late is waited for; a message to it
    /// before then is refused at once.
    #[test]
    fn a_match_waits_for_a_player_that_is_not_up_yet() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/");
        let a = post(&url, "(info)", 2.0);
        assert!(a.refused, "{:?}", a.body);
        let server = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            answer_once(&TcpListener::bind(("127.0.0.1", port)).unwrap());
        });
        let t = Instant::now();
        assert!(wait_until_up(&url, 5.0));
        assert!(t.elapsed() >= Duration::from_millis(500), "{:?}", t.elapsed());
        server.join().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let t = Instant::now();
        assert!(!wait_until_up(&format!("http://127.0.0.1:{port}/"), 0.3));
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn round_robin_pairings() {
        assert_eq!(pairings(2, 2, false).unwrap(), vec![vec![0, 1]]);
        assert!(pairings(3, 2, false).is_err());
        assert_eq!(pairings(3, 2, true).unwrap().len(), 6);
        assert_eq!(pairings(3, 1, true).unwrap(), vec![vec![0], vec![1], vec![2]]);
        assert!(pairings(1, 2, true).is_err());
    }
}
