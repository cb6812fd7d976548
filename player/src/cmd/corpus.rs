//! `propel corpus DIR`: runs `propel check --json` on every `.kif` under a
//! folder, each in its own process with a time limit (so that no game can
//! take the run down), and writes one TSV row per file. Rows are appended
//! as games finish, so a long run that is stopped keeps what it did, and
//! `--resume` goes on from there.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Folder searched recursively for .kif files.
    dir: PathBuf,
    /// Seconds allowed per file; a file that takes longer is listed as
    /// `gave-up` (never `rejected`). `check` bounds its own work by a count
    /// of join steps, and gives up after 100 s of its own.
    #[arg(long, default_value_t = 120.0, value_parser = crate::opts::seconds(), allow_hyphen_values = true)]
    timeout: f64,
    /// Where to write the TSV (file, verdict, roles, category, error):
    /// one row per game as it finishes, sorted by file at the end.
    #[arg(long)]
    tsv: Option<PathBuf>,
    /// Keep the rows already in `--tsv` and check only the other files.
    #[arg(long, requires = "tsv")]
    resume: bool,
    /// Parallel checks (default: the number of cores; at most 256).
    #[arg(long, value_parser = crate::opts::threads_usize(), allow_hyphen_values = true)]
    jobs: Option<usize>,
    /// Instead of checking, compare a machine with the prover on every
    /// valid game (`propnet`: the network's machines; `topdown`: the
    /// top-down reasoner): perft to a small depth and seeded traces.
    #[arg(long, value_parser = ["propnet", "topdown"])]
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

const HEADER: &str = "file\tverdict\troles\tcategory\terror\n";

impl Row {
    fn tsv(&self) -> String {
        format!("{}\t{}\t{}\t{}\t{}\n", self.file, self.verdict, self.roles, self.category, self.error)
    }

    fn parse(line: &str) -> Option<Row> {
        let mut c = line.splitn(5, '\t');
        Some(Row {
            file: c.next()?.to_string(),
            verdict: c.next()?.to_string(),
            roles: c.next()?.parse().ok()?,
            category: c.next()?.to_string(),
            error: c.next().unwrap_or("").to_string(),
        })
    }
}

/// The rows of an earlier run's TSV (none when it does not exist yet).
fn earlier_rows(path: &Path) -> Result<Vec<Row>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.lines().skip(1).filter_map(Row::parse).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes `text` to a file beside `path` and renames it over `path`, so
/// that a run stopped while writing leaves the old rows whole.
fn replace_file(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("tsv.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
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
        Some(against) => cmd.arg("compare").arg("--against").arg(against),
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
        // No verdict in time says nothing about the game.
        row.verdict = "gave-up".into();
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
                if let Some(c) = v["codegen_seconds"].as_f64() {
                    let updates = v["updates"].as_u64().unwrap_or(0);
                    row.category.push_str(&format!(", codegen {c:.2}s {updates} updates"));
                }
                if let Some(l) = v["lookups"].as_str().filter(|l| !l.is_empty()) {
                    row.category.push_str(&format!(", {LOOKUPS}{l}"));
                }
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

/// Marks a row whose network left outputs to lookups on the rules.
const LOOKUPS: &str = "lookups: ";

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
    let all = kif_files(&a.dir)?;
    let rel = |f: &Path| f.strip_prefix(&a.dir).unwrap_or(f).display().to_string();
    // Rows of files no longer under DIR are dropped.
    let done: Vec<Row> = match &a.tsv {
        Some(p) if a.resume => earlier_rows(p)?.into_iter().filter(|r| all.iter().any(|f| rel(f) == r.file)).collect(),
        _ => Vec::new(),
    };
    let files: Vec<PathBuf> = all.into_iter().filter(|f| !done.iter().any(|r| r.file == rel(f))).collect();
    if a.resume {
        println!("resuming: {} files done, {} to go", done.len(), files.len());
    }
    // The TSV grows a row at a time (a run stopped half way keeps them).
    let sink = match &a.tsv {
        Some(p) => {
            let mut text = String::from(HEADER);
            done.iter().for_each(|r| text.push_str(&r.tsv()));
            replace_file(p, &text)?;
            let f = std::fs::OpenOptions::new().append(true).open(p);
            Some(Mutex::new(f.with_context(|| format!("opening {}", p.display()))?))
        }
        None => None,
    };
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
                let row = check_one(&exe, f, rel(f), timeout, a.compare.as_deref());
                bar.set_message(row.file.clone());
                bar.inc(1);
                if let Some(Ok(mut out)) = sink.as_ref().map(|m| m.lock()) {
                    // A row that cannot be appended is still in the final file.
                    let _ = out.write_all(row.tsv().as_bytes()).and_then(|_| out.flush());
                }
                if let Ok(mut r) = rows.lock() {
                    r[i] = Some(row);
                }
            });
        }
    });
    bar.finish_and_clear();
    let mut rows: Vec<Row> = rows.into_inner().unwrap_or_default().into_iter().flatten().collect();
    rows.extend(done);
    rows.sort_by(|x, y| x.file.cmp(&y.file));
    if let Some(path) = &a.tsv {
        let mut text = String::from(HEADER);
        rows.iter().for_each(|r| text.push_str(&r.tsv()));
        replace_file(path, &text)?;
    }
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *verdicts.entry(&r.verdict).or_default() += 1;
        if r.verdict == "rejected" || r.verdict == "gave-up" {
            *reasons.entry(&r.category).or_default() += 1;
        }
    }
    println!(
        "{} files: {}",
        rows.len(),
        verdicts.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
    );
    let agreeing = |what: &str| {
        rows.iter().filter(|r| r.verdict == "agree" && r.category.contains(&format!("{LOOKUPS}{what}"))).count()
    };
    let questions = agreeing("questions");
    if questions > 0 {
        println!("of those that agree, {questions} with questions asked of the state (rules over the grounding budget in legal or next)");
    }
    let lookups = agreeing("") - questions;
    if lookups > 0 {
        println!("of those that agree, {lookups} with goal or terminal answered by the rules (over the grounding budget as a network)");
    }
    if !reasons.is_empty() {
        println!(
            "rejected or gave up, by reason: {}",
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
