//! What a machine carries about itself (`propel_info`, JSON): format,
//! game, processor, memory layout, names and lane plan. Whoever runs the
//! code reads its layout from here, so it is checked before any of it is
//! used: metadata that is corrupted or made up gives an error, never an
//! offset outside the instance or a count that does not fit.

use crate::exports::Export;
use crate::lanes::{LanePlan, PlanError};
use crate::layout::HEADER;
use crate::FORMAT_VERSION;
use serde::{Deserialize, Serialize};

/// The largest instance a machine may ask for (2 GiB).
pub const MAX_INSTANCE: u32 = 1 << 31;
/// The most roles a machine may have.
pub const MAX_ROLES: usize = 1 << 16;

/// The metadata, as written (see docs/aot.md for the fields).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    pub format: u32,
    /// [`crate::game_hash`] of the game file (the game's name for JIT code).
    pub game_hash: String,
    /// [`crate::cpu`]'s description of the processor the code is for.
    pub cpu: String,
    /// Bytes per instance.
    pub size: u32,
    /// The base the engines are specialised on, when the network is split
    /// (engine 1 holds the states where it is true).
    pub split: Option<u32>,
    pub engines: Vec<EngineMeta>,
    pub roles: Vec<String>,
    pub bases: Vec<String>,
    pub inputs: Vec<String>,
    /// The role of each input (inputs are numbered by role, then name).
    pub input_roles: Vec<u32>,
    /// The bases true in the initial state.
    pub init: Vec<u32>,
    /// The exported symbols, in [`Export::ALL`] order.
    pub exports: Vec<String>,
    /// The lane plan ([`LanePlan::encode`]), when the code has lanes.
    pub lanes: Option<Vec<u32>>,
}

/// Where one engine's memory and bitsets lie (bytes; the bitsets relative
/// to the region).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineMeta {
    pub region: u32,
    pub size: u32,
    pub base_bits: u32,
    pub legal_bits: u32,
    pub next_bits: u32,
}

/// Why metadata was refused.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("unreadable metadata: {0}")]
    Unreadable(serde_json::Error),
    #[error("library format {found}, this Propel reads {FORMAT_VERSION}")]
    Format { found: u64 },
    #[error("inconsistent metadata: {0}")]
    Invalid(String),
    #[error("inconsistent metadata: {0}")]
    Plan(PlanError),
}

impl From<PlanError> for MetaError {
    fn from(e: PlanError) -> Self {
        MetaError::Plan(e)
    }
}

/// Where one engine's bitsets lie: absolute byte offsets in the instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineOffsets {
    pub base_bits: u32,
    pub legal_bits: u32,
    pub next_bits: u32,
}

/// Checked metadata: everything the runtime needs to drive the code,
/// every offset and length inside the instance.
#[derive(Clone, Debug)]
pub struct Interface {
    pub game_hash: String,
    pub cpu: String,
    pub size: u32,
    /// Never empty; one per engine.
    pub engines: Vec<EngineOffsets>,
    pub roles: Vec<String>,
    pub base_names: Vec<String>,
    pub input_names: Vec<String>,
    /// Role of each input; each below `roles.len()`.
    pub input_role: Vec<u32>,
    /// Each role's inputs: (first, end).
    pub role_range: Vec<(u32, u32)>,
    /// The initial state.
    pub initial: Vec<u64>,
    pub lanes: Option<LanePlan>,
}

impl Interface {
    /// `u64` words of a state.
    pub fn state_words(&self) -> usize {
        self.base_names.len().div_ceil(64)
    }

    /// `u64` words of the legal bitset.
    pub fn input_words(&self) -> usize {
        self.input_names.len().div_ceil(64)
    }
}

#[derive(Deserialize)]
struct FormatOnly {
    format: u64,
}

