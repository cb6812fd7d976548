//! `propel compile GAME.kif -o GAME.so`: a native machine library and its
//! C header, loadable later without the front end (`--machine aot:GAME.so`).

use crate::machines::BuildArgs;
use anyhow::{bail, Context, Result};
use propel_compiler::lower::{c_header, game_hash, object, CodeStats};
use propel_runtime::build::{prepare, Prepared};
use std::path::{Path, PathBuf};
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
    build: BuildArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = std::fs::read(&a.game).with_context(|| format!("reading {}", a.game.display()))?;
    let game = a.build.load_game(&a.game)?;
    // The split decision is measured on the interpreter, as for the JIT.
    let opts = a.build.build_options()?;
    let prepared = prepare(&game, &opts)?;
    let header = a.header.clone().unwrap_or_else(|| a.output.with_extension("h"));
    let stats = write_library(&prepared, &text, &a.game.display().to_string(), &a.output, &header, &a.cc)?;
    println!(
        "{}: {} components{}, {} functions, {} counter updates, {} bytes of object code, {:.2} s; header {}",
        a.output.display(),
        prepared.native_net().len(),
        if prepared.lower_machine().split.is_some() { " (split)" } else { "" },
        stats.functions,
        stats.updates,
        stats.code_bytes,
        stats.seconds,
        header.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Generates `prepared`'s code as an object file, links it into the shared
/// library `output` with the C compiler `cc`, and writes its C header.
/// `text` is the game file's text (its hash goes into the library). The
/// object file lies beside `output` until it is linked.
pub fn write_library(
    prepared: &Prepared,
    text: &[u8],
    source: &str,
    output: &Path,
    header: &Path,
    cc: &str,
) -> Result<CodeStats> {
    let machine = prepared.lower_machine();
    let (bytes, layout, stats) = object(&machine, &game_hash(text), prepared.codegen())?;
    let obj = output.with_extension("o");
    std::fs::write(&obj, &bytes).with_context(|| format!("writing {}", obj.display()))?;
    let out = Command::new(cc)
        .arg("-shared")
        .arg("-o")
        .arg(output)
        .arg(&obj)
        .output()
        .with_context(|| format!("running the C compiler `{cc}` to link the library"));
    let _ = std::fs::remove_file(&obj);
    let out = out?;
    if !out.status.success() {
        bail!("linking {} failed:\n{}", output.display(), String::from_utf8_lossy(&out.stderr));
    }
    std::fs::write(header, c_header(source, &layout, prepared.native_net()))
        .with_context(|| format!("writing {}", header.display()))?;
    Ok(stats)
}
