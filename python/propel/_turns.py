"""Turn structure shared by the adapters: who decides in a state, forced
moves played automatically, goals as rewards, and a sample of random games
that tells whether a game is sequential.

GDL has no notion of whose turn it is: every role moves in every state,
and a role "waits" by having exactly one legal move (typically `noop`).
The adapters call a role with two or more legal moves a *decider*; states
in which nobody decides are stepped through automatically.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

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


def deciders(legal: Sequence[Sequence[int]]) -> List[int]:
    """Roles with a choice (two or more legal moves)."""
    return [r for r, ids in enumerate(legal) if len(ids) > 1]


def advance(game: Game, state: State) -> State:
    """Plays forced joint moves (every role has exactly one legal move)
    until some role has a choice or the game ends."""
    for _ in range(MAX_FORCED):
        if game.is_terminal(state):
            return state
        legal = legal_ids(game, state)
        if any(len(ids) == 0 for ids in legal):
            role = game.roles[next(r for r, ids in enumerate(legal) if not ids)]
            raise MachineError(f"role {role!r} has no legal move in a non-terminal state")
        if deciders(legal):
            return state
        state = game.next_state(state, [ids[0] for ids in legal])
    raise MachineError(f"more than {MAX_FORCED} forced moves in a row")


@dataclass
class Sample:
    """What random games showed about a game."""

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


def sample(game: Game, games: int = 30, seconds: float = 2.0, seed: int = 0) -> Sample:
    """Plays up to `games` random games (at most `seconds`) through the
    Python API, counting deciders per state."""
    rng = random.Random(seed)
    out = Sample()
    deadline = time.monotonic() + seconds
    while out.games < games and (out.games == 0 or time.monotonic() < deadline):
        s = advance(game, game.initial_state())
        decisions = 0
        while not game.is_terminal(s):
            legal = legal_ids(game, s)
            if len(deciders(legal)) > 1:
                out.simultaneous = True
            decisions += 1
            s = advance(game, game.next_state(s, [rng.choice(ids) for ids in legal]))
            if time.monotonic() > deadline + 10 * seconds:
                break
        else:
            goals = game.goals(s)
            out.varied |= bool(out.outcomes) and goals != out.outcomes[0]
            out.outcomes.append(goals)
            out.sums.append(sum(reward(g) for g in goals))
        out.max_decisions = max(out.max_decisions, decisions)
        out.games += 1
    return out
