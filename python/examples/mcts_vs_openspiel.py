#!/usr/bin/env python3
"""OpenSpiel's MCTS bot against Propel's own MCTS on connect four.

Trains nothing: plays a small tournament (each side plays first in half
the matches) and prints the score table with Elo and 95% intervals.

    python python/examples/mcts_vs_openspiel.py [--matches 10] [--seconds 0.1] [--simulations 300]

Needs the package with its OpenSpiel extra (`pip install ./python[openspiel]`).
"""

import argparse
import os
import sys

from propel import tournament as t

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default=os.path.join(HERE, "..", "..", "games", "connect4.kif"))
    ap.add_argument("--matches", type=int, default=10, help="matches in all (half with each side first)")
    ap.add_argument("--seconds", type=float, default=0.1, help="Propel's MCTS: seconds per move")
    ap.add_argument("--simulations", type=int, default=300, help="OpenSpiel's MCTS: simulations per move")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default=None, help="write match records, scores and elo.png here")
    a = ap.parse_args()
    entrants = {
        "propel-mcts": t.PropelMCTS(seconds=a.seconds),
        "openspiel-mcts": t.OpenSpielMCTS(simulations=a.simulations),
    }
    r = t.run([a.game], entrants, rounds=max(1, a.matches // 2), out=a.out, workers=a.workers)
    print(r.format_table())
    print(f"{len(r.records)} matches in {r.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
