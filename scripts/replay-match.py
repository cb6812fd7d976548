#!/usr/bin/env python3
"""Replays one role's moves of a match record with a longer search.

For each state where ROLE chose among several moves, this runs `propel
search` twice for SECONDS each: from the state before the move (the move a
longer search prefers, with its value) and from the state after the move
that was played (that move's value for ROLE, as the longer search sees
it). A ply where the two values differ by more than THRESHOLD points is
marked: the longer search would not have played the move. Not a test: a
tool for finding where a match was lost.

    scripts/replay-match.py RECORD.json ROLE [--propel P] [--seconds S]
        [--analyse A] [--search SETTINGS] [--from-ply N] [--threshold T]

RECORD.json is a `propel match` record (its `gameFile` must exist); the
output is one line per ply: ply, the move played, the better move, and
both values.
"""
import argparse
import json
import subprocess
import sys


def search(args, game, state, role):
    # A record's state is one list of facts: `((cell 1 1 b) ...)`.
    state = state.strip()
    if state.startswith("((") and state.endswith(")"):
        state = state[1:-1]
    cmd = [args.propel, "search", game, "--state", state, "--seconds", str(args.seconds),
           "--role", role, "--json", "--analyse", str(args.analyse)]
    if args.search:
        cmd += ["--search", args.search]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("record")
    p.add_argument("role")
    p.add_argument("--propel", default="target/release/propel")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--analyse", type=float, default=2.0)
    p.add_argument("--search", default="")
    p.add_argument("--from-ply", type=int, default=0)
    p.add_argument("--threshold", type=float, default=15.0)
    args = p.parse_args()

    rec = json.load(open(args.record))
    roles = rec["gameRoleNames"]
    if args.role not in roles:
        sys.exit(f"{args.role} is not a role of {rec['gameName']} ({' '.join(roles)})")
    r = roles.index(args.role)
    game = rec["gameFile"]
    states, moves = rec["states"], rec["moves"]
    print(f"# {rec['matchId']}: {' '.join(roles)}, goals {rec['goalValues']}, {len(moves)} plies")
    for ply, joint in enumerate(moves):
        if ply < args.from_ply or ply + 1 >= len(states):
            continue
        if joint[r] == "noop":
            continue
        before = search(args, game, states[ply], args.role)
        if before is None:
            print(f"{ply:3} {joint[r]:24} search failed before the move")
            continue
        after = search(args, game, states[ply + 1], args.role)
        if after is None:
            print(f"{ply:3} {joint[r]:24} search failed after the move")
            continue
        best, vb, vp = before.get("move"), before.get("value"), after.get("value")
        mark = " <<" if best != joint[r] and vb is not None and vp is not None and vb - vp > args.threshold else ""
        print(f"{ply:3} played {joint[r]:22} {vp:6.1f}   longer search: {best:22} {vb:6.1f}{mark}",
              flush=True)


if __name__ == "__main__":
    main()
