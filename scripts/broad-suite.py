#!/usr/bin/env python3
"""The broad strength suite: Propel's player against another player over
HTTP on the games of scripts/suites/broad.tsv (30 games in six categories,
chosen by the rule in scripts/suites/select.py), then a table per game and
per category with 95% intervals. Not a test: it takes hours.

    scripts/broad-suite.py OPPONENT [--table-only]

OPPONENT is one of
    uct                    plain UCT (`builtin:uct`, in the match process)
    bin:NAME=/path/propel  another Propel binary, served as NAME
    cmd:NAME=COMMAND       a player started as `COMMAND PORT` (e.g. Sancho's
                           run.sh), reached at http://127.0.0.1:PORT

How each category is played:
    two roles   every seat, MATCHES per seat; score: win 1, draw 1/2
    3+ roles    mixed seatings: for every seat k and h in {floor(n/2),
                ceil(n/2)}, Propel in the h seats from k on (cyclically)
                and the opponent in the others, so that each player takes
                each seat equally often; ceil(n/2) instances of each
                player; MATCHES per seating; score: each side's mean goal
    puzzles     each player alone, MATCHES times; score: the goal reached

Settings (environment): PROPEL (the binary measured; default this
checkout's release build), ARGS / OPP_ARGS (extra `propel serve` flags of
the measured player / of `bin:` opponents), MATCHES=2, START=60, PLAY=3,
MARGIN=0.9, START_<game>=S (a game's start clock, e.g. START_amazonsSuicide;
other characters than letters, digits and _ as _), GAMES (a space-separated
subset of the list's games),
CATEGORIES (a subset of the categories), SUITE=scripts/suites/broad.tsv,
CORPUS=../shared/games, OUT=broad-suite, PORT=9500 (first port for `cmd:`
players). Records go to OUT/<opponent>/<game>/; a game whose folder holds
a finished run (`match.out` with standings) is skipped, so a run can be
resumed; the table is OUT/table.txt.
"""

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ["reversed", "puzzle", "multi", "simultaneous", "asymmetric", "ordinary"]


def env(name, default):
    return os.environ.get(name, default)


