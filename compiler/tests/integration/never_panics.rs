//! The front end must turn any input into a game or an error, never a
//! panic: random bytes, random GDL-like token soup, and corpus files cut
//! short or with bytes changed.

use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::skip;

fn check(bytes: &[u8]) {
    if let Err(e) = propel_compiler::load("fuzz.kif", bytes.to_vec()) {
        let text = e.to_string();
        assert!(text.starts_with("fuzz.kif"), "error must name the file: {text}");
        if let Some(loc) = &e.loc {
            assert!(loc.line >= 1 && loc.col >= 1);
        }
    }
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "(",
    ")",
    " ",
    "\n",
    "\r",
    ";c\n",
    "<=",
    "role",
    "init",
    "true",
    "next",
    "legal",
    "does",
    "goal",
    "terminal",
    "not",
    "or",
    "and",
    "distinct",
    "base",
    "input",
    "sees",
    "random",
    "?x",
    "?y",
    "?",
    "a",
    "b",
    "cell",
    "1",
    "100",
    "(f",
    "(<= (legal ?x a) (true ?x))",
    "(role r)",
    "(goal r 100)",
    "terminal",
];

/// The corpus's `.kif` files (read once: every proptest case picks one).
fn corpus_files() -> &'static [PathBuf] {
    static FILES: OnceLock<Vec<PathBuf>> = OnceLock::new();
    FILES.get_or_init(list_corpus)
}

fn list_corpus() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/games");
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "kif") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        check(&bytes);
    }

    #[test]
    fn token_soup(toks in proptest::collection::vec(0..TOKENS.len(), 0..120)) {
        let text: String = toks.iter().map(|&i| TOKENS[i]).collect::<Vec<_>>().join(" ");
        check(text.as_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn corpus_cut_and_mutated(pick in any::<prop::sample::Index>(), cut in 0.0f64..1.0, edits in proptest::collection::vec((0.0f64..1.0, any::<u8>()), 0..6)) {
        let files = corpus_files();
        if files.is_empty() {
            // Said (or failed, in CI) by `corpus_is_present_or_said_missing`.
            return Ok(());
        }
        let bytes = std::fs::read(pick.get(files)).unwrap_or_default();
        let mut b = bytes[..(bytes.len() as f64 * cut) as usize].to_vec();
        check(&b);
        for (at, byte) in edits {
            if !b.is_empty() {
                let i = ((b.len() - 1) as f64 * at) as usize;
                b[i] = byte;
            }
        }
        check(&b);
    }
}

#[test]
fn corpus_is_present_or_said_missing() {
    if corpus_files().is_empty() {
        skip::skip("../shared/games not found: the corpus part of the fuzz test");
    }
}
