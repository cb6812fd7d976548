#!/usr/bin/env python3
"""Chooses the broad strength suite (scripts/suites/broad.tsv) from the
description of the corpus's base/ games that scripts/suites/scan.sh writes.

The rule, fixed before any match was played:

* Pool: the current games of ../shared/games/base (Tiltyard's repository,
  the games competitions drew from; older versions `*.vN` left out), less
  the ten-game suite's games (breakthrough, knightThrough, connectFour,
  pentago, nineBoardTicTacToe, reversi, hex, checkers, skirmish,
  speedChess), that `propel analyse --seconds 2` analyses within a minute
  with at least 20 random games played to the end and a mean random game
  of at least 4 moves.
* Each game goes to the first category it fits:
  1. reversed: the name says suicide or misere (goals reward what the
     ordinary game punishes);
  2. puzzle: one role;
  3. multi: three or more roles;
  4. simultaneous: two roles, and some state of the random games gives
     both a choice;
  5. asymmetric: two roles taking turns whose mean branching differs by
     1.5x or more, or whose mean goals in random games differ by 40 points
     or more;
  6. ordinary: the other two-role games.
* From each category, the first games by the SHA-256 of their file (a fixed
  order that favours nothing): 6 reversed, 4 puzzles, 4 multi, 4
  simultaneous, 4 asymmetric, 8 ordinary.

usage: select.py SCAN.jsonl MANIFEST.tsv > broad.tsv
"""
import json
import re
import sys

TEN = {"breakthrough", "knightThrough", "connectFour", "pentago", "nineBoardTicTacToe", "reversi", "hex",
       "checkers", "skirmish", "speedChess"}
TAKE = [("reversed", 6), ("puzzle", 4), ("multi", 4), ("simultaneous", 4), ("asymmetric", 4), ("ordinary", 8)]


def category(r):
    name = r["game"].split("/")[-1]
    roles = list(r["branching"].keys())
    if re.search("suicide|misere", name, re.I):
        return "reversed"
    if len(roles) == 1:
        return "puzzle"
    if len(roles) >= 3:
        return "multi"
    if r["simultaneous"]:
        return "simultaneous"
    b = list(r["branching"].values())
    means = [sum(g * n for g, n in r["goal_distribution"][k]) / max(1, sum(n for _, n in r["goal_distribution"][k]))
             for k in roles]
    if max(b) >= 1.5 * max(min(b), 1e-9) or abs(means[0] - means[1]) >= 40:
        return "asymmetric"
    return "ordinary"


def main():
    scan = [json.loads(line) for line in open(sys.argv[1])]
    sha = {}
    for line in open(sys.argv[2]):
        cols = line.rstrip("\n").split("\t")
        if cols[0].endswith(".kif"):
            sha[cols[0][:-4]] = cols[3]
    pools = {c: [] for c, _ in TAKE}
    for r in scan:
        if r.get("refused") or r["game"].split("/")[-1] in TEN:
            continue
        if r["games"] < 20 or r["avg_length"] < 4:
            continue
        pools[category(r)].append(r["game"])
    print("game\tcategory")
    for c, k in TAKE:
        for g in sorted(pools[c], key=lambda g: sha[g])[:k]:
            print(f"{g}\t{c}")
    for c, _ in TAKE:
        print(f"{c}: {len(pools[c])} eligible", file=sys.stderr)


if __name__ == "__main__":
    main()
