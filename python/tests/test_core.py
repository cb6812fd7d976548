"""The core package: loading, states, moves, goals, pickling, errors, and
the batched calls."""

import copy
import pickle
import random
import threading
import time

import numpy as np
import pytest

import propel
from conftest import BUNDLED, game_path


@pytest.fixture(scope="module")
def ttt():
    return {m: propel.load(game_path("tictactoe"), m) for m in propel.MACHINES}


def random_game(game, seed, max_steps=200):
    """A random game by move names: (states' facts, joint moves, goals)."""
    rng = random.Random(seed)
    s = game.initial_state()
    facts, joints = [game.state_facts(s)], []
    while not game.is_terminal(s) and len(joints) < max_steps:
        joint = [rng.choice(sorted(game.legal_moves(s, r))) for r in range(len(game.roles))]
        s = game.next_state(s, joint)
        facts.append(game.state_facts(s))
        joints.append(joint)
    return facts, joints, game.goals(s)


@pytest.mark.parametrize("name", BUNDLED)
def test_machines_agree(name):
    """The same random game (moves chosen by name) on the JIT, the propnet
    and the prover: the same states, legal moves and goals."""
    games = [propel.load(game_path(name), m) for m in propel.MACHINES]
    for seed in range(3):
        runs = [random_game(g, seed) for g in games]
        assert runs[0] == runs[1] == runs[2]


def test_roles_moves_and_ids(ttt):
    g = ttt["jit"]
    assert g.roles == ["xplayer", "oplayer"]
    s = g.initial_state()
    names = g.legal_moves(s, "xplayer")
    ids = g.legal_move_ids(s, 0)
    assert names == [g.move_name(0, i) for i in ids]
    assert [g.move_id(0, n) for n in names] == ids
    assert g.move_id(0, "( MARK 1  1 )") == g.move_id(0, "(mark 1 1)")
    assert g.legal_moves(s, 1) == ["noop"]
    assert len(g.move_names(0)) == g.num_moves(0)
    # Ids and names mix in a joint move.
    s1 = g.next_state(s, [ids[0], "noop"])
    assert s1 == g.next_state(s, [names[0], g.move_id(1, "noop")])
    assert not g.is_terminal(s1)
    assert g.goals(s1) == [50, 50] or len(g.goals(s1)) == 2


def test_bad_moves_raise(ttt):
    g = ttt["jit"]
    s = g.initial_state()
    with pytest.raises(ValueError, match="not legal"):
        g.next_state(s, ["noop", "noop"])
    with pytest.raises(ValueError):
        g.next_state(s, ["(mark 9 9)", "noop"])
    with pytest.raises(ValueError, match="one move per role"):
        g.next_state(s, ["(mark 1 1)"])
    with pytest.raises(TypeError):
        g.next_state(s, [1.5, "noop"])
    with pytest.raises(IndexError):
        g.legal_moves(s, 7)
    with pytest.raises(ValueError):
        g.legal_moves(s, "nobody")
    other = propel.load(game_path("connect4"))
    with pytest.raises(ValueError, match="another game"):
        other.is_terminal(s)


def test_misspelt_keyword_warns(tmp_path):
    """tic-tac-toe with one `legal` rule misspelt: loading warns, naming the
    relation, its position and the keyword."""
    text = open(game_path("tictactoe")).read()
    i = text.index("(legal ")
    bad = tmp_path / "typo.kif"
    bad.write_text(text[:i] + "(legl " + text[i + len("(legal "):])
    with pytest.warns(propel.GdlWarning, match=r"`legl` is defined \(first at \d+:\d+\) but no rule reads it; did you mean `legal`\?"):
        propel.load(bad, "propnet")


def test_gdl_error_position(tmp_path):
    bad = tmp_path / "bad.kif"
    bad.write_text("(role x)\n(init (p))\n(<= (legal x a) (true (p))\n")
    with pytest.raises(propel.GdlError) as e:
        propel.load(bad)
    assert e.value.file == str(bad)
    assert (e.value.line, e.value.col) == (3, 1)
    assert f"{bad}:3:1" in str(e.value)
    with pytest.raises(propel.GdlError) as e:
        propel.load("(role x) (init (p 1))\n (<= (legal x a) (true (p 1 2)))")
    assert (e.value.file, e.value.line, e.value.col, e.value.excerpt) == ("<text>", 2, 24, "(p 1 2)")
    with pytest.raises(propel.GdlError) as e:
        propel.load("(role x) (init p) (<= (legal x a) (true p)) (<= terminal (not (true p)))")
    assert e.value.line is None and "goal" in str(e.value)
    with pytest.raises(OSError):
        propel.load(tmp_path / "missing.kif")
    with pytest.raises(ValueError):
        propel.load(game_path("tictactoe"), "gpu")


def test_state_hash_eq_pickle(ttt):
    for m, g in ttt.items():
        s = g.initial_state()
        t = g.next_state(s, ["(mark 2 2)", "noop"])
        assert s != t and s == g.initial_state() and hash(s) == hash(g.initial_state())
        assert copy.deepcopy(t) is t and copy.copy(g) is g
        u = pickle.loads(pickle.dumps(t))
        assert u == t and hash(u) == hash(t) and u.game == g, m
        assert g.goals(u) == g.goals(t)
        assert len({s, t, u}) == 2
        assert g.state_from_facts(g.state_facts(t)) == t
        assert t.facts == g.state_facts(t)
        # A pickled game unpickles to the live one in this process.
        assert pickle.loads(pickle.dumps(g)) == g


