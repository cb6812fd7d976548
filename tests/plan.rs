//! The build plan follows from the rules and counted work alone: two
//! builds of every bundled game plan alike, and the plan says what the
//! machines then do (a split where the interpreter splits, lane-parallel
//! search where the code has lanes).

use propel_runtime::build::prepare;
use propel_runtime::plan::{Plan, Rollouts};
use propel_tests::bundled_games;
use std::sync::Arc;

#[test]
fn two_builds_plan_alike_and_the_machines_follow_the_plan() {
    for g in bundled_games() {
        let game = Arc::new(propel_compiler::load_file(&g).unwrap_or_else(|e| panic!("{e}")));
        let p = prepare(&game, &Default::default()).unwrap_or_else(|e| panic!("{}: {e}", g.display()));
        let plan = Plan::of(&p);
        let again = Plan::of(&prepare(&game, &Default::default()).unwrap());
        assert_eq!(plan, again, "{}", g.display());
        assert_eq!(plan.to_string(), again.to_string());
        let split = plan.split.as_ref().is_some_and(|s| s.interpreter);
        assert_eq!(p.propnet().split_base().is_some(), split, "{}: {plan}", g.display());
        let (jit, _) = p.jit(&game.name).unwrap();
        assert_eq!(jit.has_lanes(), plan.rollouts == Rollouts::LaneParallel, "{}: {plan}", g.display());
    }
}
