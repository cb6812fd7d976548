//! `propel compare GAME`: the propnet (interpreted) and the JIT against
//! the prover, on perft to a small depth and on seeded random traces, and
//! the JIT's bit-parallel playouts against a reference. The agreement
//! check of the corpus conformance run (`propel corpus --compare`).

use crate::cmd::compile::write_library;
use crate::machines::{load_aot, BuildArgs};
use crate::opts;
use anyhow::{Context, Result};
use propel_compiler::propnet::Propnet;
use propel_runtime::build::{prepare, BuildOptions, Prepared};
use propel_runtime::lanes::{Lanes, Reference};
use propel_runtime::perft::perft;
use propel_runtime::playout::{playout, PlayoutStats, MAX_PLAYOUT_STEPS};
use propel_runtime::trace::{trace, TraceStep};
use propel_runtime::{NativeMachine, Prover, Rng, StateMachine};
use serde_json::json;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Deepest perft depth compared (less when the tree grows past
    /// `--perft-nodes`; at most 1000).
    #[arg(long, default_value_t = 3, value_parser = opts::count(0, opts::MAX_DEPTH), allow_hyphen_values = true)]
    depth: usize,
    /// Stop deepening perft once a depth has more nodes than this.
    #[arg(long, default_value_t = 5000, value_parser = opts::count64(1, u64::MAX), allow_hyphen_values = true)]
    perft_nodes: u64,
    /// Number of seeded traces compared (seeds 1..=N; at most 100,000).
    #[arg(long, default_value_t = 3, value_parser = opts::count64(0, 100_000), allow_hyphen_values = true)]
    traces: u64,
    /// Steps per trace at most.
    #[arg(long, default_value_t = 200, value_parser = opts::count(1, 1_000_000_000), allow_hyphen_values = true)]
    max_steps: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Also compare the JIT machine.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    jit: bool,
    /// Also compare a library from `propel compile` (linked with `cc`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    aot: bool,
    /// What is compared with the prover: `propnet` (the network's machines:
    /// interpreter, JIT, library) or `topdown` (the top-down reasoner).
    #[arg(long, default_value = "propnet", value_parser = ["propnet", "topdown"])]
    against: String,
    #[command(flatten)]
    build: BuildArgs,
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
    let text = std::fs::read(&a.game).with_context(|| format!("reading {file}"))?;
    let game = a.build.load_game(&a.game)?;
    let mut prover = Prover::new(game.clone())?;
    if a.against == "topdown" {
        return compare_topdown(&mut prover, &game, &a, &out);
    }
    let t = Instant::now();
    // Grounded once: the propnet, the JIT and the library share the network.
    // A game whose goal or terminal logic is over the budget is compared
    // with those outputs as lookups on the rules.
    let opts = BuildOptions { lookups: true, ..a.build.build_options()? };
    let prepared = match prepare(&game, &opts) {
        Ok(p) => p,
        Err(e) => {
            // Over a grounding budget, or rules the propnet refuses (a goal
            // value out of range in the relaxed model): the prover plays it.
            let verdict = match e {
                propel_compiler::pipeline::CompileError::Ground(_) => "over-budget",
                propel_compiler::pipeline::CompileError::Propnet(_)
                | propel_compiler::pipeline::CompileError::Questions(_) => "no-propnet",
            };
            out(verdict, format!("{e:#}"), json!({"build_seconds": t.elapsed().as_secs_f64()}));
            return Ok(ExitCode::SUCCESS);
        }
    };
    let mut extra = json!({
        "build_seconds": t.elapsed().as_secs_f64(),
        "components": prepared.net().len(),
        "split": prepared.split_report().map(|s| s.kept).unwrap_or(false),
        "native_split": prepared.lower_machine().split.is_some(),
        "demand": prepared.demand(),
    });
    // The prover's answers, computed once for every machine.
    let reference = ProverAnswers::new(&mut prover, &a)?;
    let depth_done = reference.depth();
    let lookups = prepared.lookups();
    if lookups.any() {
        return compare_lookups(&reference, &prepared, &prover, &game.name, &a, extra, &out);
    }
    let mut found = disagreement(&reference, &mut prepared.propnet(), &a, "propnet")?;
    let mut machines = vec!["propnet"];
    // Networks over the native size limit run on the interpreter only: no
    // native machine to compare.
    let too_large = prepared.lower_machine().too_large();
    let mut lanes = "";
    if found.is_none() && a.jit && too_large.is_none() {
        found = match prepared.jit(&game.name) {
            Ok((mut jit, code)) => {
                if jit.has_lanes() {
                    lanes = " (lane playouts too)";
                }
                extra["codegen_seconds"] = json!(code.seconds);
                extra["updates"] = json!(code.updates);
                native_disagreement(&reference, &mut jit, &prepared, &a, "jit")?
            }
            Err(e) => Some(format!("the propnet builds but the JIT does not: {e:#}")),
        };
        machines.push("jit");
    }
    // A library needs a C compiler to link it; without one it is skipped.
    let cc = Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success());
    if found.is_none() && a.aot && too_large.is_none() && cc {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("propel-compare-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let (lib, header) = (dir.join("game.so"), dir.join("game.h"));
        let loaded = write_library(&prepared, &text, &file, &lib, &header, "cc").and_then(|_| load_aot(&lib, &game));
        // A loaded library stays mapped once its file is gone.
        let _ = std::fs::remove_dir_all(&dir);
        found = match loaded {
            Ok(mut aot) => native_disagreement(&reference, &mut aot, &prepared, &a, "aot")?,
            Err(e) => Some(format!("the propnet builds but the library does not: {e:#}")),
        };
        machines.push("aot");
    }
    if let Some(d) = found {
        out("DISAGREE", d, extra);
        return Ok(ExitCode::FAILURE);
    }
    let native = match too_large {
        Some(e) if a.jit || a.aot => format!("; no native code: {e}"),
        _ if a.aot && !cc => "; no library: no C compiler (`cc`) to link it".to_string(),
        _ => String::new(),
    };
    let detail = format!("{}{lanes}: perft to depth {depth_done}, {} traces{native}", machines.join(", "), a.traces);
    out("agree", detail, extra);
    Ok(ExitCode::SUCCESS)
}

