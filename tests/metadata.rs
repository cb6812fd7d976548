//! A machine's metadata and lane plan, mutated at random, never make the
//! checks panic, and whatever they accept keeps every offset inside the
//! instance and every index in range: a corrupted or made-up library gets
//! an error, never an out-of-bounds slice.

use propel_abi::lanes::{LanePlan, MAX_WORDS};
use propel_abi::meta::{Interface, Metadata};
use propel_runtime::build::{prepare, BuildOptions};
use propel_runtime::Rng;
use propel_tests::root;
use serde_json::Value;
use std::sync::Arc;

/// The metadata text of a bundled game's JIT code.
fn metadata(game: &str) -> Vec<u8> {
    let path = root().join(format!("games/{game}.kif"));
    let game = Arc::new(propel_compiler::load_file(&path).unwrap_or_else(|e| panic!("{e}")));
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let (m, _) = p.jit(&game.name).unwrap();
    m.code().metadata().to_bytes().to_vec()
}

/// What an accepted interface promises the runtime.
fn assert_consistent(i: &Interface) {
    let state = 8 * i.base_names.len().div_ceil(64) as u64;
    let legal = 8 * i.input_names.len().div_ceil(64) as u64;
    assert!(!i.engines.is_empty());
    for e in &i.engines {
        assert!(e.base_bits as u64 + state <= i.size as u64);
        assert!(e.next_bits as u64 + state <= i.size as u64);
        assert!(e.legal_bits as u64 + legal <= i.size as u64);
    }
    assert_eq!(i.input_role.len(), i.input_names.len());
    assert_eq!(i.role_range.len(), i.roles.len());
    assert!(i.input_role.iter().all(|&r| (r as usize) < i.roles.len()));
    assert!(i.role_range.iter().all(|&(a, b)| a <= b && b as usize <= i.input_names.len()));
    assert_eq!(i.initial.len(), i.base_names.len().div_ceil(64));
    if let Some(p) = &i.lanes {
        assert_plan(p);
        assert_eq!(p.base.len(), i.base_names.len());
        assert_eq!(p.input.len(), i.input_names.len());
        assert!(p.goals.iter().all(|g| (g.0 as usize) < i.roles.len()));
    }
}

fn assert_plan(p: &LanePlan) {
    assert!(p.words <= MAX_WORDS);
    let all = [&p.ones, &p.base, &p.next, &p.input, &p.legal];
    assert!(all.iter().all(|v| v.iter().all(|&w| w < p.words)));
    assert!(p.terminal < p.words);
    // Values above 100 (a broken game's) are reported as errors by the
    // lane driver; a plan may hold any value a goal can have.
    assert!(p.goals.iter().all(|&(_, v, w)| v <= 255 && w < p.words));
}

/// A value to put somewhere: numbers at the edges, wrong types, or a
/// piece of what was there.
fn replacement(rng: &mut Rng, old: &Value) -> Value {
    match rng.below(10) {
        0 => Value::from(0),
        1 => Value::from(-1),
        2 => Value::from(u32::MAX),
        3 => Value::from(u64::MAX),
        4 => Value::from(rng.below(300) as u64),
        5 => Value::Null,
        6 => Value::String("x".into()),
        7 => Value::Array(Vec::new()),
        8 => match old {
            Value::Array(v) if !v.is_empty() => Value::Array(v[..rng.below(v.len())].to_vec()),
            Value::Number(n) => Value::from(n.as_u64().unwrap_or(0).wrapping_add(1 + rng.below(64) as u64)),
            _ => Value::Bool(true),
        },
        _ => match old {
            Value::Array(v) if !v.is_empty() => {
                let mut v = v.clone();
                let k = rng.below(v.len());
                v.push(v[k].clone());
                Value::Array(v)
            }
            Value::Number(n) => Value::from(n.as_u64().unwrap_or(1).saturating_mul(2)),
            _ => Value::Object(Default::default()),
        },
    }
}

/// Changes one value somewhere in `v` (or removes an object's key).
fn mutate(rng: &mut Rng, v: &mut Value) {
    match v {
        Value::Object(map) if !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.below(keys.len())];
            if rng.below(12) == 0 {
                map.remove(key);
            } else if let Some(inner) = map.get_mut(key) {
                if rng.below(3) == 0 {
                    *inner = replacement(rng, inner);
                } else {
                    mutate(rng, inner);
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let k = rng.below(items.len());
            if rng.below(3) == 0 {
                items[k] = replacement(rng, &items[k]);
            } else {
                mutate(rng, &mut items[k]);
            }
        }
        other => *other = replacement(rng, other),
    }
}

fn check(text: &[u8]) -> bool {
    match Metadata::parse(text).and_then(Metadata::check) {
        Ok(i) => {
            assert_consistent(&i);
            true
        }
        Err(_) => false,
    }
}

#[test]
fn mutated_metadata_is_refused_or_consistent() {
    for game in ["tictactoe", "breakthrough", "firewall"] {
        let text = metadata(game);
        assert!(check(&text), "{game}: the real metadata is accepted");
        let value: Value = serde_json::from_slice(&text).unwrap();
        let mut rng = Rng::new(7);
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..3000 {
            let mut v = value.clone();
            for _ in 0..1 + rng.below(3) {
                mutate(&mut rng, &mut v);
            }
            if check(serde_json::to_string(&v).unwrap().as_bytes()) {
                accepted += 1;
            } else {
                refused += 1;
            }
        }
        // Raw bytes: cut, flipped, spliced.
        for _ in 0..2000 {
            let mut t = text.clone();
            match rng.below(3) {
                0 => t.truncate(rng.below(t.len())),
                1 => {
                    let k = rng.below(t.len());
                    t[k] = rng.next_u64() as u8;
                }
                _ => {
                    let (a, b) = (rng.below(t.len()), rng.below(t.len()));
                    t.drain(a.min(b)..a.max(b));
                }
            }
            check(&t);
        }
        eprintln!("{game}: {accepted} structural mutations accepted (consistent), {refused} refused");
        assert!(refused > accepted, "{game}: most mutations break something");
    }
}

#[test]
fn mutated_lane_plans_are_refused_or_in_range() {
    let text = metadata("breakthrough");
    let meta = Metadata::parse(&text).unwrap();
    let words = meta.lanes.clone().expect("breakthrough has lane code");
    assert!(LanePlan::decode(&words).is_ok());
    let mut rng = Rng::new(11);
    for _ in 0..20_000 {
        let mut w = words.clone();
        for _ in 0..1 + rng.below(3) {
            let k = rng.below(w.len());
            match rng.below(5) {
                0 => w[k] = u32::MAX,
                1 => w[k] = w[k].wrapping_add(1),
                2 => w[k] = rng.next_u64() as u32,
                3 => w.truncate(k),
                _ => w.insert(k, rng.below(1000) as u32),
            }
            if w.is_empty() {
                break;
            }
        }
        if let Ok(p) = LanePlan::decode(&w) {
            assert_plan(&p);
        }
    }
}
