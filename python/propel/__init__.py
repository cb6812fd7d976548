"""Propel from Python: any GDL game as a fast state machine.

    import propel
    game = propel.load("games/connect4.kif")          # JIT-compiled propnet
    goals, lengths = game.random_playouts(100_000)     # NumPy arrays

`propel.load` reads, validates and builds a game; the `Game` it returns
gives roles, states, legal moves (names or integer ids), next states,
goals, observations (the base propositions as a 0/1 vector) and batched
random playouts that run without the GIL. Adapters: `propel.openspiel`
(an OpenSpiel game), `propel.pettingzoo` (an AEC environment) and
`propel.tournament` (matches, Elo, Ray). See docs/python.md.
"""

from __future__ import annotations

import os
import warnings
from typing import Union

from propel._propel import (
    BuildError,
    Game,
    GdlError,
    MachineError,
    PropelError,
    State,
    load_text,
)

__all__ = [
    "load",
    "Game",
    "State",
    "PropelError",
    "GdlError",
    "BuildError",
    "MachineError",
    "GdlWarning",
    "MACHINES",
]

#: The machines a game can run on: the JIT (propnet compiled to native
#: code; bit-parallel playouts), the interpreted propnet, and the reference
#: prover (no grounding: any valid game, slowly; no move or base tables).
MACHINES = ("jit", "propnet", "prover", "topdown")


def load(
    source: Union[str, bytes, "os.PathLike[str]"],
    machine: str = "jit",
    *,
    ground_seconds: float = 60.0,
    passes: str = "all",
) -> Game:
    """Loads a GDL game.

    `source` is a path to a .kif file, or the rules themselves (a string
    containing a parenthesis, or bytes). `machine` is "jit", "propnet",
    "prover" or "topdown" (the rules asked top-down with tabling: the
    faster reasoner on rules written for a Prolog-style prover, where no
    network builds). `ground_seconds` bounds grounding; `passes` names the propnet
    optimisation passes ("all", "none" or a comma-separated list).

    Raises GdlError (with `file`, `line`, `col`) when the rules are not
    valid GDL, BuildError when the machine cannot be built, OSError when
    the file cannot be read.
    """
    if machine not in MACHINES:
        raise ValueError(f"unknown machine {machine!r} (one of {', '.join(MACHINES)})")
    if isinstance(source, bytes):
        name, text = "<text>", source
    elif isinstance(source, str) and "(" in source:
        name, text = "<text>", source.encode()
    elif isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        with open(name, "rb") as f:
            text = f.read()
    else:
        raise TypeError("source is a path, or GDL text as str or bytes")
    game = load_text(name, text, machine, ground_seconds, passes)
    # A relation one or two letters from a keyword is most likely a
    # misspelt one: said at once; every other warning is in `game.warnings`.
    for w in game.warnings:
        if "did you mean" in w:
            warnings.warn(f"{name}: {w}", GdlWarning, stacklevel=2)
    return game


class GdlWarning(UserWarning):
    """A likely mistake in a game's rules that does not make them invalid
    (a misspelt keyword: a relation defined but never read, or read but
    never defined)."""
