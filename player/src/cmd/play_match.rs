//! `propel match GAME --player URL|builtin:NAME ... --start-clock S
//! --play-clock P [--matches N] [--round-robin] [--jobs K] [--resume]
//! [--strict] [--wait-for-players S] [-o DIR]`: runs matches over HTTP,
//! writes each as a ggp.org-style JSON record, and prints the standings
//! (also written to `DIR/standings.json`).

use crate::cmd::serve::MEMORY_SHARE;
use crate::ggp::budget::machine_memory;
use crate::ggp::manager::{pairings, player_name, run_match, Clocks, Rulesheet, Seat, WAIT_FOR_PLAYERS};
use crate::ggp::protocol::forms;
use crate::ggp::server::Server;
use crate::ggp::PlayerArgs;
use crate::machines::load_game;
use crate::opts;
use anyhow::{Context as _, Result};
use propel_runtime::standings::Standings;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// A player: its URL (http://host:port), or builtin:mcts, builtin:uct
    /// (plain single-threaded UCT), builtin:random, builtin:legal (started
    /// in this process on a free port). In role order.
    #[arg(long = "player", required = true)]
    players: Vec<String>,
    /// Seconds of the start clock (at most 1e6).
    #[arg(long, default_value_t = 10.0, value_parser = opts::seconds(), allow_hyphen_values = true)]
    start_clock: f64,
    /// Seconds of the play clock (at most 1e6).
    #[arg(long, default_value_t = 5.0, value_parser = opts::seconds(), allow_hyphen_values = true)]
    play_clock: f64,
    /// Send `preview` with this clock before each `start` (default: no
    /// preview phase; records then say -1).
    #[arg(long, value_parser = opts::seconds(), allow_hyphen_values = true)]
    preview_clock: Option<f64>,
    /// Seconds allowed beyond each clock for the network.
    #[arg(long, default_value_t = 0.5, value_parser = opts::seconds(), allow_hyphen_values = true)]
    grace: f64,
    /// Seconds to wait, before a match's `start`, for a player whose
    /// connection is refused (one still starting up); a player that stays
    /// down that long is not waited for again until it answers.
    #[arg(long, default_value_t = WAIT_FOR_PLAYERS, value_parser = opts::seconds(), allow_hyphen_values = true)]
    wait_for_players: f64,
    /// Matches per pairing (at most 100,000).
    #[arg(long, default_value_t = 1, value_parser = opts::count(1, 100_000), allow_hyphen_values = true)]
    matches: usize,
    /// Every ordered choice of distinct players for the roles.
    #[arg(long)]
    round_robin: bool,
    /// Matches played at once (default 1). Built-in players' search
    /// threads count against the machine's cores: fewer run at once when
    /// K matches would need more threads than there are cores.
    #[arg(long, default_value_t = 1, value_parser = opts::threads_usize(), allow_hyphen_values = true)]
    jobs: usize,
    /// Keep the matches already recorded in the output folder (same rules,
    /// same players in the same roles) and play only the rest; the
    /// standings cover them all.
    #[arg(long)]
    resume: bool,
    /// Exit with status 1 when any player had an error (a failed start, a
    /// late, illegal or malformed move).
    #[arg(long)]
    strict: bool,
    /// Where match records, statistics and built-in players' logs go.
    #[arg(short, long, default_value = "matches")]
    out: PathBuf,
    #[command(flatten)]
    player: PlayerArgs,
}

/// One match to play: its number (1-based, in schedule order), the
/// repetition, and the players' indices in role order.
struct Job {
    k: usize,
    rep: usize,
    pairing: Vec<usize>,
}

/// Threads a built-in player's search uses in one match (random and legal
/// players compute next to nothing; players behind a URL run elsewhere).
fn threads_of(player: &str, search_threads: usize) -> usize {
    match player.strip_prefix("builtin:") {
        Some("mcts") => search_threads,
        Some("uct") => 1,
        _ => 0,
    }
}

/// How many matches may run at once: `wanted`, but no more than the cores
/// hold when every match's built-in players search at once.
fn parallel_matches(wanted: usize, per_match: usize, cores: usize) -> usize {
    if per_match == 0 {
        return wanted.min(cores.max(1));
    }
    wanted.min((cores / per_match).max(1))
}

