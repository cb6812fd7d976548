//! Helpers shared by the cross-crate integration tests: where the bundled
//! games, the golden files and the public corpus are, and the checks that
//! compare any state machine with a golden file or with another machine.

use propel_compiler::lower::{CodeStats, CodegenOptions, Machine};
use propel_compiler::Game;
use propel_runtime::perft::perft;
use propel_runtime::{NativeMachine, Prover, StateMachine};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod skip;
pub use skip::skip;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `games/*.kif`, sorted.
pub fn bundled_games() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("games"))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "kif")).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// `../shared/games` when it exists (CI has it). When it does not, this
/// says plainly that the calling test skips it, or fails in CI ([`skip`]).
#[track_caller]
pub fn corpus_dir() -> Option<PathBuf> {
    let d = root().join("../shared/games");
    if !d.is_dir() {
        skip("../shared/games not found");
        return None;
    }
    Some(d)
}

/// `../shared/games/PATH`, or `None` (saying why) when the corpus or the
/// file is missing.
#[track_caller]
pub fn corpus_game(path: &str) -> Option<Arc<Game>> {
    let dir = corpus_dir()?;
    let path = dir.join(path);
    if !path.exists() {
        skip(&format!("{} not found", path.display()));
        return None;
    }
    Some(Arc::new(propel_compiler::load_file(&path).unwrap_or_else(|e| panic!("{e}"))))
}

/// Build limits for tests: ten minutes instead of the player's 60 s, so
/// that a test on a busy machine (or a debug build) never fails for lack
/// of time. The size limits are the defaults.
pub fn test_limits() -> propel_compiler::ground::GroundLimits {
    propel_compiler::ground::GroundLimits { time: std::time::Duration::from_secs(600), ..Default::default() }
}

/// [`propel_runtime::build::BuildOptions`] with [`test_limits`].
pub fn test_build_options() -> propel_runtime::build::BuildOptions {
    propel_runtime::build::BuildOptions { limits: test_limits(), ..Default::default() }
}

/// The one-engine JIT machine of `game` through the default pipeline, and
/// what its code generation took.
pub fn jit_machine(game: &Arc<Game>) -> (NativeMachine, CodeStats) {
    jit_machine_with(game, &CodegenOptions::default())
}

/// [`jit_machine`] with these code generation settings.
pub fn jit_machine_with(game: &Arc<Game>, options: &CodegenOptions) -> (NativeMachine, CodeStats) {
    let name = &game.name;
    let c = propel_compiler::pipeline::compile(game, &test_limits(), propel_compiler::propnet::passes::Pass::ALL)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let m = Machine { engines: vec![&c.net], split: None, goal_net: c.goal_net.as_ref(), lanes: None };
    let code = propel_compiler::lower::jit(&m, name, options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let stats = code.stats().clone();
    let native = propel_runtime::NativeCode::from_jit(code).unwrap_or_else(|e| panic!("{name}: {e}"));
    let machine = NativeMachine::new(Arc::new(native));
    (machine, stats)
}

/// Every bundled game's JIT machine (and its native playouts), generated
/// with `options`, against the golden perft and the prover's traces;
/// `check` sees each game's code statistics.
pub fn jit_agrees_on_bundled_games(what: &str, options: &CodegenOptions, check: impl Fn(&str, &CodeStats)) {
    for g in bundled_games() {
        let name = g.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let (mut jit, stats) = jit_machine_with(&game, options);
        check(&name, &stats);
        let golden = read_perft(&root().join("tests/perft").join(format!("{name}.perft")));
        check_perft(&mut jit, &golden, &format!("{what} on {name}"));
        let mut prover = Prover::new(game).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_traces_agree(&mut prover, &mut jit, &[1, 2, 3], &format!("{what} on {name}"));
    }
}

/// One line of a golden perft file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerftLine {
    pub depth: usize,
    pub nodes: u64,
    pub terminal: u64,
}

/// Reads `tests/perft/NAME.perft`: `depth nodes terminal` per line, `#` comments.
pub fn read_perft(path: &Path) -> Vec<PerftLine> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let n: Vec<u64> = l.split_whitespace().map(|x| x.parse().expect("a number")).collect();
            PerftLine { depth: n[0] as usize, nodes: n[1], terminal: n[2] }
        })
        .collect()
}

/// Largest node count at one depth checked by default; set
/// `PROPEL_PERFT_LIMIT` higher to check the costly lines too.
pub fn perft_limit() -> u64 {
    std::env::var("PROPEL_PERFT_LIMIT").ok().and_then(|v| v.parse().ok()).unwrap_or(300_000)
}

/// Runs perft on `m` up to the deepest golden line within the limit and
/// compares every line. Returns the deepest depth checked.
pub fn check_perft<M: StateMachine>(m: &mut M, golden: &[PerftLine], what: &str) -> usize {
    let limit = perft_limit();
    let depth = golden.iter().filter(|l| l.nodes <= limit).map(|l| l.depth).max().unwrap_or(0);
    let got = perft(m, depth, &mut |_| {}).unwrap_or_else(|e| panic!("{what}: perft failed: {e}"));
    for (g, want) in got.lines.iter().zip(golden.iter().filter(|l| l.depth <= depth)) {
        assert_eq!(
            (g.depth, g.nodes, g.terminal),
            (want.depth, want.nodes, want.terminal),
            "{what}: perft differs at depth {}",
            want.depth
        );
    }
    depth
}

