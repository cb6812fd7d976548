use super::goal_json;
use crate::machines::{with_machine, MachineArgs};
use crate::opts;
use crate::position::PositionArgs;
use anyhow::Result;
use propel_runtime::trace::{trace, TraceEnd, TraceStep};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Random seed: the same seed gives the same game on every machine.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stop after this many steps (lines) if the game has not ended.
    #[arg(long, default_value_t = 10_000, value_parser = opts::count(1, 1_000_000_000), allow_hyphen_values = true)]
    max_steps: usize,
    /// With --from or --state, step 0 is that position (an outside
    /// reasoner replaying the trace must start there too).
    #[command(flatten)]
    position: PositionArgs,
    #[command(flatten)]
    machine: MachineArgs,
}

fn step_json(roles: &[String], s: &TraceStep) -> Value {
    let mut o = Map::new();
    o.insert("step".into(), s.step.into());
    o.insert("state".into(), s.state.clone().into());
    let legal: Map<String, Value> = roles.iter().cloned().zip(s.legal.iter().map(|l| Value::from(l.clone()))).collect();
    o.insert("legal".into(), legal.into());
    o.insert("terminal".into(), s.terminal.into());
    if let Some(goals) = &s.goals {
        let g: Map<String, Value> = roles.iter().cloned().zip(goals.iter().map(goal_json)).collect();
        o.insert("goals".into(), g.into());
    }
    if let Some(joint) = &s.joint {
        let j: Map<String, Value> = roles.iter().cloned().zip(joint.iter().map(|m| Value::from(m.clone()))).collect();
        o.insert("joint".into(), j.into());
    }
    o.into()
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = a.machine.load_game(&a.game)?;
    let game = a.machine.at_position(game, &a.position, &a.game)?;
    let roles = game.role_names();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut write_err = None;
    // The machine goes to stderr: the step lines are a contract (docs/formats.md).
    let end = with_machine!(a.machine, game, |m, chosen| {
        chosen.announce("trace");
        trace(&mut m, a.seed, a.max_steps, &mut |s| {
            if let Err(e) = writeln!(out, "{}", step_json(&roles, s)) {
                write_err.get_or_insert(e);
            }
        })?
    });
    out.flush()?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    match end {
        TraceEnd::Terminal | TraceEnd::StepLimit => Ok(ExitCode::SUCCESS),
        TraceEnd::NoLegalMove { step, role } => {
            eprintln!("error: at step {step} role `{role}` has no legal move, but the state is not terminal");
            Ok(ExitCode::FAILURE)
        }
    }
}
