//! `propel serve --port 9147`: the GGP player over HTTP.

use crate::ggp::server::Server;
use crate::ggp::PlayerArgs;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

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
    #[command(flatten)]
    player: PlayerArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let cfg = a.player.config(&a.name, &a.strategy, Some(a.log_dir.clone()))?;
    let server = Server::start(&format!("{}:{}", a.host, a.port), cfg)?;
    // The first line on stdout is the address, for scripts that start us on port 0.
    println!("listening on {}", server.url());
    tracing::info!("player {} ({}) listening on {}; logs in {}", a.name, a.strategy, server.url(), a.log_dir.display());
    server.wait();
    Ok(ExitCode::SUCCESS)
}
