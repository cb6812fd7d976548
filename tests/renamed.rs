//! The compiler works from the rules alone: a game whose every symbol is
//! renamed to a meaningless one (`obfuscate`) builds the same networks,
//! pass for pass, and plays the same perft as the game as written. A
//! decision keyed on a name, or on the order of names, shows here.

use propel_compiler::Game;
use propel_runtime::perft::perft;
use propel_runtime::Prover;
use propel_tests::{bundled_games, corpus_dir, obfuscate, test_build_options};
use std::path::Path;
use std::sync::Arc;

fn same_game_under_other_names(path: &Path, depth: usize) {
    let what = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{what}: {e}"));
    let written = Arc::new(propel_compiler::load(&what, text.as_str()).unwrap_or_else(|e| panic!("{e}")));
    let renamed: Arc<Game> =
        Arc::new(propel_compiler::load(&what, obfuscate(&text)).unwrap_or_else(|e| panic!("{what} renamed: {e}")));
    let renamed_away = (0..written.relations.len()).filter(|&i| {
        let r = propel_compiler::RelId(i as u32);
        !written.rel_name(r).eq_ignore_ascii_case(renamed.rel_name(r))
    });
    assert!(renamed_away.count() > 0, "{what}: no relation was renamed");
    let build = |g: &Arc<Game>| {
        propel_runtime::build::prepare(g, &test_build_options()).unwrap_or_else(|e| panic!("{what}: {e}"))
    };
    let (a, b) = (build(&written), build(&renamed));
    let passes = |p: &propel_runtime::build::Prepared| -> Vec<(String, propel_compiler::propnet::Counts)> {
        p.report().iter().map(|r| (r.stage.clone(), r.counts.clone())).collect()
    };
    assert_eq!(passes(&a), passes(&b), "{what}: the stages of the build");
    assert_eq!(a.net().counts(), b.net().counts(), "{what}: the network");
    assert_eq!(a.native_net().counts(), b.native_net().counts(), "{what}: the network for native code");
    assert_eq!(a.goal_net().map(|n| n.counts()), b.goal_net().map(|n| n.counts()), "{what}: the goal network");
    // Which base a split takes is measured on random playouts, and those
    // pick moves by their place in the network, which follows the order
    // of the symbols: the split is left out (bandl10 splits on another
    // base of the same rate).
    assert_eq!(a.demand().len(), b.demand().len(), "{what}: relations on demand");
    let mut prover = Prover::new(written.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let want = perft(&mut prover, depth, &mut |_| {}).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut renamed_prover = Prover::new(renamed.clone()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = perft(&mut renamed_prover, depth, &mut |_| {}).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(format!("{:?}", want.lines), format!("{:?}", got.lines), "{what}: the prover's perft, renamed");
    let mut net = b.propnet();
    let got = perft(&mut net, depth, &mut |_| {}).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(format!("{:?}", want.lines), format!("{:?}", got.lines), "{what}: the propnet's perft, renamed");
}

#[test]
fn bundled_games_build_alike_under_meaningless_names() {
    for g in bundled_games() {
        same_game_under_other_names(&g, 3);
    }
}

/// Corpus games that take the build's decisions: rules as written never
/// built (quarto), an eliminated network for native code (racer), demand
/// rewrites (mummymaze-modified), move tables (bandl10).
#[test]
fn corpus_games_build_alike_under_meaningless_names() {
    let Some(dir) = corpus_dir() else { return };
    for (g, depth) in [
        ("base/quarto.kif", 2),
        ("base/racer.kif", 2),
        ("soar-ggp/mummymaze-modified.kif", 3),
        ("chiaras-gdlfolder/bandl10.kif", 1),
    ] {
        same_game_under_other_names(&dir.join(g), depth);
    }
}