/// The top-down reasoner against the prover: two reasoners written
/// independently, on the same perft and traces. An evaluation over its
/// work limit is `gave-up`, not a disagreement.
fn compare_topdown(
    prover: &mut Prover,
    game: &std::sync::Arc<propel_compiler::Game>,
    a: &Args,
    out: &dyn Fn(&str, String, serde_json::Value),
) -> Result<ExitCode> {
    let t = Instant::now();
    let reference = ProverAnswers::new(prover, a)?;
    let found = propel_runtime::topdown::TopDownMachine::new(game.clone())
        .map_err(anyhow::Error::from)
        .and_then(|mut m| disagreement(&reference, &mut m, a, "topdown"));
    let extra = json!({"seconds": t.elapsed().as_secs_f64()});
    match found {
        Ok(None) => {
            let detail = format!("topdown: perft to depth {}, {} traces", reference.depth(), a.traces);
            out("agree", detail, extra);
            Ok(ExitCode::SUCCESS)
        }
        Ok(Some(d)) => {
            out("DISAGREE", d, extra);
            Ok(ExitCode::FAILURE)
        }
        Err(e) => match e.downcast_ref::<propel_runtime::MachineError>() {
            Some(propel_runtime::MachineError::Query(q)) => {
                out("gave-up", format!("topdown: {q}"), extra);
                Ok(ExitCode::SUCCESS)
            }
            _ => Err(e),
        },
    }
}

