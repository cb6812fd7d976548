"""Tournaments: many matches between players, on local processes or a Ray
cluster, written as ggp.org-style match records with a score table (mean
goal, wins, draws, losses, Elo, each with a 95% confidence interval) and a
plot.

    from propel import tournament as t
    result = t.run(
        ["games/connect4.kif"],
        {"random": t.Random(), "mcts": t.PropelMCTS(seconds=0.05)},
        rounds=10, out="runs/c4",
    )
    print(result.format_table())

Every ordered choice of distinct entrants for a game's roles is played
`rounds` times. Matches run in `workers` local processes by default;
`ray=True` (a local Ray instance, or the cluster `ray.init()` finds) or
`ray="ray://head:10001"` runs each match as a Ray task instead, with no
other change. Players: `Random`, `PropelMCTS` (Propel's MCTS through the
Python API), `OpenSpielMCTS` (OpenSpiel's MCTS bot on the OpenSpiel
adapter), `GgpHttp` (any GGP player over HTTP, e.g. `propel serve`) and
`PropelServe` (starts `propel serve` for each match).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import propel

__all__ = [
    "Random",
    "PropelMCTS",
    "OpenSpielMCTS",
    "GgpHttp",
    "PropelServe",
    "Match",
    "Result",
    "run",
    "play_match",
    "score_table",
]


# ---------------------------------------------------------------- players


class Player:
    """A player in one match. `start` once, `move` whenever its role has a
    choice (or every turn when `every_turn`), `stop` at the end."""

    #: Asked every turn, forced moves included (the GGP protocol's players).
    every_turn = False
    name = "player"

    def start(self, match_id: str, game: propel.Game, role: int, start_clock: float, play_clock: float) -> None:
        pass

    def move(self, state: propel.State, last: Optional[List[str]], play_clock: float) -> str:
        """`role`'s move (a name) in `state`; `last`: the previous joint move."""
        raise NotImplementedError

    def stop(self, last: Optional[List[str]]) -> None:
        pass


@dataclass(frozen=True)
class Random:
    """Uniformly random legal moves."""

    def make(self, seed: int) -> Player:
        return _RandomPlayer(seed)


class _RandomPlayer(Player):
    name = "random"

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def start(self, match_id, game, role, start_clock, play_clock):
        self.game, self.role = game, role

    def move(self, state, last, play_clock):
        return self.rng.choice(self.game.legal_moves(state, self.role))


@dataclass(frozen=True)
class PropelMCTS:
    """Propel's MCTS (`Game.search`) for `seconds` per move on `threads`."""

    seconds: float = 0.1
    threads: int = 1

    def make(self, seed: int) -> Player:
        return _PropelMCTSPlayer(self, seed)


class _PropelMCTSPlayer(Player):
    name = "propel-mcts"

    def __init__(self, spec: PropelMCTS, seed: int):
        self.spec, self.seed = spec, seed

    def start(self, match_id, game, role, start_clock, play_clock):
        self.game, self.role = game, role

    def move(self, state, last, play_clock):
        self.seed += 1
        best = self.game.search(state, seconds=self.spec.seconds, threads=self.spec.threads, seed=self.seed)
        return best[self.role][1]


@dataclass(frozen=True)
class OpenSpielMCTS:
    """OpenSpiel's MCTS bot (`open_spiel.python.algorithms.mcts.MCTSBot`)
    with random rollouts, on the OpenSpiel adapter. Sequential games only."""

    simulations: int = 100
    uct_c: float = 2.0
    rollouts: int = 1

    def make(self, seed: int) -> Player:
        return _OpenSpielPlayer(self, seed)


class _OpenSpielPlayer(Player):
    name = "openspiel-mcts"

    def __init__(self, spec: OpenSpielMCTS, seed: int):
        self.spec, self.seed = spec, seed

    def start(self, match_id, game, role, start_clock, play_clock):
        import numpy as np
        from open_spiel.python.algorithms import mcts

        from propel import openspiel

        self.game, self.role = game, role
        self.os_game = openspiel.from_game(game)
        if not self.os_game.sequential:
            raise ValueError("OpenSpiel's MCTS bot needs a sequential game")
        rng = np.random.RandomState(self.seed % 2**32)
        evaluator = mcts.RandomRolloutEvaluator(self.spec.rollouts, rng)
        self.bot = mcts.MCTSBot(self.os_game, self.spec.uct_c, self.spec.simulations, evaluator, random_state=rng)

    def move(self, state, last, play_clock):
        from propel import openspiel

        os_state = openspiel.state_at(self.os_game, state)
        if os_state.current_player() != self.role:
            raise ValueError("OpenSpiel's MCTS bot asked in a state where its role is not the one to move")
        return self.game.move_name(self.role, int(self.bot.step(os_state)))


