"""Broadcasting rules: the result shape of two operands and OneFlow's SimplifyBroadcastDims (of any number).

The one place these shape rules live: primitives plan with them, ops fold shapes with them, and
tests check them against NumPy.
"""
from __future__ import annotations

import math
from typing import Sequence

from ep.common.runtime.validate import INT64_MAX


def broadcast_shape(a: Sequence[int], b: Sequence[int], names: tuple[str, str] = ("a", "b")) -> tuple[int, ...]:
    """NumPy's broadcast of shapes a and b; ValueError naming both when they are incompatible or
    their broadcast holds more than 2**63 - 1 elements (each may fit where the broadcast does not)."""
    a, b = tuple(a), tuple(b)
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"shapes {names[0]}={a} and {names[1]}={b} do not broadcast together")
        out.append(y if x == 1 else x)
    if math.prod(out) > INT64_MAX:
        raise ValueError(f"shapes {names[0]}={a} and {names[1]}={b} broadcast to {tuple(out)}, more than 2**63 - 1 elements")
    return tuple(out)


def simplify_broadcast_dims(*shapes: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Equal-rank dims for each of shapes (two for a binary op, three for where) that index the
    same elements with fewer dims.

    Aligns from the right, drops dims where all are 1, and merges neighbouring dims in which each
    operand is broadcast (size 1) in both or in neither. An empty result means one element.
    """
    out: tuple[int, ...] = ()
    for shape in shapes:
        out = broadcast_shape(out, shape)
    rank = len(out)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in shapes]
    simplified: list[list[int]] = [[] for _ in shapes]
    for d, n in enumerate(out):
        if n == 1:
            continue
        pattern = tuple(p[d] == 1 for p in padded)
        if simplified[0] and tuple(s[-1] == 1 for s in simplified) == pattern:
            for s, p in zip(simplified, padded):
                s[-1] *= p[d]
        else:
            for s, p in zip(simplified, padded):
                s.append(p[d])
    return tuple(tuple(s) for s in simplified)
