//! The JSON the commands write from the runtime's data (docs/formats.md),
//! as types: `perft` lines ([`crate::perft::PerftLine`]), `trace` lines,
//! the `playouts` and `search` reports, the build plan. Serialising one gives the bytes
//! the command writes (field order and names are the contract: the oracle
//! in `../shared/oracle` replays trace lines); reading one back gives the
//! same value.

use crate::machine::Goal;
use crate::trace::TraceStep;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;

/// One value per role, written as a JSON object keyed by role name in
/// role order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleMap<T>(pub Vec<(String, T)>);

impl<T> RoleMap<T> {
    /// `roles` paired with `values`, in order.
    pub fn new(roles: &[String], values: impl IntoIterator<Item = T>) -> RoleMap<T> {
        RoleMap(roles.iter().cloned().zip(values).collect())
    }
}

impl<T: Serialize> Serialize for RoleMap<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for RoleMap<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = RoleMap<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object keyed by role")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<RoleMap<T>, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_entry()? {
                    v.push(e);
                }
                Ok(RoleMap(v))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// A goal as trace lines write it: an integer, `null` where the rules give
/// none, the sorted list where they give several.
impl Serialize for Goal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Goal::Value(v) => s.serialize_u8(*v),
            Goal::Undefined => s.serialize_none(),
            Goal::Several(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Goal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            One(u8),
            Several(Vec<u8>),
        }
        Ok(match Option::<Written>::deserialize(d)? {
            None => Goal::Undefined,
            Some(Written::One(v)) => Goal::Value(v),
            Some(Written::Several(v)) => Goal::Several(v),
        })
    }
}

/// One line of `propel trace`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceLine {
    pub step: usize,
    pub state: Vec<String>,
    pub legal: RoleMap<Vec<String>>,
    pub terminal: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goals: Option<RoleMap<Goal>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joint: Option<RoleMap<String>>,
}

impl TraceLine {
    pub fn new(roles: &[String], s: &TraceStep) -> TraceLine {
        TraceLine {
            step: s.step,
            state: s.state.clone(),
            legal: RoleMap::new(roles, s.legal.iter().cloned()),
            terminal: s.terminal,
            goals: s.goals.as_ref().map(|g| RoleMap::new(roles, g.iter().cloned())),
            joint: s.joint.as_ref().map(|j| RoleMap::new(roles, j.iter().cloned())),
        }
    }
}

