"""Broadcasting rules: the result shape of two operands and OneFlow's SimplifyBroadcastDims.

The one place these shape rules live: primitives plan with them, ops fold shapes with them, and
tests check them against NumPy.
"""
from __future__ import annotations

from typing import Sequence


def broadcast_shape(a: Sequence[int], b: Sequence[int], names: tuple[str, str] = ("a", "b")) -> tuple[int, ...]:
    """NumPy's broadcast of shapes a and b; ValueError naming both when they are incompatible."""
    a, b = tuple(a), tuple(b)
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"shapes {names[0]}={a} and {names[1]}={b} do not broadcast together")
        out.append(y if x == 1 else x)
    return tuple(out)


def simplify_broadcast_dims(a: Sequence[int], b: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Equal-rank dims for a and b that index the same elements with fewer dims.

    Aligns from the right, drops dims where both are 1, and merges neighbouring dims in which
    each operand is broadcast (size 1) in both or in neither. An empty result means one element.
    """
    out = broadcast_shape(a, b)
    rank = len(out)
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    sa: list[int] = []
    sb: list[int] = []
    for x, y, n in zip(pa, pb, out):
        if n == 1:
            continue
        pattern = (x == 1, y == 1)
        if sa and (sa[-1] == 1, sb[-1] == 1) == pattern:
            sa[-1] *= x
            sb[-1] *= y
        else:
            sa.append(x)
            sb.append(y)
    return tuple(sa), tuple(sb)
