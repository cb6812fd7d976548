//! The GGP player and game manager over real HTTP: full matches with short
//! clocks on every bundled game, and requests a manager should never send.

use crate::common::{agent, check_record, post, records, root, temp_dir, two_at_a_time, Player};
use std::path::PathBuf;
use std::process::Command;

const PLAY_CLOCK: f64 = 1.0;

#[test]
fn full_matches_over_http_on_every_bundled_game() {
    let mut games: Vec<PathBuf> = std::fs::read_dir(root().join("games"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "kif"))
        .collect();
    games.sort();
    assert!(games.len() >= 7);
    two_at_a_time(&games, |game| full_match(game));
}

/// One match of `builtin:mcts` against random players, checked against the
/// prover, with the MCTS player's statistics and log.
fn full_match(game: &std::path::Path) {
    let text = std::fs::read_to_string(game).unwrap();
    let roles = text.lines().filter(|l| l.trim_start().starts_with("(role ")).count();
    let out = temp_dir(game.file_stem().unwrap().to_str().unwrap());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_propel"));
    cmd.current_dir(root())
        .env("RUST_LOG", "warn")
        .arg("match")
        .arg(game)
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
    check_record(game, &recs[0], PLAY_CLOCK);
    // The MCTS player served its statistics: one line per turn it played.
    let id = recs[0]["matchId"].as_str().unwrap();
    let role0 = recs[0]["gameRoleNames"][0].as_str().unwrap();
    let stats = std::fs::read_to_string(out.join(id).join(format!("{role0}.stats.jsonl"))).unwrap();
    let plays = stats.lines().filter(|l| l.contains("\"phase\":\"play\"")).count();
    assert!(plays >= 1, "{}: no play statistics", game.display());
    assert!(out.join("logs/mcts").join(id).join("log.txt").exists());
}

#[test]
fn bad_requests_get_errors_and_the_player_keeps_playing() {
    let logs = temp_dir("serve");
    let p = Player::start(&logs, &["--max-clock", "3"]);
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

    // Clocks over --max-clock (3 s here) are taken as 3 s.
    let t = std::time::Instant::now();
    assert_eq!(post(u, format!("(start long xplayer ({ttt}) 1e6 1e6)")), (200, "ready".into()));
    assert!(t.elapsed().as_secs_f64() < 3.5, "{:?}", t.elapsed());
    assert_eq!(post(u, "(abort long)"), (200, "aborted".into()));
    // One log folder per match, `p/q` apart from `p_q`, none for a rejected start.
    for id in ["p/q", "p_q"] {
        assert_eq!(post(u, format!("(start {id} xplayer ({ttt}) 1 1)")), (200, "ready".into()));
        assert_eq!(post(u, format!("(abort {id})")), (200, "aborted".into()));
    }
    let mut dirs: Vec<String> = std::fs::read_dir(logs.join("propel"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs, ["long", "m1", "m2", "p_2Fq", "p_5Fq"]);
}

#[test]
fn error_answers_name_no_path_of_the_server() {
    // The log folder cannot be made: a file is in the way.
    let dir = temp_dir("nolog");
    let blocker = dir.join("file");
    std::fs::write(&blocker, "").unwrap();
    let p = Player::start(&blocker, &[]);
    let ttt = std::fs::read_to_string(root().join("games/tictactoe.kif")).unwrap();
    let (st, body) = post(&p.url, format!("(start m1 xplayer ({ttt}) 1 1)"));
    assert_eq!(st, 500, "{body}");
    assert!(body.contains("statistics") && !body.contains('/'), "{body}");
}
