//! `propel bench [GAME.kif...]`: in one run per game, random playouts on
//! the prover (when not too slow), the interpreted propnet and the JIT
//! (batches of whole playouts in native code: bit-parallel lanes where
//! they measured faster), on one thread and on all cores; and, on one
//! thread, the JIT's one-playout-at-a-time path (`jit-single`). Then the
//! search as a match runs it, from the initial state: MCTS iterations per
//! second on the interpreted propnet (rollouts one leaf at a time) and
//! lane-parallel on the hybrid machine (the player's choice where the JIT
//! has lanes), one thread and all cores.
//! Prints a table; `--csv` and `--svg` write the numbers and a chart.

use crate::machines::BuildArgs;
use crate::opts;
use anyhow::{Context, Result};
use propel_runtime::lanes::LANES;
use propel_runtime::mcts::{Config, Search};
use propel_runtime::playout::playout;
use propel_runtime::playout::PlayoutStats;
use propel_runtime::simulate::Simulator;
use propel_runtime::{NativeMachine, Prover, Rng, StateMachine};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Games to measure (default: every game in games/).
    games: Vec<PathBuf>,
    /// Seconds per machine and thread count (at most 1e6).
    #[arg(long, default_value_t = 2.0, value_parser = opts::seconds(), allow_hyphen_values = true)]
    seconds: f64,
    /// Threads for the multi-core run (default: all cores; 1 skips it; at most 256).
    #[arg(long, value_parser = opts::threads_usize(), allow_hyphen_values = true)]
    threads: Option<usize>,
    /// Write the numbers as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write a chart (SVG).
    #[arg(long)]
    svg: Option<PathBuf>,
    #[command(flatten)]
    build: BuildArgs,
}

/// One measurement.
#[derive(Clone, Debug)]
struct Row {
    game: String,
    machine: &'static str,
    threads: usize,
    playouts_per_s: f64,
    states_per_s: f64,
    avg_length: f64,
    build_seconds: f64,
    /// Of the JIT's build, the code generation (0 for other machines).
    codegen_seconds: f64,
}

/// What building a game's machines took.
struct Build {
    game: String,
    components: usize,
    updates: usize,
    propnet_seconds: f64,
    jit_seconds: f64,
    codegen_seconds: f64,
}

/// Playouts on `threads` clones of `m` for `secs`; each thread its own
/// instance and its own seed.
fn measure<M, F>(m: &M, threads: usize, secs: f64, run: F) -> Result<PlayoutStats>
where
    M: Clone + Send,
    F: Fn(&mut M, &mut Rng, &mut PlayoutStats) -> Result<()> + Sync,
{
    let deadline = Duration::from_secs_f64(secs);
    let results: Vec<Result<PlayoutStats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mut mine = m.clone();
                let run = &run;
                s.spawn(move || {
                    let mut rng = Rng::new(0x5eed + t as u64);
                    let mut stats = PlayoutStats::default();
                    let start = Instant::now();
                    while start.elapsed() < deadline {
                        run(&mut mine, &mut rng, &mut stats)?;
                    }
                    stats.seconds = start.elapsed().as_secs_f64();
                    Ok(stats)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a benchmark thread panicked"))))
            .collect()
    });
    let mut total = PlayoutStats::default();
    for r in results {
        let r = r?;
        total.playouts += r.playouts;
        total.states += r.states;
        total.seconds = total.seconds.max(r.seconds);
    }
    Ok(total)
}

fn standard<M: StateMachine>(m: &mut M, rng: &mut Rng, stats: &mut PlayoutStats) -> Result<()> {
    playout(m, rng, stats)?;
    Ok(())
}

/// A batch of 16 x [`LANES`] native playouts (bit-parallel when the code
/// has lanes and they measured faster; lanes are refilled as games end,
/// so only the batch's last games leave lanes idle).
fn native(m: &mut NativeMachine, rng: &mut Rng, stats: &mut PlayoutStats) -> Result<()> {
    let s0 = m.initial_state()?;
    let (mut goals, mut lengths) = (Vec::new(), Vec::new());
    let max = propel_runtime::playout::MAX_PLAYOUT_STEPS as u32;
    m.playouts(&s0, 16 * LANES, rng.next_u64(), max, &mut goals, &mut lengths)?;
    stats.playouts += lengths.len() as u64;
    stats.states += lengths.iter().map(|&n| n as u64).sum::<u64>();
    Ok(())
}

