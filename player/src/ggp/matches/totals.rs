//! A match's search totals between two replies, as its statistics
//! record them.

use super::*;

/// Search totals between two replies.
#[derive(Default)]
pub(super) struct Acc {
    seconds: f64,
    iterations: u64,
    rollouts: u64,
    busy: f64,
    idle: f64,
    last: Option<Stats>,
}

impl Acc {
    pub(super) fn add(&mut self, s: Stats) {
        self.seconds += s.seconds;
        self.iterations += s.iterations;
        self.rollouts += s.rollouts;
        self.busy += s.search_busy * s.seconds;
        self.idle += s.rollout_idle * s.seconds;
        self.last = Some(s);
    }

    pub(super) fn iterations_per_s(&self) -> f64 {
        self.iterations as f64 / self.seconds.max(1e-9)
    }

    pub(super) fn json(&self) -> serde_json::Value {
        let t = self.seconds.max(1e-9);
        let last = self.last.clone().unwrap_or_default();
        json!({
            "search_seconds": self.seconds,
            "iterations": self.iterations,
            "rollouts": self.rollouts,
            "iterations_per_s": self.iterations as f64 / t,
            "rollouts_per_s": self.rollouts as f64 / t,
            "search_busy": self.busy / t,
            "rollout_idle": self.idle / t,
            "nodes": last.nodes,
            "pool": last.pool,
            "rollouts_per_request": last.per_request,
            "rollout_policy": last.rollout_policy,
            "expand_after": last.expand_after,
        })
    }
}
