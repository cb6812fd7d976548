"""Any GDL game as an OpenSpiel game (needs `pip install open_spiel`).

    from propel.openspiel import load_game
    game = load_game("games/connect4.kif")        # a pyspiel.Game
    state = game.new_initial_state()

The game is registered with pyspiel under `game.get_type().short_name`
(`propel_<file stem>_<hash>`), so `pyspiel.load_game(name)` works too.

Turns: a role with two or more legal moves *decides*; states in which no
role decides are stepped through (their forced moves are played at once).
A game is *sequential* when random games (`propel._turns.sample`) never
show two deciders in one state: then `current_player()` is the decider
and an action is its move id. Otherwise it is a *simultaneous-move* game:
every role acts in every state (roles without a choice have one legal
action). Should a sequential game later reach a state with several
deciders, they act one after the other in role order and the joint move
is played when the last has acted (the later ones see nothing of the
earlier moves in the observation, but bots that clone states could).
Pass `dynamics="simultaneous"` to rule that out.

Actions are the roles' move ids (`propel.Game.move_names(role)`), so
`num_distinct_actions` is the largest number of moves of any role.
Rewards come at the end: goal g (0..100) becomes (g - 50) / 50, so a
two-player win/draw/loss game is zero-sum. The observation tensor is the
state's base propositions as 0/1 (the same for every player: GDL games
are games of perfect information).
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any, Dict, List, Optional

import numpy as np
import pyspiel
from open_spiel.python.observation import IIGObserverForPublicInfoGame

import propel
from propel import _turns

__all__ = ["load_game", "from_game", "state_at", "GdlGame", "GdlState"]


class GdlGame(pyspiel.Game):
    """A GDL game in OpenSpiel. Made by `load_game`."""

    def __init__(self, game_type, game_info, propel_game: propel.Game, sequential: bool):
        super().__init__(game_type, game_info, {})
        self.propel_game = propel_game
        self.sequential = sequential
        self.num_bases = len(propel_game.base_names)

    def new_initial_state(self):
        return GdlState(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return BasesObserver(self, params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class GdlState(pyspiel.State):
    """A state of a GDL game in OpenSpiel."""

    def __init__(self, game: GdlGame):
        super().__init__(game)
        self._g = game.propel_game
        self._sequential = game.sequential
        self.propel_state = _turns.advance(self._g, self._g.initial_state())
        self._legal: Optional[List[List[int]]] = None
        # Sequential games only: moves chosen so far in a state with
        # several deciders, by role.
        self._pending: Dict[int, int] = {}

    def _legal_ids(self) -> List[List[int]]:
        if self._legal is None:
            self._legal = [sorted(ids) for ids in _turns.legal_ids(self._g, self.propel_state)]
        return self._legal

    def _terminal(self) -> bool:
        return self._g.is_terminal(self.propel_state)

    def current_player(self):
        if self._terminal():
            return pyspiel.PlayerId.TERMINAL
        if not self._sequential:
            return pyspiel.PlayerId.SIMULTANEOUS
        return next(r for r in _turns.deciders(self._legal_ids()) if r not in self._pending)

    def _legal_actions(self, player):
        if player < 0 or self._terminal():
            return []
        return self._legal_ids()[player]

    def _play(self, joint: List[int]):
        self.propel_state = _turns.advance(self._g, self._g.next_state(self.propel_state, joint))
        self._legal = None
        self._pending = {}

    def _apply_action(self, action):
        player = self.current_player()
        self._pending[player] = int(action)
        legal = self._legal_ids()
        if all(r in self._pending for r in _turns.deciders(legal)):
            self._play([self._pending.get(r, ids[0]) for r, ids in enumerate(legal)])

    def _apply_actions(self, actions):
        self._play([int(a) for a in actions])

    def _action_to_string(self, player, action):
        if player < 0:
            return f"joint {action}"
        return self._g.move_name(player, int(action))

    def is_terminal(self):
        return self._terminal()

    def returns(self):
        if not self._terminal():
            return [0.0] * len(self._g.roles)
        return [_turns.reward(g) for g in self._g.goals(self.propel_state)]

    def rewards(self):
        return self.returns()

    def __str__(self):
        return " ".join(self._g.state_facts(self.propel_state))


class BasesObserver:
    """The state's base propositions as a 0/1 tensor (`observation`), and
    its facts as a string."""

    def __init__(self, game: GdlGame, params):
        if params:
            raise ValueError(f"observation parameters not supported: {params}")
        self.tensor = np.zeros(game.num_bases, np.float32)
        self.dict = {"bases": self.tensor}

    def set_from(self, state: GdlState, player: int):
        self.tensor[:] = state._g.observation(state.propel_state)

    def string_from(self, state: GdlState, player: int):
        return str(state)


def _short_name(g: propel.Game, text: bytes, machine: str, dynamics: str) -> str:
    stem = os.path.splitext(os.path.basename(g.name))[0] if g.name != "<text>" else "game"
    stem = re.sub(r"\W", "_", stem).lower()
    digest = hashlib.sha1(text + machine.encode() + dynamics.encode()).hexdigest()[:8]
    return f"propel_{stem}_{digest}"


def load_game(
    source,
    machine: str = "jit",
    *,
    dynamics: str = "auto",
    max_game_length: Optional[int] = None,
    sample_games: int = 30,
    **load_options,
) -> GdlGame:
    """Loads a GDL game (a path or the rules) as an OpenSpiel game.

    `machine`: "jit" or "propnet" (OpenSpiel needs the move tables the
    networks have). `dynamics`: "auto" (sequential unless random games show
    a state where two roles have a choice), "sequential" or
    "simultaneous". `max_game_length`: OpenSpiel's bound on decisions per
    game; by default twice the longest of `sample_games` random games
    plus 20 (GDL states no bound; pass one for games whose random play is
    much shorter than play can be). Other keywords go to `propel.load`.
    """
    if machine in ("prover", "topdown"):
        raise ValueError("OpenSpiel needs every move numbered up front: use machine='jit' or 'propnet'")
    g = propel.load(source, machine, **load_options)
    return from_game(g, dynamics=dynamics, max_game_length=max_game_length, sample_games=sample_games)


_FROM_GAME: Dict[Any, GdlGame] = {}


def from_game(
    g: propel.Game,
    *,
    dynamics: str = "auto",
    max_game_length: Optional[int] = None,
    sample_games: int = 30,
) -> GdlGame:
    """`load_game` for a game already loaded (on "jit" or "propnet");
    the same OpenSpiel game for the same arguments."""
    if dynamics not in ("auto", "sequential", "simultaneous"):
        raise ValueError(f"unknown dynamics {dynamics!r}")
    key = (g, dynamics, max_game_length, sample_games)
    if key in _FROM_GAME:
        return _FROM_GAME[key]
    machine = g.machine
    sample = _turns.sample(g, games=sample_games)
    sequential = {"auto": not sample.simultaneous, "sequential": True, "simultaneous": False}[dynamics]
    roles = len(g.roles)
    # Zero-sum is inferred from random games: claimed only for two
    # players, over enough games with different outcomes.
    constant = sample.constant_sum()
    if roles == 2 and constant is not None and abs(constant) < 1e-9 and sample.varied and sample.games >= 10:
        utility, utility_sum = pyspiel.GameType.Utility.ZERO_SUM, 0.0
    else:
        utility, utility_sum = pyspiel.GameType.Utility.GENERAL_SUM, None
    short = _short_name(g, g.text, machine, "sequential" if sequential else "simultaneous")
    game_type = pyspiel.GameType(
        short_name=short,
        long_name=f"GDL {g.name} (Propel, {machine})",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL if sequential else pyspiel.GameType.Dynamics.SIMULTANEOUS,
        chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=utility,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=roles,
        min_num_players=roles,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification={},
    )
    game_info = pyspiel.GameInfo(
        num_distinct_actions=max(g.num_moves(r) for r in range(roles)),
        max_chance_outcomes=0,
        num_players=roles,
        min_utility=-1.0,
        max_utility=1.0,
        utility_sum=utility_sum,
        max_game_length=max_game_length or 2 * sample.max_decisions + 20,
    )
    def init(self, params=None):
        GdlGame.__init__(self, game_type, game_info, g, sequential)

    # A class, not a closure: pyspiel's registry outlives the interpreter,
    # and a function it held would be freed without the GIL at exit.
    cls = type(f"GdlGame_{short}", (GdlGame,), {"__init__": init})
    if short not in pyspiel.registered_names():
        pyspiel.register_game(game_type, cls)
    _FROM_GAME[key] = cls()
    return _FROM_GAME[key]


def state_at(game: GdlGame, state: propel.State) -> "GdlState":
    """An OpenSpiel state of `game` at the Propel state `state` (after its
    forced moves), with no history."""
    s = game.new_initial_state()
    s.propel_state = _turns.advance(game.propel_game, state)
    s._legal = None
    s._pending = {}
    return s
