//! The `propel` command as users and other reasoners see it: exit codes,
//! error messages, and the JSON output formats (a contract).

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

#[path = "../../tests/skip.rs"]
mod skip;

fn propel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_propel"))
        .args(args)
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .output()
        .expect("propel runs")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("propel-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn help_for_every_subcommand() {
    for sub in [
        "check", "perft", "trace", "playouts", "corpus", "compare", "compile", "bench", "search", "analyse", "serve",
        "match", "report",
    ] {
        let o = propel(&[sub, "--help"]);
        assert!(o.status.success(), "{sub} --help");
        assert!(stdout(&o).contains("Usage"), "{sub} --help prints usage");
    }
}

#[test]
fn check_valid_game() {
    let o = propel(&["check", "games/tictactoe.kif"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("valid") && out.contains("xplayer oplayer"), "{out}");
    assert!(out.contains("rules:"), "{out}");
}

#[test]
fn check_invalid_game_names_file_line_column() {
    let bad = temp_file(
        "bad.kif",
        "(role a)\n(init p)\n(<= (legal a go) (true p))\n(<= (next ?x) (true p))\n(<= terminal (true p))\n(goal a 1)\n",
    );
    let o = propel(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("bad.kif:4:"), "{err}");
    assert!(err.contains("?x"), "{err}");
    let o = propel(&["check", "--json", bad.to_str().unwrap()]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["verdict"], "rejected");
    assert_eq!(v["category"], "unsafe");
}

#[test]
fn missing_file_is_an_error_not_a_crash() {
    let o = propel(&["perft", "no/such/game.kif", "--depth", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no/such/game.kif"), "{}", stderr(&o));
    let o = propel(&["trace", "games/tictactoe.kif", "--machine", "nonsense"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown machine"));
}

#[test]
fn perft_prints_json_lines() {
    let o = propel(&["perft", "games/tictactoe.kif", "--depth", "2"]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        "{\"depth\":0,\"nodes\":1,\"terminal\":0}\n{\"depth\":1,\"nodes\":9,\"terminal\":0}\n{\"depth\":2,\"nodes\":72,\"terminal\":0}\n"
    );
}

#[test]
fn trace_format_and_determinism() {
    let a = propel(&["trace", "games/tictactoe.kif", "--seed", "42"]);
    let b = propel(&["trace", "games/tictactoe.kif", "--seed", "42"]);
    assert!(a.status.success());
    assert_eq!(stdout(&a), stdout(&b), "same seed, same trace");
    let lines: Vec<Value> = stdout(&a).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 6);
    for (i, l) in lines.iter().enumerate() {
        let keys: Vec<&str> = l.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        let last = i + 1 == lines.len();
        let want: &[&str] = if last {
            &["step", "state", "legal", "terminal", "goals"]
        } else {
            &["step", "state", "legal", "terminal", "joint"]
        };
        assert_eq!(keys, want, "line {i}");
        assert_eq!(l["step"], i);
        let state: Vec<&str> = l["state"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        let mut sorted = state.clone();
        sorted.sort();
        assert_eq!(state, sorted, "state sorted");
        assert!(state.contains(&"(control xplayer)") || state.contains(&"(control oplayer)"));
    }
    let last = lines.last().unwrap();
    assert_eq!(last["terminal"], true);
    let goals = last["goals"].as_object().unwrap();
    assert_eq!(goals.keys().collect::<Vec<_>>(), ["xplayer", "oplayer"]);
    let c = propel(&["trace", "games/tictactoe.kif", "--seed", "43"]);
    assert_ne!(stdout(&a), stdout(&c), "another seed, another game");
}

#[test]
fn trace_step_limit() {
    let o = propel(&["trace", "games/breakthrough.kif", "--seed", "1", "--max-steps", "3"]);
    assert!(o.status.success());
    let lines: Vec<Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[2].get("joint").is_none(), "a cut-off last line has no joint move");
}

#[test]
fn trace_reports_undefined_and_multiple_goals() {
    let g = temp_file(
        "goals.kif",
        "(role a) (role b) (init s) (legal a go) (legal b go) (<= terminal (true s))\n\
         (<= (goal a 10) (true s)) (<= (goal a 20) (true s)) (<= (goal b 0) (true z))",
    );
    let o = propel(&["trace", g.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["goals"]["a"], serde_json::json!([10, 20]));
    assert_eq!(v["goals"]["b"], Value::Null);
}

#[test]
fn playouts_json() {
    let o = propel(&["playouts", "games/tictactoe.kif", "--seconds", "0.2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["game", "machine", "playouts", "seconds", "playouts_per_s", "states_per_s", "avg_length"]);
    assert!(v["playouts"].as_u64().unwrap() > 0);
    let len = v["avg_length"].as_f64().unwrap();
    assert!((5.0..=9.0).contains(&len), "tic-tac-toe games last 5 to 9 moves, got {len}");
}

#[test]
fn playouts_warn_once_about_undefined_goals() {
    let g = temp_file("nogoal.kif", "(role a) (init s) (legal a go) (<= terminal (true s)) (<= (goal a 50) (true z))");
    let o = propel(&["playouts", g.to_str().unwrap(), "--seconds", "0.05"]);
    assert!(o.status.success());
    assert_eq!(stderr(&o).matches("undefined").count(), 1, "{}", stderr(&o));
}

#[test]
fn corpus_command_on_a_small_folder() {
    let dir = std::env::temp_dir().join(format!("propel-corpus-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::copy(root().join("games/tictactoe.kif"), dir.join("ttt.kif")).unwrap();
    std::fs::write(dir.join("sub/broken.kif"), "(role a) (legal a (go").unwrap();
    let tsv = dir.join("out.tsv");
    let o = propel(&["corpus", dir.to_str().unwrap(), "--tsv", tsv.to_str().unwrap(), "--timeout", "30"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let text = std::fs::read_to_string(&tsv).unwrap();
    assert!(text.starts_with("file\tverdict\troles\tcategory\terror\n"));
    assert!(text.contains("sub/broken.kif\trejected\t0\tsyntax\t"), "{text}");
    assert!(text.contains("ttt.kif\tvalid\t2\t"), "{text}");
    assert!(stdout(&o).contains("2 files: 1 rejected, 1 valid"), "{}", stdout(&o));

    // A run stopped after one game: --resume checks only the other.
    let first: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&tsv, &first).unwrap();
    let o = propel(&["corpus", dir.to_str().unwrap(), "--tsv", tsv.to_str().unwrap(), "--timeout", "30", "--resume"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("resuming: 1 files done, 1 to go"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&tsv).unwrap(), text);
}

#[test]
fn compare_checks_propnet_jit_and_library_against_the_prover() {
    let o = propel(&["compare", "games/firewall.kif", "--json", "--traces", "2"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["verdict"], "agree", "{v}");
    assert!(v["detail"].as_str().unwrap().starts_with("propnet, jit, aot"), "{v}");
    // Over the grounding budget is a verdict of its own, not a failure.
    let o = propel(&["compare", "games/firewall.kif", "--json", "--ground-seconds", "0"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["verdict"], "over-budget", "{v}");
}

fn analyse(game: &str, secs: &str) -> Value {
    let o = propel(&["analyse", game, "--seconds", secs, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn analyse_reports_statistics_tuning_and_heuristics() {
    let v = analyse("games/tictactoe.kif", "1");
    for key in [
        "avg_length",
        "length_histogram",
        "branching",
        "simultaneous",
        "playouts_per_s",
        "exploration",
        "greedy_rollouts",
        "heuristics",
        "latches",
        "goal_bounds",
        "factors",
    ] {
        assert!(v.get(key).is_some(), "no {key}: {v}");
    }
    let len = v["avg_length"].as_f64().unwrap();
    assert!((5.0..=9.0).contains(&len), "{len}");
    let hist: u64 = v["length_histogram"].as_array().unwrap().iter().map(|x| x[1].as_u64().unwrap()).sum();
    assert_eq!(hist, v["games"].as_u64().unwrap());
    assert!(v["branching"]["xplayer"].as_f64().unwrap() > 1.0);
    assert_eq!(v["simultaneous"], false);
    assert_eq!(v["goal_bounds"]["oplayer"], serde_json::json!([0, 100]));
    assert!(v["factors"].as_array().unwrap().is_empty());
    // Random tic-tac-toe often misses a win one move away, but checking a
    // node's moves for one costs about half a rollout's steps: far over
    // the tenth that terminal children on expansion are allowed.
    let (missed, cost) = (v["missed_wins"].as_f64().unwrap(), v["win_check_cost"].as_f64().unwrap());
    assert!(missed > 0.005 && cost > 0.1 * len, "{missed} {cost}");
    assert_eq!(v["expand_terminal"], false, "{}", v["expand_terminal_reason"]);
    assert!(v["greedy_reason"].as_str().unwrap().contains("missed an immediate win"));

    assert_eq!(analyse("games/dilemma.kif", "0.5")["simultaneous"], true);

    // Random breakthrough says too little for a model (tests/analysis.rs
    // checks one that does, on a corpus checkers game): every role is
    // reported, without a model, and the search gets no prior.
    let v = analyse("games/breakthrough.kif", "1");
    for role in ["white", "black"] {
        assert!(v["heuristic_r2"].get(role).is_some(), "{v}");
    }
    assert!(v["heuristics"].as_array().unwrap().iter().all(|h| h["name"].as_str().unwrap().starts_with("count (")));
    assert_eq!(v["heuristics_used"], v["prior_visits"].as_u64().unwrap() > 0);
}

#[test]
fn analyse_solves_small_puzzles_and_finds_factors() {
    let corpus = root().join("../shared/games/base");
    if !corpus.exists() {
        skip::skip("../shared/games is absent: the corpus games of this test");
        return;
    }
    let v = analyse(corpus.join("lightsOnParallel.kif").to_str().unwrap(), "2");
    assert_eq!(v["puzzle"]["goal"], 100, "{v}");
    let v = analyse(corpus.join("dualConnect4.kif").to_str().unwrap(), "1");
    assert_eq!(v["factors"].as_array().unwrap().len(), 2, "{v}");
}
