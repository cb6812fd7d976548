//! The `propel` command's integration tests, one module per subject, in
//! one test binary (`cargo test -p propel --test integration`; one
//! subject: `... -- ggp_http::`).

mod common;
#[path = "../../../tests/skip.rs"]
mod skip;

mod aot_c;
mod check;
mod cli;
mod cli_fuzz;
mod compile;
mod corpus;
mod ggp_http;
mod match_report;
mod player_robust;
