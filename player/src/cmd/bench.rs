//! `propel bench [GAME.kif...]`: in one run per game, random playouts on
//! the prover (when not too slow), the interpreted propnet and the JIT
//! (batches of whole playouts in native code: bit-parallel lanes where
//! the code has them), on one thread and on all cores; and, on one
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
    /// Measure nothing: read the numbers from a CSV an earlier run wrote
    /// (`--csv`) and print the tables and `--svg` chart from them.
    #[arg(long, value_name = "CSV", conflicts_with = "csv")]
    replot: Option<PathBuf>,
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

/// A batch of 16 x [`LANES`] native playouts (bit-parallel where the code
/// has lanes; lanes are refilled as games end,
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

/// The machine names a CSV row may hold.
const MACHINES: [&str; 6] = ["prover", "propnet", "jit", "jit-single", "search-propnet", "search-lanes"];

/// Rows of a CSV written by `--csv`, and the thread counts in it.
fn read_csv(path: &std::path::Path) -> Result<(Vec<Row>, Vec<usize>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        let bad = || anyhow::anyhow!("{}:{}: not a row of `propel bench --csv`", path.display(), i + 1);
        if c.len() != 8 {
            return Err(bad());
        }
        let machine = MACHINES.iter().find(|m| **m == c[1]).ok_or_else(bad)?;
        let num = |k: usize| c[k].parse::<f64>().map_err(|_| bad());
        rows.push(Row {
            game: c[0].to_string(),
            machine,
            threads: c[2].parse().map_err(|_| bad())?,
            playouts_per_s: num(3)?,
            states_per_s: num(4)?,
            avg_length: num(5)?,
            build_seconds: num(6)?,
            codegen_seconds: num(7)?,
        });
    }
    let mut counts: Vec<usize> = rows.iter().map(|r| r.threads).collect();
    counts.sort_unstable();
    counts.dedup();
    Ok((rows, counts))
}

