//! Cross-crate integration and conformance tests, one module per subject,
//! in one test binary (`cargo test -p propel-tests`; one subject:
//! `cargo test -p propel-tests mcts::`).

mod analysis;
mod batched;
mod cycles;
mod fixed_fluents;
mod golden_perft;
mod lanes;
mod lookups;
mod magic_sets;
mod mcts;
mod metadata;
mod move_tables;
mod native;
mod passes;
mod pieces;
mod plan;
mod projection;
mod random_games;
mod renamed;
mod topdown;
