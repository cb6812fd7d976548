"""The PettingZoo adapter: PettingZoo's api_test on every bundled game and
a corpus sample."""

import warnings

import numpy as np
import pytest

from conftest import BUNDLED, CORPUS_SAMPLE, corpus_path, game_path, need

need("pettingzoo", "pettingzoo is not installed (pip install pettingzoo)")
from pettingzoo.test import api_test  # noqa: E402

from propel.pettingzoo import env  # noqa: E402


def check(path, cycles):
    with warnings.catch_warnings():
        # PettingZoo's advice for dict observations and agent names (its
        # own classic games draw the same).
        warnings.simplefilter("ignore")
        api_test(env(path), num_cycles=cycles)


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled(name):
    check(game_path(name), 300)


@pytest.mark.parametrize("rel", CORPUS_SAMPLE)
def test_corpus_sample(rel):
    check(corpus_path(rel), 100)


def play(e, rng):
    e.reset(seed=1)
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        if terminated or truncated:
            e.step(None)
        else:
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_rewards_sum_to_zero_in_tictactoe():
    e = env(game_path("tictactoe"))
    noop = e.unwrapped.game.move_id(0, "noop")
    rng = np.random.default_rng(0)
    for _ in range(20):
        e.reset(seed=1)
        totals = dict.fromkeys(e.possible_agents, 0.0)
        for agent in e.agent_iter():
            obs, reward, terminated, truncated, info = e.last()
            totals[agent] += reward
            if terminated or truncated:
                e.step(None)
            else:
                mask = obs["action_mask"]
                # Only agents that decide are asked: never to wait, and
                # with one move only where it is a mark (the last cell).
                assert not mask[noop] and (mask.sum() >= 2 or e.unwrapped.game.move_name(0, int(mask.argmax())) != "noop")
                e.step(int(rng.choice(np.flatnonzero(mask))))
        assert sum(totals.values()) == 0.0
        assert set(totals.values()) <= {-1.0, 0.0, 1.0}


def test_illegal_move_raises():
    e = env(game_path("tictactoe"))
    e.reset()
    with pytest.raises(ValueError, match="not legal"):
        e.step(e.unwrapped.game.move_id(0, "noop"))


def test_truncation():
    e = env(game_path("connect4"), max_steps=3)
    e.reset()
    steps = 0
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        if terminated or truncated:
            assert truncated and not terminated
            e.step(None)
        else:
            steps += 1
            e.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert steps == 3
