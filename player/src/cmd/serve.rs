//! `propel serve --port 9147`: the GGP player over HTTP.

use crate::ggp::budget::{machine_memory, parse_size};
use crate::ggp::server::Server;
use crate::ggp::PlayerArgs;
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Share of the machine's memory the player uses when `--max-memory` is not given.
pub const MEMORY_SHARE: f64 = 0.5;

#[derive(clap::Args)]
pub struct Args {
    /// Port to listen on (0: any free port; the address is printed).
    #[arg(long, default_value_t = 9147)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    host: String,
    /// The name answered to `(info)`.
    #[arg(long, default_value = "propel")]
    name: String,
    /// mcts, uct (plain single-threaded UCT), random or legal.
    #[arg(long, default_value = "mcts")]
    strategy: String,
    /// Per-match logs and statistics go under DIR/NAME/MATCH_ID/.
    #[arg(long, default_value = "propel-logs")]
    log_dir: PathBuf,
    /// Memory for all matches together (e.g. 8G, 512M; default: half the
    /// machine's). Each start reserves its budget from it.
    #[arg(long)]
    max_memory: Option<String>,
    /// Connections served at once (more get 503).
    #[arg(long, default_value_t = 128)]
    max_connections: usize,
    /// Seconds to wait for the next bytes of a request before dropping it.
    #[arg(long, default_value_t = 10.0)]
    read_timeout: f64,
    #[command(flatten)]
    player: PlayerArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let max_memory = match &a.max_memory {
        Some(s) => parse_size(s).map_err(anyhow::Error::msg)?,
        None => machine_memory().map_or(4 << 30, |m| (m as f64 * MEMORY_SHARE) as u64),
    };
    if !(a.read_timeout.is_finite() && (0.1..=3600.0).contains(&a.read_timeout)) {
        bail!("--read-timeout must be between 0.1 and 3600 seconds, not {}", a.read_timeout);
    }
    if !(1..=100_000).contains(&a.max_connections) {
        bail!("--max-connections must be between 1 and 100000, not {}", a.max_connections);
    }
    // A competition player has its machine to itself: every core searches
    // unless `--threads` says otherwise, shared among the matches it plays
    // at once (each searches with its share at its next move).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = a.player.threads_or(cores);
    let mut cfg = a.player.config(&a.name, &a.strategy, Some(a.log_dir.clone()), max_memory, threads)?;
    if a.player.threads.is_none() {
        cfg.threads = crate::ggp::matches::Threads::share(cores);
    }
    cfg.http.connections = a.max_connections;
    cfg.http.idle = Duration::from_secs_f64(a.read_timeout);
    let server = Server::start(&format!("{}:{}", a.host, a.port), cfg)?;
    // The first line on stdout is the address, for scripts that start us on port 0.
    println!("listening on {}", server.url());
    tracing::info!(
        "player {} ({}, {} search thread(s) per match{}) listening on {}; logs in {}; memory limit {} MiB",
        a.name,
        a.strategy,
        threads,
        if a.player.threads.is_none() { ", shared among the matches played" } else { "" },
        server.url(),
        a.log_dir.display(),
        max_memory >> 20
    );
    server.wait();
    Ok(ExitCode::SUCCESS)
}
