//! `propel analyse GAME [--seconds T] [--json] [--from MOVES | --state
//! FACTS]`: what meta-gaming finds before the first move (see
//! docs/analysis.md). The analysis runs on the interpreted propnet (it
//! reads the network itself), so there is no `--machine`.

use crate::machines::BuildArgs;
use crate::opts;
use crate::position::PositionArgs;
use anyhow::Result;
use propel_runtime::analysis::analyse;
use propel_runtime::build::prepare;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Time for the analysis after the propnet is built (seconds, at
    /// least 0.1, at most 1e6).
    #[arg(long, default_value_t = 5.0, value_parser = opts::seconds(), allow_hyphen_values = true)]
    seconds: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Do not solve puzzles factor by factor (to compare the nodes needed).
    #[arg(long)]
    no_factors: bool,
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    build: BuildArgs,
}

/// The machine the analysis runs on, as the output states it.
const MACHINE: &str = "propnet";

pub fn run(a: Args) -> Result<ExitCode> {
    let game = a.build.load_game(&a.game)?;
    let game = a.position.apply(game, &a.game)?;
    let opts = a.build.build_options()?;
    let p = prepare(&game, &opts).map_err(|e| anyhow::anyhow!("the analysis needs a propnet: {e}"))?;
    let an = analyse(
        p.net(),
        p.goal_net(),
        &p.propnet(),
        Duration::from_secs_f64(a.seconds.max(0.1)),
        a.seed,
        !a.no_factors,
    )?;
    let by_role =
        |v: &[f64]| -> Map<String, Value> { an.roles.iter().cloned().zip(v.iter().map(|&x| json!(x))).collect() };
    let mut out = json!({
        "game": a.game.display().to_string(),
        "machine": MACHINE,
        "seconds": an.seconds,
        "games": an.games,
        "avg_length": an.avg_length,
        "length_histogram": an.length_histogram.iter().map(|&(l, n)| json!([l, n])).collect::<Vec<_>>(),
        "branching": by_role(&an.branching),
        "simultaneous": an.simultaneous,
        "playouts_per_s": an.playouts_per_s,
        "goal_distribution": an.roles.iter().zip(&an.goal_distribution)
            .map(|(r, d)| (r.clone(), json!(d.iter().map(|&(g, n)| json!([g, n])).collect::<Vec<_>>())))
            .collect::<Map<String, Value>>(),
        "exploration": an.exploration,
        "exploration_reason": an.exploration_reason,
        "greedy_rollouts": an.greedy_rollouts,
        "greedy_reason": an.greedy_reason,
        "decisive": an.decisive,
        "decisive_reason": an.decisive_reason,
        "rollouts_per_request": an.rollouts_per_request,
        "missed_wins": an.missed_wins,
        "terminating_moves": an.terminating_moves,
        "winning_moves": an.winning.len(),
        "winning_sample": an.winning_names,
        "material": an.material.as_ref().map(|m| json!({"pieces": m.names, "weight": m.weight})),
        "material_reason": an.material_reason,
        "greedy_check_cost": an.greedy_check_cost,
        "win_check_cost": an.win_check_cost,
        "expand_terminal": an.expand_terminal,
        "expand_terminal_reason": an.expand_terminal_reason,
        "heuristic_candidates": an.candidates,
        "heuristics": an.heuristics.iter()
            .map(|h| json!({"name": h.name, "role": an.roles[h.role], "weight": h.weight, "correlation": h.correlation}))
            .collect::<Vec<_>>(),
        "heuristic_r2": an.roles.iter().zip(&an.heuristic_r2)
            .map(|(r, x)| (r.clone(), json!(x)))
            .collect::<Map<String, Value>>(),
        "prior_visits": an.prior_visits,
        "calibration_states": an.calibration_states,
        "heuristics_used": an.evaluator.is_some(),
        "mobility_correlation": an.roles.iter().zip(&an.mobility)
            .map(|(r, c)| (r.clone(), Value::Object(by_role(c))))
            .collect::<Map<String, Value>>(),
        "latches": {"positive": an.latches_positive, "negative": an.latches_negative, "constant": an.constant_bases},
        "goal_bounds": an.roles.iter().zip(&an.goal_bounds)
            .map(|(r, &(lo, hi))| (r.clone(), json!([lo, hi])))
            .collect::<Map<String, Value>>(),
        "factors": an.factors.iter()
            .map(|f| json!({"bases": f.bases, "inputs": f.inputs, "sample_moves": f.sample_moves}))
            .collect::<Vec<_>>(),
        "puzzle": an.puzzle.as_ref().map(|s| json!({"goal": s.goal, "moves": s.moves})),
        "puzzle_note": an.puzzle_note,
        "puzzle_nodes": an.puzzle_nodes,
    });
    // Beside the macro: one more key is past its recursion limit.
    out["capturing_moves"] = json!(an.captures.len());
    out["capturing_sample"] = json!(an.capture_names);
    if a.json {
        println!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    println!("machine: {MACHINE} (the analysis reads the interpreted network)");
    println!("{} random games in {:.1} s ({:.0} playouts/s)", an.games, an.seconds, an.playouts_per_s);
    println!(
        "length: mean {:.1}, from {} to {}",
        an.avg_length,
        an.length_histogram.first().map_or(0, |x| x.0),
        an.length_histogram.last().map_or(0, |x| x.0)
    );
    for (r, b) in an.roles.iter().zip(&an.branching) {
        println!("branching of {r}: {b:.1}");
    }
    println!("simultaneous moves: {}", an.simultaneous);
    for (r, d) in an.roles.iter().zip(&an.goal_distribution) {
        let parts: Vec<String> = d.iter().map(|(g, n)| format!("{g}: {n}")).collect();
        println!("goals of {r}: {}", parts.join(", "));
    }
    println!("exploration: {:.2} ({})", an.exploration, an.exploration_reason);
    println!("greedy rollouts: {} ({})", an.greedy_rollouts, an.greedy_reason);
    println!("decisive lanes: {} ({})", an.decisive, an.decisive_reason);
    println!("winning moves (win-first lanes): {} (e.g. {})", an.winning.len(), an.winning_names.join(", "));
    println!("capturing moves (capture-first lanes): {} (e.g. {})", an.captures.len(), an.capture_names.join(", "));
    println!(
        "material: {} ({})",
        if an.material.is_some() { "new nodes start at their material relative to the root" } else { "none" },
        an.material_reason
    );
    println!("rollouts per request (start): {}", an.rollouts_per_request);
    println!("terminal children on expansion: {} ({})", an.expand_terminal, an.expand_terminal_reason);
    println!("heuristic candidates: {} per role", an.candidates - an.roles.len());
    for (r, r2) in an.roles.iter().zip(&an.heuristic_r2) {
        match r2 {
            Some(r2) => println!("model for {r}: explains {:.1}% of held-out outcomes", 100.0 * r2),
            None => println!("model for {r}: none (no candidate predicted the outcome)"),
        }
        for h in an.heuristics.iter().filter(|h| &an.roles[h.role] == r) {
            println!("  {:+7.2} goal points per {}  (correlation {:+.2})", h.weight, h.name, h.correlation);
        }
    }
    if an.heuristic_r2.iter().any(Option::is_some) {
        println!(
            "a prediction is worth {} rollouts (measured on {} held-out states, scaled by the share explained): {}",
            an.prior_visits,
            an.calibration_states,
            if an.evaluator.is_some() { "new nodes start with that many visits at it" } else { "not used in search" }
        );
    }
    for (r, c) in an.roles.iter().zip(&an.mobility) {
        let parts: Vec<String> = an.roles.iter().zip(c).map(|(o, x)| format!("{x:+.2} with {o}'s goal")).collect();
        println!("mobility of {r}: {} (reported only)", parts.join(", "));
    }
    println!(
        "latches: {} once-true, {} once-false, {} constant bases",
        an.latches_positive.len(),
        an.latches_negative.len(),
        an.constant_bases
    );
    for (r, (lo, hi)) in an.roles.iter().zip(&an.goal_bounds) {
        println!("goal bounds of {r}: {lo}..{hi}");
    }
    if an.factors.is_empty() {
        println!("factors: none (one game)");
    } else {
        for f in &an.factors {
            println!("factor: {} bases, {} moves (e.g. {})", f.bases, f.inputs, f.sample_moves.join(", "));
        }
    }
    if an.roles.len() == 1 {
        match &an.puzzle {
            Some(s) => println!(
                "puzzle: {} ({} moves: {}; {} states expanded)",
                an.puzzle_note,
                s.moves.len(),
                s.moves.join(" "),
                an.puzzle_nodes
            ),
            None => println!("puzzle: {} ({} states expanded)", an.puzzle_note, an.puzzle_nodes),
        }
    }
    Ok(ExitCode::SUCCESS)
}
