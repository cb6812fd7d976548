#!/usr/bin/env python3
"""The strength suite's table, from the match records under OUT.

    scripts/strength-table.py OUT... [--player PLAYER]

Reads OUT/<opponent>/<game>/propel.*.json (what `propel match` writes) and
prints, per opponent and game, the wins, draws and losses of the measured
player (the seat whose name starts with PLAYER@, default `propel`), its
score (a win 1, a draw 1/2) with a normal 95% interval over the matches,
its score in each seat, and the errors and fallbacks of both sides; then
the whole suite per opponent. Several OUTs add up: runs of the same
binaries made at different times (other games, other seeds) give one table.
A last argument that is not a folder is taken as PLAYER, as before. The
last line per opponent is the mean of the games' scores, each game
weighed once whatever its count of matches.
"""

import json
import math
import re
import sys
from pathlib import Path


def interval(scores):
    n = len(scores)
    if n == 0:
        return 0.0, 0.0
    mean = sum(scores) / n
    if n < 2:
        return mean, 0.0
    var = sum((s - mean) ** 2 for s in scores) / (n - 1)
    return mean, 1.96 * math.sqrt(var / n)


def errors_of(rec, seat):
    n = sum(1 for turn in rec.get("errors", []) if seat < len(turn) and turn[seat])
    start = rec.get("startErrors", [])
    n += 1 if seat < len(start) and start[seat] else 0
    return n


class Tally:
    def __init__(self):
        self.scores = []
        self.by_seat = {}
        self.w = self.d = self.l = 0
        self.errors = self.opp_errors = self.fallbacks = 0

    def add(self, score, seat):
        self.scores.append(score)
        self.by_seat.setdefault(seat, []).append(score)
        if score == 1:
            self.w += 1
        elif score == 0:
            self.l += 1
        else:
            self.d += 1

    def merge(self, other):
        self.scores += other.scores
        for k, v in other.by_seat.items():
            self.by_seat.setdefault(k, []).extend(v)
        self.w += other.w
        self.d += other.d
        self.l += other.l
        self.errors += other.errors
        self.opp_errors += other.opp_errors
        self.fallbacks += other.fallbacks

    def row(self, name):
        mean, half = interval(self.scores)
        seats = " ".join(
            f"{100 * sum(v) / len(v):.0f}%" for _, v in sorted(self.by_seat.items())
        )
        return (
            f"{name:<26} {len(self.scores):>4} {self.w:>3}-{self.d}-{self.l:<3}"
            f" {100 * mean:>5.1f}% ± {100 * half:<5.1f} {seats:<11}"
            f" {self.errors:>4} {self.fallbacks:>5} {self.opp_errors:>6}"
        )


def arguments(argv):
    """The OUT folders and the measured player's name prefix."""
    args = list(argv)
    me = "propel"
    if "--player" in args:
        i = args.index("--player")
        if i + 1 >= len(args):
            sys.exit("--player needs a name")
        me = args[i + 1]
        del args[i : i + 2]
    elif len(args) > 1 and not Path(args[-1]).is_dir():
        me = args.pop()
    outs = [Path(a) for a in args]
    for out in outs:
        if not out.is_dir():
            sys.exit(f"{out} is not a folder of match records")
    return outs, me + "@"


def tally(outs, me):
    """{opponent: {game: Tally}} over every completed match under `outs`."""
    by_opp = {}
    for out in outs:
        for opp_dir in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "logs"):
            games = by_opp.setdefault(opp_dir.name, {})
            for rec_path in sorted(opp_dir.glob("*/propel.*.json")):
                try:
                    rec = json.loads(rec_path.read_text())
                except (OSError, ValueError) as e:
                    print(f"skipping {rec_path}: {e}", file=sys.stderr)
                    continue
                names = rec.get("playerNamesFromHost", [])
                goals = rec.get("goalValues", [])
                seat = next((i for i, n in enumerate(names) if n.startswith(me)), None)
                if seat is None or len(goals) != len(names) or not rec.get("isCompleted"):
                    continue
                others = [g for i, g in enumerate(goals) if i != seat]
                best = max(others) if others else goals[seat]
                score = 1.0 if goals[seat] > best else 0.0 if goals[seat] < best else 0.5
                # Copies of a game (COPIES=N: <game>.copyN) count as the game.
                t = games.setdefault(re.sub(r"\.copy\d+$", "", rec_path.parent.name), Tally())
                t.add(score, seat)
                t.errors += errors_of(rec, seat)
                t.opp_errors += sum(errors_of(rec, i) for i in range(len(names)) if i != seat)
                fb = rec.get("playerFallbacks", [])
                t.fallbacks += fb[seat] if seat < len(fb) else 0
    return by_opp


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outs, me = arguments(sys.argv[1:])
    header = (
        f"{'game':<26} {'n':>4} {'W-D-L':<7} {'score (95%)':<14} {'by seat':<11}"
        f" {'errs':>4} {'fallb':>5} {'opp-errs':>6}"
    )
    for opp, games in sorted(tally(outs, me).items()):
        if not games:
            continue
        print(f"\n{me[:-1]} against {opp}")
        print(header)
        total = Tally()
        for name, t in sorted(games.items()):
            print(t.row(name))
            total.merge(t)
        print(total.row("suite"))
        # Where games have different counts (runs added up), the suite row
        # weighs the games by their matches; this weighs each game once.
        means = [sum(t.scores) / len(t.scores) for t in games.values() if t.scores]
        print(f"{'mean of the games':<26} {len(means):>4} {'':<7} {100 * sum(means) / len(means):>5.1f}%")


if __name__ == "__main__":
    main()
