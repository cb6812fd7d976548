//! The GGP player and game manager: the protocol's messages, a player's
//! view of a match on a state machine, match threads, the HTTP server,
//! per-match logs, and the match runner.

pub mod brain;
pub mod budget;
pub mod http;
pub mod logs;
pub mod manager;
pub mod matches;
pub mod protocol;
pub mod server;

use crate::machines::MachineKind;
use anyhow::{bail, Result};
use brain::Strategy;
use matches::PlayerConfig;
use propel_runtime::mcts::{Config, Mode};
use std::path::PathBuf;

/// How players started by `serve` and `match` search.
#[derive(clap::Args, Clone, Debug)]
pub struct PlayerArgs {
    /// Search threads per match, 1 to 256 (root parallelisation with lanes:
    /// a graph each; else the pipeline: one searches, the others run
    /// rollouts). Default: every core for `serve` (a competition player has
    /// its machine to itself), 1 for `match`'s built-in players.
    #[arg(long, value_parser = crate::opts::threads_usize(), allow_hyphen_values = true)]
    pub threads: Option<usize>,
    /// Nodes in each match's search graph (16 to 100,000,000).
    #[arg(long, default_value_t = 500_000, value_parser = crate::opts::count(16, crate::opts::MAX_POOL), allow_hyphen_values = true)]
    pub pool: usize,
    /// UCB exploration constant (values 0..1 are usual; at most 10).
    /// Default: the analysis scales it from the spread of random games'
    /// goals (0.7 for a fair win/loss game; 0.7 without the analysis).
    /// Given, it is used whatever the analysis finds (as `--search
    /// exploration=C`).
    #[arg(long, value_parser = crate::opts::exploration(), allow_hyphen_values = true)]
    pub exploration: Option<f64>,
    /// Seconds kept in hand on each clock for the network (at most 30% of the clock).
    #[arg(long, default_value_t = 1.0, value_parser = crate::opts::seconds(), allow_hyphen_values = true)]
    pub margin: f64,
    /// Machines built in the background after the prover, in order of preference.
    #[arg(long, default_value = "propnet,jit", value_delimiter = ',')]
    pub machines: Vec<MachineKind>,
    /// Each match's seed derives from this, the match id and the role.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Clocks longer than this many seconds are taken as this long.
    #[arg(long, default_value_t = 3600.0)]
    pub max_clock: f64,
    /// Seconds a match waits for its next command (counted from the end of
    /// its start clock, then from each command) before it leaves, taking
    /// the manager to have gone away. Default: 60 plus ten play clocks.
    #[arg(long, value_parser = crate::opts::seconds_between(0.1, crate::opts::MAX_SECONDS), allow_hyphen_values = true)]
    pub abandon_after: Option<f64>,
    /// Test hook: the search never answers, so every move comes from the
    /// handlers' fallback (the current state's legal moves).
    #[arg(long, hide = true)]
    pub test_stall_search: bool,
    /// Skip the meta-game analysis during the start clock.
    #[arg(long)]
    pub no_analysis: bool,
    /// Use every setting the analysis derives that passes its checks,
    /// without dueling them against plain settings in the start clock.
    #[arg(long)]
    pub no_validation: bool,
    /// Run the analysis but leave its heuristics out of the search.
    #[arg(long)]
    pub no_heuristics: bool,
    /// Run the analysis but search the whole game even when it has factors.
    #[arg(long)]
    pub no_factors: bool,
    /// Never roll out on the JIT's bit-parallel lanes from the search tree
    /// of the interpreted propnet (the hybrid machine).
    #[arg(long)]
    pub no_lanes: bool,
    /// Search settings, comma-separated KEY=VALUE (to measure a feature
    /// against the default): material=auto|off, weight=N, greedy,
    /// win-first, safe-first, decisive, expand-terminal (auto|on|off),
    /// expand-after=N, minimax=A, mast=E|off, exploration=C, cutoff=N,
    /// rave=B, normalize, material-ref=auto|root|parent, material-backup,
    /// drop-lost, settle (auto|on|off), inflight=N, capture=auto|P,
    /// capture-by=table|look-ahead. What each does: docs/mcts.md, the
    /// settings table.
    #[arg(long, default_value = "")]
    pub search: propel_runtime::mcts::Tuning,
    #[command(flatten)]
    pub codegen: crate::machines::CodegenArgs,
}

impl PlayerArgs {
    /// The search threads per match: `--threads`, else `default`.
    pub fn threads_or(&self, default: usize) -> usize {
        self.threads.unwrap_or(default).max(1)
    }

    /// A player's configuration for the strategy called `strategy`, with
    /// `max_memory` bytes for its matches and `threads` search threads.
    pub fn config(
        &self,
        name: &str,
        strategy: &str,
        log_dir: Option<PathBuf>,
        max_memory: u64,
        threads: usize,
    ) -> Result<PlayerConfig> {
        if !(self.max_clock.is_finite() && (1.0..=1e6).contains(&self.max_clock)) {
            bail!("--max-clock must be between 1 and 1e6 seconds, not {}", self.max_clock);
        }
        if !(self.margin.is_finite() && (0.0..=60.0).contains(&self.margin)) {
            bail!("--margin must be between 0 and 60 seconds, not {}", self.margin);
        }
        let strategy = match strategy {
            "mcts" => Strategy::Mcts(Config {
                threads: threads.max(1),
                mode: Mode::Auto,
                pool: self.pool,
                exploration: self.exploration.unwrap_or(Config::default().exploration),
                seed: self.seed,
                // Greedy rollouts, heuristics, factors and the rest come
                // from the analysis when it runs.
                ..Config::default()
            }),
            "uct" => Strategy::Uct,
            "random" => Strategy::Random,
            "legal" => Strategy::Legal,
            other => bail!("unknown strategy `{other}` (mcts, uct, random or legal)"),
        };
        for m in &self.machines {
            if !matches!(m, MachineKind::Propnet | MachineKind::Jit | MachineKind::Prover) {
                bail!("a player can build prover, propnet or jit machines, not {}", m.name());
            }
        }
        Ok(PlayerConfig {
            name: name.to_string(),
            strategy,
            margin: self.margin,
            log_dir,
            machines: self.machines.clone(),
            analysis: !self.no_analysis,
            validation: !self.no_validation,
            heuristics: !self.no_heuristics,
            tuning: {
                let mut t = self.search.clone();
                if self.exploration.is_some() {
                    t.exploration = self.exploration;
                }
                t
            },
            factored: !self.no_factors,
            lanes: !self.no_lanes,
            seed: self.seed,
            seeds: Default::default(),
            build: propel_runtime::build::BuildOptions { codegen: self.codegen.options()?, ..Default::default() },
            max_clock: self.max_clock,
            max_memory,
            http: http::Limits::default(),
            abandon_after: self.abandon_after,
            stall_search: self.test_stall_search,
            threads: matches::Threads::Fixed,
        })
    }
}
