#!/usr/bin/env python3
"""Random playouts/s from Python (`Game.random_playouts`, one thread)
against the `propel playouts --machine jit --fast` CLI, alternating runs on
the same machine; and the per-step overhead of the Python API
(`legal_move_ids` + `next_state`) over the same work done in Rust.

    python python/bench/playouts.py --propel target/release/propel [--seconds 3] [--repeat 3] GAME.kif...

Prints one JSON line per measurement and a summary of medians.
"""

import argparse
import json
import random
import statistics
import subprocess
import time

import propel


def cli_rate(binary, game, seconds):
    out = subprocess.run(
        [binary, "playouts", game, "--machine", "jit", "--fast", "--seconds", str(seconds), "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)["playouts_per_s"]


def py_rate(g, seconds):
    n = 1024
    while True:  # calibrate to about a tenth of the time
        t = time.perf_counter()
        g.random_playouts(n, seed=5)
        if time.perf_counter() - t > seconds / 10:
            break
        n *= 2
    n *= 10
    t = time.perf_counter()
    g.random_playouts(n, seed=1, threads=1)
    return n / (time.perf_counter() - t)


def py_step_seconds(g, n, seed=1):
    """Seconds for n random steps through the Python API (the loop
    `_bench_steps` runs in Rust)."""
    rng = random.Random(seed)
    roles = range(len(g.roles))
    s0 = g.initial_state()
    s = s0
    legal, nxt, term, choice = g.legal_move_ids, g.next_state, g.is_terminal, rng.choice
    t = time.perf_counter()
    for _ in range(n):
        if term(s):
            s = s0
        s = nxt(s, [choice(legal(s, r)) for r in roles])
    return time.perf_counter() - t


def python_loop_floor(n, roles, seed=1):
    """The same loop with trivial stand-ins for the API calls: the cost of
    the Python code around them (interpreter, list, random.choice)."""
    rng = random.Random(seed)
    ids = list(range(5))
    legal = lambda s, r: ids  # noqa: E731
    nxt = lambda s, j: s  # noqa: E731
    term = lambda s: False  # noqa: E731
    choice, s = rng.choice, 0
    t = time.perf_counter()
    for _ in range(n):
        if term(s):
            s = 0
        s = nxt(s, [choice(legal(s, r)) for r in range(roles)])
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("games", nargs="+")
    ap.add_argument("--propel", required=True, help="the propel binary (a release build)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300_000, help="steps for the overhead measurement")
    a = ap.parse_args()
    summary = {}
    for game in a.games:
        g = propel.load(game, "jit")
        cli, py = [], []
        for _ in range(a.repeat):
            cli.append(cli_rate(a.propel, game, a.seconds))
            py.append(py_rate(g, a.seconds))
            print(json.dumps({"game": game, "cli_playouts_per_s": cli[-1], "python_playouts_per_s": py[-1]}))
        summary[game] = {"cli": statistics.median(cli), "python": statistics.median(py)}
        summary[game]["python/cli"] = summary[game]["python"] / summary[game]["cli"]
    for game in a.games:
        for machine in ("jit", "propnet"):
            g = propel.load(game, machine)
            rust, pyt = [], []
            for _ in range(a.repeat):
                rust.append(g._bench_steps(a.steps) / a.steps)
                pyt.append(py_step_seconds(g, a.steps) / a.steps)
            floor = python_loop_floor(a.steps, len(g.roles)) / a.steps
            r, p = statistics.median(rust), statistics.median(pyt)
            row = {
                "rust_step_us": r * 1e6,
                "python_step_us": p * 1e6,
                "overhead_us": (p - r) * 1e6,
                "python_loop_floor_us": floor * 1e6,
                "api_overhead_us": (p - r - floor) * 1e6,
            }
            summary.setdefault(game, {})[f"step_{machine}"] = row
            print(json.dumps({"game": game, "machine": machine, **row}))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
