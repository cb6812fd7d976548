//! Library metadata (`propel_abi::meta`): any text, and consistent
//! metadata with any fields changed, is refused or gives an interface
//! whose every offset lies inside the instance; with a lane plan, the
//! lane driver then runs on it, the "code" computing garbage, without a
//! panic (a hostile library gets errors, never an out-of-bounds index in
//! Rust).

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use propel_abi::meta::EngineMeta;
use propel_abi::{Export, Interface, LanePlan, Metadata};
use propel_runtime::lanes::{LaneEval, LaneSource, Lanes, Refill, Word};
use propel_runtime::Rng;

/// A consistent two-role machine with a lane plan.
fn sample() -> Metadata {
    let plan = LanePlan {
        words: 16,
        terminal: 3,
        ones: vec![1],
        base: vec![4, 5],
        next: vec![6, 4],
        input: vec![7, 8, 9],
        legal: vec![10, 11, 12],
        goals: vec![(0, 100, 13), (1, 0, 14)],
        goal_net: false,
    };
    Metadata {
        format: propel_abi::FORMAT_VERSION,
        game_hash: "0123456789abcdef".into(),
        cpu: "x".into(),
        size: 256,
        split: None,
        engines: vec![EngineMeta { region: 64, size: 128, base_bits: 0, legal_bits: 8, next_bits: 16 }],
        roles: vec!["x".into(), "o".into()],
        bases: vec!["(cell 1)".into(), "(cell 2)".into()],
        inputs: vec!["(a)".into(), "(b)".into(), "noop".into()],
        input_roles: vec![0, 0, 1],
        init: vec![1],
        exports: Export::ALL.iter().map(|e| e.name().to_string()).collect(),
        lanes: Some(plan.encode()),
    }
}

fn pick<T>(v: &mut Vec<T>, u: &mut Unstructured) -> arbitrary::Result<Option<usize>> {
    if v.is_empty() {
        return Ok(None);
    }
    Ok(Some(u.choose_index(v.len())?))
}

/// Changes some of `m`'s fields as `u` says.
fn mutate(m: &mut Metadata, u: &mut Unstructured) -> arbitrary::Result<()> {
    for _ in 0..u.int_in_range(0..=6)? {
        match u.int_in_range(0..=11)? {
            0 => m.size = u.arbitrary()?,
            1 => m.split = u.arbitrary()?,
            2 => m.engines.push(EngineMeta {
                region: u.arbitrary()?,
                size: u.arbitrary()?,
                base_bits: u.arbitrary()?,
                legal_bits: u.arbitrary()?,
                next_bits: u.arbitrary()?,
            }),
            3 => {
                if let Some(k) = pick(&mut m.engines, u)? {
                    let e = &mut m.engines[k];
                    let field = [&mut e.region, &mut e.size, &mut e.base_bits, &mut e.legal_bits, &mut e.next_bits];
                    let i = u.choose_index(field.len())?;
                    *field.into_iter().nth(i).unwrap_or(&mut 0) = u.arbitrary()?;
                } else {
                    m.engines.clear();
                }
            }
            4 => match pick(&mut m.roles, u)? {
                Some(k) if bool::arbitrary(u)? => drop(m.roles.remove(k)),
                _ => m.roles.push(u.arbitrary()?),
            },
            5 => match pick(&mut m.bases, u)? {
                Some(k) if bool::arbitrary(u)? => drop(m.bases.remove(k)),
                _ => m.bases.push(u.arbitrary()?),
            },
            6 => match pick(&mut m.inputs, u)? {
                Some(k) if bool::arbitrary(u)? => drop(m.inputs.remove(k)),
                _ => m.inputs.push(u.arbitrary()?),
            },
            7 => match pick(&mut m.input_roles, u)? {
                Some(k) if bool::arbitrary(u)? => m.input_roles[k] = u.arbitrary()?,
                Some(k) if bool::arbitrary(u)? => drop(m.input_roles.remove(k)),
                _ => m.input_roles.push(u.arbitrary()?),
            },
            8 => m.init.push(u.arbitrary()?),
            9 => {
                if let Some(k) = pick(&mut m.exports, u)? {
                    m.exports.swap(0, k);
                }
            }
            10 => {
                if let Some(plan) = &mut m.lanes {
                    if let Some(k) = pick(plan, u)? {
                        plan[k] = if bool::arbitrary(u)? { u.arbitrary()? } else { plan[k] ^ 1 };
                    }
                }
            }
            _ => m.lanes = u.arbitrary()?,
        }
    }
    Ok(())
}