/// The machines of a network built without its goal or terminal logic,
/// with those answered by lookups on the rules (a clone of `prover`): the
/// interpreter and the JIT one state at a time. The JIT's lanes and a
/// library read the network's own outputs, so neither is made. A network
/// with query components runs on the interpreter only (native code does
/// not answer questions).
fn compare_lookups(
    reference: &ProverAnswers,
    prepared: &Prepared,
    prover: &Prover,
    name: &str,
    a: &Args,
    mut extra: serde_json::Value,
    out: &dyn Fn(&str, String, serde_json::Value),
) -> Result<ExitCode> {
    let lookups = prepared.lookups();
    extra["lookups"] = json!(lookups.describe());
    let mut found = disagreement(reference, &mut prepared.lookup_machine(prover.clone())?, a, "propnet")?;
    let mut machines = vec!["propnet"];
    if found.is_none() && a.jit && !lookups.questions && prepared.lower_machine().too_large().is_none() {
        found = match prepared.jit(name) {
            Ok((jit, _)) => disagreement(reference, &mut prepared.with_lookups(jit, prover.clone())?, a, "jit")?,
            Err(e) => Some(format!("the propnet builds but the JIT does not: {e:#}")),
        };
        machines.push("jit");
    }
    if let Some(d) = found {
        out("DISAGREE", d, extra);
        return Ok(ExitCode::FAILURE);
    }
    let left = match lookups.questions {
        true => format!("{} query components answered top-down", prepared.net().queries.len()),
        false => format!("{} as lookups on the rules", lookups.describe()),
    };
    let detail = format!("{}, {left}: perft to depth {}, {} traces", machines.join(", "), reference.depth(), a.traces);
    out("agree", detail, extra);
    Ok(ExitCode::SUCCESS)
}

/// Where a native machine first disagrees: with the prover, or (its
/// lane playouts) with the reference driver and the standard loop.
fn native_disagreement(
    reference: &ProverAnswers,
    m: &mut NativeMachine,
    prepared: &Prepared,
    a: &Args,
    name: &str,
) -> Result<Option<String>> {
    if let Some(d) = disagreement(reference, m, a, name)? {
        return Ok(Some(d));
    }
    Ok(lanes_disagreement(m, prepared.lane_net(), prepared.native_goal_net())?.map(|d| format!("{name} {d}")))
}

/// The prover's perft and traces, against which every machine is compared.
struct ProverAnswers {
    perft: propel_runtime::perft::Perft,
    traces: Vec<Vec<TraceStep>>,
}

impl ProverAnswers {
    /// Perft deepened while the next depth is expected to stay under
    /// `--perft-nodes`, and `--traces` seeded traces.
    fn new(prover: &mut Prover, a: &Args) -> Result<ProverAnswers> {
        let mut p = perft(prover, 0, &mut |_| {})?;
        let mut prev = 1u64;
        for d in 1..=a.depth {
            let now = p.lines[d - 1].nodes.max(1);
            // Depth 1 has as many nodes as the root has joint moves (a
            // million millions in six-player two-thirds); deeper, the last
            // growth is assumed to go on.
            let expected =
                if d == 1 { root_joint_moves(prover)? } else { now.saturating_mul(now.div_ceil(prev).max(1)) };
            if expected > a.perft_nodes {
                break;
            }
            prev = now;
            p = perft(prover, d, &mut |_| {})?;
        }
        let traces = (1..=a.traces).map(|seed| record(prover, seed, a.max_steps)).collect::<Result<_>>()?;
        Ok(ProverAnswers { perft: p, traces })
    }

    fn depth(&self) -> usize {
        self.perft.lines.len() - 1
    }
}

/// How many joint moves the initial state has (0 when it is terminal).
fn root_joint_moves(prover: &mut Prover) -> Result<u64> {
    let root = prover.initial_state()?;
    if prover.is_terminal(&root)? {
        return Ok(0);
    }
    let mut moves = Vec::new();
    let mut joint = 1u64;
    for r in 0..prover.roles().len() {
        prover.legal_moves(&root, r, &mut moves)?;
        joint = joint.saturating_mul(moves.len() as u64);
    }
    Ok(joint)
}

