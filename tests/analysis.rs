//! The meta-game analysis: a learnt evaluator steers the search's first
//! visits; and, on corpus games when the corpus is there, the analysis
//! learns a material model in checkers and solves a factored puzzle on one
//! factor alone.

use propel_runtime::analysis::{analyse, Analysis};
use propel_runtime::build::{prepare, BuildOptions, Prepared};
use propel_runtime::heuristic::{Evaluator, Model, Term};
use propel_runtime::mcts::{Graph, Leaf};
use propel_runtime::StateMachine;
use propel_tests::{corpus_dir, root};
use std::sync::Arc;
use std::time::Duration;

/// Tic-tac-toe with an evaluator that loves x in the corner (1 1): with
/// every rollout worth the same, the prior alone decides where visits go.
fn root_visits(with_heuristic: bool) -> Vec<(String, u32)> {
    let game = Arc::new(propel_compiler::load_file(&root().join("games/tictactoe.kif")).unwrap());
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let corner = p.net().bases.iter().position(|b| b.name == "(cell 1 1 x)").expect("a base (cell 1 1 x)") as u32;
    let model = Model {
        intercept: 0.0,
        terms: vec![Term { name: "x in (1 1)".into(), bases: vec![corner], weight: 100.0, correlation: 1.0 }],
        r2: 1.0,
    };
    let mut m = p.propnet();
    let s0 = m.initial_state().unwrap();
    let mut g = Graph::new(&mut m, s0, 10_000, 0.7, 3).unwrap();
    if with_heuristic {
        g.set_heuristic(Some(Arc::new(Evaluator { models: vec![Some(model), None], prior_visits: 20 })));
    }
    let mut path = Vec::new();
    for _ in 0..60 {
        match g.select(&mut m, &mut path).unwrap() {
            Leaf::Known(v) => g.backprop_known(&path, &v),
            Leaf::Rollout(_) => g.backprop(&path, &[0.5, 0.5]),
            Leaf::Expand { .. } => unreachable!("an eager selection computes its child"),
        }
    }
    // Prior visits count in the totals UCB reads, as real ones do.
    g.check_visits().unwrap();
    let stats = g.root_stats(0).unwrap();
    stats.moves.into_iter().map(|mv| m.move_kif(mv)).zip(stats.visits).collect()
}

#[test]
fn prior_visits_steer_the_search() {
    let with = root_visits(true);
    let best = with.iter().max_by_key(|x| x.1).unwrap();
    assert_eq!(best.0, "(mark 1 1)", "{with:?}");
    // Beyond its 20 prior visits, more real visits than any two others.
    let others = with.iter().filter(|x| x.0 != best.0).map(|x| x.1).max().unwrap();
    assert!(best.1 - 20 > 2 * others, "{with:?}");
    // Without it, equal rollouts spread the visits evenly.
    let without = root_visits(false);
    let (lo, hi) = (without.iter().map(|x| x.1).min().unwrap(), without.iter().map(|x| x.1).max().unwrap());
    assert!(hi - lo <= 2, "{without:?}");
}

/// A game, its prepared propnet and the analysis of it within `budget`.
fn analysis_of(path: &std::path::Path, budget: Duration) -> (Arc<propel_compiler::Game>, Prepared, Analysis) {
    let game = Arc::new(propel_compiler::load_file(path).unwrap());
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let a = analyse(p.net(), p.goal_net(), &p.propnet(), budget, 1, true).unwrap();
    (game, p, a)
}

/// A corpus game's analysis ([`analysis_of`]); `None`, said plainly,
/// without the corpus.
fn corpus_analysis(path: &str, budget: Duration) -> Option<(Arc<propel_compiler::Game>, Prepared, Analysis)> {
    let dir = corpus_dir()?;
    Some(analysis_of(&dir.join(path), budget))
}