/// Completed records in `dir` (for `--resume`); files that are not match
/// records are skipped.
fn earlier_records(dir: &Path) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(out) };
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else { continue };
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            if v.get("matchId").is_some() && v["isCompleted"] == true {
                out.push(v);
            }
        }
    }
    Ok(out)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let game = load_game(&a.game)?;
    let text = std::fs::read_to_string(&a.game).with_context(|| format!("reading {}", a.game.display()))?;
    let rules = Rulesheet::new(forms(&game.name, &text)?, &text, &a.game.display().to_string());
    std::fs::create_dir_all(a.out.join("rules")).with_context(|| format!("creating {}", a.out.display()))?;
    let rules_path = a.out.join(&rules.file);
    if !rules_path.exists() {
        std::fs::write(&rules_path, rules.forms.join("\n") + "\n")
            .with_context(|| format!("writing {}", rules_path.display()))?;
    }

    // Built-in players live as long as this command, and share the memory
    // a server would have.
    let builtin = a.players.iter().filter(|p| p.starts_with("builtin:")).count().max(1);
    let memory = machine_memory().map_or(4 << 30, |m| (m as f64 * MEMORY_SHARE) as u64) / builtin as u64;
    let mut servers = Vec::new();
    let mut seats: Vec<Seat> = Vec::new();
    for p in &a.players {
        let (label, url, seeds) = match p.strip_prefix("builtin:") {
            Some(strategy) => {
                let n = seats.iter().filter(|s| s.label.starts_with(strategy)).count();
                let label = if n == 0 { strategy.to_string() } else { format!("{strategy}-{}", n + 1) };
                let cfg =
                    a.player.config(&label, strategy, Some(a.out.join("logs")), memory, a.player.threads_or(1))?;
                let seeds = cfg.seeds.clone();
                let server = Server::start("127.0.0.1:0", cfg)?;
                let url = server.url();
                servers.push(server);
                (label, url, Some(seeds))
            }
            None => {
                let url = p.trim_end_matches('/').to_string();
                (player_name(&url).map_or_else(|| url.clone(), |n| format!("{n}@{url}")), url, None)
            }
        };
        seats.push(Seat::new(label, url, seeds));
    }

    let roles = game.role_names();
    let schedule = pairings(seats.len(), roles.len(), a.round_robin)?;
    let clocks = Clocks {
        preview: a.preview_clock,
        start: a.start_clock,
        play: a.play_clock,
        grace: a.grace,
        wait: a.wait_for_players,
    };
    let stem: String = a
        .game
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);

    // Matches already played (--resume): per pairing, how many.
    let labels_of = |pairing: &[usize]| -> Vec<String> { pairing.iter().map(|&p| seats[p].label.clone()).collect() };
    let mut kept: Vec<Value> = Vec::new();
    let mut done = vec![0usize; schedule.len()];
    if a.resume {
        for r in earlier_records(&a.out)? {
            if r["gameRulesheetHash"].as_str() != Some(rules.hash.as_str()) {
                continue;
            }
            let players: Vec<String> = r["playerNamesFromHost"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| x.as_str())
                .map(String::from)
                .collect();
            if let Some(i) = schedule.iter().position(|p| labels_of(p) == players) {
                if done[i] < a.matches {
                    done[i] += 1;
                    kept.push(r);
                }
            }
        }
        println!("resuming: {} matches recorded in {}, {} to play", kept.len(), a.out.display(), {
            schedule.len() * a.matches - kept.len()
        });
    }
    let mut jobs = Vec::new();
    for rep in 0..a.matches {
        for (i, pairing) in schedule.iter().enumerate() {
            let k = rep * schedule.len() + i + 1;
            if rep >= done[i] {
                jobs.push(Job { k, rep, pairing: pairing.clone() });
            }
        }
    }

    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let per_match: usize = schedule
        .iter()
        .map(|p| p.iter().map(|&s| threads_of(&a.players[s], a.player.threads_or(1))).sum())
        .max()
        .unwrap_or(0);
    let parallel = parallel_matches(a.jobs, per_match, cores).min(jobs.len().max(1));
    if parallel < a.jobs {
        eprintln!(
            "note: --jobs {}: {parallel} match(es) at once (each uses up to {per_match} search thread(s) of built-in players; {cores} cores)",
            a.jobs
        );
    }

    let bar = indicatif::ProgressBar::new(jobs.len() as u64);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, Result<Value>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..parallel {
            s.spawn(|| loop {
                // Relaxed: the counter only hands out distinct indices, and
                // the flag only stops new matches early (results are
                // joined through the scope).
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let id = format!("propel.{stem}.{stamp}.{}", job.k);
                let match_seats: Vec<Seat> = job.pairing.iter().map(|&p| seats[p].clone()).collect();
                let seed = a.player.seed ^ ((job.rep as u64) << 32) ^ job.k as u64;
                let out = run_match(&game, &rules, &match_seats, &clocks, &id, &a.out, seed).map(|o| o.record);
                if out.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                if let Ok(mut r) = results.lock() {
                    r.push((job.k, out));
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| r.0);
    let mut records = kept;
    for (_, r) in results {
        records.push(r?);
    }

    let order: Vec<String> = seats.iter().map(|s| s.label.clone()).collect();
    let standings = Standings::of_records(&records, &order);
    print!("{}", standings.text());
    let path = a.out.join("standings.json");
    std::fs::write(&path, serde_json::to_string_pretty(&standings.json())?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("records and standings.json in {}", a.out.display());
    drop(servers);
    let errors: usize = standings.rows.iter().map(|r| r.errors).sum();
    if a.strict && errors > 0 {
        eprintln!("error: --strict: {errors} player error(s) in {} matches", standings.matches);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::{parallel_matches, threads_of};

    #[test]
    fn parallel_matches_fit_the_cores() {
        assert_eq!(threads_of("builtin:mcts", 3), 3);
        assert_eq!(threads_of("builtin:random", 3), 0);
        assert_eq!(threads_of("http://x:1", 3), 0);
        assert_eq!(parallel_matches(4, 2, 2), 1);
        assert_eq!(parallel_matches(4, 1, 8), 4);
        assert_eq!(parallel_matches(4, 3, 8), 2);
        assert_eq!(parallel_matches(8, 0, 2), 2);
        assert_eq!(parallel_matches(1, 16, 2), 1);
    }
}
