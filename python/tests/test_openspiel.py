"""The OpenSpiel adapter: OpenSpiel's random-simulation checks, its MCTS
bot and evaluate_bots on every bundled game and a corpus sample."""

import subprocess
import sys

import numpy as np
import pytest

from conftest import BUNDLED, CORPUS_SAMPLE, corpus_path, game_path, need

pyspiel = need("pyspiel", "open_spiel is not installed (pip install open_spiel)")
from open_spiel.python.algorithms import evaluate_bots, get_all_states, mcts  # noqa: E402
from open_spiel.python.bots import uniform_random  # noqa: E402

from propel.openspiel import load_game, state_at  # noqa: E402

import propel  # noqa: E402


def check_game(game, matches=3):
    """Random simulations (OpenSpiel's own checks), then bots: OpenSpiel's
    MCTS against random players on sequential games, random players on
    simultaneous ones."""
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)
    rng = np.random.RandomState(0)
    n = game.num_players()
    bots = [uniform_random.UniformRandomBot(p, rng) for p in range(n)]
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL:
        bots[0] = mcts.MCTSBot(game, 2.0, 20, mcts.RandomRolloutEvaluator(1, rng), random_state=rng)
    for _ in range(matches):
        returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, rng)
        assert len(returns) == n and all(-1.0 <= r <= 1.0 for r in returns)


EXPECTED = {
    # name: (players, sequential)
    "tictactoe": (2, True),
    "connect4": (2, True),
    "breakthrough": (2, True),
    "firewall": (2, True),
    "hanoi": (1, True),
    "dilemma": (2, False),
    "trinim": (3, True),
}


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled(name):
    game = load_game(game_path(name))
    players, sequential = EXPECTED[name]
    assert game.num_players() == players
    dyn = pyspiel.GameType.Dynamics.SEQUENTIAL if sequential else pyspiel.GameType.Dynamics.SIMULTANEOUS
    assert game.get_type().dynamics == dyn
    check_game(game)


@pytest.mark.parametrize("rel", CORPUS_SAMPLE)
def test_corpus_sample(rel):
    check_game(load_game(corpus_path(rel)), matches=1)


def test_tictactoe_details():
    game = load_game(game_path("tictactoe"))
    assert game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    assert game.num_distinct_actions() == 10  # nine marks and noop
    s = game.new_initial_state()
    assert s.current_player() == 0
    g = game.propel_game
    assert [s.action_to_string(0, a) for a in s.legal_actions()] == sorted(
        g.legal_moves(g.initial_state(), 0), key=lambda m: g.move_id(0, m)
    )
    assert len(s.observation_tensor(0)) == len(g.base_names)
    s.apply_action(g.move_id(0, "(mark 2 2)"))
    assert s.current_player() == 1
    assert "(cell 2 2 x)" in str(s)
    c = s.clone()
    c.apply_action(c.legal_actions()[0])
    assert s.current_player() == 1 and c.current_player() == 0
    # The same game by its string.
    assert game.get_type().short_name == "propel"
    again = pyspiel.load_game(str(game))
    assert again.num_distinct_actions() == 10 and again.propel_game == g
    # An OpenSpiel state at a Propel state.
    p = g.next_state(g.initial_state(), ["(mark 1 1)", "noop"])
    assert state_at(game, p).current_player() == 1


def test_simultaneous_dilemma():
    game = load_game(game_path("dilemma"))
    s = game.new_initial_state()
    assert s.current_player() == pyspiel.PlayerId.SIMULTANEOUS
    actions = [s.legal_actions(p)[0] for p in range(2)]
    s.apply_actions(actions)
    assert s.move_number() == 1


def test_prover_refused():
    with pytest.raises(ValueError, match="jit"):
        load_game(game_path("tictactoe"), machine="prover")


def test_forced_sequential_fallback():
    """A game the sample calls sequential, forced to be: with several
    deciders in a state (dilemma), they act one after the other."""
    game = load_game(game_path("dilemma"), dynamics="sequential")
    s = game.new_initial_state()
    assert s.current_player() == 0
    s.apply_action(s.legal_actions()[0])
    assert s.current_player() == 1
    before = s.propel_state
    s.apply_action(s.legal_actions()[0])
    assert s.propel_state != before and s.current_player() == 0
    propel.load  # the package stays importable alongside pyspiel