pub fn run(a: Args) -> Result<ExitCode> {
    if let Some(csv) = &a.replot {
        let (rows, counts) = read_csv(csv)?;
        print_table(&rows, &counts);
        if let Some(p) = &a.svg {
            std::fs::write(p, svg(&rows, &counts)).with_context(|| format!("writing {}", p.display()))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
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

/// A rate as a bar's label: 0.35, 12, 8117, 16k, 1.6M.
fn rate(v: f64) -> String {
    if v >= 1e4 {
        crate::chart::label(v)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Bars of one chart in a game's panel: the machines (row names in the
/// CSV), their labels and colours.
struct Panel {
    title: &'static str,
    unit: &'static str,
    machines: &'static [(&'static str, &'static str, &'static str)],
}

const PANELS: [Panel; 2] = [
    Panel {
        title: "random playouts",
        unit: "playouts per second",
        machines: &[
            ("prover", "prover", "#9e9e9e"),
            ("propnet", "propnet", "#4e79a7"),
            ("jit-single", "jit-single", "#f28e2b"),
            ("jit", "jit (batches)", "#e15759"),
        ],
    },
    Panel {
        title: "search from the initial state",
        unit: "iterations per second",
        machines: &[("search-propnet", "propnet", "#4e79a7"), ("search-lanes", "lanes (hybrid)", "#59a14f")],
    },
];

/// Small multiples: per game, a bar chart of every playout column (prover,
/// propnet, the JIT one playout at a time and in batches) and one of the
/// search columns, each on a linear axis from 0 with its unit, one bar
/// per machine and thread count (solid: one thread; pale: all), the value
/// written on each bar.
fn svg(rows: &[Row], counts: &[usize]) -> String {
    use crate::chart::{esc, label, step};
    let games = games_of(rows);
    // Charts with no measurement at all (a CSV from before the search
    // columns) are left out.
    let panels: Vec<&Panel> =
        PANELS.iter().filter(|p| rows.iter().any(|r| p.machines.iter().any(|m| m.0 == r.machine))).collect();
    let (pw, chart_h, gap) = (380.0, 150.0, 24.0);
    let ph = 40.0 + panels.len() as f64 * (chart_h + 52.0);
    let cols = games.len().clamp(1, 3);
    let grid_rows = games.len().div_ceil(cols).max(1);
    let (width, top) = (cols as f64 * (pw + gap) + gap, 72.0);
    let height = top + grid_rows as f64 * (ph + gap) + 40.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width:.0} {height:.0}\" width=\"{width:.0}\" \
         height=\"{height:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n"
    );
    let threads = if counts.len() > 1 {
        format!("solid bars: 1 thread; pale bars: {} threads", counts[1])
    } else {
        "1 thread".to_string()
    };
    let _ = writeln!(
        s,
        "<text x=\"{gap}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">propel bench: playouts and search per second, by game</text>"
    );
    let _ = writeln!(
        s,
        "<text x=\"{gap}\" y=\"42\" fill=\"#444\">Each axis starts at 0 and has its own scale; {threads}.</text>\n\
         <text x=\"{gap}\" y=\"56\" fill=\"#444\">The prover is not measured where one playout takes over a quarter of the time.</text>"
    );
    for (gi, g) in games.iter().enumerate() {
        let (px, py) = (gap + (gi % cols) as f64 * (pw + gap), top + (gi / cols) as f64 * (ph + gap));
        let _ = writeln!(
            s,
            "<rect x=\"{px:.1}\" y=\"{py:.1}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#ddd\"/>"
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"14\" font-weight=\"bold\">{}</text>",
            px + 10.0,
            py + 20.0,
            esc(g)
        );
        for (k, panel) in panels.iter().enumerate() {
            let (cx, cy) = (px + 70.0, py + 48.0 + k as f64 * (chart_h + 52.0));
            let cw = pw - 90.0;
            let bars: Vec<(&str, &str, usize, Option<f64>)> = panel
                .machines
                .iter()
                .flat_map(|&(m, name, colour)| counts.iter().map(move |&n| (m, name, n, colour)))
                .map(|(m, _name, n, colour)| (m, colour, n, find(rows, g, m, n).map(|r| r.playouts_per_s)))
                // One at a time runs on one thread only.
                .filter(|b| !(b.0 == "jit-single" && b.2 != counts[0]))
                .collect();
            // Headroom above the tallest bar for its value.
            let max = 1.15 * bars.iter().filter_map(|b| b.3).fold(0.0f64, f64::max);
            let ys = step(max.max(1.0), 4.0);
            let ymax = (max.max(1.0) / ys).ceil() * ys;
            let y = |v: f64| cy + chart_h - v / ymax * chart_h;
            let _ =
                writeln!(s, "<text x=\"{:.1}\" y=\"{:.1}\" font-weight=\"bold\">{}</text>", cx, cy - 8.0, panel.title);
            let mut t = 0.0;
            while t <= ymax + 1e-9 {
                let yy = y(t);
                let _ = writeln!(
                    s,
                    "<line x1=\"{cx:.1}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                    cx + cw,
                    cx - 4.0,
                    yy + 4.0,
                    label(t)
                );
                t += ys;
            }
            let mid = cy + chart_h / 2.0;
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{mid:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 {:.1} {mid:.1})\" fill=\"#444\">{}</text>",
                cx - 52.0,
                cx - 52.0,
                panel.unit
            );
            let _ = writeln!(
                s,
                "<line x1=\"{cx:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\"/>",
                cx + cw,
                cy + chart_h,
                cy + chart_h
            );
            let bw = cw / bars.len().max(1) as f64;
            for (i, &(m, colour, n, v)) in bars.iter().enumerate() {
                let x = cx + i as f64 * bw;
                let opacity = if n == counts[0] { "1" } else { "0.5" };
                let text = v.map_or("not measured".to_string(), rate);
                if let Some(v) = v {
                    let _ = writeln!(
                        s,
                        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\" fill-opacity=\"{opacity}\"><title>{} {m}, {n} thread(s): {v:.0} {}</title></rect>",
                        x + 2.0,
                        y(v),
                        bw - 4.0,
                        cy + chart_h - y(v),
                        esc(g),
                        panel.unit
                    );
                }
                // The value, upright above the bar.
                let (vx, vy) = (x + bw / 2.0 + 3.0, y(v.unwrap_or(0.0)) - 3.0);
                let _ = writeln!(
                    s,
                    "<text x=\"{vx:.1}\" y=\"{vy:.1}\" font-size=\"9\" transform=\"rotate(-90 {vx:.1} {vy:.1})\">{text}</text>"
                );
            }
            // Machine names under their bars.
            for &(m, name, colour) in panel.machines {
                let mine: Vec<usize> = (0..bars.len()).filter(|&i| bars[i].0 == m).collect();
                let (Some(&first), Some(&last)) = (mine.first(), mine.last()) else { continue };
                let lx = cx + (first + last + 1) as f64 * bw / 2.0;
                let _ = writeln!(
                    s,
                    "<text x=\"{lx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{colour}\">{}</text>",
                    cy + chart_h + 14.0,
                    esc(name)
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}
