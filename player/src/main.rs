//! `propel`: the command-line front of the toolchain.

mod cmd;
mod machines;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

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
}

fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    // Our crates at the chosen level; dependencies (Cranelift logs every
    // function it defines at info) only when they warn.
    let directives = format!("warn,propel={default},propel_compiler={default},propel_runtime={default}");
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(directives));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
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
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