@dataclass(frozen=True)
class GgpHttp:
    """A GGP player over HTTP at `url` (any GGP player; the protocol's
    start, play and stop messages; its moves are checked by the referee)."""

    url: str
    label: str = ""

    def make(self, seed: int) -> Player:
        return _HttpPlayer(self.url, self.label or self.url)


def _post(url: str, body: str, timeout: float) -> str:
    req = urllib.request.Request(url, data=body.encode(), headers={"Content-Type": "text/acl"}, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read().decode(errors="replace").strip()


def _rules_text(text: bytes) -> str:
    """The rules on one line, comments dropped (for `start` messages)."""
    lines = [re.sub(r";.*", "", line) for line in text.decode(errors="replace").splitlines()]
    return " ".join(" ".join(lines).split())


class _HttpPlayer(Player):
    every_turn = True
    #: Seconds allowed beyond a clock for the network.
    GRACE = 1.0

    def __init__(self, url: str, name: str):
        self.url, self.name = url, name

    def start(self, match_id, game, role, start_clock, play_clock):
        self.match_id = match_id
        self.game, self.role = game, role
        msg = f"(start {match_id} {game.roles[role]} ({_rules_text(game.text)}) {start_clock:g} {play_clock:g})"
        answer = _post(self.url, msg, start_clock + self.GRACE)
        if answer.lower() != "ready":
            raise ValueError(f"start: answered {answer!r}")

    def move(self, state, last, play_clock):
        moves = "nil" if last is None else "(" + " ".join(last) + ")"
        return _post(self.url, f"(play {self.match_id} {moves})", play_clock + self.GRACE)

    def stop(self, last):
        moves = "nil" if last is None else "(" + " ".join(last) + ")"
        try:
            _post(self.url, f"(stop {self.match_id} {moves})", 5.0)
        except (OSError, urllib.error.URLError):
            pass


@dataclass(frozen=True)
class PropelServe:
    """`propel serve` started for each match on a free port (the `propel`
    binary: `binary`, or `propel` on the PATH), then played over HTTP."""

    binary: str = "propel"
    args: Sequence[str] = ("--threads", "1")

    def make(self, seed: int) -> Player:
        return _ServedPlayer(self)


class _ServedPlayer(_HttpPlayer):
    def __init__(self, spec: PropelServe):
        path = shutil.which(spec.binary) or spec.binary
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [path, "serve", "--port", str(port), *spec.args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        super().__init__(f"http://127.0.0.1:{port}", "propel-serve")
        deadline = time.monotonic() + 30
        while True:
            try:
                _post(self.url, "(info)", 2.0)
                break
            except (OSError, urllib.error.URLError):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.proc.kill()
                    raise RuntimeError(f"{path} serve did not start")
                time.sleep(0.1)

    def stop(self, last):
        super().stop(last)
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


PlayerSpec = Union[Random, PropelMCTS, OpenSpielMCTS, GgpHttp, PropelServe]


# ---------------------------------------------------------------- matches


@dataclass(frozen=True)
class Match:
    """One match to play: the game's text, and the entrants in role order."""

    match_id: str
    game_name: str
    game_text: bytes
    machine: str
    entrants: Sequence[str]
    players: Sequence[Any]
    seed: int
    start_clock: float = 10.0
    play_clock: float = 5.0


_GAMES: Dict[Any, propel.Game] = {}


def _game(name: str, text: bytes, machine: str) -> propel.Game:
    """One game per worker process for each text and machine."""
    key = (name, text, machine)
    if key not in _GAMES:
        g = propel.load(text, machine)
        _GAMES[key] = g
    return _GAMES[key]


def _facts(game: propel.Game, state: propel.State) -> str:
    return "( " + " ".join(game.state_facts(state)) + " )"


def play_match(m: Match) -> Dict[str, Any]:
    """Plays `m` and returns its record (ggp.org's match record fields, plus
    `moveTimes` and `startErrors` as `propel match` writes them). A
    player's failed, late or illegal move is replaced by a random legal
    one and recorded in `errors`."""
    game = _game(m.game_name, m.game_text, m.machine)
    rng = random.Random(m.seed)
    players = [spec.make(m.seed * 1_000 + i) for i, spec in enumerate(m.players)]
    roles = len(game.roles)
    start_errors = []
    for r, p in enumerate(players):
        try:
            p.start(m.match_id, game, r, m.start_clock, m.play_clock)
            start_errors.append("")
        except Exception as e:  # a player's failure is recorded, not raised
            start_errors.append(f"start: {e}")
    state = game.initial_state()
    record_states, state_times = [_facts(game, state)], [int(time.time() * 1000)]
    moves, errors, move_times = [], [], []
    last: Optional[List[str]] = None
    start_time = int(time.time() * 1000)
    while not game.is_terminal(state):
        joint, errs, times = [], [], []
        for r, p in enumerate(players):
            legal = game.legal_moves(state, r)
            err, t0 = "", time.perf_counter()
            if len(legal) == 1 and not p.every_turn:
                mv = legal[0]
            else:
                try:
                    mv = p.move(state, last, m.play_clock)
                except Exception as e:
                    mv, err = None, f"{type(e).__name__}: {e}"
            ms = int((time.perf_counter() - t0) * 1000)
            if mv is not None and mv not in legal:
                try:
                    mv = game.move_name(r, game.move_id(r, mv))
                except Exception:
                    pass
                if mv not in legal:
                    err = f"illegal move {mv!r}"
                    mv = None
            if mv is None:
                mv = rng.choice(legal)
            if not err and p.every_turn and ms > (m.play_clock + _HttpPlayer.GRACE) * 1000:
                err = f"late ({ms} ms)"
            joint.append(mv)
            errs.append(err)
            times.append(ms)
        state = game.next_state(state, joint)
        last = joint
        moves.append(joint)
        errors.append(errs)
        move_times.append(times)
        record_states.append(_facts(game, state))
        state_times.append(int(time.time() * 1000))
    for p in players:
        p.stop(last)
    return {
        "matchId": m.match_id,
        "gameName": game.title,
        "gameRoleNames": list(game.roles),
        "playerNamesFromHost": list(m.entrants),
        "startClock": m.start_clock,
        "playClock": m.play_clock,
        "startTime": start_time,
        "states": record_states,
        "stateTimes": state_times,
        "moves": moves,
        "moveTimes": move_times,
        "errors": errors,
        "startErrors": start_errors,
        "goalValues": game.goals(state),
        "isCompleted": True,
        "isAborted": False,
    }


# ---------------------------------------------------------------- scores


def score_table(records: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Per entrant: matches, mean goal and its 95% interval, wins, draws,
    losses (pairwise, by goal, against the other seats of each match),
    Elo (relative to the mean) and its 95% interval, errors: computed by
    the code of `propel match` and `propel report` (`propel._propel.
    standings`), so the numbers are theirs (NaN for an entrant in no
    pair). Best Elo first."""
    from propel._propel import standings

    table = json.loads(standings(json.dumps(list(records))))
    nan = float("nan")
    rows = []
    for p in table["players"]:
        elo, half = (p["elo"], p["eloHalfWidth95"]) if p["elo"] is not None else (nan, nan)
        rows.append(
            {
                "player": p["player"],
                "matches": p["matches"],
                "mean_goal": p["meanGoal"],
                "goal_ci95": p["meanGoalHalfWidth95"],
                "wins": p["wins"],
                "draws": p["draws"],
                "losses": p["losses"],
                "elo": elo,
                "elo_lo95": elo - half,
                "elo_hi95": elo + half,
                "errors": p["errors"],
            }
        )
    rows.sort(key=lambda r: -r["elo"] if r["elo"] == r["elo"] else math.inf)
    return rows


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The score table as aligned text."""
    head = f"{'player':<20} {'matches':>7} {'mean goal':>16} {'W':>5} {'D':>5} {'L':>5} {'Elo (95%)':>13} {'errors':>6}"
    lines = [head]
    for r in rows:
        e, half = r["elo"], (r["elo_hi95"] - r["elo_lo95"]) / 2
        elo_text = f"{e:+.0f} ± {half:.0f}" if e == e else "-"
        lines.append(
            f"{r['player']:<20} {r['matches']:>7} {r['mean_goal']:>8.1f} ± {r['goal_ci95']:>5.1f} "
            f"{r['wins']:>5} {r['draws']:>5} {r['losses']:>5} {elo_text:>13} {r['errors']:>6}"
        )
    return "\n".join(lines)


def plot(rows: Sequence[Mapping[str, Any]], path: str) -> bool:
    """Elo with its 95% interval per entrant, as an image (PNG or SVG by
    the file name). False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [r["player"] for r in rows]
    elos = [r["elo"] for r in rows]
    lo = [max(0.0, r["elo"] - r["elo_lo95"]) if r["elo_lo95"] == r["elo_lo95"] else 0.0 for r in rows]
    hi = [max(0.0, r["elo_hi95"] - r["elo"]) if r["elo_hi95"] == r["elo_hi95"] else 0.0 for r in rows]
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(rows)), 3.5))
    ax.bar(names, elos, yerr=[lo, hi], capsize=6, color="#4c72b0")
    ax.set_ylabel("Elo (95% interval)")
    ax.set_ylim(min(e - l for e, l in zip(elos, lo)) - 50, max(e + h for e, h in zip(elos, hi)) + 50)
    ax.set_title(f"{sum(r['matches'] for r in rows) // max(1, len(rows))} matches per player (mean)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


# ---------------------------------------------------------------- running


@dataclass
class Result:
    """A tournament's match records and score table."""

    records: List[Dict[str, Any]]
    table: List[Dict[str, Any]]
    out: Optional[str] = None
    backend: str = "local"
    seconds: float = 0.0
    files: List[str] = field(default_factory=list)

    def format_table(self) -> str:
        return format_table(self.table)


def schedule(
    games: Sequence[Union[str, "os.PathLike[str]"]],
    entrants: Mapping[str, PlayerSpec],
    rounds: int = 1,
    machine: str = "jit",
    start_clock: float = 10.0,
    play_clock: float = 5.0,
    seed: int = 0,
) -> List[Match]:
    """The matches: for each game, every ordered choice of distinct
    entrants for its roles (all entrants in every seat when there are fewer
    entrants than roles), `rounds` times."""
    import itertools

    matches = []
    names = list(entrants)
    for path in games:
        with open(os.fspath(path), "rb") as f:
            text = f.read()
        game = _game(os.fspath(path), text, machine)
        roles = len(game.roles)
        if len(names) >= roles:
            seatings = list(itertools.permutations(names, roles))
        else:
            seatings = [tuple(names[(i + k) % len(names)] for i in range(roles)) for k in range(len(names))]
        stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(os.fspath(path)))[0])
        for rnd in range(rounds):
            for seats in seatings:
                n = len(matches)
                matches.append(
                    Match(
                        match_id=f"{stem}.{n}",
                        game_name=os.fspath(path),
                        game_text=text,
                        machine=machine,
                        entrants=seats,
                        players=[entrants[s] for s in seats],
                        seed=seed * 1_000_003 + n,
                        start_clock=start_clock,
                        play_clock=play_clock,
                    )
                )
    return matches


def _run_local(matches: Sequence[Match], workers: int) -> List[Dict[str, Any]]:
    if workers <= 1:
        return [play_match(m) for m in matches]
    # Spawned, not forked: the parent may hold machines and threads.
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return list(pool.map(play_match, matches))


def _run_ray(matches: Sequence[Match], address: Optional[str], cpus_per_match: float) -> List[Dict[str, Any]]:
    try:
        import ray
    except ImportError as e:
        raise ImportError("running matches on Ray needs Ray installed: pip install ray (or the package's [ray] extra)") from e

    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    task = ray.remote(num_cpus=cpus_per_match)(play_match)
    return ray.get([task.remote(m) for m in matches])


def run(
    games: Sequence[Union[str, "os.PathLike[str]"]],
    entrants: Mapping[str, PlayerSpec],
    rounds: int = 1,
    *,
    out: Optional[str] = None,
    machine: str = "jit",
    workers: Optional[int] = None,
    ray: Union[bool, str] = False,
    cpus_per_match: float = 1.0,
    start_clock: float = 10.0,
    play_clock: float = 5.0,
    seed: int = 0,
) -> Result:
    """Plays the tournament (see `schedule`) and scores it.

    Local processes by default (`workers`, default every core; 1 plays in
    this process). `ray=True` runs every match as a Ray task on the
    instance `ray.init()` starts or finds (`RAY_ADDRESS`, or a local one);
    `ray="ADDRESS"` connects to that cluster (e.g. "ray://head:10001" or
    "auto"). With `out`, writes `OUT/matches/MATCH_ID.json` (one record per
    match), `OUT/scores.json`, `OUT/scores.txt` and `OUT/elo.png`.
    """
    t0 = time.monotonic()
    matches = schedule(games, entrants, rounds, machine, start_clock, play_clock, seed)
    if ray is not False:
        address = None if ray is True else str(ray)
        records = _run_ray(matches, address, cpus_per_match)
        backend = "ray"
    else:
        records = _run_local(matches, workers or os.cpu_count() or 1)
        backend = "local"
    table = score_table(records)
    result = Result(records, table, out, backend, time.monotonic() - t0)
    if out is not None:
        os.makedirs(os.path.join(out, "matches"), exist_ok=True)
        for rec in records:
            path = os.path.join(out, "matches", f"{rec['matchId']}.json")
            with open(path, "w") as f:
                json.dump(rec, f, indent=1)
        with open(os.path.join(out, "scores.json"), "w") as f:
            json.dump({"backend": backend, "matches": len(records), "table": table}, f, indent=1)
        with open(os.path.join(out, "scores.txt"), "w") as f:
            f.write(format_table(table) + "\n")
        result.files = ["matches/", "scores.json", "scores.txt"]
        if plot(table, os.path.join(out, "elo.png")):
            result.files.append("elo.png")
    return result
