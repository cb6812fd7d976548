//! A C program built with `cc` against a library and header from `propel
//! compile` drives the tic-tac-toe machine as a search would: random
//! playouts, states read back and set (an exact minimax over the whole
//! game tree, through `propel_set_state`, `propel_step` and
//! `propel_get_state`), instances copied (`propel_clone`), and a UCT tree
//! search that walks copies of the root instance and names its move
//! (`propel_input_name`).

use std::path::PathBuf;
use std::process::Command;

use crate::skip;

const MAIN_C: &str = r#"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ttt.h"

typedef struct { uint64_t bits[PROPEL_STATE_WORDS]; } state_t;

static void *new_inst(void) {
    void *p = aligned_alloc(64, (PROPEL_INSTANCE_SIZE + 63) / 64 * 64);
    if (!p) exit(2);
    return p;
}

static int same(const state_t *a, const state_t *b) {
    return memcmp(a->bits, b->bits, sizeof a->bits) == 0;
}

/* The joint moves of the current state (every combination of the roles'
   legal inputs); *mover: the role with a choice (0 if none has). */
#define MAXJ 64
static int joints(void *inst, uint32_t out[MAXJ][PROPEL_ROLES], int *mover) {
    uint32_t legal[PROPEL_ROLES][PROPEL_INPUTS];
    int n[PROPEL_ROLES], total = 1;
    *mover = 0;
    for (int r = 0; r < PROPEL_ROLES; r++) {
        n[r] = propel_legal(inst, r, legal[r], PROPEL_INPUTS);
        if (n[r] > 1) *mover = r;
        total *= n[r];
    }
    if (total > MAXJ) total = MAXJ;
    for (int k = 0; k < total; k++) {
        int idx = k;
        for (int r = PROPEL_ROLES - 1; r >= 0; r--) {
            out[k][r] = legal[r][idx % n[r]];
            idx /= n[r];
        }
    }
    return total;
}

/* The value (largest goal) of role in the current state, -1 if none. */
static int goal(void *inst, int role) {
    uint64_t m[2];
    propel_goals(inst, role, m);
    for (int v = 100; v >= 0; v--)
        if (m[v / 64] >> (v % 64) & 1) return v;
    return -1;
}

/* Exact minimax for role 0 over every node below s, moving between nodes
   only by setting, stepping and reading states back. */
static long nodes, mismatches;
static int minimax(void *inst, const state_t *s) {
    state_t back;
    nodes++;
    propel_set_state(inst, s->bits);
    propel_get_state(inst, back.bits);
    if (!same(s, &back)) mismatches++;
    if (propel_terminal(inst)) return goal(inst, 0);
    uint32_t js[MAXJ][PROPEL_ROLES];
    int mover, nj = joints(inst, js, &mover);
    int best = mover == 0 ? -1 : 101;
    for (int j = 0; j < nj; j++) {
        state_t child;
        propel_set_state(inst, s->bits);
        if (propel_step(inst, js[j]) != 0) exit(5);
        propel_get_state(inst, child.bits);
        int v = minimax(inst, &child);
        if (mover == 0 ? v > best : v < best) best = v;
    }
    return best;
}

/* UCT: a tree of states; each iteration copies the root instance, walks
   down by stepping, expands one node, plays out, and backs up. */
typedef struct {
    state_t s;
    long n;
    double sum[PROPEL_ROLES];
    int expanded, terminal, mover, nj, first;
    uint32_t js[MAXJ][PROPEL_ROLES];
} node_t;

#define POOL 200000
static node_t *pool;
static int used;

