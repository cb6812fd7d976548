"""Any GDL game as an OpenSpiel game (needs `pip install open_spiel`).

    from propel.openspiel import load_game
    game = load_game("games/connect4.kif")        # a pyspiel.Game
    state = game.new_initial_state()

Importing this module registers the game type `propel` with pyspiel, so a
game loads by string in any process that imported it:
`pyspiel.load_game("propel", {"path": "/abs/games/connect4.kif"})`, or
`pyspiel.load_game(game.to_string())` (the rules themselves go in the
`rules_base64` parameter). States serialise as the GDL match so far (the
joint moves, by name, one line each) and are replayed when loaded, so
`pyspiel.deserialize_game_and_state` works in a fresh process.

Turns are the rules' own: a role decides wherever it has a choice to make
in the rules' sense (two or more legal moves, or one that is not a waiting
move: see `propel._turns`), and only waiting moves (the `noop` of the role
not to move) are played for it. The last free cell of tic-tac-toe is a
decision with one legal action, as in OpenSpiel's `tic_tac_toe`.
`collapse_forced=True` steps through every state where nobody has a
choice instead. A game is *sequential* when random games
(`propel._turns.sample`) never show two deciders in one state: then
`current_player()` is the decider and an action is its move id. Otherwise
it is a *simultaneous-move* game: every role acts in every state (roles
that wait have one legal action). Should a sequential game later reach a
state with several deciders, they act one after the other in role order
and the joint move is played when the last has acted. Pass
`dynamics="simultaneous"` to rule that out.

Actions are the roles' move ids (`propel.Game.move_names(role)`), so
`num_distinct_actions` is the largest number of moves of any role.
Rewards come at the end: goal g (0..100) becomes (g - 50) / 50, so a
two-player win/draw/loss game is zero-sum. The observation is the state's
base propositions as 0/1 (the same for every player: GDL games are games
of perfect information), one tensor per functor shaped by its arguments
(`observer.dict["cell"]` is 3x3x3 in tic-tac-toe; see `propel._planes`),
and `observation_tensor()` their concatenation.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pyspiel
from open_spiel.python.observation import IIGObserverForPublicInfoGame

import propel
from propel import _planes, _turns

__all__ = ["load_game", "from_game", "state_at", "GdlGame", "GdlState", "PARAMETERS"]

#: The parameters of the `propel` game type and their defaults: the rules
#: as a path (absolute, no commas, parentheses or '=') or as their text in
#: base64url, unpadded (`rules_base64`), and the options of `load_game`.
PARAMETERS: Dict[str, Any] = {
    "path": "",
    "rules_base64": "",
    "machine": "jit",
    "dynamics": "auto",
    "collapse_forced": False,
    "max_game_length": 0,
    "sample_games": 30,
    "ground_seconds": 60.0,
    "passes": "all",
}


def _game_type(sequential: bool, utility, roles: Tuple[int, int]) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name="propel",
        long_name="GDL game (Propel)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL if sequential else pyspiel.GameType.Dynamics.SIMULTANEOUS,
        chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
        information=pyspiel.GameType.Information.PERFECT_INFORMATION,
        utility=utility,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        min_num_players=roles[0],
        max_num_players=roles[1],
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=PARAMETERS,
    )


@dataclass
class _Built:
    """What a game's parameters give: the Propel game, its turns, its
    OpenSpiel type and info."""

    game: propel.Game
    turns: _turns.Turns
    sequential: bool
    game_type: pyspiel.GameType
    game_info: pyspiel.GameInfo
    #: Where each base goes in the observation (`propel._planes`).
    layout: _planes.Layout


# Games built in this process, by their parameters (a JIT build takes
# seconds; every `pyspiel.load_game` of the same string reuses it).
_BUILT: Dict[tuple, _Built] = {}


def _key(params: Dict[str, Any]) -> tuple:
    return tuple(sorted((k, params[k]) for k in PARAMETERS))


def _build(params: Dict[str, Any], g: Optional[propel.Game] = None) -> _Built:
    """The game these parameters give: built once, or on `g` (a game already
    loaded, which OpenSpiel games made from these parameters then use)."""
    key = _key(params)
    if key in _BUILT and (g is None or _BUILT[key].game == g):
        return _BUILT[key]
    _check(params)
    dynamics, machine = params["dynamics"], params["machine"]
    if g is None:
        if params["path"] and params["rules_base64"]:
            raise ValueError("give the rules as `path` or as `rules_base64`, not both")
        options = dict(ground_seconds=float(params["ground_seconds"]), passes=params["passes"])
        if params["path"]:
            g = propel.load(os.fspath(params["path"]), machine, **options)
        elif params["rules_base64"]:
            g = propel.load(_unb64(params["rules_base64"]), machine, **options)
        else:
            raise ValueError("the propel game needs its rules: a `path` or `rules_base64` parameter")
    sample = _turns.sample(g, games=int(params["sample_games"]), collapse_forced=bool(params["collapse_forced"]))
    sequential = {"auto": not sample.simultaneous, "sequential": True, "simultaneous": False}[dynamics]
    roles = len(g.roles)
    # Zero-sum is inferred from random games: claimed only for two
    # players, over enough games with different outcomes.
    constant = sample.constant_sum()
    if roles == 2 and constant is not None and abs(constant) < 1e-9 and sample.varied and sample.games >= 10:
        utility, utility_sum = pyspiel.GameType.Utility.ZERO_SUM, 0.0
    else:
        utility, utility_sum = pyspiel.GameType.Utility.GENERAL_SUM, None
    game_info = pyspiel.GameInfo(
        num_distinct_actions=max(g.num_moves(r) for r in range(roles)),
        max_chance_outcomes=0,
        num_players=roles,
        min_utility=-1.0,
        max_utility=1.0,
        utility_sum=utility_sum,
        max_game_length=int(params["max_game_length"]) or 2 * sample.max_decisions + 20,
    )
    game_type = _game_type(sequential, utility, (roles, roles))
    built = _Built(g, sample.turns, sequential, game_type, game_info, _planes.layout(g.base_names))
    _BUILT[key] = built
    return built


class GdlGame(pyspiel.Game):
    """A GDL game in OpenSpiel: the registered game type `propel`. Made by
    `load_game`, `from_game` or `pyspiel.load_game("propel", {...})`."""

    def __init__(self, params=None):
        params = {**PARAMETERS, **(params or {})}
        built = _build(params)
        # The parameters that differ from their defaults: the game's string.
        given = {k: v for k, v in params.items() if k in PARAMETERS and v != PARAMETERS[k]}
        super().__init__(built.game_type, built.game_info, given)
        self.propel_game = built.game
        self.turns = built.turns
        self.sequential = built.sequential
        self.layout = built.layout
        # States of this game: a class of their own, whose `_game` is not
        # in their `__dict__`.
        self._state_class = type("GdlState", (GdlState,), {"_game": self})

    def new_initial_state(self):
        return self._state_class(self)

    def make_py_observer(self, iig_obs_type=None, params=None):
        if iig_obs_type is None or (iig_obs_type.public_info and not iig_obs_type.perfect_recall):
            return BasesObserver(self, params)
        return IIGObserverForPublicInfoGame(iig_obs_type, params)


class _Now:
    """A state's Propel state and its legal move ids (computed once). Kept
    out of pickles: OpenSpiel copies a Python state's `__dict__` with
    deepcopy (`clone`) and serialises it with pickle. The Propel state is
    immutable, so a copy is the object itself; a serialised state holds its
    moves instead (`_Moves`), and a loaded one replays them."""

    __slots__ = ("state", "legal")

    def __init__(self, state: Optional[propel.State] = None):
        self.state = state
        self.legal: Optional[List[List[int]]] = None

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_Now, ())


class _Moves:
    """The GDL match so far as move ids: an immutable chain, so that a step
    adds a link and a clone shares it (names are looked up only when a
    state is serialised). Pickles as its text, which a loaded state
    replays (`GdlState.__setattr__`)."""

    __slots__ = ("game", "parent", "joints")

    def __init__(self, game: propel.Game, parent: Optional["_Moves"], joints: List[List[int]]):
        self.game, self.parent, self.joints = game, parent, joints

    def text(self) -> str:
        """Each joint move by name, roles separated by tabs, a line each."""
        links, m = [], self
        while m is not None:
            links.append(m.joints)
            m = m.parent
        g = self.game
        return "".join(
            "\t".join(g.move_name(r, mv) for r, mv in enumerate(j)) + "\n" for joints in reversed(links) for j in joints
        )

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (str, (self.text(),))


class GdlState(pyspiel.State):
    """A state of a GDL game in OpenSpiel; `moves` is the GDL match so far."""

    #: The game (set on each game's own subclass: not in `__dict__`, which
    #: OpenSpiel copies and serialises).
    _game: GdlGame

    def __init__(self, game: GdlGame):
        super().__init__(game)
        g = self._g
        played: List[List[int]] = []
        # In this order: a loaded state gets `_now` empty, then `_moves`
        # (as text: replayed, see `__setattr__`), then `_pending`.
        self._now = _Now(self._game.turns.advance(g, g.initial_state(), played))
        self._moves = _Moves(g, None, played)
        # Sequential games only: moves chosen so far in a state with
        # several deciders, by role.
        self._pending: Dict[int, int] = {}

    def __setattr__(self, name, value):
        # OpenSpiel's deserialisation sets the moves as their text: replay.
        if name == "_moves" and isinstance(value, str):
            state, joints = self._replay(value)
            self._now = _Now(state)
            value = _Moves(self._g, None, joints)
        super().__setattr__(name, value)

    @property
    def moves(self) -> str:
        """The GDL match so far: each joint move by name (roles separated by
        tabs), a line each, waiting moves included."""
        return self._moves.text()

    @property
    def _g(self) -> propel.Game:
        return self._game.propel_game

    @property
    def propel_state(self) -> propel.State:
        return self._now.state

    def _replay(self, moves: str) -> Tuple[propel.State, List[List[int]]]:
        """The Propel state after `moves` (as `moves` gives them) from the
        initial state, and the joint moves as ids."""
        g = self._g
        s, joints = g.initial_state(), []
        for line in moves.splitlines():
            names = line.split("\t")
            try:
                if len(names) != len(g.roles):
                    raise ValueError(f"{len(g.roles)} roles")
                joint = [g.move_id(r, n) for r, n in enumerate(names)]
            except ValueError as e:
                raise ValueError(f"not a joint move of this game: {line!r} ({e})") from e
            s = g.next_state(s, joint)
            joints.append(joint)
        return s, joints

    def _legal_ids(self) -> List[List[int]]:
        now = self._now
        if now.legal is None:
            now.legal = [sorted(ids) for ids in _turns.legal_ids(self._g, now.state)]
        return now.legal

    def _terminal(self) -> bool:
        return self._g.is_terminal(self._now.state)

    def current_player(self):
        if self._terminal():
            return pyspiel.PlayerId.TERMINAL
        if not self._game.sequential:
            return pyspiel.PlayerId.SIMULTANEOUS
        return next(r for r in self._game.turns.deciders(self._legal_ids()) if r not in self._pending)

    def _legal_actions(self, player):
        if player < 0 or self._terminal():
            return []
        return self._legal_ids()[player]

    def _play(self, joint: List[int]):
        g = self._g
        played = [joint]
        self._now = _Now(self._game.turns.advance(g, g.next_state(self._now.state, joint), played))
        self._moves = _Moves(g, self._moves, played)
        self._pending = {}

    def _apply_action(self, action):
        player = self.current_player()
        self._pending[player] = int(action)
        legal = self._legal_ids()
        if all(r in self._pending for r in self._game.turns.deciders(legal)):
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
        return [_turns.reward(g) for g in self._g.goals(self._now.state)]

    def rewards(self):
        return self.returns()

    def __str__(self):
        return " ".join(self._g.state_facts(self._now.state))


class BasesObserver:
    """The state's base propositions as 0/1, the same for every player:
    `dict` holds one tensor per functor, shaped by its arguments
    (`propel._planes`: tic-tac-toe's `cell` is 3x3x3), and `tensor` is
    their concatenation; its string is the state's facts."""

    def __init__(self, game: GdlGame, params):
        if params:
            raise ValueError(f"observation parameters not supported: {params}")
        self.layout = game.layout
        self.tensor = np.zeros(self.layout.size, np.float32)
        self.dict = self.layout.views(self.tensor)

    def set_from(self, state: GdlState, player: int):
        self.tensor[self.layout.dest] = state._g.observation(state.propel_state)

    def string_from(self, state: GdlState, player: int):
        return str(state)


def load_game(
    source,
    machine: str = "jit",
    *,
    dynamics: str = "auto",
    collapse_forced: bool = False,
    max_game_length: Optional[int] = None,
    sample_games: int = 30,
    ground_seconds: float = 60.0,
    passes: str = "all",
) -> GdlGame:
    """Loads a GDL game (a path, or the rules as text or bytes) as an
    OpenSpiel game: `pyspiel.load_game("propel", ...)` with these
    parameters (see `PARAMETERS`).

    `machine`: "jit" or "propnet" (OpenSpiel needs the move tables the
    networks have). `dynamics`: "auto" (sequential unless random games show
    a state where two roles decide), "sequential" or "simultaneous".
    `collapse_forced`: step through states where nobody has a choice,
    forced moves included (off: a forced move that is not a waiting move
    is a decision). `max_game_length`: OpenSpiel's bound on decisions per
    game; by default twice the longest of `sample_games` random games plus
    20 (GDL states no bound; pass one for games whose random play is much
    shorter than play can be). `ground_seconds`, `passes`: as in
    `propel.load`.
    """
    params: Dict[str, Any] = dict(
        machine=machine,
        dynamics=dynamics,
        collapse_forced=bool(collapse_forced),
        max_game_length=int(max_game_length or 0),
        sample_games=int(sample_games),
        ground_seconds=float(ground_seconds),
        passes=passes,
    )
    if isinstance(source, bytes) or (isinstance(source, str) and "(" in source):
        text = source if isinstance(source, bytes) else source.encode()
        params["rules_base64"] = _b64(text)
    else:
        params["path"] = os.path.abspath(os.fspath(source))
    _check(params)
    return pyspiel.load_game("propel", params)


def from_game(
    g: propel.Game,
    *,
    dynamics: str = "auto",
    collapse_forced: bool = False,
    max_game_length: Optional[int] = None,
    sample_games: int = 30,
) -> GdlGame:
    """`load_game` for a game already loaded (on "jit" or "propnet"),
    which the OpenSpiel game then uses."""
    params: Dict[str, Any] = {
        **PARAMETERS,
        "machine": g.machine,
        "dynamics": dynamics,
        "collapse_forced": bool(collapse_forced),
        "max_game_length": int(max_game_length or 0),
        "sample_games": int(sample_games),
    }
    if os.path.isfile(g.name):
        params["path"] = os.path.abspath(g.name)
    else:
        params["rules_base64"] = _b64(g.text)
    _check(params)
    _build(params, g)
    return pyspiel.load_game("propel", {k: v for k, v in params.items() if v != PARAMETERS[k]})


def _b64(text: bytes) -> str:
    """Rules as a game-string parameter: base64url, unpadded (OpenSpiel's
    game strings split on '=')."""
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    t = text.replace("+", "-").replace("/", "_").rstrip("=")
    return base64.urlsafe_b64decode(t + "=" * (-len(t) % 4))


def _check(params: Dict[str, Any]):
    """Errors a user can fix, raised before pyspiel (whose errors are
    fatal) sees the parameters."""
    if params["machine"] in ("prover", "topdown"):
        raise ValueError("OpenSpiel needs every move numbered up front: use machine='jit' or 'propnet'")
    if params["dynamics"] not in ("auto", "sequential", "simultaneous"):
        raise ValueError(f"unknown dynamics {params['dynamics']!r}")
    if any(c in params.get("path", "") for c in ",()="):
        raise ValueError(f"a game's path cannot hold commas, parentheses or '=' in a game string: {params.get('path')!r}")


def state_at(game: GdlGame, state: propel.State) -> "GdlState":
    """An OpenSpiel state of `game` at the Propel state `state` (after its
    waiting moves), with no history: its `moves` are empty, so it does not
    serialise."""
    s = game.new_initial_state()
    s._now = _Now(game.turns.advance(game.propel_game, state))
    s._moves = _Moves(game.propel_game, None, [])
    return s


# The `propel` game type; each game's own type (sequential or
# simultaneous, its players, zero-sum or not) comes with its instance.
if "propel" not in pyspiel.registered_names():
    pyspiel.register_game(_game_type(True, pyspiel.GameType.Utility.GENERAL_SUM, (1, 64)), GdlGame)
