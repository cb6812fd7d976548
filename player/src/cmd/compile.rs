//! `propel compile GAME.kif -o GAME.so`: a native machine library and its
//! C header, loadable later without the front end (`--machine aot:GAME.so`).
//!
//! Outputs are written under temporary names in the target folder and
//! renamed into place, the header first and the library last, so that an
//! interrupted or failed compile leaves the previous library as it was; the
//! only files removed are the temporary ones this run created.

use crate::machines::BuildArgs;
use anyhow::{bail, Context, Result};
use propel_compiler::lower::{c_header, game_hash, object, CodeStats};
use propel_runtime::build::{prepare, Prepared};
use std::fs::OpenOptions;
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
    let header = a.header.clone().unwrap_or_else(|| a.output.with_extension("h"));
    check_outputs(&a.game, &a.output, &header)?;
    let text = std::fs::read(&a.game).with_context(|| format!("reading {}", a.game.display()))?;
    let game = a.build.load_game(&a.game)?;
    // The split decision is measured on the interpreter, as for the JIT.
    let opts = a.build.build_options()?;
    let prepared = prepare(&game, &opts)?;
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

/// Refuses outputs that would overwrite something else: a library named
/// like a header (`-o y.h`), the header over the library, either over
/// the game, or a folder.
fn check_outputs(game: &Path, output: &Path, header: &Path) -> Result<()> {
    if output.extension().is_some_and(|e| e == "h") {
        bail!("{}: the library's name has the header's extension (.h); name it like GAME.so", output.display());
    }
    if output.file_name().is_none() {
        bail!("{}: not a file name", output.display());
    }
    let same = |x: &Path, y: &Path| {
        x == y || std::fs::canonicalize(x).ok().is_some_and(|c| Some(c) == std::fs::canonicalize(y).ok())
    };
    if same(output, header) {
        bail!("{}: the library and its header would be the same file", output.display());
    }
    for out in [output, header] {
        if same(out, game) {
            bail!("{}: this is the game file; write the outputs elsewhere", out.display());
        }
        if out.is_dir() {
            bail!("{}: is a folder", out.display());
        }
    }
    Ok(())
}

/// Files this run created under temporary names; whatever of them is still
/// there when it is dropped (a failure, or an early return) is removed.
struct Scratch {
    files: Vec<PathBuf>,
}

impl Scratch {
    /// A new empty file beside `target`, under a name no other file has
    /// (it is created here, so nothing existing is ever taken over).
    fn create(&mut self, target: &Path, suffix: &str) -> Result<PathBuf> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut k = 0;
        loop {
            let path = dir.join(format!(".{name}.propel-{}-{k}.{suffix}", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => {
                    self.files.push(path.clone());
                    return Ok(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && k < 1000 => k += 1,
                Err(e) => return Err(e).with_context(|| format!("creating a temporary file in {}", dir.display())),
            }
        }
    }

    /// Renames `tmp` (one of ours) to `target`, atomically.
    fn commit(&mut self, tmp: &Path, target: &Path) -> Result<()> {
        std::fs::rename(tmp, target).with_context(|| format!("writing {}", target.display()))?;
        self.files.retain(|f| f != tmp);
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Generates `prepared`'s code as an object file, links it into the shared
/// library `output` with the C compiler `cc`, seals it (a trailer with its
/// checksum and the game's hash: [`propel_abi::file`]) and writes its C
/// header. `text` is the game file's text.
pub fn write_library(
    prepared: &Prepared,
    text: &[u8],
    source: &str,
    output: &Path,
    header: &Path,
    cc: &str,
) -> Result<CodeStats> {
    let machine = prepared.lower_machine();
    let hash = game_hash(text);
    let (bytes, layout, stats) = object(&machine, &hash, prepared.codegen())?;
    let mut scratch = Scratch { files: Vec::new() };
    let obj = scratch.create(output, "o")?;
    std::fs::write(&obj, &bytes).with_context(|| format!("writing {}", obj.display()))?;
    let lib = scratch.create(output, "so")?;
    let out = Command::new(cc)
        .arg("-shared")
        .arg("-o")
        .arg(&lib)
        .arg(&obj)
        .output()
        .with_context(|| format!("running the C compiler `{cc}` to link the library"))?;
    if !out.status.success() {
        bail!("linking {} failed ({}):\n{}", output.display(), out.status, String::from_utf8_lossy(&out.stderr));
    }
    propel_abi::file::seal(&lib, &hash).with_context(|| format!("writing {}", lib.display()))?;
    let h = scratch.create(header, "h")?;
    std::fs::write(&h, c_header(source, &layout, prepared.native_net()))
        .with_context(|| format!("writing {}", h.display()))?;
    scratch.commit(&h, header)?;
    scratch.commit(&lib, output)?;
    Ok(stats)
}