static int uct(void *root, int iterations, uint64_t seed) {
    void *work = new_inst(), *tmp = new_inst();
    used = 1;
    memset(&pool[0], 0, sizeof pool[0]);
    propel_get_state(root, pool[0].s.bits);
    pool[0].terminal = propel_terminal(root);
    for (int it = 0; it < iterations; it++) {
        int path[64], depth = 0, cur = 0;
        path[depth++] = 0;
        propel_clone(root, work);
        while (pool[cur].expanded && !pool[cur].terminal) {
            node_t *p = &pool[cur];
            int pick = -1;
            double best = -1.0;
            for (int k = 0; k < p->nj; k++) {
                node_t *c = &pool[p->first + k];
                double u = c->n == 0 ? 1e9
                    : c->sum[p->mover] / c->n / 100.0 + 1.4 * sqrt(log((double)p->n) / c->n);
                if (u > best) { best = u; pick = k; }
            }
            if (propel_step(work, p->js[pick]) != 0) exit(6);
            cur = p->first + pick;
            state_t here;
            propel_get_state(work, here.bits);
            if (!same(&here, &pool[cur].s)) mismatches++;
            path[depth++] = cur;
        }
        if (!pool[cur].terminal && !pool[cur].expanded) {
            node_t *p = &pool[cur];
            p->nj = joints(work, p->js, &p->mover);
            if (used + p->nj > POOL) break;
            p->first = used;
            used += p->nj;
            for (int k = 0; k < p->nj; k++) {
                node_t *c = &pool[p->first + k];
                memset(c, 0, sizeof *c);
                propel_clone(work, tmp);
                if (propel_step(tmp, p->js[k]) != 0) exit(7);
                propel_get_state(tmp, c->s.bits);
                c->terminal = propel_terminal(tmp);
            }
            p->expanded = 1;
            if (propel_step(work, p->js[0]) != 0) exit(8);
            cur = p->first;
            path[depth++] = cur;
        }
        int32_t goals[PROPEL_ROLES];
        if (propel_playout(work, seed + it, goals, 1000) < 0) exit(9);
        for (int d = 0; d < depth; d++) {
            pool[path[d]].n++;
            for (int r = 0; r < PROPEL_ROLES; r++) pool[path[d]].sum[r] += goals[r] < 0 ? 0 : goals[r];
        }
    }
    int pick = 0;
    for (int k = 1; k < pool[0].nj; k++)
        if (pool[pool[0].first + k].n > pool[pool[0].first + pick].n) pick = k;
    free(work);
    free(tmp);
    return pick;
}

/* The input of role named name (-1 if there is none). */
static int input(int role, const char *name) {
    for (uint32_t i = 0; i < PROPEL_INPUTS; i++)
        if (propel_input_role(i) == role && strcmp(propel_input_name(i), name) == 0) return (int)i;
    return -1;
}

static int play(void *inst, const char *x, const char *o) {
    uint32_t joint[2] = {(uint32_t)input(0, x), (uint32_t)input(1, o)};
    return propel_step(inst, joint);
}

