//! The compiler's integration tests, in one test binary: budgets on
//! hostile rules, and no panic on any input.

#[path = "../../../tests/skip.rs"]
mod skip;

mod budgets;
mod never_panics;
