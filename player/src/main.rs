//! `propel`: the command-line front of the toolchain.

mod chart;
mod cmd;
mod ggp;
mod machines;
mod opts;
mod position;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use tracing_subscriber::prelude::*;

#[derive(Parser)]
#[command(name = "propel", version, about = "General Game Playing toolchain: GDL -> propnet -> native code")]
struct Cli {
    /// More logging (-v: debug, -vv: trace). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a game: print its roles and rule counts, or the error (exit 1).
    Check(cmd::check::Args),
    /// Count joint-move paths of each length from the initial state.
    Perft(cmd::perft::Args),
    /// Play one random game and print every step as a JSON line.
    Trace(cmd::trace::Args),
    /// Random playouts for a while; print playouts/s and states/s.
    Playouts(cmd::playouts::Args),
    /// Check every .kif file under a folder; write a TSV and a summary.
    Corpus(cmd::corpus::Args),
    /// Compare the propnet with the prover: perft and seeded traces.
    Compare(cmd::compare::Args),
    /// Compile a game to a native machine library (.so) and a C header.
    Compile(cmd::compile::Args),
    /// Playout speed of the prover, interpreted propnet and JIT, per game.
    Bench(cmd::bench::Args),
    /// Monte Carlo tree search from the initial state.
    Search(cmd::search::Args),
    /// Games between two search settings, a fixed time per move each.
    Duel(cmd::duel::Args),
    /// Meta-gaming analysis: statistics, tuning, heuristics, latches, factors.
    Analyse(cmd::analyse::Args),
    /// The GGP player: serve the GGP protocol over HTTP.
    Serve(cmd::serve::Args),
    /// Run matches over HTTP between GGP players (URLs or built-in ones).
    Match(cmd::play_match::Args),
    /// Render match records and statistics as a self-contained HTML page.
    Report(cmd::report::Args),
}

fn init_logging(verbose: u8) {
    use std::str::FromStr;
    use tracing::level_filters::LevelFilter;
    use tracing_subscriber::filter::Targets;
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    // Our crates at the chosen level; dependencies (Cranelift logs every
    // function it defines at info) only when they warn.
    let directives = format!("warn,propel={default},propel_compiler={default},propel_runtime={default}");
    let console = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| Targets::from_str(&v).ok())
        .or_else(|| Targets::from_str(&directives).ok())
        .unwrap_or_default();
    // Matches' own files get our crates' debug events whatever the console
    // shows, so the global filter lets those through and the console's
    // formatter drops what the console does not want. (Per-layer filters
    // would be the obvious tool, but with a second layer beside them they
    // lose the first event of a callsite: tokio-rs/tracing#3347.)
    let mut global = console.clone();
    for c in ["propel", "propel_compiler", "propel_runtime"] {
        let level =
            if console.would_enable(c, &tracing::Level::TRACE) { LevelFilter::TRACE } else { LevelFilter::DEBUG };
        global = global.with_target(c, level);
    }
    let fmt = tracing_subscriber::fmt::format().with_target(false);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .event_format(ggp::logs::Gate { inner: fmt, targets: console });
    tracing_subscriber::registry().with(global).with(layer).with(ggp::logs::MatchFiles).init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let result = match cli.command {
        Command::Check(a) => cmd::check::run(a),
        Command::Perft(a) => cmd::perft::run(a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Playouts(a) => cmd::playouts::run(a),
        Command::Corpus(a) => cmd::corpus::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Compile(a) => cmd::compile::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Search(a) => cmd::search::run(a),
        Command::Duel(a) => cmd::duel::run(a),
        Command::Analyse(a) => cmd::analyse::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Match(a) => cmd::play_match::run(a),
        Command::Report(a) => cmd::report::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
