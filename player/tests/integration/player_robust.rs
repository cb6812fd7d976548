//! The player under conditions a match should survive: built-in players
//! seeded per match, a search that never answers (every move must still
//! be legal and in time), and a hostile start that is aborted (every
//! thread of the match gone, memory given back).

use crate::common::{check_record, post, records, root, temp_dir, two_at_a_time, Player};
use std::collections::HashSet;
use std::process::Command;
use std::time::{Duration, Instant};

fn run_match(game: &str, players: &[&str], extra: &[&str], out: &std::path::Path) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_propel"));
    cmd.current_dir(root()).env("RUST_LOG", "error").arg("match").arg(game).arg("-o").arg(out).args(extra);
    for p in players {
        cmd.args(["--player", p]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{game}: {}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn random_players_play_different_games_in_every_match() {
    let out = temp_dir("seeds");
    let extra = ["--matches", "20", "--start-clock", "0.5", "--play-clock", "1"];
    run_match("games/tictactoe.kif", &["builtin:random", "builtin:random"], &extra, &out);
    let recs = records(&out);
    assert_eq!(recs.len(), 20);
    let games: HashSet<String> = recs.iter().map(|r| r["moves"].to_string()).collect();
    assert!(games.len() >= 10, "only {} distinct games in 20", games.len());
}

/// With the search stalled (the hidden test hook), every answer comes
/// from the handlers' fallback: each must be legal in the current state
/// and in time, in games with one, two and three roles and simultaneous
/// moves.
#[test]
fn a_stalled_search_still_answers_legal_moves_in_time() {
    let clock = 0.4;
    let games = [
        ("games/tictactoe.kif", 3),
        ("games/dilemma.kif", 1),
        ("games/trinim.kif", 1),
        ("games/hanoi.kif", 1),
        ("games/connect4.kif", 1),
    ];
    two_at_a_time(&games, |&(game, matches)| {
        let text = std::fs::read_to_string(root().join(game)).unwrap();
        let roles = text.lines().filter(|l| l.trim_start().starts_with("(role ")).count();
        let out = temp_dir(&format!("stall-{}", game.replace('/', "-")));
        let mut players = vec!["builtin:mcts"];
        players.resize(roles, "builtin:random");
        let m = matches.to_string();
        let extra =
            ["--test-stall-search", "--matches", &m, "--start-clock", "0.5", "--play-clock", "0.4", "--margin", "0.1"];
        run_match(game, &players, &extra, &out);
        let recs = records(&out);
        assert_eq!(recs.len(), matches, "{game}");
        for rec in &recs {
            let turns = check_record(&root().join(game), rec, clock);
            // Every move came from the fallback (the search never answered).
            let fell_back: u64 = rec["playerFallbacks"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum();
            assert_eq!(fell_back as usize, turns * roles, "{game}");
        }
    });
}

/// One hostile start (a million legal moves: grounding explodes, the
/// search cannot take the state), a play on the prover, an abort: within
/// 10 s every thread the match started is gone.
#[test]
fn a_hostile_start_is_played_then_aborted_without_a_trace() {
    let logs = temp_dir("hostile");
    let p = Player::start(&logs, &["--max-memory", "3G"]);
    let baseline = p.threads().len();
    let rules = std::fs::read_to_string(root().join("scripts/hostile/million.kif")).unwrap();
    let rss0 = p.rss_mib();
    assert_eq!(post(&p.url, format!("(start h1 a ({rules}) 3 2)")), (200, "ready".into()));
    let (st, mv) = post(&p.url, "(play h1 nil)");
    assert_eq!(st, 200, "{mv}");
    assert!(mv.starts_with("(pick "), "{mv}");
    let ours = |p: &Player| p.threads().into_iter().filter(|t| t.ends_with(":h1")).count();
    assert!(ours(&p) > 0);
    let rss1 = p.rss_mib();
    let t = Instant::now();
    assert_eq!(post(&p.url, "(abort h1)"), (200, "aborted".into()));
    while ours(&p) > 0 || p.threads().len() > baseline {
        assert!(t.elapsed() < Duration::from_secs(10), "threads left after 10 s: {:?}", p.threads());
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "abort to every thread gone: {:.2} s; resident memory {rss0} MiB before, {rss1} MiB in play, {} MiB after",
        t.elapsed().as_secs_f64(),
        p.rss_mib()
    );
    // The id can be used again at once.
    let ttt = std::fs::read_to_string(root().join("games/tictactoe.kif")).unwrap();
    assert_eq!(post(&p.url, format!("(start h1 xplayer ({ttt}) 1 1)")), (200, "ready".into()));
    assert_eq!(post(&p.url, "(abort h1)"), (200, "aborted".into()));
}

/// An abort while a big start request is still being read: the abort is
/// answered, and so is the start (409), with no match left behind.
#[test]
fn a_start_can_be_aborted_while_its_rules_are_read() {
    let logs = temp_dir("abort-reading");
    let p = Player::start(&logs, &[]);
    let baseline = p.threads().len();
    let mut rules = String::from(
        "(role a) (init (p)) (<= (legal a x) (true (p))) (<= (next (p)) (true (p))) \
         (<= terminal (true (q))) (<= (goal a 1) (true (p)))\n",
    );
    let mut i = 0;
    while rules.len() < 12 << 20 {
        rules.push_str(&format!("(fact{} x{i} (y {i} z{i}))\n", i % 1000));
        i += 1;
    }
    let url = p.url.clone();
    let start = std::thread::spawn(move || post(&url, format!("(start big a ({rules}) 30 1)")));
    // Until the body has come the id is unknown (404); then it is aborted.
    let t = Instant::now();
    while post(&p.url, "(abort big)") != (200, "aborted".into()) {
        assert!(t.elapsed() < Duration::from_secs(5), "the start was never known");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (st, body) = start.join().unwrap();
    // 409 while the request was read; 400 had it just become a match.
    assert!(st == 409 || st == 400, "{st} {body}");
    assert!(body.contains("aborted"), "{body}");
    let t = Instant::now();
    while p.threads().len() > baseline {
        assert!(t.elapsed() < Duration::from_secs(10), "threads left: {:?}", p.threads());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!logs.join("propel/big").exists());
}

/// A match leaves after `--abandon-after` seconds without a command, but
/// that wait starts at the end of its start clock: a manager sends the
/// first play only after every player's start has answered or timed out,
/// so a start clock longer than the wait must not end the match (at a
/// 90 s start clock the default wait, 60 s plus ten play clocks, once
/// did: every move of the match became the manager's random one).
#[test]
fn the_wait_for_the_first_play_starts_after_the_start_clock() {
    let logs = temp_dir("abandon");
    let p = Player::start(&logs, &["--abandon-after", "4"]);
    let ttt = std::fs::read_to_string(root().join("games/tictactoe.kif")).unwrap();
    let t = Instant::now();
    assert_eq!(post(&p.url, format!("(start a1 xplayer ({ttt}) 6 2)")), (200, "ready".into()));
    assert!(t.elapsed() > Duration::from_secs(4), "the start answered early");
    // Two of the four seconds (a match that leaves takes a moment to be
    // gone, and its fallback answers until then).
    std::thread::sleep(Duration::from_secs(2));
    let (st, mv) = post(&p.url, "(play a1 nil)");
    assert_eq!(st, 200, "the match left before its first play: {mv}");
    assert!(mv.starts_with("(mark "), "{mv}");
    // Then, with no command for longer than the wait, it leaves.
    std::thread::sleep(Duration::from_secs(7));
    let (st, body) = post(&p.url, "(play a1 ((mark 1 1) noop))");
    assert_eq!(st, 404, "{body}");
}

/// A game no propnet holds: in the relaxed model of grounding any of 50
/// values may be `(v ?x)`, so `pairs` (five of them) passes the budget
/// at once, and its next-state rule reads `pairs` through a variable it
/// shares with the move, so it cannot be asked as a question either. In
/// play a state holds one value. The builder samples the prover and the
/// top-down reasoner, searches on the faster, and says so with both
/// rates; every move of the match is legal.
#[test]
fn without_a_propnet_the_player_searches_on_the_faster_reasoner() {
    let out = temp_dir("reasoner");
    let nums: String = (0..50).map(|d| format!(" (num {d})")).collect();
    let game = format!(
        "(role r) (init (v 0)) (init (step 0)){nums}
         (succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4)
         (<= (legal r (go ?x)) (num ?x))
         (<= (next (v ?x)) (does r (go ?x)))
         (<= (pairs ?a ?b ?c ?e ?f) (true (v ?a)) (true (v ?b)) (true (v ?c)) (true (v ?e)) (true (v ?f)))
         (<= (next (seen ?a)) (does r (go ?b)) (pairs ?a ?b ?c ?e ?f))
         (<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
         (<= terminal (true (step 4)))
         (<= (goal r 100) (true (seen 7)))
         (<= (goal r 0) (not (true (seen 7))))"
    );
    let path = out.join("reasoner.kif");
    std::fs::write(&path, &game).unwrap();
    let games = out.join("games");
    let extra = ["--start-clock", "8", "--play-clock", "1"];
    run_match(path.to_str().unwrap(), &["builtin:mcts"], &extra, &games);
    let recs = records(&games);
    assert_eq!(recs.len(), 1);
    check_record(&path, &recs[0], 1.0);
    let mut log = String::new();
    for e in walk(&games.join("logs")) {
        log.push_str(&std::fs::read_to_string(e).unwrap_or_default());
    }
    let plan = log.lines().find(|l| l.contains("plan: no propnet; search on the"));
    let plan = plan.unwrap_or_else(|| panic!("no plan line for the reasoner in:\n{log}"));
    assert!(plan.contains("states/s") && plan.contains("prover") && plan.contains("top-down"), "{plan}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