/// `propel playouts --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayoutsReport {
    pub game: String,
    pub machine: String,
    pub playouts: u64,
    pub seconds: f64,
    pub playouts_per_s: f64,
    pub states_per_s: f64,
    pub avg_length: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `propel search --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    pub game: String,
    pub machine: String,
    /// What `--machine auto` chose (prover, propnet, jit, hybrid, aot).
    pub machine_chosen: String,
    /// Why; empty when the machine was named on the command line.
    pub machine_reason: String,
    pub lanes: bool,
    /// How rollouts chose their moves: `win-first lanes`, `lanes`,
    /// `greedy` or `uniform`.
    #[serde(default)]
    pub rollout_policy: String,
    /// The visit of a move at which its child joins the search graph
    /// (1: at once).
    #[serde(default = "one")]
    pub expand_after: u32,
    pub mode: String,
    pub threads: usize,
    pub seconds: f64,
    pub iterations: u64,
    pub iterations_per_s: f64,
    pub rollouts: u64,
    pub rollouts_per_s: f64,
    pub nodes: usize,
    pub pool: usize,
    pub search_busy: f64,
    pub rollout_idle: f64,
    pub rollouts_per_request: u32,
    /// Lane-parallel search: the most selections the search thread's
    /// lanes held at once (0 elsewhere).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peak_inflight: usize,
    pub role: String,
    #[serde(rename = "move")]
    pub best_move: Option<String>,
    pub value: Option<f64>,
    pub visits: Option<u32>,
    /// With `--moves N`: the role's N most visited moves at the root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub root_moves: Vec<RootMove>,
}

/// One move at the search's root: visits and mean value (0..100) summed
/// over the search's graphs, and whether it is a proven loss.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RootMove {
    #[serde(rename = "move")]
    pub mv: String,
    pub visits: u32,
    pub value: f64,
    #[serde(default)]
    pub lost: bool,
}

/// The build plan as `--json` and the player's logs write it
/// ([`crate::plan::Plan::json`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanJson {
    /// `aswritten` or `eliminated`.
    pub rules: String,
    pub components: usize,
    pub edges: usize,
    pub split: Option<SplitJson>,
    pub native_rules: String,
    pub native_edges: usize,
    pub lanes: bool,
    /// `lane-parallel` or `one-at-a-time`.
    pub rollouts: String,
    pub codegen_threads: usize,
    /// The outputs left to lookups on the rules: `goal`, `terminal`,
    /// `goal and terminal`, or empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lookups: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitJson {
    pub base: String,
    pub work: [f64; 2],
    pub interpreter: bool,
    pub native: bool,
}

/// Serialises a value of this module (they are plain data: it cannot fail).
/// A field's value in reports written before the field was.
fn one() -> u32 {
    1
}

pub fn to_line<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + fmt::Debug>(v: &T, text: &str) {
        assert_eq!(to_line(v), text);
        let back: T = serde_json::from_str(text).unwrap();
        assert_eq!(&back, v);
    }

    #[test]
    fn perft_lines_round_trip() {
        let l = crate::perft::PerftLine { depth: 2, nodes: 72, terminal: 0 };
        round_trip(&l, r#"{"depth":2,"nodes":72,"terminal":0}"#);
    }

    #[test]
    fn trace_lines_round_trip_as_written_before() {
        let roles = vec!["white".to_string(), "black".to_string()];
        let step = TraceStep {
            step: 3,
            state: vec!["(cell 1 1 x)".into(), "(control black)".into()],
            legal: vec![vec!["noop".into()], vec!["(mark 1 2)".into(), "(mark 2 2)".into()]],
            terminal: false,
            goals: None,
            joint: Some(vec!["noop".into(), "(mark 2 2)".into()]),
        };
        round_trip(
            &TraceLine::new(&roles, &step),
            r#"{"step":3,"state":["(cell 1 1 x)","(control black)"],"legal":{"white":["noop"],"black":["(mark 1 2)","(mark 2 2)"]},"terminal":false,"joint":{"white":"noop","black":"(mark 2 2)"}}"#,
        );
        let end = TraceStep {
            step: 9,
            state: vec![],
            legal: vec![vec![], vec![]],
            terminal: true,
            goals: Some(vec![Goal::Value(100), Goal::Several(vec![0, 50])]),
            joint: None,
        };
        round_trip(
            &TraceLine::new(&roles, &end),
            r#"{"step":9,"state":[],"legal":{"white":[],"black":[]},"terminal":true,"goals":{"white":100,"black":[0,50]}}"#,
        );
        let undefined = TraceLine {
            goals: Some(RoleMap::new(&roles, [Goal::Undefined, Goal::Value(0)])),
            ..TraceLine::new(&roles, &end)
        };
        round_trip(
            &undefined,
            r#"{"step":9,"state":[],"legal":{"white":[],"black":[]},"terminal":true,"goals":{"white":null,"black":0}}"#,
        );
    }

    #[test]
    fn plans_round_trip() {
        let p = PlanJson {
            rules: "aswritten".into(),
            components: 10,
            edges: 20,
            split: Some(SplitJson { base: "(control x)".into(), work: [3.5, 2.0], interpreter: true, native: false }),
            native_rules: "eliminated".into(),
            native_edges: 15,
            lanes: true,
            rollouts: "lane-parallel".into(),
            codegen_threads: 2,
            lookups: String::new(),
        };
        round_trip(
            &p,
            r#"{"rules":"aswritten","components":10,"edges":20,"split":{"base":"(control x)","work":[3.5,2.0],"interpreter":true,"native":false},"native_rules":"eliminated","native_edges":15,"lanes":true,"rollouts":"lane-parallel","codegen_threads":2}"#,
        );
        round_trip(
            &PlanJson { split: None, ..p.clone() },
            r#"{"rules":"aswritten","components":10,"edges":20,"split":null,"native_rules":"eliminated","native_edges":15,"lanes":true,"rollouts":"lane-parallel","codegen_threads":2}"#,
        );
        round_trip(
            &PlanJson { split: None, lanes: false, rollouts: "one-at-a-time".into(), lookups: "goal".into(), ..p },
            r#"{"rules":"aswritten","components":10,"edges":20,"split":null,"native_rules":"eliminated","native_edges":15,"lanes":false,"rollouts":"one-at-a-time","codegen_threads":2,"lookups":"goal"}"#,
        );
    }

    #[test]
    fn reports_round_trip() {
        let p = PlayoutsReport {
            game: "games/tictactoe.kif".into(),
            machine: "jit".into(),
            playouts: 10,
            seconds: 0.5,
            playouts_per_s: 20.0,
            states_per_s: 180.0,
            avg_length: 9.0,
        };
        round_trip(
            &p,
            r#"{"game":"games/tictactoe.kif","machine":"jit","playouts":10,"seconds":0.5,"playouts_per_s":20.0,"states_per_s":180.0,"avg_length":9.0}"#,
        );
        let s = SearchReport {
            game: "g.kif".into(),
            machine: "propnet".into(),
            machine_chosen: "propnet".into(),
            machine_reason: String::new(),
            lanes: false,
            rollout_policy: "uniform".into(),
            expand_after: 1,
            mode: "pipeline".into(),
            threads: 2,
            seconds: 1.0,
            iterations: 5,
            iterations_per_s: 5.0,
            rollouts: 5,
            rollouts_per_s: 5.0,
            nodes: 6,
            pool: 100,
            search_busy: 0.5,
            rollout_idle: 0.25,
            rollouts_per_request: 1,
            peak_inflight: 0,
            role: "x".into(),
            best_move: Some("(mark 1 1)".into()),
            value: Some(50.0),
            visits: Some(3),
            root_moves: Vec::new(),
        };
        round_trip(
            &s,
            r#"{"game":"g.kif","machine":"propnet","machine_chosen":"propnet","machine_reason":"","lanes":false,"rollout_policy":"uniform","expand_after":1,"mode":"pipeline","threads":2,"seconds":1.0,"iterations":5,"iterations_per_s":5.0,"rollouts":5,"rollouts_per_s":5.0,"nodes":6,"pool":100,"search_busy":0.5,"rollout_idle":0.25,"rollouts_per_request":1,"role":"x","move":"(mark 1 1)","value":50.0,"visits":3}"#,
        );
        let s = SearchReport {
            root_moves: vec![RootMove { mv: "(mark 1 1)".into(), visits: 3, value: 50.0, lost: false }],
            ..s
        };
        round_trip(
            &s,
            r#"{"game":"g.kif","machine":"propnet","machine_chosen":"propnet","machine_reason":"","lanes":false,"rollout_policy":"uniform","expand_after":1,"mode":"pipeline","threads":2,"seconds":1.0,"iterations":5,"iterations_per_s":5.0,"rollouts":5,"rollouts_per_s":5.0,"nodes":6,"pool":100,"search_busy":0.5,"rollout_idle":0.25,"rollouts_per_request":1,"role":"x","move":"(mark 1 1)","value":50.0,"visits":3,"root_moves":[{"move":"(mark 1 1)","visits":3,"value":50.0,"lost":false}]}"#,
        );
        let s = SearchReport { peak_inflight: 128, root_moves: Vec::new(), ..s };
        round_trip(
            &s,
            r#"{"game":"g.kif","machine":"propnet","machine_chosen":"propnet","machine_reason":"","lanes":false,"rollout_policy":"uniform","expand_after":1,"mode":"pipeline","threads":2,"seconds":1.0,"iterations":5,"iterations_per_s":5.0,"rollouts":5,"rollouts_per_s":5.0,"nodes":6,"pool":100,"search_busy":0.5,"rollout_idle":0.25,"rollouts_per_request":1,"peak_inflight":128,"role":"x","move":"(mark 1 1)","value":50.0,"visits":3}"#,
        );
    }
}
