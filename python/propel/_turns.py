"""Turn structure shared by the adapters: who decides in a state, waiting
moves played automatically, goals as rewards, and a sample of random games
that tells whether a game is sequential.

GDL has no notion of whose turn it is: every role moves in every state,
and a role "waits" by having exactly one legal move (typically `noop`).
A role's *waiting moves* are the moves that random games showed as its
only legal move while another role had a choice. A role *decides* in a
state where it has two or more legal moves, or one that is not a waiting
move (the last free cell of tic-tac-toe is still the player's move, as in
the rules and in OpenSpiel's own games). States in which every role only
waits are stepped through automatically. `Turns(collapse_forced=True)`
also steps through every state where nobody has a choice.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import FrozenSet, List, Optional, Sequence, Set, Tuple

from propel._propel import Game, MachineError, State

#: Forced joint moves played in a row before a game is taken to loop.
MAX_FORCED = 100_000


def reward(goal: int) -> float:
    """A GDL goal (0..100) as a reward in [-1, 1]: 100 is 1, 50 is 0, 0 is
    -1 (a two-player win/draw/loss game becomes zero-sum)."""
    return (goal - 50) / 50.0


def legal_ids(game: Game, state: State) -> List[List[int]]:
    """Each role's legal move ids in `state`."""
    return [game.legal_move_ids(state, r) for r in range(len(game.roles))]


@dataclass
class Turns:
    """Who decides: each role's waiting moves (from `sample`)."""

    #: Per role, the move ids seen as its only move while another role chose.
    waiting: List[FrozenSet[int]]
    #: Single legal moves never decide, waiting or not.
    collapse_forced: bool = False

    def deciders(self, legal: Sequence[Sequence[int]]) -> List[int]:
        """Roles that decide in a state with these legal move ids."""
        return [r for r, ids in enumerate(legal) if self.decides(r, ids)]

    def decides(self, role: int, ids: Sequence[int]) -> bool:
        if len(ids) != 1:
            return len(ids) > 1
        return not self.collapse_forced and ids[0] not in self.waiting[role]

    def advance(self, game: Game, state: State, played: Optional[List[List[int]]] = None) -> State:
        """Plays the joint moves in which no role decides until some role
        does or the game ends; appends each to `played`."""
        for _ in range(MAX_FORCED):
            if game.is_terminal(state):
                return state
            legal = legal_ids(game, state)
            if any(len(ids) == 0 for ids in legal):
                role = game.roles[next(r for r, ids in enumerate(legal) if not ids)]
                raise MachineError(f"role {role!r} has no legal move in a non-terminal state")
            if self.deciders(legal):
                return state
            joint = [ids[0] for ids in legal]
            if played is not None:
                played.append(joint)
            state = game.next_state(state, joint)
        raise MachineError(f"more than {MAX_FORCED} forced moves in a row")


@dataclass
class Sample:
    """What random games showed about a game."""

    #: Who decides where (waiting moves, see `Turns`).
    turns: Turns = field(default_factory=lambda: Turns([]))
    #: Some state had two or more deciders.
    simultaneous: bool = False
    #: Greatest number of decision states in one game.
    max_decisions: int = 0
    #: Rewards summed over roles at each terminal state seen.
    sums: List[float] = field(default_factory=list)
    outcomes: List[List[int]] = field(default_factory=list)
    games: int = 0
    #: Games ended with different goals.
    varied: bool = False

    def constant_sum(self) -> Optional[float]:
        """The rewards' sum when every game ended with the same sum."""
        if self.sums and max(self.sums) - min(self.sums) < 1e-9:
            return self.sums[0]
        return None


def sample(game: Game, games: int = 30, seconds: float = 2.0, seed: int = 0, collapse_forced: bool = False) -> Sample:
    """Plays up to `games` random games (at most `seconds`) through the
    Python API, one joint move at a time: first the waiting moves, then
    the deciders of every state seen."""
    rng = random.Random(seed)
    out = Sample()
    roles = len(game.roles)
    waiting: List[Set[int]] = [set() for _ in range(roles)]
    # Each game's non-terminal states, as their legal move ids.
    seen: List[List[Tuple[Tuple[int, ...], ...]]] = []
    deadline = time.monotonic() + seconds
    while out.games < games and (out.games == 0 or time.monotonic() < deadline):
        s = game.initial_state()
        states = []
        for _ in range(MAX_FORCED):
            if game.is_terminal(s):
                goals = game.goals(s)
                out.varied |= bool(out.outcomes) and goals != out.outcomes[0]
                out.outcomes.append(goals)
                out.sums.append(sum(reward(g) for g in goals))
                break
            legal = tuple(tuple(ids) for ids in legal_ids(game, s))
            if any(not ids for ids in legal):
                role = game.roles[next(r for r, ids in enumerate(legal) if not ids)]
                raise MachineError(f"role {role!r} has no legal move in a non-terminal state")
            states.append(legal)
            if any(len(ids) > 1 for ids in legal):
                for r, ids in enumerate(legal):
                    if len(ids) == 1:
                        waiting[r].add(ids[0])
            s = game.next_state(s, [rng.choice(ids) for ids in legal])
            if time.monotonic() > deadline + 10 * seconds:
                break
        seen.append(states)
        out.games += 1
    out.turns = Turns([frozenset(w) for w in waiting], collapse_forced)
    for states in seen:
        decisions = 0
        for legal in states:
            n = len(out.turns.deciders(legal))
            out.simultaneous |= n > 1
            decisions += n > 0
        out.max_decisions = max(out.max_decisions, decisions)
    return out
