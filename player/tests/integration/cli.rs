//! The `propel` command as users and other reasoners see it: exit codes,
//! error messages, and the JSON output formats (a contract).

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

use crate::skip;

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

/// A file written for one test, in a folder of its own that goes with
/// it (kept when the test fails, to look at).
struct TempFile {
    dir: PathBuf,
    path: PathBuf,
}

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn temp_file(name: &str, text: &str) -> TempFile {
    let dir = std::env::temp_dir().join(format!("propel-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    TempFile { dir, path }
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

/// Win-first lanes from the command line: breakthrough's winning moves
/// are found and used (shorter games, the search says so); tic-tac-toe
/// has none (a mark that wins in one game does not in another), so its
/// search stays on uniform lanes; the flag needs `--fast`.
#[test]
fn win_first_lanes_from_the_command_line() {
    let fast = |extra: &[&str]| {
        let mut args =
            vec!["playouts", "games/breakthrough.kif", "--machine", "jit", "--fast", "--count", "512", "--json"];
        args.extend_from_slice(extra);
        let o = propel(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        v["avg_length"].as_f64().unwrap()
    };
    let (uniform, win_first) = (fast(&[]), fast(&["--win-first", "0.5"]));
    assert!(win_first < uniform - 3.0, "mean length {win_first} with win-first, {uniform} without");
    let o = propel(&["playouts", "games/breakthrough.kif", "--win-first", "1"]);
    assert!(!o.status.success() && stderr(&o).contains("--fast"), "{}", stderr(&o));
    let search = |game: &str| {
        let o = propel(&[
            "search",
            game,
            "--machine",
            "hybrid",
            "--seconds",
            "0.2",
            "--win-first",
            "--win-first-sample",
            "0.5",
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        v["rollout_policy"].as_str().unwrap().to_string()
    };
    assert_eq!(search("games/breakthrough.kif"), "win-first lanes");
    assert_eq!(search("games/tictactoe.kif"), "lanes");
}

/// `search --greedy` rolls out greedily, one leaf at a time (lanes play
/// uniform or win-first games, never greedy ones).
#[test]
fn greedy_search_leaves_the_lanes() {
    let o =
        propel(&["search", "games/breakthrough.kif", "--machine", "hybrid", "--seconds", "0.2", "--greedy", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["lanes"], Value::Bool(false), "{v}");
    assert_eq!(v["rollout_policy"].as_str(), Some("greedy"), "{v}");
}

/// `search --analyse` searches as the player would after its analysis:
/// on breakthrough the analysis finds material (children join at once),
/// winning moves (win-first lanes) and capturing moves (captures first by
/// table); `--search` changes that as the player's does, and is refused
/// without `--analyse`.
#[test]
fn search_with_the_analysis_searches_as_the_player() {
    let run = |extra: &[&str]| -> Value {
        let mut args = vec!["search", "games/breakthrough.kif", "--seconds", "0.2", "--analyse", "1", "--json"];
        args.extend_from_slice(extra);
        let o = propel(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(stdout(&o).trim()).unwrap()
    };
    let v = run(&[]);
    assert_eq!(v["rollout_policy"].as_str(), Some("win-first lanes, captures first by table"), "{v}");
    assert_eq!(v["expand_after"], 1, "{v}");
    let v = run(&["--search", "cutoff=12,capture=0"]);
    assert_eq!(v["rollout_policy"].as_str(), Some("win-first lanes, cut by material"), "{v}");
    let v = run(&["--search", "capture=0.8,capture-by=look-ahead"]);
    assert_eq!(v["rollout_policy"].as_str(), Some("decisive safe-first capture-first lanes"), "{v}");
    let v = run(&["--search", "material=off,greedy=off"]);
    assert_eq!(v["rollout_policy"].as_str(), Some("lanes"), "{v}");
    assert_eq!(v["expand_after"], 3, "{v}");
    let o = propel(&["search", "games/breakthrough.kif", "--seconds", "0.1", "--search", "cutoff=12"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `search --moves N`: the root's N most visited moves, most visited
/// first, their visits adding up to at most the root's, values in 0..100;
/// the best move is the first. Without it the JSON has no `root_moves`.
#[test]
fn search_lists_the_roots_moves() {
    let run = |extra: &[&str]| -> Value {
        let mut args = vec!["search", "games/connect4.kif", "--seconds", "0.3", "--json"];
        args.extend_from_slice(extra);
        let o = propel(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str(stdout(&o).trim()).unwrap()
    };
    let v = run(&["--moves", "3"]);
    let moves = v["root_moves"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(moves.len(), 3, "{v}");
    let visits: Vec<u64> = moves.iter().map(|m| m["visits"].as_u64().unwrap()).collect();
    assert!(visits.windows(2).all(|w| w[0] >= w[1]), "{v}");
    assert!(visits.iter().sum::<u64>() <= v["iterations"].as_u64().unwrap() + 100, "{v}");
    assert!(moves.iter().all(|m| (0.0..=100.0).contains(&m["value"].as_f64().unwrap())), "{v}");
    assert_eq!(moves[0]["move"], v["move"], "{v}");
    assert!(run(&[]).get("root_moves").is_none());
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
    std::fs::remove_dir_all(&dir).ok();
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

#[test]
fn compare_stops_perft_before_a_first_depth_with_more_joint_moves_than_allowed() {
    // Dilemma's root has 2 x 2 joint moves: depth 1 would have 4 nodes.
    let detail = |nodes: &str| {
        let o = propel(&["compare", "games/dilemma.kif", "--json", "--perft-nodes", nodes]);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["verdict"], "agree", "{v}");
        v["detail"].as_str().unwrap().to_string()
    };
    assert!(detail("3").contains("perft to depth 0"));
    assert!(detail("4").contains("perft to depth 1"));
}

/// One game in a thousand ends in a state that is not terminal and has no
/// legal move (three `(pick 0)` in a row).
const RARE_DEAD_END: &str = "(role p) (init (step 0)) (init (zeros 0))
    (digit 0) (digit 1) (digit 2) (digit 3) (digit 4) (digit 5) (digit 6) (digit 7) (digit 8) (digit 9)
    (succ 0 1) (succ 1 2) (succ 2 3)
    (<= (legal p (pick ?d)) (true (step ?s)) (distinct ?s 3) (digit ?d))
    (<= (next (step ?t)) (true (step ?s)) (succ ?s ?t))
    (<= (next (zeros ?t)) (does p (pick 0)) (true (zeros ?s)) (succ ?s ?t))
    (<= (next (zeros ?s)) (does p (pick ?d)) (distinct ?d 0) (true (zeros ?s)))
    (<= terminal (true (step 3)) (not (true (zeros 3))))
    (goal p 100)";

#[test]
fn a_rare_dead_end_met_by_one_kind_of_playout_is_no_disagreement() {
    // The lanes' first 256 playouts meet the dead end and the standard
    // loop's first 256 do not (so it was reported as a disagreement, as
    // base/3pttc was): more standard playouts meet it too.
    let game = temp_file("rare.kif", RARE_DEAD_END);
    let o = propel(&["compare", game.path.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["verdict"], "agree", "{v}");
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

// --- The machine `--machine auto` chose, stated by every command --------

#[test]
fn auto_is_the_default_and_commands_say_what_it_chose() {
    for sub in ["perft", "trace", "playouts", "search"] {
        let o = propel(&[sub, "--help"]);
        assert!(stdout(&o).contains("[default: auto]"), "{sub} --help: {}", stdout(&o));
    }
    // Commands that run no machine of the user's choosing do not offer one.
    for sub in ["compile", "bench", "analyse", "compare"] {
        let o = propel(&[sub, "--help"]);
        assert!(!stdout(&o).contains("--machine"), "{sub} --help lists --machine");
    }
    // check takes a library to check, nothing else.
    let o = propel(&["check", "--help"]);
    assert!(stdout(&o).contains("--machine <aot:FILE>"), "{}", stdout(&o));
    let o = propel(&["check", "games/tictactoe.kif", "--machine", "prover"]);
    assert!(!o.status.success(), "check --machine prover");
    assert!(stderr(&o).contains("aot:FILE only"), "{}", stderr(&o));

    let o = propel(&["perft", "games/tictactoe.kif", "--depth", "1"]);
    assert!(o.status.success());
    assert!(stderr(&o).contains("perft: machine propnet (--machine auto:"), "{}", stderr(&o));
    let o = propel(&["trace", "games/tictactoe.kif", "--machine", "prover"]);
    assert!(stderr(&o).contains("trace: machine prover"), "{}", stderr(&o));
    let o = propel(&["playouts", "games/tictactoe.kif", "--seconds", "0.1", "--json"]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["machine"], "propnet", "{v}");
    let o = propel(&["search", "games/tictactoe.kif", "--seconds", "0.2", "--json"]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(["hybrid", "propnet"].contains(&v["machine_chosen"].as_str().unwrap()), "{v}");
    assert!(!v["machine_reason"].as_str().unwrap().is_empty(), "{v}");
    assert_eq!(analyse("games/tictactoe.kif", "0.2")["machine"], "propnet");
}

// --- Positions: --from and --state --------------------------------------

fn perft_lines(args: &[&str]) -> Vec<Value> {
    let o = propel(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn perft_and_trace_start_from_moves_or_a_state() {
    let full =
        perft_lines(&["perft", "games/tictactoe.kif", "--depth", "2", "--from", "(mark 1 1) noop; noop (MARK 2 2)"]);
    let short = perft_lines(&["perft", "games/tictactoe.kif", "--depth", "2", "--from", "(mark 1 1); (mark 2 2);"]);
    let prover = perft_lines(&[
        "perft",
        "games/tictactoe.kif",
        "--depth",
        "2",
        "--machine",
        "prover",
        "--from",
        "(mark 1 1); (mark 2 2)",
    ]);
    assert_eq!(full, short);
    assert_eq!(full, prover, "every machine starts there");
    assert_eq!(full[1]["nodes"], 7);
    assert_eq!(full[2]["nodes"], 42);

    // The same position as a state (a trace's facts, `true` accepted).
    let state = "(true (cell 1 1 x)) (cell 1 2 b) (cell 1 3 b) (cell 2 1 b) (cell 2 2 o) (cell 2 3 b) \
                 (cell 3 1 b) (cell 3 2 b) (cell 3 3 b) (control xplayer)";
    assert_eq!(perft_lines(&["perft", "games/tictactoe.kif", "--depth", "2", "--state", state]), full);
    let o = propel(&["trace", "games/tictactoe.kif", "--state", state, "--machine", "jit"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(first["step"], 0);
    assert!(first["state"].as_array().unwrap().contains(&Value::from("(cell 2 2 o)")), "{first}");
    assert_eq!(first["legal"]["xplayer"].as_array().unwrap().len(), 7);
}

#[test]
fn illegal_positions_are_named() {
    let o = propel(&["perft", "games/tictactoe.kif", "--depth", "1", "--from", "(mark 1 1); (mark 1 1)"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("ply 2") && e.contains("`(mark 1 1)` is not a legal move of oplayer"), "{e}");
    let o = propel(&["search", "games/tictactoe.kif", "--from", "(mark 1 1) (mark 2 2)"]);
    assert!(stderr(&o).contains("ply 1") && stderr(&o).contains("(legal: noop)"), "{}", stderr(&o));
    let o = propel(&["trace", "games/tictactoe.kif", "--from", "(mark 1 1) noop noop"]);
    assert!(stderr(&o).contains("ply 1") && stderr(&o).contains("3 move(s)"), "{}", stderr(&o));
    let o = propel(&["perft", "games/tictactoe.kif", "--depth", "1", "--from", "(mark 1 1 ; noop"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = propel(&["perft", "games/tictactoe.kif", "--depth", "1", "--state", "(cel 1 1 x) (control xplayer)"]);
    assert!(stderr(&o).contains("`(cel 1 1 x)`") && stderr(&o).contains("cell/3"), "{}", stderr(&o));
    let o = propel(&["perft", "games/tictactoe.kif", "--depth", "1", "--state", "(cell ?x 1 x)"]);
    assert!(stderr(&o).contains("variable"), "{}", stderr(&o));
    let o = propel(&["perft", "games/tictactoe.kif", "--depth", "1", "--machine", "aot:x.so", "--from", "(mark 1 1)"]);
    assert!(stderr(&o).contains("--from and --state need a machine built from the rules"), "{}", stderr(&o));
    // Past the end of the game.
    let o = propel(&[
        "perft",
        "games/tictactoe.kif",
        "--depth",
        "1",
        "--from",
        "(mark 1 1); (mark 2 1); (mark 1 2); (mark 2 2); (mark 1 3); (mark 2 3)",
    ]);
    assert!(stderr(&o).contains("ply 6") && stderr(&o).contains("the game is over after ply 5"), "{}", stderr(&o));
}

#[test]
fn search_and_analyse_start_from_a_position() {
    // X to move with two in a row: the search finds the win.
    let o = propel(&[
        "search",
        "games/tictactoe.kif",
        "--seconds",
        "0.5",
        "--json",
        "--from",
        "(mark 1 1); (mark 2 1); (mark 1 2); (mark 2 2)",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["role"], "xplayer");
    assert_eq!(v["move"], "(mark 1 3)", "{v}");
    let o = propel(&["analyse", "games/tictactoe.kif", "--seconds", "0.2", "--json", "--from", "(mark 2 2)"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    // Seven or fewer moves are left after the first.
    assert!(v["avg_length"].as_f64().unwrap() <= 8.0, "{v}");
}

// --- Options that mislead or crash ---------------------------------------

#[test]
fn numeric_options_are_validated_with_clear_messages() {
    let cases: &[(&[&str], &str)] = &[
        (&["search", "games/tictactoe.kif", "--threads", "0"], "--threads must be at least 1"),
        (&["analyse", "games/tictactoe.kif", "--seconds", "-1"], "--seconds must not be negative"),
        (&["trace", "games/tictactoe.kif", "--ground-seconds", "nan"], "--ground-seconds must be a finite number"),
        (
            &["perft", "games/tictactoe.kif", "--depth", "99999999999"],
            "--depth 99999999999 is over the maximum of 1000",
        ),
        (
            &["perft", "games/tictactoe.kif", "--depth", "1", "--machine", "prover", "--passes", "bogus"],
            "unknown pass `bogus`",
        ),
        (
            &["match", "games/tictactoe.kif", "--player", "builtin:random", "--play-clock", "inf"],
            "--play-clock must be a finite",
        ),
    ];
    for (args, want) in cases {
        let o = propel(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    let o = propel(&["trace", "games/tictactoe.kif", "--ground-seconds", "1e300", "--max-steps", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("over the maximum of 1000000 s"), "{}", stderr(&o));
    let o = propel(&["serve", "--help"]);
    assert!(stdout(&o).contains("uct"), "--strategy lists uct");
}

#[test]
fn large_files_are_refused_before_they_are_read() {
    let mut text = String::from("(role a) (init p) (legal a go) (<= terminal (true p)) (goal a 100)\n");
    let comment = format!(";{}\n", "x".repeat(999));
    text.push_str(&comment.repeat(1500));
    let big = temp_file("big.kif", &text);
    let o = propel(&["check", big.to_str().unwrap(), "--max-file-mb", "1"]);
    // A limit of ours, not a fault of the rules: gave up (exit 3).
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("the limit is --max-file-mb 1"), "{}", stderr(&o));
    let o = propel(&["check", big.to_str().unwrap(), "--max-file-mb", "1", "--json"]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["category"], "too-large", "{v}");
    assert_eq!(v["verdict"], "gave-up", "{v}");
    let o = propel(&["perft", big.to_str().unwrap(), "--depth", "1", "--max-file-mb", "1"]);
    assert!(stderr(&o).contains("GB of memory"), "{}", stderr(&o));
    assert!(propel(&["check", big.to_str().unwrap()]).status.success(), "under the default limit");
}

/// The search threads a `propel serve` started with `extra` reports in its
/// first log line.
fn serve_threads(extra: &[&str]) -> usize {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let logs = std::env::temp_dir().join(format!("propel-cli-serve-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_propel"))
        .args(["serve", "--port", "0", "--host", "127.0.0.1", "--log-dir"])
        .arg(&logs)
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("propel serve starts");
    let mut found = None;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some((before, _)) = line.split_once(" search thread(s) per match") {
            found = before.rsplit(' ').next().and_then(|n| n.parse().ok());
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&logs);
    found.expect("the start line names the search threads")
}

#[test]
fn the_player_searches_on_every_core_unless_told() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(serve_threads(&[]), cores);
    assert_eq!(serve_threads(&["--threads", "3"]), 3);
}

/// `propel duel` plays the games asked for between two settings on the
/// player's machine and reports them; a game of one role is refused with
/// its reason, and a bad setting by clap.
#[test]
fn duel_plays_its_games_on_any_number_of_roles() {
    let o = propel(&[
        "duel",
        "games/breakthrough.kif",
        "--challenger",
        "capture=0",
        "--games",
        "2",
        "--move-time",
        "0.005",
        "--analyse",
        "0.3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["games"], 2, "{v}");
    let (w, d, l) = (v["wins"].as_u64().unwrap(), v["draws"].as_u64().unwrap(), v["losses"].as_u64().unwrap());
    assert_eq!(w + d + l, 2, "{v}");
    assert_eq!(v["adopt"], false, "two games decide nothing: {v}");
    assert!(v["plies"].as_u64().unwrap() >= 2 * 10, "breakthrough takes at least 10 moves: {v}");
    // A puzzle: each side plays it alone; three roles: the challenger in
    // each seat in turn. Against the plain search the features are named.
    for game in ["games/hanoi.kif", "games/trinim.kif"] {
        let o = propel(&[
            "duel",
            game,
            "--challenger",
            "",
            "--base",
            "features=off",
            "--games",
            "3",
            "--move-time",
            "0.005",
            "--analyse",
            "0.3",
            "--json",
        ]);
        assert!(o.status.success(), "{game}: {}", stderr(&o));
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["games"], 3, "{game}: {v}");
        assert!(v["features"].is_array(), "{game}: {v}");
    }
    let o = propel(&["duel", "games/breakthrough.kif", "--challenger", "capture=2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
