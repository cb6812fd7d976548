//! Propel's runtime: the [`StateMachine`] interface and its machines, and
//! the machine-generic drivers behind `perft`, `trace` and `playouts`.

#![warn(unreachable_pub)]

pub mod analysis;
pub mod aot;
pub mod build;
pub mod formats;
mod goals;
pub mod heuristic;
mod hybrid;
pub mod lanes;
pub mod lookup;
mod machine;
pub mod mcts;
mod native;
pub mod perft;
pub mod plan;
pub mod playout;
pub mod propnet;
pub mod prover;
mod rng;
pub mod simulate;
pub mod standings;
pub mod topdown;
pub mod trace;

pub use hybrid::{Hybrid, LANE_BATCH};
pub use machine::{Goal, MachineError, StateMachine};
pub use native::{NativeCode, NativeMachine, GOAL_PROGRAM_COMPONENTS};
pub use propnet::{PropnetMachine, Topology};
pub use prover::Prover;
pub use rng::Rng;