def test_tictactoe_tree_is_openspiels():
    """The decisions are the rules': the last free cell is still a move
    (one legal action), so the game has the states of OpenSpiel's own
    tic-tac-toe, terminal ones included."""
    game = load_game(game_path("tictactoe"))
    ours = get_all_states.get_all_states(game, to_string=str)
    native = get_all_states.get_all_states(pyspiel.load_game("tic_tac_toe"), to_string=str)
    assert len(ours) == len(native) == 5478
    assert sum(s.is_terminal() for s in ours.values()) == sum(s.is_terminal() for s in native.values()) == 958
    s = game.new_initial_state()
    g = game.propel_game
    for i, cell in enumerate(["1 1", "1 2", "1 3", "2 2", "2 1", "2 3", "3 2", "3 1"]):
        s.apply_action(g.move_id(i % 2, f"(mark {cell})"))
    assert s.current_player() == 0 and s.legal_actions() == [g.move_id(0, "(mark 3 3)")]
    s.apply_action(s.legal_actions()[0])
    assert s.is_terminal() and len(s.history()) == 9
    # Collapsed on request: the forced move is played at once.
    c = load_game(game_path("tictactoe"), collapse_forced=True).new_initial_state()
    for i, cell in enumerate(["1 1", "1 2", "1 3", "2 2", "2 1", "2 3", "3 2", "3 1"]):
        c.apply_action(g.move_id(i % 2, f"(mark {cell})"))
    assert c.is_terminal()


def test_states_load_in_a_fresh_process(tmp_path):
    """A game and a state serialised here load in a process that only
    imported the adapter: the game by its string, the state by its moves;
    the same for rules given as text."""
    rules = open(game_path("connect4")).read()
    for game in [load_game(game_path("breakthrough")), load_game(rules)]:
        s = game.new_initial_state()
        for k in range(5):
            s.apply_action(s.legal_actions()[k % len(s.legal_actions())])
        data = pyspiel.serialize_game_and_state(game, s)
        assert len(data) < 1000 + len(str(game)), "no pickled game in the state"
        path = tmp_path / "state.txt"
        path.write_text(data)
        code = (
            "import sys, pyspiel, propel.openspiel\n"
            "g, s = pyspiel.deserialize_game_and_state(open(sys.argv[1]).read())\n"
            "print(s.history()); print(str(s)); print(s.current_player())\n"
        )
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
        assert out.stdout.splitlines() == [str(s.history()), str(s), str(s.current_player())]
        # In this process too, and a clone keeps its moves.
        g2, s2 = pyspiel.deserialize_game_and_state(data)
        assert str(s2) == str(s) and s2.clone().moves == s.moves


def test_observations_are_shaped_by_the_rules_terms():
    """tic-tac-toe's cells as a 3x3x3 tensor (row, column, mark) and the
    control as a vector; the flat tensor is their concatenation."""
    game = load_game(game_path("tictactoe"))
    g = game.propel_game
    s = game.new_initial_state()
    s.apply_action(g.move_id(0, "(mark 2 3)"))
    obs = game.make_py_observer()
    obs.set_from(s, 0)
    assert obs.dict["cell"].shape == (3, 3, 3) and obs.dict["control"].shape == (2,)
    marks = {m: i for i, m in enumerate(obs.layout.planes[0].labels[2])}
    assert obs.dict["cell"][1, 2, marks["x"]] == 1 and obs.dict["cell"][:, :, marks["b"]].sum() == 8
    assert list(s.observation_tensor(0)) == list(obs.tensor)
    assert obs.tensor.sum() == len(g.state_facts(s.propel_state))


def test_connect_four_plies_are_openspiels():
    """Distinct states after each of the first four plies: the bundled
    connect four (7 columns, 6 rows) and OpenSpiel's `connect_four`."""

    def plies(game, depth):
        out, layer = [], [game.new_initial_state()]
        for _ in range(depth):
            seen = {}
            for s in layer:
                for a in s.legal_actions():
                    c = s.clone()
                    c.apply_action(a)
                    seen[str(c)] = c
            layer = list(seen.values())
            out.append(len(layer))
        return out

    assert plies(load_game(game_path("connect4")), 4) == plies(pyspiel.load_game("connect_four"), 4) == [7, 49, 238, 1120]