/// The JIT's bit-parallel playouts: exactly those of the same driver over
/// the reference evaluator (networks up to [`EXACT_LANES_MAX`] components,
/// as the reference is slow), and the same mean length as the standard
/// playout loop within 5 standard errors.
fn lanes_disagreement(jit: &mut NativeMachine, net: &Propnet, goal_net: Option<&Propnet>) -> Result<Option<String>> {
    let code = jit.code().clone();
    let Some(plan) = code.lanes() else { return Ok(None) };
    let s0 = jit.initial_state()?;
    let roles = jit.roles().len();
    let max = MAX_PLAYOUT_STEPS as u32;
    const N: usize = 256;
    let (mut goals, mut lengths) = (Vec::new(), Vec::new());
    let fast = jit.lane_playouts(&s0, N, 1, max, &mut goals, &mut lengths);
    let mut standard = Vec::with_capacity(N);
    let mut rng = Rng::new(1);
    for _ in 0..N {
        match playout(jit, &mut rng, &mut PlayoutStats::default()) {
            Ok(n) => standard.push(n as f64),
            // A game without end or without moves: the lanes must say so too.
            Err(_) if fast.is_err() => return Ok(None),
            Err(e) => {
                // The lanes may just not have met the state yet (3pttc: a
                // rare non-terminal state without moves): more batches.
                for seed in 2..=MORE_TRIES as u64 + 1 {
                    if jit.lane_playouts(&s0, N, seed, max, &mut goals, &mut lengths).is_err() {
                        return Ok(None);
                    }
                }
                return Ok(Some(format!("lanes: playouts end, standard playouts fail ({e})")));
            }
        }
    }
    if let Err(e) = fast {
        // The same the other way: more standard playouts.
        for _ in 0..MORE_TRIES * N {
            if playout(jit, &mut rng, &mut PlayoutStats::default()).is_err() {
                return Ok(None);
            }
        }
        return Ok(Some(format!("lanes: {e}; standard playouts end")));
    }
    if net.len() <= EXACT_LANES_MAX {
        let (mut g2, mut l2) = (vec![0; N * roles], vec![0; N]);
        let mut reference = Reference::new(net, goal_net, plan);
        let r =
            Lanes::new(plan).run(plan, &mut reference, code.role_range(), |_| s0.bits(), N, 1, max, &mut g2, &mut l2);
        if r.is_err() || g2 != goals || l2 != lengths {
            return Ok(Some("lanes: playouts differ from the reference evaluator's".into()));
        }
    }
    let fast: Vec<f64> = lengths.iter().map(|&n| n as f64).collect();
    let moments = |xs: &[f64]| {
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        (mean, xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64)
    };
    let ((mf, vf), (ms, vs)) = (moments(&fast), moments(&standard));
    if (mf - ms).abs() > 5.0 * ((vf + vs) / N as f64).sqrt() + 1e-9 {
        return Ok(Some(format!("lanes: mean playout length {mf:.2}, standard playouts {ms:.2}")));
    }
    Ok(None)
}

const EXACT_LANES_MAX: usize = 20_000;

/// Where one kind of playout fails (no end, or no legal move in a
/// non-terminal state) and the other's first batch did not, the other
/// gets this many batches more before the failure counts as a
/// disagreement: a rare state is met by one and not yet by the other.
const MORE_TRIES: usize = 64;

/// Where machine `m` first disagrees with the prover, if it does.
fn disagreement<M: StateMachine>(reference: &ProverAnswers, m: &mut M, a: &Args, name: &str) -> Result<Option<String>> {
    let depth = reference.depth();
    let p = &reference.perft;
    let n = perft(m, depth, &mut |_| {})?;
    if let Some(d) = (0..=depth).find(|&d| p.lines[d] != n.lines[d]) {
        let (lp, ln) = (p.lines[d], n.lines[d]);
        return Ok(Some(format!(
            "{name}: perft depth {d}: prover {} nodes {} terminal, {name} {} nodes {} terminal",
            lp.nodes, lp.terminal, ln.nodes, ln.terminal
        )));
    }
    for (seed, tp) in (1..=a.traces).zip(&reference.traces) {
        let tn = record(m, seed, a.max_steps)?;
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
            return Ok(Some(format!("{name}: trace seed {seed}, step {}: {what} differs", x.step)));
        }
        if tp.len() != tn.len() {
            return Ok(Some(format!("{name}: trace seed {seed}: lengths {} and {}", tp.len(), tn.len())));
        }
    }
    Ok(None)
}
