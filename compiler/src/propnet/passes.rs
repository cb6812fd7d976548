//! Optimisation passes over propnets. Each pass maps a network to an
//! equivalent one (same legal moves, next states, goals and terminal
//! states for every state and joint move); `tests/passes.rs` checks that
//! with perft and traces before and after every pass.

use super::{Counts, Propnet};
use std::time::Instant;

/// A pass, by name (`--passes` takes a comma-separated list of these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {}

impl Pass {
    pub const ALL: &'static [Pass] = &[];

    pub fn name(&self) -> &'static str {
        match *self {}
    }

    /// Parses a comma-separated list; `all` and `none` are accepted.
    pub fn parse_list(s: &str) -> Result<Vec<Pass>, String> {
        match s.trim() {
            "" | "none" => Ok(Vec::new()),
            "all" | "default" => Ok(Pass::ALL.to_vec()),
            other => Err(format!("unknown pass `{other}`")),
        }
    }
}

/// Runs `passes` in order; `report(name, seconds, counts)` after each.
/// Returns the playout network and, when the goals were split off, the
/// goal network.
pub fn run(net: Propnet, passes: &[Pass], report: &mut dyn FnMut(&str, f64, &Counts)) -> (Propnet, Option<Propnet>) {
    let net = net;
    for p in passes {
        let t = Instant::now();
        match *p {}
        #[allow(unreachable_code)]
        report(p.name(), t.elapsed().as_secs_f64(), &net.counts());
    }
    (net, None)
}
