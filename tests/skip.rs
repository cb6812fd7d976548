//! Skipping a test whose corpus file or tool (`cc`) is missing: fine on a
//! developer's machine, a failure in CI, where a skip would let a broken
//! test pass unseen. Shared by the test crates of the workspace (included
//! with `#[path]`, so it has no dependencies).
//!
//! CI is told apart by the environment, read here in test code only: `CI`
//! (set by CI runners, `.ci/run`'s included) or `PROPEL_NO_SKIP=1` (to
//! check locally that nothing would skip).

/// Whether a missing corpus file or tool must fail the test.
pub fn required() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("PROPEL_NO_SKIP")
}

/// Says that a test (or part of one) is skipped because `why`; panics
/// instead when skips are not allowed (`required`).
#[track_caller]
pub fn skip(why: &str) {
    if required() {
        panic!("{why}: required in CI (CI or PROPEL_NO_SKIP is set), so this test fails instead of skipping");
    }
    eprintln!("SKIPPED: {why}");
}
