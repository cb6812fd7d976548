//! A C program built with `cc` against a library and header from `propel
//! compile` loads the machine and plays tic-tac-toe.

use std::path::PathBuf;
use std::process::Command;

const MAIN_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include "ttt.h"

int main(void) {
    size_t size = (PROPEL_INSTANCE_SIZE + 63) / 64 * 64;
    void *inst = aligned_alloc(64, size);
    if (!inst) return 2;
    int32_t goals[PROPEL_ROLES];
    long total = 0, sum[PROPEL_ROLES] = {0};
    const long playouts = 2000;
    for (long i = 0; i < playouts; i++) {
        if (propel_reset(inst) != 0) return 3;
        int n = propel_playout(inst, (uint64_t)i + 1, goals, 1000);
        if (n < 0) return 4;
        total += n;
        for (int r = 0; r < PROPEL_ROLES; r++) sum[r] += goals[r];
    }
    propel_reset(inst);
    uint32_t moves[PROPEL_INPUTS];
    int legal = propel_legal(inst, 0, moves, PROPEL_INPUTS);
    /* A move of another role is refused (3); the machine then takes a good
       joint move, and refuses the bad one again. */
    uint32_t bad[PROPEL_ROLES], good[PROPEL_ROLES], other[PROPEL_INPUTS];
    for (int r = 0; r < PROPEL_ROLES; r++) bad[r] = PROPEL_INPUTS - 1;
    propel_legal(inst, 1, other, PROPEL_INPUTS);
    good[0] = moves[0];
    good[1] = other[0];
    int rc_bad = propel_set_joint(inst, bad);
    int rc_good = propel_set_joint(inst, good);
    int rc_bad2 = propel_set_joint(inst, bad);
    printf("playouts=%ld avg_length=%.3f legal0=%d terminal=%d goals=%ld,%ld set_joint=%d,%d,%d\n",
           playouts, (double)total / playouts, legal, propel_terminal(inst), sum[0], sum[1],
           rc_bad, rc_good, rc_bad2);
    free(inst);
    return 0;
}
"#;

#[test]
fn c_program_runs_playouts() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::temp_dir().join(format!("propel-aot-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if Command::new("cc").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        eprintln!("SKIPPED: no `cc`");
        return;
    }
    let so = dir.join("ttt.so");
    let o = Command::new(env!("CARGO_BIN_EXE_propel"))
        .args(["compile", root.join("games/tictactoe.kif").to_str().unwrap(), "-o", so.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("ttt.h").is_file());
    std::fs::write(dir.join("main.c"), MAIN_C).unwrap();
    let exe = dir.join("main");
    let o = Command::new("cc")
        .arg("-std=c11")
        .arg("-I")
        .arg(&dir)
        .arg(dir.join("main.c"))
        .arg(&so)
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(&exe).output().unwrap();
    assert!(o.status.success(), "exit {:?}", o.status);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    eprintln!("{out}");
    assert!(out.contains("legal0=9 terminal=0"), "{out}");
    assert!(out.contains("set_joint=3,0,3"), "{out}");
    let avg: f64 = out.split("avg_length=").nth(1).and_then(|s| s.split(' ').next()).unwrap().parse().unwrap();
    assert!((5.0..=9.0).contains(&avg), "{avg}");
    // Tic-tac-toe goals add up to 100 in every game (100/0 or 50/50).
    let goals: Vec<i64> =
        out.split("goals=").nth(1).unwrap().split(' ').next().unwrap().split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(goals[0] + goals[1], 2000 * 100);
}
