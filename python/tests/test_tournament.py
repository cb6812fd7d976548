"""Tournaments: match records, the score table, the plot, local processes
and a local Ray instance, and GGP players over HTTP."""

import json
import os
import subprocess

import pytest

from conftest import game_path, missing, need, propel_binary
from propel import tournament as t

RECORD_FIELDS = {
    "matchId",
    "gameName",
    "gameRoleNames",
    "playerNamesFromHost",
    "startClock",
    "playClock",
    "startTime",
    "states",
    "stateTimes",
    "moves",
    "moveTimes",
    "errors",
    "startErrors",
    "goalValues",
    "isCompleted",
    "isAborted",
}
TABLE_FIELDS = {
    "player",
    "matches",
    "mean_goal",
    "goal_ci95",
    "wins",
    "draws",
    "losses",
    "elo",
    "elo_lo95",
    "elo_hi95",
    "errors",
}


def check_records(result, matches):
    assert len(result.records) == matches
    for rec in result.records:
        assert set(rec) == RECORD_FIELDS
        turns = len(rec["moves"])
        assert len(rec["states"]) == len(rec["stateTimes"]) == turns + 1
        assert len(rec["errors"]) == len(rec["moveTimes"]) == turns
        assert all(len(j) == len(rec["gameRoleNames"]) for j in rec["moves"])
        assert len(rec["goalValues"]) == len(rec["gameRoleNames"])
    for row in result.table:
        assert set(row) == TABLE_FIELDS


def test_local_tournament_files(tmp_path):
    entrants = {"random": t.Random(), "mcts": t.PropelMCTS(seconds=0.01)}
    r = t.run([game_path("tictactoe"), game_path("trinim")], entrants, rounds=2, out=str(tmp_path), workers=2)
    # Tic-tac-toe: 2 orders x 2 rounds; trinim (3 roles, 2 entrants): 2 rotations x 2 rounds.
    check_records(r, 8)
    assert r.backend == "local"
    files = sorted(os.listdir(tmp_path / "matches"))
    assert len(files) == 8
    rec = json.loads((tmp_path / "matches" / files[0]).read_text())
    assert set(rec) == RECORD_FIELDS
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["matches"] == 8 and [row["player"] for row in scores["table"]] == [row["player"] for row in r.table]
    assert "Elo" in (tmp_path / "scores.txt").read_text()
    assert (tmp_path / "elo.png").stat().st_size > 1000


def test_scores_and_elo():
    recs = [
        {"playerNamesFromHost": ["a", "b"], "goalValues": [100, 0], "errors": [["", ""]]},
        {"playerNamesFromHost": ["b", "a"], "goalValues": [0, 100], "errors": [["", "late"]]},
        {"playerNamesFromHost": ["a", "b"], "goalValues": [50, 50], "errors": []},
    ]
    rows = {r["player"]: r for r in t.score_table(recs)}
    assert (rows["a"]["wins"], rows["a"]["draws"], rows["a"]["losses"]) == (2, 1, 0)
    assert (rows["b"]["wins"], rows["b"]["losses"]) == (0, 2)
    assert rows["a"]["elo"] > 0 > rows["b"]["elo"]
    assert abs(rows["a"]["elo"] + rows["b"]["elo"]) < 1e-6
    assert rows["a"]["errors"] == 1 and rows["b"]["errors"] == 0
    assert rows["a"]["mean_goal"] == pytest.approx(250 / 3)
    assert rows["a"]["elo_lo95"] < rows["a"]["elo"] < rows["a"]["elo_hi95"]


def test_elo_is_propel_reports():
    """A 4-0 sweep, each player twice in each seat: the ratings and
    intervals `propel report` gives for the same records (+223 ± 288),
    not a zero-width interval."""
    recs = [
        {"playerNamesFromHost": ["a", "b"][:: 1 - 2 * (i % 2)], "goalValues": [100, 0][:: 1 - 2 * (i % 2)], "errors": []}
        for i in range(4)
    ]
    rows = {r["player"]: r for r in t.score_table(recs)}
    a = rows["a"]
    assert (round(a["elo"]), round(a["elo_hi95"] - a["elo"])) == (223, 288)
    assert "+223 ± 288" in t.format_table(t.score_table(recs))


