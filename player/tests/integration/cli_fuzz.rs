//! A property test over the command line's numeric options: the binary,
//! run with edge values and random values of every numeric option of
//! every command, never panics and never dies of a signal (an allocation
//! failure aborts). A run still going after a second has passed its
//! start-up (where options are read, converted and allocated for) and is
//! stopped: the time is bounded whatever a value asks for.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Values every option gets: edges of every parser.
const EDGES: [&str; 16] = [
    "0",
    "-0",
    "1",
    "-1",
    "0.5",
    "1e-300",
    "1e300",
    "-1e300",
    "nan",
    "-inf",
    "99999999999",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "",
    "abc",
];

/// Random values: integers of any size and sign, reals over 600 orders of
/// magnitude (wyrand, seeded: the same values on every run).
fn random_values(seed: u64, n: usize) -> Vec<String> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (s as u128).wrapping_mul((s ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) ^ t) as u64
    };
    (0..n)
        .map(|_| {
            let r = next();
            match r % 4 {
                0 => (next() >> (next() % 64)).to_string(),
                1 => format!("-{}", next() >> (next() % 64)),
                2 => format!("{:e}", f64::from_bits(next()).abs() % 1e300),
                _ => format!("{}", (next() % 2000) as f64 / 7.0),
            }
        })
        .collect()
}

/// How long a run may go on: well past reading the options and the game.
const LIMIT: Duration = Duration::from_millis(500);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One run: `Err` when it panicked or died of a signal; `Ok(true)` when
/// it was still running at the time limit.
fn run(args: &[String], scratch: &std::path::Path) -> Result<bool, String> {
    let err = scratch.join(format!("stderr-{}", args.join("_").len()));
    let file = std::fs::File::create(&err).map_err(|e| e.to_string())?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_propel"))
        .args(args)
        .current_dir(root())
        .env("RUST_LOG", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(st) => break Some(st),
            None if start.elapsed() > LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let text = std::fs::read_to_string(&err).unwrap_or_default();
    if text.contains("panicked") || text.contains("memory allocation of") {
        return Err(format!("{args:?}: {text}"));
    }
    let Some(status) = status else { return Ok(true) };
    if status.code() == Some(101) {
        return Err(format!("{args:?}: exit 101: {text}"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return Err(format!("{args:?}: killed by signal {sig}: {text}"));
        }
    }
    Ok(false)
}

#[test]
fn numeric_options_never_panic_or_abort() {
    let scratch = std::env::temp_dir().join(format!("propel-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(scratch.join("corpus")).unwrap();
    std::fs::copy(root().join("games/tictactoe.kif"), scratch.join("corpus/t.kif")).unwrap();
    let corpus = scratch.join("corpus").display().to_string();
    let out = scratch.join("out").display().to_string();
    let ttt = "games/tictactoe.kif";
    let matched = ["match", ttt, "--player", "builtin:random", "--player", "builtin:random", "-o", &out];
    // (command and fixed arguments, the option given each value)
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["perft", ttt], "--depth"),
        (vec!["perft", ttt, "--depth", "1"], "--ground-seconds"),
        (vec!["perft", ttt, "--depth", "1"], "--max-file-mb"),
        (vec!["perft", ttt, "--depth", "1", "--machine", "jit"], "--codegen-threads"),
        (vec!["trace", ttt], "--seed"),
        (vec!["trace", ttt], "--max-steps"),
        (vec!["playouts", ttt], "--seconds"),
        (vec!["playouts", ttt], "--count"),
        (vec!["search", ttt, "--seconds", "0.1"], "--threads"),
        (vec!["search", ttt, "--seconds", "0.1"], "--pool"),
        (vec!["search", ttt, "--seconds", "0.1"], "--exploration"),
        (vec!["search", ttt], "--seconds"),
        (vec!["analyse", ttt], "--seconds"),
        (vec!["bench", ttt, "--threads", "1"], "--seconds"),
        (vec!["bench", ttt, "--seconds", "0.01"], "--threads"),
        (vec!["compare", ttt, "--aot", "false", "--jit", "false"], "--depth"),
        (vec!["compare", ttt, "--aot", "false", "--jit", "false"], "--perft-nodes"),
        (vec!["compare", ttt, "--aot", "false", "--jit", "false"], "--traces"),
        (vec!["compare", ttt, "--aot", "false", "--jit", "false"], "--max-steps"),
        (vec!["check", ttt], "--max-file-mb"),
        (vec!["corpus", &corpus], "--timeout"),
        (vec!["corpus", &corpus], "--jobs"),
        (matched.to_vec(), "--start-clock"),
        (matched.to_vec(), "--play-clock"),
        (matched.to_vec(), "--preview-clock"),
        (matched.to_vec(), "--grace"),
        (matched.to_vec(), "--matches"),
        (matched.to_vec(), "--jobs"),
        (matched.to_vec(), "--threads"),
        (matched.to_vec(), "--pool"),
        (matched.to_vec(), "--exploration"),
        (matched.to_vec(), "--margin"),
        (vec!["serve", "--host", "127.0.0.1"], "--port"),
    ];
    let mut runs: Vec<Vec<String>> = Vec::new();
    for (i, (base, opt)) in cases.iter().enumerate() {
        let values = EDGES.iter().map(|s| s.to_string()).chain(random_values(i as u64, 3));
        for v in values {
            let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
            args.push(opt.to_string());
            args.push(v);
            runs.push(args);
        }
    }
    // A few at a time: most runs end at once with a message; the others
    // wait for their second.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let stopped = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..6 {
            let (runs, next, failures, stopped) = (&runs, &next, &failures, &stopped);
            let scratch = scratch.join(format!("t{t}"));
            std::fs::create_dir_all(&scratch).unwrap();
            s.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(args) = runs.get(i) else { break };
                match run(args, &scratch) {
                    Ok(true) => {
                        stopped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(false) => {}
                    Err(e) => failures.lock().unwrap().push(e),
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "{} runs in {:.1} s, {} stopped at the time limit",
        runs.len(),
        started.elapsed().as_secs_f64(),
        stopped.into_inner()
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    std::fs::remove_dir_all(&scratch).ok();
}
