//! `propel compare GAME`: the propnet against the prover, on perft to a
//! small depth and on seeded random traces. The agreement check of the
//! corpus conformance run (`propel corpus --compare propnet`).

use crate::machines::{load_game, MachineArgs, MachineKind};
use anyhow::Result;
use propel_runtime::perft::perft;
use propel_runtime::trace::{trace, TraceStep};
use propel_runtime::{Prover, StateMachine};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Deepest perft depth compared (less when the tree grows past `--perft-nodes`).
    #[arg(long, default_value_t = 3)]
    depth: usize,
    /// Stop deepening perft once a depth has more nodes than this.
    #[arg(long, default_value_t = 5000)]
    perft_nodes: u64,
    /// Number of seeded traces compared (seeds 1..=N).
    #[arg(long, default_value_t = 3)]
    traces: u64,
    /// Steps per trace at most.
    #[arg(long, default_value_t = 200)]
    max_steps: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    machine: MachineArgs,
}

fn record<M: StateMachine>(m: &mut M, seed: u64, max_steps: usize) -> Result<Vec<TraceStep>> {
    let mut v = Vec::new();
    trace(m, seed, max_steps, &mut |s| v.push(s.clone()))?;
    Ok(v)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let file = a.game.display().to_string();
    let out = |verdict: &str, detail: String, extra: serde_json::Value| {
        if a.json {
            let mut o = json!({"file": file, "verdict": verdict, "detail": detail});
            if let (Some(o), Some(e)) = (o.as_object_mut(), extra.as_object()) {
                o.extend(e.clone());
            }
            println!("{o}");
        } else {
            println!("{file}: {verdict}{}{}", if detail.is_empty() { "" } else { ": " }, detail);
        }
    };
    let game = load_game(&a.game)?;
    let mut prover = Prover::new(game.clone())?;
    let t = Instant::now();
    let args = MachineArgs { machine: MachineKind::Propnet, ..a.machine.clone() };
    let built = match args.build(&game) {
        Ok(b) => b,
        Err(e) => {
            out("over-budget", format!("{e:#}"), json!({"build_seconds": t.elapsed().as_secs_f64()}));
            return Ok(ExitCode::SUCCESS);
        }
    };
    let build_seconds = t.elapsed().as_secs_f64();
    let extra = json!({
        "build_seconds": build_seconds,
        "components": built.net.len(),
        "split": built.split.as_ref().map(|s| s.kept).unwrap_or(false),
        "demand": built.demand,
    });
    let mut net = built.machine;
    // Perft, deepening while the tree stays small.
    let mut depth_done = 0;
    for d in 0..=a.depth {
        let p = perft(&mut prover, d, &mut |_| {})?;
        let n = perft(&mut net, d, &mut |_| {})?;
        if p != n {
            let (lp, ln) = (p.lines[d], n.lines[d]);
            let detail = format!(
                "perft depth {d}: prover {} nodes {} terminal, propnet {} nodes {} terminal",
                lp.nodes, lp.terminal, ln.nodes, ln.terminal
            );
            out("DISAGREE", detail, extra);
            return Ok(ExitCode::FAILURE);
        }
        depth_done = d;
        // Stop before a depth expected to pass the limit.
        let now = p.lines[d].nodes.max(1);
        let before = if d > 0 { p.lines[d - 1].nodes.max(1) } else { 1 };
        let predicted = now.saturating_mul(now.div_ceil(before).max(1));
        if predicted > a.perft_nodes {
            break;
        }
    }
    for seed in 1..=a.traces {
        let tp = record(&mut prover, seed, a.max_steps)?;
        let tn = record(&mut net, seed, a.max_steps)?;
        if let Some((x, y)) = tp.iter().zip(&tn).find(|(x, y)| x != y) {
            let what = if x.state != y.state {
                "state"
            } else if x.legal != y.legal {
                "legal moves"
            } else if x.terminal != y.terminal {
                "terminal"
            } else if x.goals != y.goals {
                "goals"
            } else {
                "joint move"
            };
            out("DISAGREE", format!("trace seed {seed}, step {}: {what} differs", x.step), extra);
            return Ok(ExitCode::FAILURE);
        }
        if tp.len() != tn.len() {
            out("DISAGREE", format!("trace seed {seed}: lengths {} and {}", tp.len(), tn.len()), extra);
            return Ok(ExitCode::FAILURE);
        }
    }
    out("agree", format!("perft to depth {depth_done}, {} traces", a.traces), extra);
    Ok(ExitCode::SUCCESS)
}
