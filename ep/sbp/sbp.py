"""The three SBPs (OneFlow's sbp_parallel) and nd-SBPs, one SBP per hierarchy axis of a placement.

split(axis): each rank holds a balanced slice of the logical tensor along axis; broadcast: each rank
holds all of it; partial_sum: each rank holds a tensor of the logical shape, and the logical tensor
is their sum.
"""
from __future__ import annotations

from ep.common.runtime.validate import count


class SBP:
    """How one hierarchy axis of a placement holds a logical tensor: Split, Broadcast or PartialSum."""

    __slots__ = ()

    def _key(self) -> tuple:
        return (type(self),)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("an SBP is immutable")


class Split(SBP):
    """split(axis): rank i holds the i-th balanced slice along axis (repr S(axis))."""

    __slots__ = ("axis",)

    def __init__(self, axis: int) -> None:
        object.__setattr__(self, "axis", count(axis, "axis"))

    def _key(self) -> tuple:
        return (Split, self.axis)

    def __reduce__(self) -> tuple:
        return Split, (self.axis,)  # pickle's and copy's way past __setattr__

    def __repr__(self) -> str:
        return f"S({self.axis})"


class Broadcast(SBP):
    """Every rank holds the whole logical tensor (repr B); the instance `broadcast`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "B"

    def __reduce__(self) -> str:
        return "broadcast"  # the one instance


class PartialSum(SBP):
    """Every rank holds a tensor of the logical shape; the logical tensor is their sum (repr P);
    the instance `partial_sum`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "P"

    def __reduce__(self) -> str:
        return "partial_sum"  # the one instance


broadcast = Broadcast()
partial_sum = PartialSum()


def split(axis: int) -> Split:
    """S(axis): the tensor split along axis (a non-negative dim), OneFlow's balanced way."""
    return Split(axis)


NdSbp = tuple[SBP, ...]


def nd_sbp(value: object, ndim: int, name: str = "sbp") -> NdSbp:
    """value as a tuple of ndim SBPs (one per hierarchy axis); a single SBP stands for a 1-tuple on
    a 1-d hierarchy. TypeError or ValueError naming name otherwise."""
    if isinstance(value, SBP):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, SBP) for v in value):
        raise TypeError(f"{name}: {value!r} is not an SBP or a tuple of SBPs")
    if len(value) != ndim:
        raise ValueError(f"{name}: {tuple(value)!r} has {len(value)} SBPs; expected {ndim}, one per hierarchy axis")
    return tuple(value)
