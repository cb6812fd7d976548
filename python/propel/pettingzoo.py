"""Any GDL game as a PettingZoo AEC environment (needs `pip install
pettingzoo`).

    from propel.pettingzoo import env
    e = env("games/connect4.kif")
    e.reset(seed=0)
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        action = None if terminated or truncated else int(obs["action_mask"].nonzero()[0][0])
        e.step(action)

Agents are the game's roles. Each agent's action space is Discrete over its
move ids (`propel.Game.move_names(role)`); its observation is a dict:
`observation` (the base propositions as 0/1 int8, the same for every
agent) and `action_mask` (int8, 1 where the move is legal for that
agent). In a state, the roles that decide (two or more legal moves, or
one that is not a waiting move: see `propel._turns`) act, one after
another in role order; the joint move is played once all have acted,
waiting moves filled in, and states where every role waits are stepped
through (`collapse_forced=True`: every state where nobody has a choice).
Rewards come at the end: goal g (0..100) becomes (g - 50) / 50.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

import propel
from propel import _turns

__all__ = ["env", "raw_env"]


def env(source, machine: str = "jit", **kwargs):
    """The environment wrapped as PettingZoo's classic games are (order of
    calls enforced). Keywords: `render_mode` ("human" or "ansi"),
    `max_steps` (truncate after that many joint moves), others go to
    `propel.load`."""
    return wrappers.OrderEnforcingWrapper(raw_env(source, machine, **kwargs))


class raw_env(AECEnv):
    """A GDL game as an AEC environment, unwrapped."""

    metadata = {"render_modes": ["human", "ansi"], "name": "propel_gdl", "is_parallelizable": False}

    def __init__(
        self,
        source,
        machine: str = "jit",
        *,
        render_mode: Optional[str] = None,
        max_steps: Optional[int] = None,
        game: Optional[propel.Game] = None,
        collapse_forced: bool = False,
        **load_options,
    ):
        super().__init__()
        if machine in ("prover", "topdown") and game is None:
            raise ValueError("PettingZoo needs every move numbered up front: use machine='jit' or 'propnet'")
        self.game = game if game is not None else propel.load(source, machine, **load_options)
        g = self.game
        stem = os.path.splitext(os.path.basename(g.name))[0] if g.name != "<text>" else "game"
        self.metadata = dict(self.metadata, name="propel_" + re.sub(r"\W", "_", stem).lower())
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unknown render_mode {render_mode!r}")
        self.render_mode = render_mode
        self.max_steps = max_steps
        self.possible_agents: List[str] = list(g.roles)
        self._role = {a: r for r, a in enumerate(self.possible_agents)}
        n_bases = len(g.base_names)
        self.action_spaces = {a: spaces.Discrete(g.num_moves(r)) for a, r in self._role.items()}
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0, 1, (n_bases,), np.int8),
                    "action_mask": spaces.Box(0, 1, (g.num_moves(r),), np.int8),
                }
            )
            for a, r in self._role.items()
        }
        self.state_: Optional[propel.State] = None
        self.turns = _turns.sample(g, collapse_forced=collapse_forced).turns

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def observe(self, agent):
        obs = self.game.observation(self.state_).astype(np.int8)
        mask = self.game.legal_mask(self.state_, self._role[agent]).astype(np.int8)
        return {"observation": obs, "action_mask": mask}

    def _begin_turn(self):
        """Recomputes who acts in the current state."""
        self._legal = _turns.legal_ids(self.game, self.state_)
        self._deciders = self.turns.deciders(self._legal)
        self._pending: Dict[int, int] = {}

    def _next_decider(self) -> str:
        r = next(r for r in self._deciders if r not in self._pending)
        return self.possible_agents[r]

    def reset(self, seed=None, options=None):
        if seed is not None:
            for i, a in enumerate(self.possible_agents):
                self.action_spaces[a].seed(seed + i)
        self.state_ = self.turns.advance(self.game, self.game.initial_state())
        self.steps = 0
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        if self.game.is_terminal(self.state_):
            self._finish()
            self.agent_selection = self.agents[0]
        else:
            self._begin_turn()
            self.agent_selection = self._next_decider()

    def _finish(self):
        goals = self.game.goals(self.state_)
        for a, r in self._role.items():
            self.rewards[a] = _turns.reward(goals[r])
            self.terminations[a] = True

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        role = self._role[agent]
        action = int(action)
        if action not in self._legal[role]:
            raise ValueError(f"move {action} ({self.game.move_name(role, action)}) is not legal for {agent}")
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        self._pending[role] = action
        if all(r in self._pending for r in self._deciders):
            joint = [self._pending.get(r, ids[0]) for r, ids in enumerate(self._legal)]
            self.state_ = self.turns.advance(self.game, self.game.next_state(self.state_, joint))
            self.steps += 1
            if self.game.is_terminal(self.state_):
                self._finish()
            elif self.max_steps is not None and self.steps >= self.max_steps:
                self.truncations = {a: True for a in self.agents}
            else:
                self._begin_turn()
        if any(self.terminations.values()) or any(self.truncations.values()):
            self.agent_selection = self.agents[0]
        else:
            self.agent_selection = self._next_decider()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def render(self):
        if self.render_mode is None:
            return None
        text = " ".join(self.game.state_facts(self.state_))
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    def close(self):
        pass
