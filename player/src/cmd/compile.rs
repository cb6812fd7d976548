//! `propel compile GAME.kif -o GAME.so`: a native machine library and its
//! C header, loadable later without the front end (`--machine aot:GAME.so`).

use crate::machines::{load_game, MachineArgs};
use anyhow::{bail, Context, Result};
use propel_compiler::lower::{c_header, game_hash, object};
use propel_runtime::build::{prepare, PropnetOptions};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

#[derive(clap::Args)]
pub struct Args {
    /// The game (.kif).
    game: PathBuf,
    /// The library to write (a shared object).
    #[arg(short, long)]
    output: PathBuf,
    /// The C header to write (default: the library's name with `.h`).
    #[arg(long)]
    header: Option<PathBuf>,
    /// The C compiler that links the library.
    #[arg(long, default_value = "cc")]
    cc: String,
    #[command(flatten)]
    machine: MachineArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = std::fs::read(&a.game).with_context(|| format!("reading {}", a.game.display()))?;
    let game = load_game(&a.game)?;
    // The split decision is measured on the interpreter, as for the JIT.
    let opts = PropnetOptions { limits: a.machine.limits(), passes: a.machine.passes()? };
    let prepared = prepare(&game, &opts)?;
    let machine = prepared.lower_machine();
    let c = prepared.net();
    let (bytes, layout, stats) = object(&machine, &game_hash(&text))?;
    let dir = std::env::temp_dir().join(format!("propel-compile-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let obj = dir.join("game.o");
    std::fs::write(&obj, &bytes)?;
    let out = Command::new(&a.cc)
        .arg("-shared")
        .arg("-o")
        .arg(&a.output)
        .arg(&obj)
        .output()
        .with_context(|| format!("running the C compiler `{}` to link the library", a.cc))?;
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        bail!("linking {} failed:\n{}", a.output.display(), String::from_utf8_lossy(&out.stderr));
    }
    let header = a.header.clone().unwrap_or_else(|| a.output.with_extension("h"));
    std::fs::write(&header, c_header(&a.game.display().to_string(), &layout, c))
        .with_context(|| format!("writing {}", header.display()))?;
    println!(
        "{}: {} components{}, {} functions, {} counter updates, {} bytes of object code, {:.2} s; header {}",
        a.output.display(),
        c.len(),
        if machine.split.is_some() { " (split)" } else { "" },
        stats.functions,
        stats.updates,
        stats.code_bytes,
        stats.seconds,
        header.display()
    );
    Ok(ExitCode::SUCCESS)
}