def _strength_table():
    """scripts/strength-table.py, for its interval (one definition of it)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("strength_table", ROOT / "scripts" / "strength-table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


interval = _strength_table().interval


def roles_of(game_path, propel):
    out = subprocess.run([propel, "check", str(game_path), "--json"], capture_output=True, text=True)
    try:
        return int(json.loads(out.stdout)["roles"])
    except (ValueError, KeyError):
        sys.exit(f"propel check refused {game_path}: {out.stderr.strip()[:300]}")


class Players:
    """Served players for one game; stopped when done."""

    def __init__(self, out_dir, propel, opp, margin):
        self.procs = []
        self.out_dir = out_dir
        self.propel = propel
        self.opp = opp
        self.margin = margin
        self.port = int(env("PORT", "9500"))

    def serve(self, binary, name, flags, log):
        f = open(log, "w")
        p = subprocess.Popen(
            [binary, "serve", "--port", "0", "--host", "127.0.0.1", "--name", name, "--threads", "1",
             "--margin", self.margin, "--log-dir", str(self.out_dir / "logs")] + flags.split(),
            stdout=subprocess.PIPE, stderr=f, text=True)
        self.procs.append(p)
        line = p.stdout.readline()
        m = re.match(r"listening on (\S+)", line)
        if not m:
            sys.exit(f"{name} did not start (see {log})")
        return m.group(1)

    def measured(self, k):
        # Instances of one match log under their own names.
        name = "propel" if k == 0 else f"propel-{k + 1}"
        return self.serve(self.propel, name, env("ARGS", ""), self.out_dir / f"propel{k}.serve.log")

    def opponent(self, k):
        kind, _, rest = self.opp.partition(":")
        if kind == "uct":
            return "builtin:uct"
        name, _, what = rest.partition("=")
        if kind == "bin":
            label = name if k == 0 else f"{name}-{k + 1}"
            return self.serve(what, label, env("OPP_ARGS", ""), self.out_dir / f"{name}{k}.serve.log")
        if kind == "cmd":
            port = self.port + k
            log = open(self.out_dir / f"{name}{k}.serve.log", "w")
            p = subprocess.Popen(what.split() + [str(port)], stdout=log, stderr=subprocess.STDOUT)
            self.procs.append(p)
            import socket
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.2)
            return f"http://127.0.0.1:{port}"
        sys.exit(f"unknown opponent {self.opp}")

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def opp_name(opp):
    kind, _, rest = opp.partition(":")
    return "uct" if kind == "uct" else rest.partition("=")[0]


def seatings(n):
    """Mixed seatings of n >= 3 roles: True where Propel sits."""
    out = []
    for h in sorted({n // 2, (n + 1) // 2}):
        for k in range(n):
            out.append([((r - k) % n) < h for r in range(n)])
    return out


def play(game, category, opp, out):
    corpus = Path(env("CORPUS", str(ROOT.parent / "shared" / "games")))
    propel = env("PROPEL", str(ROOT / "target" / "release" / "propel"))
    matches, start, play_clock, margin = env("MATCHES", "2"), env("START", "60"), env("PLAY", "3"), env("MARGIN", "0.9")
    path = corpus / f"{game}.kif"
    d = out / opp_name(opp) / Path(game).name
    start = env("START_" + re.sub(r"[^A-Za-z0-9_]", "_", Path(game).name), start)
    if (d / "done").exists():
        return
    d.mkdir(parents=True, exist_ok=True)
    n = roles_of(path, propel)
    base = [propel, "match", str(path), "--start-clock", start, "--play-clock", play_clock, "--threads", "1",
            "--margin", margin, "--matches", matches, "-o", str(d)]
    print(f"== {game} ({category}, {n} roles): propel vs {opp_name(opp)}, clocks {start}/{play_clock} s, "
          f"load {open('/proc/loadavg').read().split()[0]}", flush=True)
    players = Players(d, propel, opp, margin)
    try:
        runs = []
        if n == 1:
            runs = [[players.measured(0)], [players.opponent(0)]]
        elif n == 2:
            runs = [[players.measured(0), players.opponent(0)] + ["--round-robin"]]
        else:
            k = (n + 1) // 2
            ours = [players.measured(i) for i in range(k)]
            theirs = [players.opponent(i) for i in range(k)]
            for s in seatings(n):
                a, b = iter(ours), iter(theirs)
                runs.append([next(a) if p else next(b) for p in s])
        with open(d / "match.out", "a") as log:
            for urls in runs:
                args = []
                for u in urls:
                    args += ["--round-robin"] if u == "--round-robin" else ["--player", u]
                r = subprocess.run(base + args, stdout=log, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, RUST_LOG="warn"))
                if r.returncode != 0:
                    print(f"propel match failed on {game} (see {d}/match.out)", file=sys.stderr)
        (d / "done").write_text("")
    finally:
        players.stop()


def records(d):
    for p in sorted(d.glob("*.json")):
        try:
            r = json.loads(p.read_text())
        except ValueError:
            continue
        if "matchId" in r and r.get("isCompleted"):
            yield r


def table(out, suite, opp):
    name = opp_name(opp)
    lines = [f"propel against {name} ({out})", ""]
    by_cat = {}
    head = f"{'game':<34} {'category':<13} {'matches':>7}  {'result':<14} {'score (95%)':<16} errors"
    lines.append(head)
    for game, cat in suite:
        d = out / name / Path(game).name
        recs = list(records(d)) if d.exists() else []
        ours, theirs, errs = [], [], [0, 0]
        w = dr = lo = 0
        for r in recs:
            names = r["playerNamesFromHost"]
            goals = r["goalValues"]
            mine = [g for nm, g in zip(names, goals) if nm.startswith("propel")]
            other = [g for nm, g in zip(names, goals) if not nm.startswith("propel")]
            for seat, nm in enumerate(names):
                e = sum(1 for t in r.get("errors", []) if seat < len(t) and t[seat])
                errs[0 if nm.startswith("propel") else 1] += e
            if len(names) == 1:
                (ours if mine else theirs).append(goals[0])
                continue
            m, o = sum(mine) / len(mine), sum(other) / len(other)
            if len(names) == 2:
                s = 1.0 if m > o else 0.0 if m < o else 0.5
                ours.append(s)
                w, dr, lo = w + (s == 1.0), dr + (s == 0.5), lo + (s == 0.0)
            else:
                ours.append(m)
                theirs.append(o)
        if cat == "puzzle" or (recs and len(recs[0]["playerNamesFromHost"]) > 2):
            mo, ho = interval(ours)
            mt, ht = interval(theirs)
            result = f"goal {mo:.1f} vs {mt:.1f}"
            score = f"±{ho:.1f} / ±{ht:.1f}"
            by_cat.setdefault(cat, []).append((mo - mt) / 100.0 + 0.5 if ours and theirs else None)
            count = len(recs)
        else:
            mo, ho = interval(ours)
            result = f"{w}-{dr}-{lo}"
            score = f"{100 * mo:.1f}% ± {100 * ho:.1f}"
            by_cat.setdefault(cat, []).append(mo if ours else None)
            count = len(ours)
        lines.append(f"{game:<34} {cat:<13} {count:>7}  {result:<14} {score:<16} {errs[0]}/{errs[1]}")
    lines += ["", "per category (two roles: mean of the games' scores; 3+ roles and puzzles:",
              "0.5 plus half the difference of the mean goals, /100):"]
    two = []
    for cat in ORDER:
        xs = [x for x in by_cat.get(cat, []) if x is not None]
        if not xs:
            continue
        m, h = interval(xs)
        lines.append(f"  {cat:<13} {len(xs):>2} games  {100 * m:5.1f}% ± {100 * h:.1f}")
        if cat not in ("puzzle", "multi"):
            two += xs
    if two:
        m, h = interval(two)
        lines.append(f"  {'two roles':<13} {len(two):>2} games  {100 * m:5.1f}% ± {100 * h:.1f}")
    return "\n".join(lines)


def feature_name(f):
    """`capture-first lanes (187 moves)` -> `capture-first lanes`."""
    return re.sub(r" \(.*\)$|^exploration .*$", lambda m: "" if m.group(0).startswith(" ") else "exploration", f)


def validations(out, suite, opp):
    """Per feature: matches where the analysis's checks passed it, and where
    the start-clock validation kept it, from the measured player's logs."""
    name = opp_name(opp)
    tally = {}
    duels = kept = matches = 0
    for game, _ in suite:
        for stats in (out / name / Path(game).name / "logs").glob("propel*/*/stats.jsonl"):
            for line in stats.read_text().splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                v = e.get("validation")
                if e.get("event") != "validation" or not v:
                    continue
                matches += 1
                duels += v.get("duel") is not None
                kept += bool(v.get("adopted"))
                for f in v.get("features", []):
                    t = tally.setdefault(feature_name(f), [0, 0, set()])
                    t[0] += 1
                    t[1] += bool(v.get("adopted"))
                    t[2].add(Path(game).name)
    if not matches:
        return ""
    lines = ["", f"validation in {matches} matches ({duels} with a duel, {kept} kept the analysed settings):",
             f"  {'feature':<24} {'passed checks':>13} {'kept':>5}  games"]
    for f, (n, k, games) in sorted(tally.items(), key=lambda x: -x[1][0]):
        lines.append(f"  {f:<24} {n:>13} {k:>5}  {len(games)}")
    return "\n".join(lines)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    opp = args[0]
    out = Path(env("OUT", "broad-suite")).resolve()
    suite_file = Path(env("SUITE", str(ROOT / "scripts" / "suites" / "broad.tsv")))
    suite = [tuple(l.split("\t")[:2]) for l in suite_file.read_text().splitlines()[1:] if l.strip()]
    if env("GAMES", ""):
        keep = set(env("GAMES", "").split())
        suite = [(g, c) for g, c in suite if g in keep]
    if env("CATEGORIES", ""):
        keep = set(env("CATEGORIES", "").split())
        suite = [(g, c) for g, c in suite if c in keep]
    if "--table-only" not in sys.argv:
        propel = env("PROPEL", str(ROOT / "target" / "release" / "propel"))
        if not os.access(propel, os.X_OK):
            sys.exit(f"PROPEL={propel} is not an executable (cargo build --release -p propel)")
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "runs.txt", "a") as f:
            f.write(f"{time.strftime('%FT%TZ', time.gmtime())} {propel} {env('ARGS', '')} against {opp}\n")
        for game, cat in suite:
            play(game, cat, opp, out)
    t = table(out, suite, opp) + validations(out, suite, opp)
    (out / "table.txt").write_text(t + "\n")
    print(t)


if __name__ == "__main__":
    main()