int main(void) {
    void *inst = new_inst(), *copy = new_inst();
    pool = calloc(POOL, sizeof *pool);
    if (!pool) return 2;
    /* Playouts. */
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

    /* Names and counts through the ABI. */
    int names_ok = propel_roles() == PROPEL_ROLES && propel_bases() == PROPEL_BASES
        && propel_inputs() == PROPEL_INPUTS && propel_instance_size() == PROPEL_INSTANCE_SIZE
        && strcmp(propel_role_name(0), "xplayer") == 0 && strcmp(propel_role_name(1), "oplayer") == 0
        && propel_role_name(2) == NULL && propel_role_name(-1) == NULL
        && propel_base_name(0) != NULL && propel_base_name(PROPEL_BASES) == NULL
        && propel_input_name(PROPEL_INPUTS) == NULL && propel_input_role(PROPEL_INPUTS) == -1
        && input(0, "(mark 1 3)") >= 0 && input(1, "noop") >= 0;
    printf("names=%s move0=%s\n", names_ok ? "ok" : "bad", propel_input_name(moves[0]));

    /* State round trip and copies: a copy keeps its state while the
       original steps on; setting the old state brings it back. */
    state_t s0, s1, s2, c0;
    propel_reset(inst);
    propel_get_state(inst, s0.bits);
    propel_clone(inst, copy);
    int rc1 = play(inst, "(mark 2 2)", "noop");
    propel_get_state(inst, s1.bits);
    propel_get_state(copy, c0.bits);
    int clone_ok = rc1 == 0 && !same(&s0, &s1) && same(&c0, &s0);
    propel_set_state(inst, s0.bits);
    propel_get_state(inst, s2.bits);
    int roundtrip_ok = same(&s2, &s0) && propel_legal(inst, 0, moves, PROPEL_INPUTS) == 9;
    uint32_t center[2] = {(uint32_t)input(0, "(mark 2 2)"), (uint32_t)input(1, "noop")};
    propel_set_joint(inst, center);
    propel_get_next(inst, s2.bits);
    roundtrip_ok = roundtrip_ok && same(&s2, &s1);
    printf("clone=%s roundtrip=%s\n", clone_ok ? "ok" : "bad", roundtrip_ok ? "ok" : "bad");

    /* The whole game tree. */
    propel_reset(inst);
    int value = minimax(inst, &s0);
    printf("nodes=%ld value=%d\n", nodes, value);

    /* UCT where x wins at once with (mark 1 3). */
    propel_reset(inst);
    if (play(inst, "(mark 1 1)", "noop") || play(inst, "noop", "(mark 2 1)")
        || play(inst, "(mark 1 2)", "noop") || play(inst, "noop", "(mark 2 2)")) return 10;
    int pick = uct(inst, 3000, 1);
    node_t *root = &pool[0];
    printf("best=%s visits=%ld tree=%d\n", propel_input_name(root->js[pick][root->mover]), root->n, used);
    /* And from the start: every move draws; it only has to run. */
    propel_reset(inst);
    pick = uct(inst, 3000, 2);
    printf("opening=%s tree=%d mismatches=%ld\n", propel_input_name(pool[0].js[pick][pool[0].mover]), used,
           mismatches);
    free(inst);
    free(copy);
    free(pool);
    return 0;
}
"#;

/// The field `key=` of the program's output.
fn field<'a>(out: &'a str, key: &str) -> &'a str {
    let pat = format!("{key}=");
    let at = out.find(&pat).unwrap_or_else(|| panic!("no {key} in {out}"));
    out[at + pat.len()..].split([' ', '\n']).next().unwrap_or_default()
}

#[test]
fn c_program_searches_the_game() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::temp_dir().join(format!("propel-aot-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if Command::new("cc").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        skip::skip("no `cc`");
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
        .args(["-std=c11", "-O2", "-Wall", "-Werror"])
        .arg("-I")
        .arg(&dir)
        .arg(dir.join("main.c"))
        .arg(&so)
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-lm")
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(&exe).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    eprintln!("{out}");
    assert!(o.status.success(), "exit {:?}: {out}", o.status);
    assert_eq!(field(&out, "legal0"), "9");
    assert_eq!(field(&out, "terminal"), "0");
    assert_eq!(field(&out, "set_joint"), "3,0,3");
    let avg: f64 = field(&out, "avg_length").parse().unwrap();
    assert!((5.0..=9.0).contains(&avg), "{avg}");
    // Tic-tac-toe goals add up to 100 in every game (100/0 or 50/50).
    let goals: Vec<i64> = field(&out, "goals").split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(goals[0] + goals[1], 2000 * 100);
    assert_eq!(field(&out, "names"), "ok");
    assert!(field(&out, "move0").starts_with("(mark"), "{out}");
    assert_eq!(field(&out, "clone"), "ok");
    assert_eq!(field(&out, "roundtrip"), "ok");
    // The whole tic-tac-toe game tree has 549,946 nodes and is a draw.
    assert_eq!(field(&out, "nodes"), "549946");
    assert_eq!(field(&out, "value"), "50");
    assert_eq!(field(&out, "mismatches"), "0");
    // The tree search finds the winning move and grows a tree.
    assert!(out.contains("best=(mark 1 3) "), "{out}");
    assert!(field(&out, "visits").parse::<u64>().unwrap() >= 2999);
    assert!(field(&out, "tree").parse::<u64>().unwrap() > 100);
    std::fs::remove_dir_all(&dir).ok();
}
