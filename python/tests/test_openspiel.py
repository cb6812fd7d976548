"""The OpenSpiel adapter: OpenSpiel's random-simulation checks, its MCTS
bot and evaluate_bots on every bundled game and a corpus sample."""

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open_spiel is not installed (pip install open_spiel)")
from open_spiel.python.algorithms import evaluate_bots, mcts  # noqa: E402
from open_spiel.python.bots import uniform_random  # noqa: E402

from conftest import BUNDLED, CORPUS_SAMPLE, corpus_path, game_path  # noqa: E402
from propel.openspiel import load_game, state_at  # noqa: E402

import propel  # noqa: E402


def check_game(game, matches=3):
    """Random simulations (OpenSpiel's own checks), then bots: OpenSpiel's
    MCTS against random players on sequential games, random players on
    simultaneous ones."""
    pyspiel.random_sim_test(game, num_sims=3, serialize=False, verbose=False)
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
    # The same registered game by name.
    again = pyspiel.load_game(game.get_type().short_name)
    assert again.num_distinct_actions() == 10
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
