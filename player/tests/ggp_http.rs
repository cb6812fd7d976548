//! The GGP player and game manager over real HTTP: full matches with short
//! clocks on every bundled game, and requests a manager should never send.

use propel_runtime::{Prover, StateMachine};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("propel-ggp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const PLAY_CLOCK: f64 = 1.0;

/// Replays a match record with the prover: every move legal, every answer
/// in time, no errors, and the recorded goals right.
fn check_record(game: &Path, rec: &Value) {
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
            assert!(ms <= PLAY_CLOCK * 1000.0, "turn {turn}, role {r}: answered after {ms} ms");
        }
        s = m.next_state(&s, &chosen).unwrap();
    }
    assert!(m.is_terminal(&s).unwrap());
    for r in 0..roles {
        assert_eq!(rec["goalValues"][r].as_u64().unwrap(), m.goal(&s, r).unwrap().score() as u64);
    }
    assert!(rec["startErrors"].as_array().unwrap().iter().all(|e| e == ""));
    assert_eq!(rec["isCompleted"], true);
}

fn records(dir: &Path) -> Vec<Value> {
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

#[test]
fn full_matches_over_http_on_every_bundled_game() {
    let mut games: Vec<PathBuf> = std::fs::read_dir(root().join("games"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "kif"))
        .collect();
    games.sort();
    assert!(games.len() >= 7);
    for game in games {
        let text = std::fs::read_to_string(&game).unwrap();
        let roles = text.lines().filter(|l| l.trim_start().starts_with("(role ")).count();
        let out = temp_dir(game.file_stem().unwrap().to_str().unwrap());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_propel"));
        cmd.current_dir(root())
            .env("RUST_LOG", "warn")
            .arg("match")
            .arg(&game)
            .args(["--start-clock", "2", "--play-clock", &PLAY_CLOCK.to_string(), "--threads", "2", "-o"])
            .arg(&out)
            .args(["--player", "builtin:mcts"]);
        for _ in 1..roles {
            cmd.args(["--player", "builtin:random"]);
        }
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "{}: {}", game.display(), String::from_utf8_lossy(&o.stderr));
        let recs = records(&out);
        assert_eq!(recs.len(), 1, "{}", game.display());
        check_record(&game, &recs[0]);
        // The MCTS player served its statistics: one line per turn it played.
        let id = recs[0]["matchId"].as_str().unwrap();
        let role0 = recs[0]["gameRoleNames"][0].as_str().unwrap();
        let stats = std::fs::read_to_string(out.join(id).join(format!("{role0}.stats.jsonl"))).unwrap();
        let plays = stats.lines().filter(|l| l.contains("\"phase\":\"play\"")).count();
        assert!(plays >= 1, "{}: no play statistics", game.display());
        assert!(out.join("logs/mcts").join(id).join("log.txt").exists());
    }
}

/// A `propel serve` process on a free port, killed when dropped.
struct Player {
    child: Child,
    url: String,
}

impl Player {
    fn start(log_dir: &Path) -> Player {
        let mut child = Command::new(env!("CARGO_BIN_EXE_propel"))
            .args(["serve", "--port", "0", "--host", "127.0.0.1", "--strategy", "mcts", "--margin", "0.2"])
            .arg("--log-dir")
            .arg(log_dir)
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
}

impl Drop for Player {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(30))).build(),
    )
}

fn post(url: &str, body: impl AsRef<[u8]>) -> (u16, String) {
    let mut r = agent().post(url).header("Content-Type", "text/acl").send(body.as_ref()).unwrap();
    (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
}

#[test]
fn bad_requests_get_errors_and_the_player_keeps_playing() {
    let logs = temp_dir("serve");
    let p = Player::start(&logs);
    let u = p.url.as_str();
    let ttt = std::fs::read_to_string(root().join("games/tictactoe.kif")).unwrap();

    let (st, body) = post(u, "( INFO )");
    assert_eq!(st, 200);
    assert!(body.contains("(name propel)"), "{body}");

    // Malformed, unknown, oversized, not UTF-8.
    for bad in ["(play m1", "", "(dance)", "(play)", "(start m r notalist 1 1)", "(info) (info)"] {
        let (st, body) = post(u, bad);
        assert_eq!(st, 400, "{bad}: {body}");
        assert!(body.starts_with("error:"), "{body}");
    }
    assert_eq!(post(u, [0xffu8, 0xfe, 0x28]).0, 400);
    assert_eq!(post(u, vec![b' '; 17 << 20]).0, 413);
    assert_eq!(post(u, "(play nosuch nil)").0, 404);
    assert_eq!(post(u, "(stop nosuch nil)").0, 404);
    assert_eq!(post(u, "(abort nosuch)").0, 404);

    // Rules that do not parse, or a role the game lacks: an error, no match.
    let (st, body) = post(u, "(start bad1 x ((role x) (<= (p ?y) (q))) 2 1)");
    assert_eq!(st, 400);
    assert!(body.contains("unsafe") || body.contains("safe"), "{body}");
    assert_eq!(post(u, "(play bad1 nil)").0, 404);
    let (st, body) = post(u, format!("(start bad2 nobody ({ttt}) 2 1)"));
    assert_eq!(st, 400, "{body}");

    // A real match, with a second one beside it.
    assert_eq!(post(u, format!("(START m1 xplayer ({ttt}) 2 1)")), (200, "ready".into()));
    assert_eq!(post(u, format!("(start m2 oplayer ({ttt}) 2 1)")), (200, "ready".into()));
    assert_eq!(post(u, format!("(start m1 xplayer ({ttt}) 2 1)")).0, 409);
    let (st, mv) = post(u, "(play m1 nil)");
    assert_eq!(st, 200);
    assert!(mv.starts_with("(mark "), "{mv}");
    // An illegal joint move from the manager: an error, the state is kept.
    let (st, body) = post(u, "(play m1 ((mark 9 9) noop))");
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("not a legal move"), "{body}");
    let (st, mv2) = post(u, format!("(play m1 ({mv} noop))"));
    assert_eq!(st, 200);
    assert_eq!(mv2, "noop");
    // The other match was untouched.
    assert_eq!(post(u, "(play m2 nil)"), (200, "noop".into()));
    assert_eq!(post(u, "(abort m2)"), (200, "aborted".into()));
    assert_eq!(post(u, "(play m2 nil)").0, 404);
    assert_eq!(post(u, "(stop m1 nil)"), (200, "done".into()));

    // CORS, and the statistics of a finished match.
    let r = agent().options(u).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers().get("Access-Control-Allow-Origin").unwrap(), "*");
    assert_eq!(r.headers().get("Content-Type").unwrap(), "text/acl");
    let mut r = agent().get(&format!("{u}/matches/m1/stats")).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let stats = r.body_mut().read_to_string().unwrap();
    assert!(stats.lines().any(|l| l.contains("\"phase\":\"play\"")), "{stats}");
    assert_eq!(agent().get(&format!("{u}/matches/nosuch/stats")).call().unwrap().status().as_u16(), 404);
    assert_eq!(post(u, "(info)").0, 200);
}