def test_propel_report_reads_a_tournament(tmp_path):
    """`propel report` on a tournament's folder: the same matches, the
    game's name from its rules, and the same Elo as the Python table."""
    binary = propel_binary()
    if binary is None:
        missing("no `propel` binary (build it with `cargo build -p propel`, or set PROPEL_BIN)")
    entrants = {"random": t.Random(), "mcts": t.PropelMCTS(seconds=0.005)}
    r = t.run([game_path("tictactoe")], entrants, rounds=3, out=str(tmp_path), workers=1)
    assert all(rec["gameName"] == "Tic-tac-toe" for rec in r.records)
    html = tmp_path / "report.html"
    out = subprocess.run([binary, "report", str(tmp_path), "-o", str(html)], capture_output=True, text=True, check=True)
    assert "(6 matches)" in out.stdout
    page = html.read_text()
    assert "Tic-tac-toe" in page
    for row in r.table:
        e, half = row["elo"], (row["elo_hi95"] - row["elo_lo95"]) / 2
        assert f"{e:+.0f} ± {half:.0f}" in page


def test_bad_players_are_recorded_not_raised():
    class Broken(t.Player):
        name = "broken"

        def move(self, state, last, play_clock):
            return "(mark 9 9)"

    class BrokenSpec:
        def make(self, seed):
            return Broken()

    m = t.schedule([game_path("tictactoe")], {"broken": BrokenSpec(), "random": t.Random()})[0]
    rec = t.play_match(m)
    seat = list(rec["playerNamesFromHost"]).index("broken")
    assert any("illegal" in turn[seat] for turn in rec["errors"])
    assert rec["isCompleted"]


def test_openspiel_bot_entrant():
    need("pyspiel", "open_spiel is not installed")
    entrants = {"openspiel-mcts": t.OpenSpielMCTS(simulations=30), "random": t.Random()}
    r = t.run([game_path("connect4")], entrants, rounds=1, workers=1)
    check_records(r, 2)
    assert all(row["errors"] == 0 for row in r.table)


def test_ggp_http_players():
    binary = propel_binary()
    if binary is None:
        missing("no `propel` binary (build it with `cargo build -p propel`, or set PROPEL_BIN)")
    entrants = {"served": t.PropelServe(binary=binary, args=("--threads", "1")), "random": t.Random()}
    r = t.run([game_path("tictactoe")], entrants, rounds=1, workers=1, start_clock=3, play_clock=1)
    check_records(r, 2)
    served = next(row for row in r.table if row["player"] == "served")
    # Propel's player over HTTP, a second a move, against random play.
    assert served["errors"] == 0 and served["mean_goal"] >= 50


def test_ray_tournament_200_matches(tmp_path):
    """200 matches, random against Propel's MCTS on two games, as Ray tasks
    on a local Ray instance; the same table as a local run."""
    ray = need("ray", "ray is not installed (pip install ray)")
    entrants = {"random": t.Random(), "mcts": t.PropelMCTS(seconds=0.005)}
    games = [game_path("tictactoe"), game_path("connect4")]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        r = t.run(games, entrants, rounds=50, out=str(tmp_path), ray=True)
    finally:
        ray.shutdown()
    assert r.backend == "ray"
    check_records(r, 200)
    rows = {row["player"]: row for row in r.table}
    assert rows["mcts"]["elo"] > rows["random"]["elo"]
    assert rows["mcts"]["wins"] > rows["mcts"]["losses"]
    local = t.run(games, entrants, rounds=1, workers=1)
    assert [set(row) for row in local.table] == [set(row) for row in r.table]
    assert local.format_table().splitlines()[0] == r.format_table().splitlines()[0]
