//! `propel match` records, standings, `--jobs`, `--resume` and `--strict`;
//! `propel report`'s page; `propel bench --svg`'s chart. Built-in random
//! players on tic-tac-toe with short clocks keep each test to seconds.

use crate::common::Scratch;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn propel(args: &[&str]) -> Output {
    propel_logging(args, "error")
}

fn propel_logging(args: &[&str], log: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_propel"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("RUST_LOG", log)
        .output()
        .expect("propel runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fresh_dir(name: &str) -> Scratch {
    Scratch::new(std::env::temp_dir().join(format!("propel-match-{}-{name}", std::process::id())), false)
}

fn records(dir: &Path) -> Vec<Value> {
    let mut v: Vec<Value> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("standings.json"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect();
    v.sort_by_key(|r| r["matchId"].as_str().unwrap().to_string());
    v
}

/// Tic-tac-toe matches between `first` and a built-in random player.
fn matches_against_random(first: &str, dir: &Path, extra: &[&str]) -> Output {
    matches_logging(first, dir, extra, "error")
}

/// The same, with the manager's log at `log` (on stderr).
fn matches_logging(first: &str, dir: &Path, extra: &[&str], log: &str) -> Output {
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "match",
        "games/tictactoe.kif",
        "--player",
        first,
        "--player",
        "builtin:random",
        "--start-clock",
        "0.2",
        "--play-clock",
        "0.2",
        "-o",
        d,
    ];
    args.extend_from_slice(extra);
    propel_logging(&args, log)
}

fn random_matches(dir: &Path, extra: &[&str]) -> Output {
    matches_against_random("builtin:random", dir, extra)
}

#[test]
fn records_carry_token_clocks_rules_and_name() {
    let dir = fresh_dir("records");
    let o = random_matches(&dir, &["--matches", "4", "--jobs", "2", "--preview-clock", "0.1"]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let recs = records(&dir);
    assert_eq!(recs.len(), 4);
    let tokens: std::collections::BTreeSet<&str> = recs.iter().map(|r| r["randomToken"].as_str().unwrap()).collect();
    assert_eq!(tokens.len(), 4, "a token per match");
    for r in &recs {
        assert_eq!(r["gameName"], "Tic-tac-toe", "{r}");
        assert_eq!(r["previewClock"], 0.1);
        assert_eq!(r["gameFile"], "games/tictactoe.kif");
        let file = r["gameRulesheetFile"].as_str().unwrap();
        let rules = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(rules.contains("(role xplayer)"), "{rules}");
        assert!(file.contains(r["gameRulesheetHash"].as_str().unwrap()));
    }
    // The standings, in the terminal and as JSON.
    let out = text(&o.stdout);
    assert!(out.contains("score (95%)") && out.contains("Elo (95%)"), "{out}");
    let st: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("standings.json")).unwrap()).unwrap();
    assert_eq!(st["matches"], 4);
    let players = st["players"].as_array().unwrap();
    assert_eq!(players.len(), 2);
    let elo: f64 = players.iter().map(|p| p["elo"].as_f64().unwrap()).sum();
    assert!(elo.abs() < 1e-6, "ratings relative to the mean: {st}");
    assert!(players.iter().all(|p| p["scoreLow95"].as_f64().unwrap() <= p["score"].as_f64().unwrap()));
    // Without a preview phase, -1.
    let dir2 = fresh_dir("nopreview");
    assert!(random_matches(&dir2, &[]).status.success());
    assert_eq!(records(&dir2)[0]["previewClock"], -1);
}

#[test]
fn resume_plays_only_what_is_missing() {
    let dir = fresh_dir("resume");
    assert!(random_matches(&dir, &["--matches", "2"]).status.success());
    let o = random_matches(&dir, &["--matches", "3", "--resume"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("resuming: 2 matches recorded"), "{}", text(&o.stdout));
    assert_eq!(records(&dir).len(), 3);
    let o = random_matches(&dir, &["--matches", "3", "--resume"]);
    assert!(text(&o.stdout).contains("0 to play"), "{}", text(&o.stdout));
    assert_eq!(records(&dir).len(), 3);
    let st: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("standings.json")).unwrap()).unwrap();
    assert_eq!(st["matches"], 3, "standings cover the kept matches too");
}

#[test]
fn a_player_that_never_answers_is_named_and_strict_fails() {
    // Nothing listens on port 9 of the loopback: every request fails at once.
    let dir = fresh_dir("dead");
    let dead = "http://127.0.0.1:9";
    // A short wait for it to come up, and only at the first match: the
    // second match of the run probes once and goes on.
    let o = matches_logging(dead, &dir, &["--wait-for-players", "0.5", "--matches", "2"], "warn");
    assert!(o.status.success(), "without --strict the run completes");
    let out = text(&o.stdout);
    assert!(out.contains("warning: http://127.0.0.1:9 never answered"), "{out}");
    assert!(out.contains("say nothing of its play"), "{out}");
    let log = text(&o.stderr);
    assert_eq!(log.matches("nothing listens at http://127.0.0.1:9").count(), 1, "waited for once per run: {log}");
    let o = matches_against_random(dead, &dir, &["--matches", "2", "--strict", "--wait-for-players", "0.5"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--strict"), "{}", text(&o.stderr));
    let st: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("standings.json")).unwrap()).unwrap();
    assert_eq!(st["players"][0]["neverAnswered"], true, "{st}");
}

#[test]
fn report_shows_standings_first_and_names_games() {
    let dir = fresh_dir("report");
    assert!(random_matches(&dir, &["--matches", "2"]).status.success());
    let html = dir.join("report.html");
    let o = propel(&["report", dir.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("not a match record"), "standings.json is no record: {}", text(&o.stderr));
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("<title>Propel: Tic-tac-toe: 2 matches between random, random-2</title>"), "{h}");
    let standings = h.find("<h2>Standings</h2>").expect("a standings table");
    let matches = h.find("<h2>Matches</h2>").expect("a matches table");
    assert!(standings < matches, "standings first");
    assert!(h.contains("Elo (95%)") && h.contains("score (95%)"));
    assert!(!h.contains("games/tictactoe.kif"), "games by name, not path");
    assert!(h.contains("grid-template-columns"), "charts in a grid");
    assert!(h.contains("viewBox="), "charts scale with their column");
}

#[test]
fn bench_chart_has_units_values_and_every_column() {
    let dir = fresh_dir("bench");
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("b.csv");
    std::fs::write(
        &csv,
        "game,machine,threads,playouts_per_s,states_per_s,avg_length,build_seconds,codegen_seconds\n\
         g,prover,1,18119.7,1,7.6,0,0\ng,propnet,1,425112.4,1,7.6,0.4,0\ng,jit,1,6977409.1,1,7.6,0.4,0.005\n\
         g,jit-single,1,472325.5,1,7.6,0.4,0.005\ng,search-propnet,1,120000,0,0,0,0\ng,search-lanes,1,390000,0,0,0,0\n",
    )
    .unwrap();
    let svg = dir.join("b.svg");
    let o = propel(&["bench", "--replot", csv.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).unwrap();
    for want in [
        "playouts per second",
        "iterations per second",
        "jit-single",
        "lanes (hybrid)",
        ">0<",
        ">7.0M<",
        ">472k<",
        ">390k<",
    ] {
        assert!(s.contains(want), "no {want} in the chart");
    }
    let o = propel(&["bench", "--replot", "README.md"]);
    assert_eq!(o.status.code(), Some(1), "a file that is not bench CSV");
}
