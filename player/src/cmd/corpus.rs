//! `propel corpus DIR`: runs `propel check --json` on every `.kif` under a
//! folder, each in its own process with a time limit (so that no game can
//! take the run down), and writes one TSV row per file.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Folder searched recursively for .kif files.
    dir: PathBuf,
    /// Seconds allowed per file.
    #[arg(long, default_value_t = 20.0)]
    timeout: f64,
    /// Where to write the TSV (file, verdict, roles, category, error).
    #[arg(long)]
    tsv: Option<PathBuf>,
    /// Parallel checks (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Instead of checking, compare a machine with the prover on every
    /// valid game (`propnet`): perft to a small depth and seeded traces.
    #[arg(long)]
    compare: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Row {
    pub file: String,
    pub verdict: String,
    pub roles: u64,
    pub category: String,
    pub error: String,
}

fn kif_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "kif") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn check_one(exe: &Path, file: &Path, rel: String, timeout: Duration, compare: Option<&str>) -> Row {
    let mut row = Row { file: rel, ..Default::default() };
    let mut cmd = Command::new(exe);
    match compare {
        // Compare only valid games; `compare` refuses invalid ones itself.
        Some(_) => cmd.arg("compare"),
        None => cmd.arg("check"),
    };
    let child = cmd
        .arg("--json")
        .arg(file)
        .env("RUST_LOG", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            row.verdict = "crash".into();
            row.error = format!("could not start the checker: {e}");
            return row;
        }
    };
    // Read stdout on a thread so a chatty child cannot block on a full pipe.
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = stdout.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break None,
        }
    };
    let out = reader.join().unwrap_or_default();
    let Some(status) = status else {
        row.verdict = "rejected".into();
        row.category = "timeout".into();
        row.error = format!("no verdict within {:.0} s", timeout.as_secs_f64());
        return row;
    };
    match serde_json::from_str::<Value>(out.trim()) {
        Ok(v) => {
            row.verdict = v["verdict"].as_str().unwrap_or("crash").to_string();
            row.roles = v["roles"].as_u64().unwrap_or(0);
            row.category = v["category"].as_str().unwrap_or("").to_string();
            let text = v["error"].as_str().or(v["detail"].as_str()).unwrap_or("");
            row.error = text.replace(['\t', '\n', '\r'], " ");
            if let Some(s) = v["build_seconds"].as_f64() {
                row.category = format!("{s:.2}s {} components", v["components"].as_u64().unwrap_or(0));
            }
        }
        Err(_) if compare.is_some() && status.code() == Some(1) => {
            row.verdict = "invalid".into();
            row.error = "not a valid game (see propel corpus without --compare)".into();
        }
        Err(_) => {
            row.verdict = "crash".into();
            row.error = format!("the checker ended with {status} and no verdict");
        }
    }
    row
}

/// Files the corpus manifest marks as intentionally invalid.
fn must_reject(dir: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(dir.join("MANIFEST.tsv")) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            (cols.len() >= 7 && cols[6].contains("intentionally invalid")).then(|| cols[0].to_string())
        })
        .collect()
}

pub fn run(a: Args) -> Result<ExitCode> {
    let files = kif_files(&a.dir)?;
    let exe = std::env::current_exe().context("locating the propel executable")?;
    let jobs = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
    let timeout = Duration::from_secs_f64(a.timeout.max(0.1));
    let bar = ProgressBar::new(files.len() as u64)
        .with_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")?);
    let next = AtomicUsize::new(0);
    let rows: Mutex<Vec<Option<Row>>> = Mutex::new(vec![None; files.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                // Relaxed: the counter only hands out distinct indices.
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                let rel = f.strip_prefix(&a.dir).unwrap_or(f).display().to_string();
                let row = check_one(&exe, f, rel, timeout, a.compare.as_deref());
                bar.set_message(row.file.clone());
                bar.inc(1);
                if let Ok(mut r) = rows.lock() {
                    r[i] = Some(row);
                }
            });
        }
    });
    bar.finish_and_clear();
    let rows: Vec<Row> = rows.into_inner().unwrap_or_default().into_iter().flatten().collect();
    if let Some(path) = &a.tsv {
        let mut text = String::from("file\tverdict\troles\tcategory\terror\n");
        for r in &rows {
            text.push_str(&format!("{}\t{}\t{}\t{}\t{}\n", r.file, r.verdict, r.roles, r.category, r.error));
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *verdicts.entry(&r.verdict).or_default() += 1;
        if r.verdict == "rejected" {
            *reasons.entry(&r.category).or_default() += 1;
        }
    }
    println!(
        "{} files: {}",
        rows.len(),
        verdicts.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
    );
    if !reasons.is_empty() {
        println!(
            "rejected by reason: {}",
            reasons.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        );
    }
    let mut ok = true;
    if a.compare.is_some() {
        for r in rows.iter().filter(|r| r.verdict == "DISAGREE") {
            ok = false;
            println!("DISAGREE: {}: {}", r.file, r.error);
        }
    }
    for f in must_reject(&a.dir).into_iter().filter(|_| a.compare.is_none()) {
        match rows.iter().find(|r| r.file == f) {
            Some(r) if r.verdict == "rejected" => {}
            Some(r) => {
                ok = false;
                println!("NOT REJECTED (manifest says intentionally invalid): {f} ({})", r.verdict);
            }
            None => {}
        }
    }
    for r in rows.iter().filter(|r| r.verdict == "crash") {
        ok = false;
        println!("CRASH: {}: {}", r.file, r.error);
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
