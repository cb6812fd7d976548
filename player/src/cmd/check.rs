use anyhow::Result;
use propel_compiler::eval::EvalError;
use propel_compiler::pipeline::CompileError;
use propel_compiler::propnet::PropnetError;
use propel_runtime::{MachineError, Prover, StateMachine};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// Print one JSON object (used by `propel corpus`).
    #[arg(long)]
    json: bool,
    /// Also build the propnet: component counts by kind after each pass,
    /// and the time each took.
    #[arg(long)]
    propnet: bool,
    /// With --propnet: the build plan, every decision about the machines
    /// and the search, with why (the same on every run).
    #[arg(long, requires = "propnet")]
    plan: bool,
    /// `aot:FILE`: also check that library (it loads for this game and
    /// agrees with the prover on the initial state). No other machine:
    /// validation always runs on the prover.
    #[arg(long, value_name = "aot:FILE")]
    machine: Option<crate::machines::MachineKind>,
    #[command(flatten)]
    build: crate::machines::BuildArgs,
}

/// What `check` found out about a game, beyond validation: the prover
/// derives the initial state and the legal moves in it.
struct Smoke {
    facts: usize,
    legal: Vec<usize>,
    terminal: bool,
    /// Join steps the prover took to derive the initial state.
    steps: u64,
}

/// Join steps the prover may take to derive a game's static facts and
/// initial state (all its rewrites together). A count of work, not a
/// clock, so that the verdict is the same on a busy machine as on a quiet
/// one. The most any valid corpus game takes is 12.7M (base/amazonsTorus;
/// base/chess 11.9M, 2.0 s of CPU time), so this leaves a factor of four.
pub const CHECK_STEPS: u64 = 50_000_000;

/// A clock for what a step count cannot bound (steps that build deep
/// terms in a large pool are slow: laikLee_hex's take 1.6 µs each, chess's
/// 0.17); running out of it is "gave up", never "invalid".
const CHECK_SECONDS: u64 = 100;

/// Why `check` did not call a game valid.
struct NotValid {
    /// `rejected` (the rules are wrong) or `gave-up` (a limit of ours ran
    /// out first: the game may well be valid).
    verdict: &'static str,
    category: &'static str,
    message: String,
}

/// Exit status of `check` when it gave up (a limit ran out): neither valid
/// (0) nor invalid (1).
pub const GAVE_UP_EXIT: u8 = 3;

fn smoke(game: std::sync::Arc<propel_compiler::Game>) -> Result<Smoke, NotValid> {
    let eval_err = |e: MachineError| {
        let (verdict, category) = match &e {
            MachineError::Eval(EvalError::Timeout { .. }) => ("gave-up", "time"),
            MachineError::Eval(EvalError::TooMuchWork { .. }) => ("gave-up", "work"),
            MachineError::Eval(
                EvalError::TooManyFacts { .. }
                | EvalError::TooManyRows { .. }
                | EvalError::TooManyDerivations { .. }
                | EvalError::TermTooDeep { .. },
            ) => ("gave-up", "too-large"),
            _ => ("rejected", "broken"),
        };
        NotValid { verdict, category, message: e.to_string() }
    };
    // A misspelt `legal` shows first as a role without moves: name it.
    let legal_hint = game
        .warnings
        .iter()
        .find(|w| w.contains("did you mean `legal`"))
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(CHECK_SECONDS);
    let mut p = Prover::with_work_limit(game, 5_000_000, CHECK_STEPS, propel_compiler::Deadline::at(deadline))
        .map_err(eval_err)?;
    let s = p.initial_state().map_err(eval_err)?;
    let terminal = p.is_terminal(&s).map_err(eval_err)?;
    let mut legal = Vec::new();
    let mut moves = Vec::new();
    for r in 0..p.roles().len() {
        p.legal_moves(&s, r, &mut moves).map_err(eval_err)?;
        if moves.is_empty() && !terminal {
            let message = format!("role `{}` has no legal move in the initial state{legal_hint}", p.roles()[r]);
            return Err(NotValid { verdict: "rejected", category: "broken", message });
        }
        legal.push(moves.len());
    }
    Ok(Smoke { facts: p.state_kif(&s).len(), legal, terminal, steps: p.build_steps() })
}

