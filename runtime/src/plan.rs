//! The plan: every decision a build makes about a game's machines and how
//! its search runs them, with the reason for each, as one value that
//! commands print (`propel check --propnet --plan`) and the player logs
//! for every match. Each decision follows from the network's structure or
//! from counted work over a fixed sample (see [`crate::build`]), never from
//! timings, so two builds of a game plan alike on any machine and load.

use crate::build::Prepared;
use std::fmt;

/// Which rules a network was built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    AsWritten,
    /// Rewritten by variable elimination.
    Eliminated,
}

/// The interpreter's split network (`Pass::Split`).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitPlan {
    /// The base the copies are specialised on.
    pub base: String,
    /// Counter updates per state change without and with the split, over
    /// the fixed sample.
    pub work: [f64; 2],
    /// Kept by the interpreter (less work), and by native code (1.2x less).
    pub interpreter: bool,
    pub native: bool,
}

/// How a search rolls out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rollouts {
    /// Every lane of the JIT's bit-parallel code plays a rollout from its
    /// own leaf and grows the tree; the tree walks on the interpreter.
    LaneParallel,
    /// One rollout per leaf, on the interpreter.
    OneAtATime,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The playout network (what the interpreter runs).
    pub rules: Rules,
    pub components: usize,
    pub edges: usize,
    pub split: Option<SplitPlan>,
    /// The network native code is generated from, and its edges.
    pub native_rules: Rules,
    pub native_edges: usize,
    /// Whether native code has lane functions; why not, when it has none.
    pub lanes: Result<(), String>,
    /// How searches roll out (greedy rollouts, which the meta-game
    /// analysis may choose, always go one at a time).
    pub rollouts: Rollouts,
    /// Code generation threads.
    pub codegen_threads: usize,
    /// The outputs left to lookups on the rules (over the grounding budget
    /// as a network; `propel_compiler::lookup`).
    pub lookups: propel_compiler::lookup::Lookups,
}

impl Plan {
    /// The plan of a prepared build.
    pub fn of(p: &Prepared) -> Plan {
        let lookups = p.lookups();
        let lanes = match (lookups.questions, lookups.any()) {
            (true, _) => Err(format!(
                "{} query components ask questions of the state, which native code does not answer",
                p.net().queries.len()
            )),
            (false, true) => {
                Err(format!("the network has no {} logic: lookups on the rules answer it", lookups.describe()))
            }
            (false, false) => propel_compiler::lower::lanes::supported(p.native_net(), p.native_goal_net()),
        };
        let counts = p.net().counts();
        Plan {
            rules: if p.eliminated() { Rules::Eliminated } else { Rules::AsWritten },
            components: counts.total,
            edges: counts.edges,
            split: p.split_report().map(|s| SplitPlan {
                base: s.base.clone(),
                work: s.work,
                interpreter: s.kept,
                native: p.lower_machine().split.is_some(),
            }),
            native_rules: if p.native_is_eliminated() || p.eliminated() { Rules::Eliminated } else { Rules::AsWritten },
            native_edges: p.native_net().counts().edges,
            rollouts: if lanes.is_ok() { Rollouts::LaneParallel } else { Rollouts::OneAtATime },
            lanes,
            codegen_threads: p.codegen().workers(),
            lookups,
        }
    }

    /// The plan as JSON (for logs and `--json`).
    pub fn json(&self) -> serde_json::Value {
        // Plain strings, numbers and lists: serialising cannot fail.
        serde_json::to_value(self.to_json()).unwrap_or_default()
    }

    /// The plan as its JSON type.
    pub fn to_json(&self) -> crate::formats::PlanJson {
        let rules = |r: Rules| format!("{r:?}").to_lowercase();
        crate::formats::PlanJson {
            rules: rules(self.rules),
            components: self.components,
            edges: self.edges,
            split: self.split.as_ref().map(|s| crate::formats::SplitJson {
                base: s.base.clone(),
                work: s.work,
                interpreter: s.interpreter,
                native: s.native,
            }),
            native_rules: rules(self.native_rules),
            native_edges: self.native_edges,
            lanes: self.lanes.is_ok(),
            rollouts: match self.rollouts {
                Rollouts::LaneParallel => "lane-parallel",
                Rollouts::OneAtATime => "one-at-a-time",
            }
            .into(),
            codegen_threads: self.codegen_threads,
            lookups: self.lookups.describe().into(),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rules = |r: Rules| match r {
            Rules::AsWritten => "the rules as written",
            Rules::Eliminated => "the rules after variable elimination",
        };
        writeln!(f, "network:   {} ({} components, {} edges)", rules(self.rules), self.components, self.edges)?;
        match &self.split {
            None => writeln!(f, "split:     none (no base changes on a quarter of the steps, or too large)")?,
            Some(s) => writeln!(
                f,
                "split:     on {}: {:.0} -> {:.0} counter updates per state change; interpreter {}, native code {}",
                s.base,
                s.work[0],
                s.work[1],
                if s.interpreter { "splits (less work)" } else { "does not (no less work)" },
                if s.native { "splits (1.2x less work or better)" } else { "does not" }
            )?,
        }
        writeln!(f, "native:    {} ({} edges)", rules(self.native_rules), self.native_edges)?;
        match &self.lanes {
            Ok(()) => writeln!(f, "lanes:     yes (128 games per word)")?,
            Err(why) => writeln!(f, "lanes:     no ({why})")?,
        }
        match self.rollouts {
            Rollouts::LaneParallel => writeln!(
                f,
                "search:    lane-parallel: a rollout from its own leaf in every lane, the tree grown on the lanes, walked on the interpreter; with several threads, a graph and lanes per thread merged at the root (greedy rollouts, if the analysis chooses them, one at a time on the interpreter)"
            )?,
            Rollouts::OneAtATime => writeln!(
                f,
                "search:    one rollout per leaf on the interpreter (no lanes); with several threads, one graph and rollout threads (the pipeline)"
            )?,
        }
        if self.lookups.any() {
            writeln!(
                f,
                "lookups:   {} answered by the rules on the state's facts (over the grounding budget as a network)",
                self.lookups.describe()
            )?;
        }
        write!(f, "codegen:   {} threads", self.codegen_threads)
    }
}