/// A propnet machine for `game` after `passes`.
pub fn propnet_machine(
    game: &std::sync::Arc<propel_compiler::Game>,
    passes: &[propel_compiler::propnet::passes::Pass],
) -> propel_runtime::PropnetMachine {
    let opts = propel_runtime::build::BuildOptions { passes: passes.to_vec(), ..test_build_options() };
    propel_runtime::build::propnet_machine(game, &opts).unwrap_or_else(|e| panic!("{}: {e}", game.name)).machine
}

/// Every step of the traces for `seeds` equal on both machines.
pub fn assert_traces_agree<A: StateMachine, B: StateMachine>(a: &mut A, b: &mut B, seeds: &[u64], what: &str) {
    use propel_runtime::trace::trace;
    for &seed in seeds {
        let mut ta = Vec::new();
        let mut tb = Vec::new();
        let ea = trace(a, seed, 400, &mut |s| ta.push(s.clone())).unwrap_or_else(|e| panic!("{what}: {e}"));
        let eb = trace(b, seed, 400, &mut |s| tb.push(s.clone())).unwrap_or_else(|e| panic!("{what}: {e}"));
        for (x, y) in ta.iter().zip(&tb) {
            assert_eq!(x, y, "{what}: seed {seed}: traces differ at step {}", x.step);
        }
        assert_eq!(ta.len(), tb.len(), "{what}: seed {seed}: trace lengths differ");
        assert_eq!(ea, eb, "{what}: seed {seed}");
    }
}

/// The instance functions a search drives through the C ABI, on random
/// walks: a state made current reads back the same (`propel_set_state`,
/// `propel_get_state`); stepping (`propel_step`) makes the machine's own
/// next state current; a copy of an instance (`propel_clone`) keeps its
/// state while the original steps on, and steps to the same successor.
pub fn assert_state_abi_round_trips(m: &mut NativeMachine, seeds: &[u64], what: &str) {
    let mut copy = m.clone();
    let roles = m.roles().len();
    for &seed in seeds {
        let mut rng = propel_runtime::Rng::new(seed);
        let mut s = m.initial_state().unwrap();
        for step in 0..200 {
            m.load_state(&s).unwrap();
            assert_eq!(m.current_state(), s, "{what}: seed {seed}, step {step}: state read back");
            if m.is_terminal(&s).unwrap() {
                break;
            }
            let mut joint = Vec::with_capacity(roles);
            let mut moves = Vec::new();
            for r in 0..roles {
                m.legal_moves(&s, r, &mut moves).unwrap();
                joint.push(moves[rng.below(moves.len())]);
            }
            let next = m.next_state(&s, &joint).unwrap();
            m.load_state(&s).unwrap();
            m.copy_to(&mut copy).unwrap();
            m.step(&joint).unwrap();
            assert_eq!(m.current_state(), next, "{what}: seed {seed}, step {step}: stepped state");
            assert_eq!(copy.current_state(), s, "{what}: seed {seed}, step {step}: the copy kept its state");
            copy.step(&joint).unwrap();
            assert_eq!(copy.current_state(), next, "{what}: seed {seed}, step {step}: the copy stepped alike");
            // A bad joint move is refused and leaves the state as it was.
            let bad: Vec<u32> = joint.iter().rev().copied().collect();
            if roles > 1 && m.step(&bad).is_ok() {
                panic!("{what}: seed {seed}, step {step}: a joint move in the wrong role order was played");
            }
            assert_eq!(m.current_state(), next, "{what}: seed {seed}, step {step}: after a refused move");
            s = next;
        }
    }
}

/// `kif` with every symbol that is not a GDL keyword or a number replaced
/// by a meaningless one (`q` and seven hex digits, the same for the same
/// symbol in any case), variables renamed alike and comments dropped: the
/// same game under names that say nothing.
pub fn obfuscate(kif: &str) -> String {
    const KEEP: [&str; 16] = [
        "role", "init", "true", "next", "legal", "does", "goal", "terminal", "distinct", "not", "or", "base", "input",
        "sees", "random", "<=",
    ];
    // FNV-1a: a fixed hash, so the names are the same on every run.
    fn meaningless(s: &str) -> String {
        let h = s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(0x100_0000_01b3)
        });
        format!("q{:07x}", h & 0xfff_ffff)
    }
    let mut out = String::with_capacity(kif.len());
    for line in kif.lines() {
        let code = line.split(';').next().unwrap_or("");
        let spaced = code.replace('(', " ( ").replace(')', " ) ");
        for t in spaced.split_whitespace() {
            match t {
                "(" | ")" => out.push_str(t),
                _ if t.starts_with('?') => out.push_str(&format!("?{}", meaningless(&t[1..]))),
                _ if KEEP.iter().any(|k| k.eq_ignore_ascii_case(t)) || t.parse::<i64>().is_ok() => out.push_str(t),
                _ => out.push_str(&meaningless(t)),
            }
            out.push(' ');
        }
        out.push('\n');
    }
    out
}
