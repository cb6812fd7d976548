//! Propagation micro-benchmarks: one random game replayed state by state
//! (set state, legal moves, next state) on the interpreted propnet and on
//! the JIT, and whole native playouts. Each benchmark checks its answer
//! (the replayed game ends where it should; playout lengths match the
//! standard path), so a wrong machine cannot look fast.
//!
//! `cargo bench -p propel-runtime`

use criterion::{criterion_group, criterion_main, Criterion};
use propel_runtime::build::{jit_machine, propnet_machine, BuildOptions};
use propel_runtime::playout::{playout, PlayoutStats};
use propel_runtime::{Rng, StateMachine};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

fn game(name: &str) -> Arc<propel_compiler::Game> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../games/{name}.kif"));
    Arc::new(propel_compiler::load_file(&p).expect("bundled game"))
}

/// A random game's joint moves, recorded on `m`.
fn record<M: StateMachine>(m: &mut M, seed: u64) -> Vec<Vec<M::Move>> {
    let mut rng = Rng::new(seed);
    let mut s = m.initial_state().unwrap();
    let mut joints = Vec::new();
    let mut moves = Vec::new();
    while !m.is_terminal(&s).unwrap() {
        let joint: Vec<M::Move> = (0..m.roles().len())
            .map(|r| {
                m.legal_moves(&s, r, &mut moves).unwrap();
                moves[rng.below(moves.len())]
            })
            .collect();
        s = m.next_state(&s, &joint).unwrap();
        joints.push(joint);
    }
    joints
}

/// Replays `joints`, asking for the legal moves of every role at each
/// state as a search would; returns the number of legal moves seen.
fn replay<M: StateMachine>(m: &mut M, joints: &[Vec<M::Move>]) -> usize {
    let mut s = m.initial_state().unwrap();
    let mut moves = Vec::new();
    let mut seen = 0;
    for j in joints {
        for r in 0..m.roles().len() {
            m.legal_moves(&s, r, &mut moves).unwrap();
            seen += moves.len();
        }
        s = m.next_state(&s, j).unwrap();
    }
    assert!(m.is_terminal(&s).unwrap(), "the replayed game must end where it did");
    seen
}

fn bench(c: &mut Criterion) {
    for name in ["tictactoe", "connect4", "breakthrough"] {
        let g = game(name);
        let opts = BuildOptions::default();
        let mut interp = propnet_machine(&g, &opts).unwrap().machine;
        let mut jit = jit_machine(&g, &opts).unwrap().machine;
        let ji = record(&mut interp, 7);
        let jj = record(&mut jit, 7);
        let expected = replay(&mut interp, &ji);
        assert_eq!(replay(&mut jit, &jj), expected, "machines disagree on {name}");
        c.bench_function(&format!("{name}/replay/propnet"), |b| b.iter(|| black_box(replay(&mut interp, &ji))));
        c.bench_function(&format!("{name}/replay/jit"), |b| b.iter(|| black_box(replay(&mut jit, &jj))));
        // Native playouts against the standard path, seed by seed.
        let s0 = jit.initial_state().unwrap();
        let mut goals = Vec::new();
        let lengths: Vec<u32> =
            (1..=64).map(|seed| jit.native_playout(&s0, seed, 100_000, &mut goals).unwrap()).collect();
        for (i, &n) in lengths.iter().enumerate() {
            let len = playout(&mut interp, &mut Rng::new(i as u64 + 1), &mut PlayoutStats::default()).unwrap();
            assert_eq!(n as u64, len, "{name}: native and standard playouts differ");
        }
        c.bench_function(&format!("{name}/64 playouts/native"), |b| {
            b.iter(|| {
                let total: u32 = (1..=64).map(|seed| jit.native_playout(&s0, seed, 100_000, &mut goals).unwrap()).sum();
                assert_eq!(total, lengths.iter().sum::<u32>());
                black_box(total)
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