/// One native playout (the differential code, one game at a time).
fn native_single(m: &mut NativeMachine, rng: &mut Rng, stats: &mut PlayoutStats) -> Result<()> {
    let s0 = m.initial_state()?;
    let mut goals = Vec::new();
    let n = m.native_playout(&s0, rng.next_u64(), propel_runtime::playout::MAX_PLAYOUT_STEPS as u32, &mut goals)?;
    stats.playouts += 1;
    stats.states += n as u64;
    Ok(())
}

/// MCTS iterations per second from the initial state on `threads`
/// threads, for `secs` (lane-parallel when `lanes` and the machine has
/// lane code).
fn search_rate<M: Simulator>(mut m: M, threads: usize, lanes: bool, secs: f64) -> Result<f64>
where
    M::State: Send + Sync,
    M::Move: Send + Sync,
{
    let s0 = m.initial_state()?;
    let cfg = Config { threads, lanes, ..Config::default() };
    let mut search = Search::new(m, s0, cfg)?;
    let stats = search.run(Instant::now() + Duration::from_secs_f64(secs))?;
    Ok(stats.iterations_per_s())
}

fn row(game: &str, machine: &'static str, threads: usize, s: &PlayoutStats, build: f64) -> Row {
    Row {
        game: game.to_string(),
        machine,
        threads,
        playouts_per_s: s.playouts_per_s(),
        states_per_s: s.states_per_s(),
        avg_length: s.avg_length(),
        build_seconds: build,
        codegen_seconds: 0.0,
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let games = if a.games.is_empty() {
        let mut v: Vec<PathBuf> = std::fs::read_dir("games")
            .context("no games given and no games/ folder here")?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "kif"))
            .collect();
        v.sort();
        v
    } else {
        a.games.clone()
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = a.threads.unwrap_or(cores).max(1);
    let counts: Vec<usize> = if threads > 1 { vec![1, threads] } else { vec![1] };
    let mut rows: Vec<Row> = Vec::new();
    let mut builds: Vec<Build> = Vec::new();
    for path in &games {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string();
        let game = a.build.load_game(path)?;
        eprintln!("{name}: building machines");
        // Prover: measured only if one playout takes well under the budget.
        let t = Instant::now();
        let prover = Prover::new(game.clone())?;
        let prover_build = t.elapsed().as_secs_f64();
        let mut probe = prover.clone();
        let t = Instant::now();
        standard(&mut probe, &mut Rng::new(1), &mut PlayoutStats::default())?;
        let prover_ok = t.elapsed().as_secs_f64() < a.seconds / 4.0;
        let t = Instant::now();
        let interp = a.build.build(&game)?.machine;
        let interp_build = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let built = a.build.build_jit(&game)?;
        let jit_build = t.elapsed().as_secs_f64();
        let codegen = built.code.seconds;
        builds.push(Build {
            game: name.clone(),
            components: built.net.len(),
            updates: built.code.updates,
            propnet_seconds: interp_build,
            jit_seconds: jit_build,
            codegen_seconds: codegen,
        });
        let jit = built.machine;
        let hybrid = a.build.build_hybrid(&game)?;
        for &n in &counts {
            let it = search_rate(interp.clone(), n, false, a.seconds)?;
            rows.push(Row { playouts_per_s: it, ..row(&name, "search-propnet", n, &PlayoutStats::default(), 0.0) });
            if hybrid.lane_runner().is_some() {
                let it = search_rate(hybrid.clone(), n, true, a.seconds)?;
                rows.push(Row { playouts_per_s: it, ..row(&name, "search-lanes", n, &PlayoutStats::default(), 0.0) });
            }
        }
        for &n in &counts {
            if prover_ok {
                let s = measure(&prover, n, a.seconds, standard)?;
                rows.push(row(&name, "prover", n, &s, prover_build));
            }
            let s = measure(&interp, n, a.seconds, standard)?;
            rows.push(row(&name, "propnet", n, &s, interp_build));
            let s = measure(&jit, n, a.seconds, native)?;
            rows.push(Row { codegen_seconds: codegen, ..row(&name, "jit", n, &s, jit_build) });
            if n == 1 {
                let s = measure(&jit, n, a.seconds, native_single)?;
                rows.push(Row { codegen_seconds: codegen, ..row(&name, "jit-single", n, &s, jit_build) });
            }
        }
    }
    print_table(&rows, &counts);
    println!("\nbuilds (seconds; the JIT's includes grounding and the passes again):");
    println!("{:<14} {:>11} {:>11} {:>9} {:>9} {:>9}", "game", "components", "updates", "propnet", "jit", "codegen");
    for b in &builds {
        println!(
            "{:<14} {:>11} {:>11} {:>9.2} {:>9.2} {:>9.2}",
            b.game, b.components, b.updates, b.propnet_seconds, b.jit_seconds, b.codegen_seconds
        );
    }
    if let Some(p) = &a.csv {
        // Search rows (machine search-*) hold iterations per second in
        // playouts_per_s.
        let mut text =
            String::from("game,machine,threads,playouts_per_s,states_per_s,avg_length,build_seconds,codegen_seconds\n");
        for r in &rows {
            let _ = writeln!(
                text,
                "{},{},{},{:.1},{:.1},{:.3},{:.3},{:.3}",
                r.game,
                r.machine,
                r.threads,
                r.playouts_per_s,
                r.states_per_s,
                r.avg_length,
                r.build_seconds,
                r.codegen_seconds
            );
        }
        std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &a.svg {
        std::fs::write(p, svg(&rows, &counts)).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn find<'a>(rows: &'a [Row], game: &str, machine: &str, threads: usize) -> Option<&'a Row> {
    rows.iter().find(|r| r.game == game && r.machine == machine && r.threads == threads)
}

fn games_of(rows: &[Row]) -> Vec<String> {
    let mut g: Vec<String> = Vec::new();
    for r in rows {
        if !g.contains(&r.game) {
            g.push(r.game.clone());
        }
    }
    g
}

fn print_table(rows: &[Row], counts: &[usize]) {
    for &n in counts {
        println!("\nrandom playouts per second, {n} thread{}:", if n > 1 { "s" } else { "" });
        println!(
            "{:<14} {:>12} {:>12} {:>12} {:>12} {:>14} {:>10} {:>9}",
            "game", "prover", "propnet", "jit-single", "jit", "jit states/s", "jit/propnet", "length"
        );
        let mut ratios = Vec::new();
        for g in games_of(rows) {
            let cell = |m: &str| {
                find(rows, &g, m, n).map(|r| format!("{:.0}", r.playouts_per_s)).unwrap_or_else(|| "-".into())
            };
            let (p, j) = (find(rows, &g, "propnet", n), find(rows, &g, "jit", n));
            let ratio = match (p, j) {
                (Some(p), Some(j)) if p.playouts_per_s > 0.0 => {
                    ratios.push(j.playouts_per_s / p.playouts_per_s);
                    format!("{:.2}x", j.playouts_per_s / p.playouts_per_s)
                }
                _ => "-".into(),
            };
            println!(
                "{:<14} {:>12} {:>12} {:>12} {:>12} {:>14} {:>10} {:>9}",
                g,
                cell("prover"),
                cell("propnet"),
                cell("jit-single"),
                cell("jit"),
                j.map(|r| format!("{:.0}", r.states_per_s)).unwrap_or_default(),
                ratio,
                j.map(|r| format!("{:.1}", r.avg_length)).unwrap_or_default()
            );
        }
        if !ratios.is_empty() {
            let gm = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
            println!("geometric mean jit/propnet: {gm:.2}x");
        }
    }
    for &n in counts {
        println!("\nsearch iterations per second from the initial state, {n} thread{}:", if n > 1 { "s" } else { "" });
        println!("{:<14} {:>15} {:>15} {:>10}", "game", "propnet", "lanes (hybrid)", "ratio");
        let mut ratios = Vec::new();
        for g in games_of(rows) {
            let (p, l) = (find(rows, &g, "search-propnet", n), find(rows, &g, "search-lanes", n));
            let cell = |r: Option<&Row>| r.map(|r| format!("{:.0}", r.playouts_per_s)).unwrap_or_else(|| "-".into());
            let ratio = match (p, l) {
                (Some(p), Some(l)) if p.playouts_per_s > 0.0 => {
                    ratios.push(l.playouts_per_s / p.playouts_per_s);
                    format!("{:.2}x", l.playouts_per_s / p.playouts_per_s)
                }
                _ => "-".into(),
            };
            println!("{:<14} {:>15} {:>15} {:>10}", g, cell(p), cell(l), ratio);
        }
        if !ratios.is_empty() {
            let gm = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
            println!("geometric mean lanes/propnet: {gm:.2}x");
        }
    }
}

/// A grouped bar chart, playouts/s on a log scale, one group per game.
fn svg(rows: &[Row], counts: &[usize]) -> String {
    let games = games_of(rows);
    let machines = ["prover", "propnet", "jit"];
    let colors = ["#9e9e9e", "#4e79a7", "#e15759"];
    let bars: Vec<(usize, usize)> =
        counts.iter().enumerate().flat_map(|(ci, _)| (0..3).map(move |m| (ci, m))).collect();
    let (bw, gap, left, top, h) = (14.0, 18.0, 70.0, 40.0, 300.0);
    let group = bars.len() as f64 * bw + gap;
    let width = left + games.len() as f64 * group + 160.0;
    let max = rows.iter().map(|r| r.playouts_per_s).fold(1.0f64, f64::max).log10().ceil().max(1.0);
    let y = |v: f64| top + h - (v.max(1.0).log10() / max) * h;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n",
        top + h + 90.0
    );
    let _ = writeln!(s, "<text x=\"{left}\" y=\"20\" font-size=\"14\">Random playouts per second (log scale)</text>");
    for p in 0..=(max as i32) {
        let yy = y(10f64.powi(p));
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{:.0}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>",
            width - 150.0
        );
        let _ = writeln!(s, "<text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\">1e{p}</text>", left - 6.0, yy + 4.0);
    }
    for (gi, g) in games.iter().enumerate() {
        let x0 = left + gi as f64 * group + gap / 2.0;
        for (k, &(ci, mi)) in bars.iter().enumerate() {
            if let Some(r) = find(rows, g, machines[mi], counts[ci]) {
                let x = x0 + k as f64 * bw;
                let yy = y(r.playouts_per_s);
                let opacity = if ci == 0 { "1" } else { "0.55" };
                let _ = writeln!(
                    s,
                    "<rect x=\"{x:.1}\" y=\"{yy:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\" fill-opacity=\"{opacity}\"><title>{} {} {} thread(s): {:.0} playouts/s</title></rect>",
                    bw - 2.0,
                    top + h - yy,
                    colors[mi],
                    g,
                    machines[mi],
                    counts[ci],
                    r.playouts_per_s
                );
            }
        }
        let cx = x0 + bars.len() as f64 * bw / 2.0;
        let _ = writeln!(
            s,
            "<text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"end\" transform=\"rotate(-35 {cx:.1} {:.1})\">{g}</text>",
            top + h + 14.0,
            top + h + 14.0
        );
    }
    let lx = width - 140.0;
    for (i, m) in machines.iter().enumerate() {
        let yy = top + 10.0 + i as f64 * 18.0;
        let _ = writeln!(s, "<rect x=\"{lx}\" y=\"{yy}\" width=\"12\" height=\"12\" fill=\"{}\"/>", colors[i]);
        let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">{m}</text>", lx + 18.0, yy + 10.0);
    }
    if counts.len() > 1 {
        let yy = top + 10.0 + 3.0 * 18.0;
        let _ = writeln!(s, "<text x=\"{lx}\" y=\"{}\">pale: {} threads</text>", yy + 10.0, counts[1]);
    }
    s.push_str("</svg>\n");
    s
}