pub fn run(a: Args) -> Result<ExitCode> {
    let file = a.game.display().to_string();
    let refuse = |n: NotValid, roles: usize| {
        if a.json {
            println!(
                "{}",
                json!({"file": file, "verdict": n.verdict, "category": n.category, "roles": roles, "error": n.message})
            );
        } else {
            if n.verdict == "gave-up" {
                eprintln!("gave up (the game may be valid; a limit of Propel's ran out):");
            }
            eprintln!("{}", n.message);
        }
        Ok(if n.verdict == "gave-up" { ExitCode::from(GAVE_UP_EXIT) } else { ExitCode::FAILURE })
    };
    // Refused before reading: the reader's memory grows with the input.
    if let Err(e) = crate::machines::check_file_size(&a.game, a.build.max_file_mb) {
        let message = format!("{e:#}");
        return refuse(NotValid { verdict: "gave-up", category: "too-large", message }, 0);
    }
    let game = match propel_compiler::load_file(&a.game) {
        Ok(g) => std::sync::Arc::new(g),
        Err(e) => {
            // Too many alternatives after expanding `or` is a limit of
            // ours, not a fault of the rules.
            let verdict = if e.kind.category() == "too-large" { "gave-up" } else { "rejected" };
            return refuse(NotValid { verdict, category: e.kind.category(), message: e.to_string() }, 0);
        }
    };
    let roles = game.role_names();
    let smoke = match smoke(game.clone()) {
        Ok(s) => s,
        Err(n) => {
            let message = format!("{file}: {}", n.message);
            return refuse(NotValid { message, ..n }, roles.len());
        }
    };
    // `--machine aot:FILE`: the library is checked against this game.
    let library = match &a.machine {
        Some(crate::machines::MachineKind::Aot(path)) => match check_library(path, &game, &smoke) {
            Ok(what) => Some(what),
            Err(e) => {
                let message = format!("{e:#}");
                return refuse(NotValid { verdict: "rejected", category: "library", message }, roles.len());
            }
        },
        Some(other) => anyhow::bail!(
            "check takes --machine aot:FILE only (to check a library); validation runs on the prover, not `{}`",
            other.name()
        ),
        None => None,
    };
    if a.json {
        println!(
            "{}",
            json!({
                "file": file, "verdict": "valid", "category": "", "roles": roles.len(), "error": "",
                "role_names": roles, "rules": game.source_rules, "clauses": game.clauses.len(),
                "warnings": game.warnings, "steps": smoke.steps,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    for w in &game.warnings {
        eprintln!("warning: {w}");
    }
    println!("{file}: valid");
    println!("roles:    {}", roles.join(" "));
    println!(
        "rules:    {} in the file, {} clauses after expanding `or`, {} relations, {} strata",
        game.source_rules,
        game.clauses.len(),
        game.relations.len(),
        game.strata.len()
    );
    let legal: Vec<String> = roles.iter().zip(&smoke.legal).map(|(r, n)| format!("{r} {n}")).collect();
    println!(
        "initial:  {} facts, {}legal moves: {}",
        smoke.facts,
        if smoke.terminal { "terminal, " } else { "" },
        legal.join(", ")
    );
    if let Some(what) = library {
        println!("library:  {what}");
    }
    if a.propnet {
        let t = std::time::Instant::now();
        let opts = propel_runtime::build::BuildOptions { lookups: true, ..a.build.build_options()? };
        match propel_runtime::build::prepare(&game, &opts) {
            Ok(prepared) => print_propnet(&a, &prepared)?,
            Err(e) => {
                // A budget that ran out says nothing against the game.
                let gave_up =
                    matches!(e, CompileError::Ground(_) | CompileError::Propnet(PropnetError::Timeout { .. }));
                let what = if gave_up { "gave up" } else { "refused" };
                eprintln!("propnet: {what} after {:.1} s: {e}", t.elapsed().as_secs_f64());
                return Ok(if gave_up { ExitCode::from(GAVE_UP_EXIT) } else { ExitCode::FAILURE });
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads a machine library for `game` (refused when damaged, foreign, of
/// another format or built from another version of the game) and checks
/// it against the prover on the initial state: roles, terminal, the number
/// of legal moves of each role.
fn check_library(
    path: &std::path::Path,
    game: &std::sync::Arc<propel_compiler::Game>,
    smoke: &Smoke,
) -> Result<String> {
    let mut m = crate::machines::load_aot(path, game)?;
    anyhow::ensure!(m.roles() == game.role_names().as_slice(), "{}: the library's roles differ", path.display());
    let s = m.initial_state()?;
    let terminal = m.is_terminal(&s)?;
    let mut moves = Vec::new();
    let mut legal = Vec::new();
    for r in 0..m.roles().len() {
        m.legal_moves(&s, r, &mut moves)?;
        legal.push(moves.len());
    }
    anyhow::ensure!(
        terminal == smoke.terminal && legal == smoke.legal,
        "{}: the library disagrees with the prover on the initial state (legal moves {legal:?} against {:?})",
        path.display(),
        smoke.legal
    );
    Ok(format!(
        "{}: loads (format {}), agrees with the prover on the initial state",
        path.display(),
        propel_abi::FORMAT_VERSION
    ))
}

fn print_propnet(a: &Args, prepared: &propel_runtime::build::Prepared) -> Result<()> {
    if !prepared.demand().is_empty() {
        println!("grounding computed on demand (magic sets): {}", prepared.demand().join(", "));
    }
    println!(
        "{:<14} {:>8} {:>10} {:>8} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>9}",
        "stage", "seconds", "components", "and", "or", "not", "nand", "nor", "base", "input", "const", "edges"
    );
    for r in prepared.report() {
        let c = &r.counts;
        println!(
            "{:<14} {:>8.3} {:>10} {:>8} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>9}",
            r.stage, r.seconds, c.total, c.and, c.or, c.not, c.nand, c.nor, c.base, c.input, c.constant, c.edges
        );
    }
    if let Some(s) = prepared.split_report() {
        println!(
            "split on {} (changes on {:.0}% of steps): {} -> {} + {} components, {:.0} vs {:.0} counter updates per state change over {} sampled: {} ({:.2} s)",
            s.base,
            s.changes_per_step * 100.0,
            s.before,
            s.after[0],
            s.after[1],
            s.work[0],
            s.work[1],
            s.steps,
            if s.kept { "kept" } else { "dropped" },
            s.seconds
        );
    }
    match prepared.goal_net() {
        Some(g) => {
            let c = g.counts();
            println!(
                "goals:    a separate goal network, evaluated at terminal states: {} components, {} edges",
                c.total, c.edges
            );
        }
        None => println!("goals:    read from the playout network"),
    }
    let lookups = prepared.lookups();
    if lookups.questions {
        let asked: Vec<String> = prepared.asked().iter().map(|n| format!("`{n}`")).collect();
        println!(
            "questions: {} over the grounding budget: {} query components ask it of the state, answered top-down where their guard holds",
            asked.join(", "),
            prepared.net().queries.len()
        );
    } else if lookups.any() {
        println!(
            "lookups:  the network has no {} logic (over the grounding budget): machines answer it from the rules",
            lookups.describe()
        );
    }
    let net = prepared.net();
    let l = net.latches();
    let names = |v: &[usize]| -> String {
        let mut n: Vec<&str> = v.iter().take(6).map(|&i| net.bases[i].name.as_str()).collect();
        if v.len() > 6 {
            n.push("...");
        }
        n.join(" ")
    };
    println!(
        "latches: {} once-true-stays-true ({}), {} once-false-stays-false ({}), {} never change ({})",
        l.positive.len(),
        names(&l.positive),
        l.negative.len(),
        names(&l.negative),
        l.constant.len(),
        names(&l.constant)
    );
    if a.plan {
        println!("\nplan:\n{}", propel_runtime::plan::Plan::of(prepared));
    }
    Ok(())
}