@pytest.mark.parametrize("machine", ["prover", "topdown"])
def test_reasoner_moves_met_first(ttt, machine):
    g = ttt[machine]
    s = g.initial_state()
    assert g.move_id(0, "(mark 3 3)") in g.legal_move_ids(s, 0)
    with pytest.raises(propel.PropelError):
        g.num_moves(0)
    with pytest.raises(propel.PropelError):
        g.observation(s)


@pytest.mark.parametrize("machine", ["jit", "propnet"])
def test_observations_and_masks(ttt, machine):
    g = ttt[machine]
    facts, joints, _ = random_game(g, 5)
    states = [g.state_from_facts(f) for f in facts]
    obs = g.observations(states)
    assert obs.shape == (len(states), len(g.base_names)) and obs.dtype == np.uint8
    for s, row in zip(states, obs):
        assert sorted(np.array(g.base_names)[row == 1].tolist()) == g.state_facts(s)
        assert (g.observation(s) == row).all()
    masks = g.legal_masks(states, 0)
    assert masks.shape == (len(states), g.num_moves(0)) and masks.dtype == bool
    for s, mask in zip(states, masks):
        assert sorted(np.flatnonzero(mask).tolist()) == sorted(g.legal_move_ids(s, 0))
        assert (g.legal_mask(s, "xplayer") == mask).all()


@pytest.mark.parametrize("machine", propel.MACHINES)
def test_random_playouts(ttt, machine):
    g = ttt[machine]
    n = 300 if machine in ("prover", "topdown") else 3000
    goals, lengths = g.random_playouts(n, seed=7, threads=2)
    assert goals.shape == (n, 2) and goals.dtype == np.int32
    assert lengths.shape == (n,) and lengths.dtype == np.uint32
    assert ((lengths >= 5) & (lengths <= 9)).all()
    # Tic-tac-toe: win/loss/draw, the goals sum to 100.
    assert (goals.sum(1) == 100).all()
    assert set(np.unique(goals)) <= {0, 50, 100}
    # X, moving first, wins more often than O at random.
    assert (goals[:, 0] == 100).mean() > (goals[:, 1] == 100).mean()
    again, lengths2 = g.random_playouts(n, seed=7, threads=2)
    assert (again == goals).all() and (lengths2 == lengths).all()
    # From a given state: one move from the end.
    s = g.state_from_facts(
        ["(cell 1 1 x)", "(cell 1 2 x)", "(cell 1 3 b)", "(cell 2 1 o)", "(cell 2 2 o)", "(cell 2 3 b)"]
        + ["(cell 3 1 b)", "(cell 3 2 b)", "(cell 3 3 b)", "(control xplayer)"]
    )
    goals, lengths = g.random_playouts(50, state=s, seed=1)
    assert (lengths >= 1).all() and (goals[lengths == 1, 0] == 100).all()


def test_playout_means_agree_across_machines():
    """Mean goals over many playouts agree between the machines (within
    sampling error): the lanes play uniformly random games too."""
    means = {}
    for m in ("jit", "propnet"):
        g = propel.load(game_path("connect4"), m)
        goals, lengths = g.random_playouts(20000, seed=3, threads=2)
        means[m] = (goals[:, 0].mean(), lengths.mean())
    (g1, l1), (g2, l2) = means["jit"], means["propnet"]
    assert abs(g1 - g2) < 2.0 and abs(l1 - l2) < 0.6


def test_playouts_release_the_gil():
    """Another Python thread runs while random_playouts works."""
    g = propel.load(game_path("breakthrough"))
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    start = len(ticks)
    g.random_playouts(20000, threads=1)
    during = len(ticks) - start
    done.set()
    t.join()
    assert during > 5


def test_search_returns_legal_moves(ttt):
    for g in ttt.values():
        s = g.initial_state()
        best = g.search(s, seconds=0.05)
        assert len(best) == 2
        move_id, name, value, visits = best[0]
        assert name in g.legal_moves(s, 0) and g.move_name(0, move_id) == name
        assert 0.0 <= value <= 100.0 and visits > 0


def test_bad_arguments_raise_not_crash(ttt):
    g = ttt["jit"]
    s = g.initial_state()
    with pytest.raises(propel.MachineError, match="memory"):
        g.random_playouts(10**15)
    with pytest.raises(OverflowError):
        g.random_playouts(-1)
    with pytest.raises(ValueError):
        g.search(s, seconds=1e300)
    with pytest.raises(ValueError):
        g.search(s, seconds=float("nan"))
    with pytest.raises(ValueError):
        propel.load(game_path("tictactoe"), ground_seconds=-1)
    with pytest.raises(ValueError):
        propel.load(game_path("tictactoe"), passes="nonsense")
    with pytest.raises(ValueError):
        g.state_from_facts(["(cell 1 1"])
    with pytest.raises(ValueError):
        ttt["prover"].state_from_facts(["(zork)"])
    goals, lengths = g.random_playouts(10, threads=10**6)
    assert goals.shape == (10, 2)
    # A game that cannot be grounded in the time given.
    with pytest.raises(propel.BuildError):
        propel.load(game_path("breakthrough"), ground_seconds=0.0)


def test_a_goal_over_the_budget_is_answered_by_the_rules():
    """Sudoku's goal grounds past the budget; its legal moves and next
    states do not. The propnet machine answers the goal from the rules and
    plays the same games as the prover."""
    from conftest import corpus_path

    path = corpus_path("base/sudoku.kif")
    net, prover = propel.load(path, "propnet"), propel.load(path, "prover")
    for seed in range(3):
        assert random_game(net, seed) == random_game(prover, seed)