/// Plays a puzzle's solution on the prover: every move legal, and the
/// game over at goal 100.
fn assert_solution_wins(game: &Arc<propel_compiler::Game>, moves: &[String]) {
    let mut prover = propel_runtime::Prover::new(game.clone()).unwrap();
    let mut s = prover.initial_state().unwrap();
    let mut legal = Vec::new();
    for mv in moves {
        prover.legal_moves(&s, 0, &mut legal).unwrap();
        let m = *legal.iter().find(|&&l| prover.move_kif(l) == *mv).unwrap_or_else(|| panic!("{mv} not legal"));
        s = prover.next_state(&s, &[m]).unwrap();
    }
    assert!(prover.is_terminal(&s).unwrap());
    assert_eq!(prover.goal(&s, 0).unwrap().score(), 100);
}

/// The tower of Hanoi (six discs: 63 moves at best, far beyond depth-first
/// search with a branching factor of 3) is solved breadth first, in the
/// fewest moves.
#[test]
fn hanoi_is_solved_breadth_first_in_63_moves() {
    let (game, _, a) = analysis_of(&root().join("games/hanoi.kif"), Duration::from_secs(5));
    let sol = a.puzzle.as_ref().unwrap_or_else(|| panic!("not solved: {}", a.puzzle_note));
    assert_eq!(sol.moves.len(), 63, "{}", a.puzzle_note);
    assert_solution_wins(&game, &sol.moves);
}

/// On the bundled breakthrough the analysis's table of capturing moves
/// (what capture-first lanes read) holds diagonal moves only, each taking
/// the other side's pawn on the square it moves to, and both sides'.
#[test]
fn capturing_moves_take_the_pawn_on_their_target_square() {
    let (_, p, a) = analysis_of(&root().join("games/breakthrough.kif"), Duration::from_secs(2));
    assert!(a.material.is_some(), "{}", a.material_reason);
    let net = p.net();
    let mut by_role = [0, 0];
    for (i, bases) in &a.captures {
        let input = &net.inputs[*i as usize];
        let role = &net.roles[input.role as usize];
        by_role[input.role as usize] += 1;
        // (move x1 y1 x2 y2)
        let xs: Vec<&str> = input.name.trim_matches(|c| c == '(' || c == ')').split(' ').collect();
        assert_eq!(xs.len(), 5, "{}", input.name);
        assert_ne!(xs[1], xs[3], "a straight move takes nothing: {}", input.name);
        let foe = if role == "white" { "black" } else { "white" };
        let taken: Vec<&str> = bases.iter().map(|&b| net.bases[b as usize].name.as_str()).collect();
        assert_eq!(taken, [format!("(cellholds {} {} {foe})", xs[3], xs[4])], "{}", input.name);
    }
    assert!(by_role.iter().all(|&n| n > 20), "capturing moves by role: {by_role:?}");
}

/// Material is each role's own pieces (those its moves put on the board)
/// where more of them goes with winning; in the same game with the goals
/// reversed (the side that breaks through loses) pieces are a burden and
/// there is no material, so nothing favours captures.
#[test]
fn material_is_a_roles_own_pieces_and_never_a_burden() {
    let (_, _, a) = analysis_of(&root().join("games/breakthrough.kif"), Duration::from_secs(2));
    let m = a.material.as_ref().unwrap_or_else(|| panic!("{}", a.material_reason));
    assert_eq!(m.names, [vec!["(cellholds _ _ white)".to_string()], vec!["(cellholds _ _ black)".to_string()]]);
    let rules = std::fs::read_to_string(root().join("games/breakthrough.kif")).unwrap();
    let reversed = rules
        .replace("(goal ?p 100) (wins ?p)", "(goal ?p 0) (wins ?p)")
        .replace("(goal ?p 0) (role ?p) (not (wins ?p))", "(goal ?p 100) (role ?p) (not (wins ?p))");
    assert_ne!(reversed, rules);
    let game = Arc::new(propel_compiler::load("reversed breakthrough", reversed.as_bytes()).unwrap());
    let p = prepare(&game, &BuildOptions::default()).unwrap();
    let a = analyse(p.net(), p.goal_net(), &p.propnet(), Duration::from_secs(2), 1, true).unwrap();
    assert!(a.material.is_none(), "{}", a.material_reason);
    assert!(a.material_reason.contains("go with losing"), "{}", a.material_reason);
    assert!(a.captures.is_empty(), "no material, no captures: {:?}", a.captures);
}

