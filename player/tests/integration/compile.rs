//! `propel compile` never damages what is at its output: a failed or
//! killed compile leaves the previous library as it was, files it did not
//! create survive, a header's name is refused for the library, and two
//! compiles of a game give the same bytes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::skip;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn game(name: &str) -> String {
    root().join(format!("games/{name}.kif")).display().to_string()
}

fn propel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_propel")).args(args).env("RUST_LOG", "warn").output().unwrap()
}

fn has_cc() -> bool {
    let ok = Command::new("cc").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        skip::skip("no `cc`");
    }
    ok
}

fn fresh_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("propel-compile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn a_failed_compile_keeps_the_library_and_other_files() {
    if !has_cc() {
        return;
    }
    let dir = fresh_dir("fail");
    let so = dir.join("ttt.so");
    let so_arg = so.to_str().unwrap();
    let o = propel(&["compile", &game("tictactoe"), "-o", so_arg]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let good = std::fs::read(&so).unwrap();
    let header = std::fs::read(dir.join("ttt.h")).unwrap();
    // Files beside the output that the compiler must leave alone, one of
    // them named as its object file once was.
    std::fs::write(dir.join("ttt.o"), b"someone else's object file").unwrap();
    std::fs::write(dir.join("notes.txt"), b"keep me").unwrap();
    let broken = dir.join("broken.kif");
    std::fs::write(&broken, "(role x) (<= (legal x a)").unwrap();
    let before = listing(&dir);
    // Linking fails: the C compiler is `false`.
    let o = propel(&["compile", &game("connect4"), "-o", so_arg, "--cc", "false"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("linking"), "{}", String::from_utf8_lossy(&o.stderr));
    // The game does not parse.
    let o = propel(&["compile", broken.to_str().unwrap(), "-o", so_arg]);
    assert!(!o.status.success());
    // A library named like a header, a header named like the library.
    let y = dir.join("y.h");
    let o = propel(&["compile", &game("tictactoe"), "-o", y.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("header's extension"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!y.exists());
    let o = propel(&["compile", &game("tictactoe"), "-o", so_arg, "--header", so_arg]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read(&so).unwrap(), good, "the library is untouched");
    assert_eq!(std::fs::read(dir.join("ttt.h")).unwrap(), header, "the header is untouched");
    assert_eq!(std::fs::read(dir.join("ttt.o")).unwrap(), b"someone else's object file");
    assert_eq!(std::fs::read(dir.join("notes.txt")).unwrap(), b"keep me");
    assert_eq!(listing(&dir), before, "no file added or removed");
    let o = propel(&["check", &game("tictactoe"), "--machine", &format!("aot:{so_arg}")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // `check` checks the library it is given: a cut one, another game's.
    let cut = dir.join("cut.so");
    std::fs::write(&cut, &good[..good.len() / 2]).unwrap();
    let o = propel(&["check", &game("tictactoe"), "--machine", &format!("aot:{}", cut.display())]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("truncated"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = propel(&["check", &game("connect4"), "--json", "--machine", &format!("aot:{so_arg}")]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\"category\":\"library\"") && out.contains("stale"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compiles_are_deterministic() {
    if !has_cc() {
        return;
    }
    let dir = fresh_dir("same");
    for name in ["connect4", "breakthrough", "firewall"] {
        let (a, b) = (dir.join(format!("{name}-a.so")), dir.join(format!("{name}-b.so")));
        for out in [&a, &b] {
            let o = propel(&["compile", &game(name), "-o", out.to_str().unwrap()]);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert!(x == y, "{name}: two compiles differ ({} and {} bytes)", x.len(), y.len());
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Killed at any point, a compile leaves either the previous library or
/// the new one (the same bytes here: compiles are deterministic), never a
/// damaged file; only its own temporary files may remain.
#[test]
fn a_killed_compile_leaves_a_whole_library() {
    if !has_cc() {
        return;
    }
    let dir = fresh_dir("kill");
    let so = dir.join("b.so");
    let so_arg = so.to_str().unwrap().to_string();
    let g = game("breakthrough");
    let t = std::time::Instant::now();
    let o = propel(&["compile", &g, "-o", &so_arg]);
    let took = t.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let good = std::fs::read(&so).unwrap();
    // Kills spread over the whole compile (reading, grounding, code
    // generation, linking, sealing, renaming) and just after it.
    for k in 0..10u32 {
        let ms = (took * k / 8).as_millis() as u64;
        let mut child = Command::new(env!("CARGO_BIN_EXE_propel"))
            .args(["compile", &g, "-o", &so_arg])
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
        assert!(std::fs::read(&so).unwrap() == good, "killed after {ms} ms: the library changed");
        for f in listing(&dir) {
            let ours = f.starts_with(".b.so.propel-") || f.starts_with(".b.h.propel-");
            assert!(ours || f == "b.so" || f == "b.h", "killed after {ms} ms: a stray {f}");
        }
    }
    let o = propel(&["check", &g, "--machine", &format!("aot:{so_arg}")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(&dir).ok();
}
