//! `propel check`'s verdict: a limit that runs out is "gave up" (exit 3),
//! never "rejected", and it is decided by counted work, not a clock.

use serde_json::Value;
use std::process::Command;

fn check_json(path: &std::path::Path) -> (Option<i32>, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_propel"))
        .args(["check", "--json", path.to_str().unwrap()])
        .env("RUST_LOG", "off")
        .output()
        .expect("propel runs");
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    (o.status.code(), v)
}

#[test]
fn a_game_over_the_work_limit_is_gave_up_not_rejected() {
    // `q` (paths of length four in a complete graph on 100 nodes that
    // start where they end) is a static relation with 100 rows found
    // among 10^10 candidate bindings: far over the 50M join steps `check`
    // allows.
    let nodes: String = (0..100).map(|i| format!("(n {i}) ")).collect();
    let text = format!(
        "(role r) (init (c 0)) {nodes}
         (<= (e ?x ?y) (n ?x) (n ?y))
         (<= (q ?a ?f) (e ?a ?b) (e ?b ?c) (e ?c ?d) (e ?d ?f) (not (distinct ?a ?f)))
         (<= (legal r (go ?a)) (true (c ?a)) (q ?a ?f))
         (<= (next (c ?a)) (does r (go ?a)))
         (<= terminal (true (c 1))) (goal r 100)"
    );
    let path = std::env::temp_dir().join(format!("propel-check-work-{}.kif", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let (code, v) = check_json(&path);
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(v["verdict"], "gave-up", "{v}");
    assert_eq!(v["category"], "work", "{v}");
    assert!(v["error"].as_str().unwrap().contains("join steps"), "{v}");
    // Counted work stops at the same point every time.
    let (_, again) = check_json(&path);
    assert_eq!(again["error"], v["error"]);
    let _ = std::fs::remove_file(&path);
}
