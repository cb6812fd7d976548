//! What the player's HTTP tests share: a `propel serve` process, requests,
//! and checking match records against the prover.
#![allow(dead_code)]

use propel_runtime::{Prover, StateMachine};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// Runs `f` on every item, two at a time: matches are timed by wall
/// clocks, so a suite of them waits half as long (each player still
/// answers within its clock). A panic in either fails the caller.
pub fn two_at_a_time<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                // Relaxed: the counter only hands out distinct indices.
                while let Some(x) = items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    f(x);
                }
            });
        }
    });
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A test's scratch folder: removed when the test passes, kept when it
/// fails (its logs and records are what one looks at then).
pub struct Scratch(PathBuf);

impl Scratch {
    /// `path`, emptied; made when `make`.
    pub fn new(path: PathBuf, make: bool) -> Scratch {
        let _ = std::fs::remove_dir_all(&path);
        if make {
            std::fs::create_dir_all(&path).unwrap();
        }
        Scratch(path)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn temp_dir(name: &str) -> Scratch {
    Scratch::new(std::env::temp_dir().join(format!("propel-ggp-{}-{name}", std::process::id())), true)
}

/// Replays a match record with the prover: every move legal, every answer
/// within `clock` seconds, no errors, and the recorded goals right. Returns
/// the number of turns.
pub fn check_record(game: &Path, rec: &Value, clock: f64) -> usize {
    let g = Arc::new(propel_compiler::load_file(game).unwrap());
    let mut m = Prover::new(g).unwrap();
    let roles = m.roles().len();
    let mut s = m.initial_state().unwrap();
    let mut legal = Vec::new();
    let moves = rec["moves"].as_array().unwrap();
    assert!(!moves.is_empty());
    for (turn, joint) in moves.iter().enumerate() {
        let joint = joint.as_array().unwrap();
        let mut chosen = Vec::new();
        for r in 0..roles {
            let want = joint[r].as_str().unwrap();
            m.legal_moves(&s, r, &mut legal).unwrap();
            let mv = legal.iter().copied().find(|&l| m.move_kif(l) == want);
            chosen.push(mv.unwrap_or_else(|| panic!("turn {turn}: `{want}` is not legal")));
            let err = rec["errors"][turn][r].as_str().unwrap();
            assert_eq!(err, "", "turn {turn}, role {r}: {err}");
            let ms = rec["moveTimes"][turn][r].as_f64().unwrap();
            assert!(ms <= clock * 1000.0, "turn {turn}, role {r}: answered after {ms} ms");
        }
        s = m.next_state(&s, &chosen).unwrap();
    }
    assert!(m.is_terminal(&s).unwrap());
    for r in 0..roles {
        assert_eq!(rec["goalValues"][r].as_u64().unwrap(), m.goal(&s, r).unwrap().score() as u64);
    }
    assert!(rec["startErrors"].as_array().unwrap().iter().all(|e| e == ""));
    assert_eq!(rec["isCompleted"], true);
    moves.len()
}

pub fn records(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            // standings.json lies beside the records.
            if v.get("matchId").is_some() {
                out.push(v);
            }
        }
    }
    out
}

/// A `propel serve` process on a free port, killed when dropped.
pub struct Player {
    pub child: Child,
    pub url: String,
}

impl Player {
    pub fn start(log_dir: &Path, extra: &[&str]) -> Player {
        let mut child = Command::new(env!("CARGO_BIN_EXE_propel"))
            // One search thread, as these tests were written for (a
            // served player's default is every core).
            .args([
                "serve",
                "--port",
                "0",
                "--host",
                "127.0.0.1",
                "--strategy",
                "mcts",
                "--margin",
                "0.2",
                "--threads",
                "1",
            ])
            .arg("--log-dir")
            .arg(log_dir)
            .args(extra)
            .env("RUST_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("listening on ").unwrap().to_string();
        Player { child, url }
    }

    /// The names of the process's threads (`/proc/PID/task/*/comm`).
    pub fn threads(&self) -> Vec<String> {
        let dir = format!("/proc/{}/task", self.child.id());
        let Ok(tasks) = std::fs::read_dir(dir) else { return Vec::new() };
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|s| s.trim().to_string())
            .collect()
    }

    /// Resident memory in MiB.
    pub fn rss_mib(&self) -> u64 {
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.child.id())).unwrap_or_default();
        (statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4096) >> 20
    }
}

impl Drop for Player {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(30))).build(),
    )
}

pub fn post(url: &str, body: impl AsRef<[u8]>) -> (u16, String) {
    let mut r = agent().post(url).header("Content-Type", "text/acl").send(body.as_ref()).unwrap();
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
}
