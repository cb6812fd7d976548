//! Corpus conformance: every public game under ../shared/games either
//! checks as valid or is rejected with a reason; nothing crashes; the files
//! the manifest marks as intentionally invalid are rejected.

use std::path::PathBuf;
use std::process::Command;

use crate::skip;

#[test]
fn every_corpus_game_is_valid_or_rejected_with_a_reason() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("../shared/games");
    if !dir.is_dir() {
        skip::skip(&format!("{} not found (the corpus lives beside the repository in CI)", dir.display()));
        return;
    }
    let tsv = std::env::temp_dir().join(format!("propel-corpus-{}.tsv", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_propel"))
        .args(["corpus", dir.to_str().unwrap(), "--tsv", tsv.to_str().unwrap(), "--timeout", "60"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("propel runs");
    let out = String::from_utf8_lossy(&o.stdout);
    eprintln!("{out}");
    assert!(o.status.success(), "corpus run failed (crash or manifest violation):\n{out}");
    let text = std::fs::read_to_string(&tsv).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split('\t').collect()).collect();
    assert!(rows.len() > 800, "expected the whole corpus, got {} rows", rows.len());
    let mut valid = 0;
    for r in &rows {
        match r[1] {
            "valid" => valid += 1,
            "rejected" | "gave-up" => assert!(!r[3].is_empty() && !r[4].is_empty(), "{} without a reason: {r:?}", r[1]),
            other => panic!("unexpected verdict {other}: {r:?}"),
        }
    }
    // Guard against regressions that reject games wholesale.
    assert!(valid >= 800, "only {valid} games valid");
    for f in ["base/ticTacToeLarge.kif", "base/connect4.kif", "base/breakthrough.kif", "base/chess.kif"] {
        let row = rows.iter().find(|r| r[0] == f).unwrap_or_else(|| panic!("{f} missing"));
        assert_eq!(row[1], "valid", "{row:?}");
    }
    // Kept when the test fails, to look at.
    let _ = std::fs::remove_file(&tsv);
}