impl Metadata {
    pub fn to_json(&self) -> String {
        // Serialising plain numbers, strings and lists cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads metadata of this format version (another version is
    /// [`MetaError::Format`], whatever else it holds).
    pub fn parse(text: &[u8]) -> Result<Metadata, MetaError> {
        let f: FormatOnly = serde_json::from_slice(text).map_err(MetaError::Unreadable)?;
        if f.format != FORMAT_VERSION as u64 {
            return Err(MetaError::Format { found: f.format });
        }
        serde_json::from_slice(text).map_err(MetaError::Unreadable)
    }

    /// Checks every offset, count and index, and gives what the runtime
    /// uses.
    pub fn check(self) -> Result<Interface, MetaError> {
        let bad = |s: String| Err(MetaError::Invalid(s));
        let names: Vec<&str> = Export::ALL.iter().map(|e| e.name()).collect();
        if self.exports != names {
            return bad("its exports are not this format's".into());
        }
        if self.size < HEADER || self.size > MAX_INSTANCE || !self.size.is_multiple_of(8) {
            return bad(format!("instance size {}", self.size));
        }
        let (nb, ni, nr) = (self.bases.len(), self.inputs.len(), self.roles.len());
        if nr == 0 || nr > MAX_ROLES {
            return bad(format!("{nr} roles"));
        }
        let engines_wanted = if self.split.is_some() { 2 } else { 1 };
        if self.engines.len() != engines_wanted {
            return bad(format!("{} engines for {engines_wanted}", self.engines.len()));
        }
        if let Some(s) = self.split.filter(|&s| s as usize >= nb) {
            return bad(format!("split on base {s} of {nb}"));
        }
        let (state_bytes, input_bytes) = (8 * words_of(nb), 8 * words_of(ni));
        let mut engines = Vec::new();
        for (k, e) in self.engines.iter().enumerate() {
            let within = |off: u32, len: u64| off.is_multiple_of(8) && off as u64 + len <= e.size as u64;
            let fits = e.region >= HEADER
                && e.region.is_multiple_of(8)
                && e.region as u64 + e.size as u64 <= self.size as u64
                && within(e.base_bits, state_bytes)
                && within(e.legal_bits, input_bytes)
                && within(e.next_bits, state_bytes);
            if !fits {
                return bad(format!("engine {k}'s memory does not fit the instance"));
            }
            engines.push(EngineOffsets {
                base_bits: e.region + e.base_bits,
                legal_bits: e.region + e.legal_bits,
                next_bits: e.region + e.next_bits,
            });
        }
        if self.input_roles.len() != ni {
            return bad(format!("{} input roles for {ni} inputs", self.input_roles.len()));
        }
        if self.input_roles.iter().any(|&r| r as usize >= nr) {
            return bad("an input of a role that does not exist".into());
        }
        if self.input_roles.windows(2).any(|w| w[1] < w[0]) {
            return bad("inputs not numbered by role".into());
        }
        let mut initial = vec![0u64; nb.div_ceil(64)];
        for &i in &self.init {
            match initial.get_mut(i as usize / 64).filter(|_| (i as usize) < nb) {
                Some(w) => *w |= 1 << (i % 64),
                None => return bad(format!("initial base {i} of {nb}")),
            }
        }
        let lanes = match &self.lanes {
            Some(v) => {
                let plan = LanePlan::decode(v)?;
                plan.check(nr, nb, ni)?;
                Some(plan)
            }
            None => None,
        };
        Ok(Interface {
            role_range: ranges(nr, &self.input_roles),
            game_hash: self.game_hash,
            cpu: self.cpu,
            size: self.size,
            engines,
            roles: self.roles,
            base_names: self.bases,
            input_names: self.inputs,
            input_role: self.input_roles,
            initial,
            lanes,
        })
    }
}

/// `u64` words of `n` bits, as a `u64` for offset arithmetic.
fn words_of(n: usize) -> u64 {
    (n as u64).div_ceil(64)
}

/// Role ranges from the inputs' roles (inputs are numbered by role).
fn ranges(roles: usize, input_role: &[u32]) -> Vec<(u32, u32)> {
    let mut r = vec![(u32::MAX, 0u32); roles];
    for (i, &role) in input_role.iter().enumerate() {
        if let Some(e) = r.get_mut(role as usize) {
            e.0 = e.0.min(i as u32);
            e.1 = e.1.max(i as u32 + 1);
        }
    }
    r.into_iter().map(|(a, b)| if a == u32::MAX { (0, 0) } else { (a, b) }).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Metadata of a tiny two-role machine, consistent.
    pub(crate) fn sample() -> Metadata {
        Metadata {
            format: FORMAT_VERSION,
            game_hash: "0123456789abcdef".into(),
            cpu: crate::cpu::describe(crate::cpu::TARGET, []),
            size: 256,
            split: None,
            engines: vec![EngineMeta { region: 64, size: 128, base_bits: 0, legal_bits: 8, next_bits: 16 }],
            roles: vec!["x".into(), "o".into()],
            bases: vec!["(cell 1)".into(), "(cell 2)".into()],
            inputs: vec!["(a)".into(), "(b)".into(), "noop".into()],
            input_roles: vec![0, 0, 1],
            init: vec![1],
            exports: Export::ALL.iter().map(|e| e.name().to_string()).collect(),
            lanes: None,
        }
    }

    #[test]
    fn consistent_metadata_round_trips_and_checks() {
        let m = sample();
        let back = Metadata::parse(m.to_json().as_bytes()).unwrap();
        assert_eq!(back, m);
        let i = back.check().unwrap();
        assert_eq!(i.role_range, vec![(0, 2), (2, 3)]);
        assert_eq!(i.initial, vec![2]);
        assert_eq!(i.engines[0].legal_bits, 72);
    }

    #[test]
    fn other_formats_are_told_apart_from_garbage() {
        assert!(matches!(Metadata::parse(br#"{"format":5,"x":1}"#), Err(MetaError::Format { found: 5 })));
        assert!(matches!(Metadata::parse(b"{"), Err(MetaError::Unreadable(_))));
    }

    #[test]
    fn each_inconsistency_is_refused() {
        type Case = Box<dyn Fn(&mut Metadata)>;
        let cases: Vec<Case> = vec![
            Box::new(|m| m.engines.clear()),
            Box::new(|m| m.split = Some(0)),
            Box::new(|m| m.engines[0].region = 200),
            Box::new(|m| m.engines[0].next_bits = 124),
            Box::new(|m| m.engines[0].legal_bits = 3),
            Box::new(|m| m.size = 7),
            Box::new(|m| m.size = u32::MAX - 7),
            Box::new(|m| m.input_roles = vec![0, 2, 1]),
            Box::new(|m| m.input_roles = vec![1, 0, 0]),
            Box::new(|m| m.input_roles.pop().map(drop).unwrap_or(())),
            Box::new(|m| m.init = vec![2]),
            Box::new(|m| m.init = vec![64]),
            Box::new(|m| m.roles.clear()),
            Box::new(|m| m.exports.pop().map(drop).unwrap_or(())),
            Box::new(|m| m.lanes = Some(vec![1, 2, 3])),
        ];
        for (k, f) in cases.iter().enumerate() {
            let mut m = sample();
            f(&mut m);
            assert!(m.check().is_err(), "case {k} was accepted");
        }
    }
}
