"""Observations shaped by the rules' own terms: the base propositions of
each functor as a tensor with one axis per argument, e.g. tic-tac-toe's
`(cell ?x ?y ?mark)` as a 3x3x3 tensor (rows, columns, marks), where a flat
vector over all bases hides the board.

Each functor's bases `(f a1 .. ak)` make a k-dimensional tensor whose axis i
runs over the values seen in argument i (numbers in numeric order, then
other terms in text order). A functor whose bases fill less than a quarter
of that product, and every base of arity 0, go to a flat tensor `other`
instead, so no layout is more than four times the number of bases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

import numpy as np

#: A functor's tensor may be at most this many times its bases.
MAX_FILL = 4


@dataclass
class Plane:
    """One named tensor of the layout."""

    name: str
    shape: Tuple[int, ...]
    #: Per axis, the argument values in order.
    labels: List[List[str]] = field(default_factory=list)


@dataclass
class Layout:
    """Where each base proposition goes: `planes` in order, concatenated
    into one flat buffer of `size`; base `i` goes to position `dest[i]`."""

    planes: List[Plane]
    dest: np.ndarray
    size: int

    def views(self, buffer: np.ndarray) -> Dict[str, np.ndarray]:
        """Each plane as a view into `buffer` (flat, `size` long)."""
        out, at = {}, 0
        for p in self.planes:
            n = int(np.prod(p.shape))
            out[p.name] = buffer[at : at + n].reshape(p.shape)
            at += n
        return out


def split_term(text: str) -> Tuple[str, List[str]]:
    """A KIF term's functor and top-level arguments (a constant: itself,
    no arguments)."""
    text = text.strip()
    if not text.startswith("("):
        return text, []
    parts, depth, cur = [], 0, ""
    for ch in text[1:-1]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == " " and depth == 0:
            if cur:
                parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    return parts[0], parts[1:]


def _order(values) -> List[str]:
    numbers = sorted((v for v in values if v.lstrip("-").isdigit()), key=int)
    return numbers + sorted(v for v in values if not v.lstrip("-").isdigit())


def layout(base_names: Sequence[str]) -> Layout:
    """The layout of a game's bases (`propel.Game.base_names`)."""
    groups: Dict[Tuple[str, int], List[Tuple[int, List[str]]]] = {}
    for i, name in enumerate(base_names):
        f, args = split_term(name)
        groups.setdefault((f, len(args)), []).append((i, args))
    arities: Dict[str, int] = {}
    for f, k in groups:
        arities[f] = arities.get(f, 0) + 1
    planes: List[Plane] = []
    dest = np.zeros(len(base_names), np.int64)
    other: List[int] = []
    at = 0
    for (f, k), members in groups.items():
        labels = [_order({args[a] for _, args in members}) for a in range(k)]
        shape = tuple(len(l) for l in labels)
        if k == 0 or int(np.prod(shape)) > MAX_FILL * len(members):
            other.extend(i for i, _ in members)
            continue
        index = [{v: j for j, v in enumerate(l)} for l in labels]
        for i, args in members:
            dest[i] = at + int(np.ravel_multi_index(tuple(index[a][args[a]] for a in range(k)), shape))
        planes.append(Plane(f if arities[f] == 1 else f"{f}/{k}", shape, labels))
        at += int(np.prod(shape))
    if other:
        for j, i in enumerate(sorted(other)):
            dest[i] = at + j
        planes.append(Plane("other", (len(other),), [[base_names[i] for i in sorted(other)]]))
        at += len(other)
    return Layout(planes, dest, at)