/// What a checked interface promises.
fn assert_inside(i: &Interface) {
    let size = i.size as u64;
    for e in &i.engines {
        assert!(e.base_bits as u64 + 8 * i.state_words() as u64 <= size);
        assert!(e.next_bits as u64 + 8 * i.state_words() as u64 <= size);
        assert!(e.legal_bits as u64 + 8 * i.input_words() as u64 <= size);
    }
    assert!(!i.engines.is_empty() && !i.roles.is_empty());
    assert_eq!(i.role_range.len(), i.roles.len());
    assert!(i.role_range.iter().all(|&(a, b)| a <= b && b as usize <= i.input_names.len()));
    assert!(i.input_role.iter().all(|&r| (r as usize) < i.roles.len()));
    assert_eq!(i.initial.len(), i.state_words());
}

/// Lane code that computes garbage: every word, at every call.
struct Garbage(Rng);

impl Garbage {
    fn fill(&mut self, words: &mut [Word]) {
        for w in words {
            *w = (self.0.next_u64() as Word) << 64 | self.0.next_u64() as Word;
        }
    }
}

impl LaneEval for Garbage {
    fn state(&mut self, words: &mut [Word]) {
        self.fill(words)
    }
    fn next(&mut self, words: &mut [Word]) {
        self.fill(words)
    }
    fn goals(&mut self, words: &mut [Word]) {
        self.fill(words)
    }
}

/// A few playouts from the initial state, one expanded.
struct Few<'a> {
    start: &'a [u64],
    joint: Vec<u32>,
    left: u32,
}

impl LaneSource for Few<'_> {
    fn next_start(&mut self, _lane: usize) -> Refill<'_> {
        if self.left == 0 {
            return Refill::Stop;
        }
        self.left -= 1;
        if self.left == 0 && !self.joint.is_empty() {
            return Refill::Expand { parent: self.start, joint: &self.joint, report: true };
        }
        Refill::Start(self.start)
    }
    fn finished(&mut self, _lane: usize, _goals: &[i32], _length: u32) {}
}

fn run_lanes(i: &Interface, seed: u64) {
    let Some(plan) = &i.lanes else { return };
    let mut lanes = Lanes::new(plan);
    // A legal joint move would come from the machine; a hostile one is
    // the first input of each role.
    let joint: Vec<u32> = i.role_range.iter().filter(|r| r.0 < r.1).map(|r| r.0).collect();
    let joint = if joint.len() == i.roles.len() { joint } else { Vec::new() };
    let mut source = Few { start: &i.initial, joint, left: 3 };
    let _ = lanes.stream(plan, &mut Garbage(Rng::new(seed)), &i.role_range, &mut source, seed, 20);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let checked = if mode % 2 == 0 {
        Metadata::parse(rest).ok().and_then(|m| m.check().ok())
    } else {
        let mut u = Unstructured::new(rest);
        let mut m = sample();
        if mutate(&mut m, &mut u).is_err() {
            return;
        }
        let back = Metadata::parse(m.to_json().as_bytes()).expect("metadata written reads back");
        assert_eq!(back, m);
        back.check().ok()
    };
    if let Some(i) = checked {
        assert_inside(&i);
        run_lanes(&i, u64::from(mode));
    }
});