#[test]
fn analysis_learns_material_in_checkers() {
    let Some((_, _, a)) = corpus_analysis("base/checkersSmall.v1.kif", Duration::from_secs(4)) else { return };
    for (r, r2) in a.roles.iter().zip(&a.heuristic_r2) {
        let r2 = r2.unwrap_or_else(|| panic!("no model for {r} ({} random games)", a.games));
        assert!(r2 > 0.2, "{r}: held-out R² {r2}");
    }
    // What says most is material: a count of one kind of piece anywhere,
    // counting the same for one side as against the other.
    let top = |role: &str| {
        a.heuristics
            .iter()
            .filter(|h| a.roles[h.role] == role)
            .max_by(|x, y| x.correlation.abs().total_cmp(&y.correlation.abs()))
            .unwrap_or_else(|| panic!("no terms for {role}"))
    };
    let (red, black) = (top("red"), top("black"));
    assert!(red.name.starts_with("count (cell _ _ "), "{red:?}");
    assert_eq!(red.name, black.name);
    assert!(red.weight * black.weight < 0.0, "{red:?} {black:?}");
}

/// A puzzle of nine independent button-and-light boards, one of which
/// decides the goal: solved on that board alone, and the line reaches goal
/// 100 on the prover too.
#[test]
fn factored_puzzle_is_solved_and_the_line_checks_out() {
    let Some((game, _, a)) = corpus_analysis("stanford-gamemaster/bestbuttonsandlights.kif", Duration::from_secs(2))
    else {
        return;
    };
    assert_eq!(a.factors.len(), 9, "{:?}", a.factors);
    let sol = a.puzzle.as_ref().unwrap_or_else(|| panic!("not solved: {}", a.puzzle_note));
    assert!(a.puzzle_note.contains("factor"), "{}", a.puzzle_note);
    assert_solution_wins(&game, &sol.moves);
}

/// dualConnect4 (two boards, a move on either): two factors; the factored
/// search finds the immediate win on the normal board.
#[test]
fn factored_search_finds_a_win_on_one_board() {
    let Some((_, p, a)) = corpus_analysis("base/dualConnect4.kif", Duration::from_millis(500)) else { return };
    let factors: Vec<Vec<u32>> = a.factors.iter().map(|f| f.moves.clone()).collect();
    assert_eq!(factors.len(), 2, "{:?}", a.factors);
    let mut m = p.propnet();
    let mut s = m.initial_state().unwrap();
    let mut legal = Vec::new();
    // Red builds three in column 1 of the normal board, black in column 2.
    for (r, mv) in [(0, "1"), (1, "2"), (0, "1"), (1, "2"), (0, "1"), (1, "2")] {
        let mut joint = Vec::new();
        for role in 0..2 {
            m.legal_moves(&s, role, &mut legal).unwrap();
            let want = if role == r { format!("(drop_normal {mv})") } else { "noop".to_string() };
            joint.push(*legal.iter().find(|&&l| m.move_kif(l) == want).unwrap_or_else(|| panic!("{want}")));
        }
        s = m.next_state(&s, &joint).unwrap();
    }
    let cfg = propel_runtime::mcts::Config { factors: factors.clone(), ..Default::default() };
    let mut f = propel_runtime::mcts::Factored::new(m, s, cfg, &factors).unwrap();
    assert_eq!(f.factors(), 2);
    let stats = f.run(std::time::Instant::now() + Duration::from_millis(300)).unwrap();
    // The factors' settings are reported as a single search's are.
    assert_eq!(stats.rollout_policy, "uniform");
    assert_eq!(stats.expand_after, propel_runtime::mcts::EXPAND_AFTER);
    let (mv, value, _) = f.best(0).unwrap();
    assert_eq!(f.machine().move_kif(mv), "(drop_normal 1)");
    assert!(value > 0.9, "{value}");
}
