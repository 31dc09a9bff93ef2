"""Where each rank's piece of a global tensor lies: OneFlow's balanced splitter over an nd-SBP, and
the NumPy split and reassembly of a logical array by an nd-SBP (for in-process global tensors and
tests).
"""
from __future__ import annotations

import functools

import numpy as np

from ep.common.runtime.validate import count
from ep.sbp.placement import Placement
from ep.sbp.sbp import SBP, Broadcast, PartialSum, Split, nd_sbp

Index = tuple[int, ...]


def balanced_split(size: int, parts: int) -> tuple[tuple[int, int], ...]:
    """OneFlow's BalancedSplitter: the [start, stop) of each of parts ranges over size elements;
    the first size % parts ranges hold one element more."""
    size, parts = count(size, "size"), count(parts, "parts")
    if parts == 0:
        raise ValueError("parts: 0; expected >= 1")
    base, extra = divmod(size, parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + base + (i < extra)
        bounds.append((start, stop))
        start = stop
    return tuple(bounds)


def hierarchy_of(placement: Placement | tuple[int, ...]) -> tuple[int, ...]:
    """The hierarchy of a Placement, or a hierarchy given as a tuple of sizes."""
    if isinstance(placement, Placement):
        return placement.hierarchy
    return tuple(count(n, "hierarchy") for n in placement)


def physical_slices(shape, sbp: SBP | tuple[SBP, ...], placement, index: Index) -> tuple[slice, ...]:
    """The box of the logical tensor (shape) held by the rank at index under sbp: each Split
    hierarchy axis splits the box left by the axes before it; Broadcast and PartialSum keep it."""
    hierarchy = hierarchy_of(placement)
    sbp = nd_sbp(sbp, len(hierarchy))
    if len(index) != len(hierarchy) or not all(0 <= i < n for i, n in zip(index, hierarchy)):
        raise IndexError(f"index: {index!r} is not a position in the hierarchy {hierarchy}")
    bounds = [(0, n) for n in shape]
    for s, parts, i in zip(sbp, hierarchy, index):
        if isinstance(s, Split):
            if s.axis >= len(bounds):
                raise ValueError(f"sbp: {s!r} splits axis {s.axis} of a tensor of rank {len(bounds)}")
            lo, hi = bounds[s.axis]
            start, stop = balanced_split(hi - lo, parts)[i]
            bounds[s.axis] = (lo + start, lo + stop)
    return tuple(slice(lo, hi) for lo, hi in bounds)


def physical_shape(shape, sbp: SBP | tuple[SBP, ...], placement, index: Index) -> tuple[int, ...]:
    """The shape of the piece the rank at index holds (physical_slices' box)."""
    return tuple(s.stop - s.start for s in physical_slices(shape, sbp, placement, index))


def split_array(
    array: np.ndarray, sbp: SBP | tuple[SBP, ...], placement, rng: np.random.Generator | None = None
) -> dict[Index, np.ndarray]:
    """The piece of a logical NumPy array each position of the hierarchy holds under sbp.

    A PartialSum axis gives random parts that add up to the array (rng; small integers, exact in
    every numeric dtype), or without rng the array at position 0 and zeros elsewhere.
    """
    hierarchy = hierarchy_of(placement)
    sbp = nd_sbp(sbp, len(hierarchy))
    pieces: dict[Index, np.ndarray] = {(): np.asarray(array)}
    for s, parts in zip(sbp, hierarchy):
        pieces = {index + (i,): part for index, piece in pieces.items() for i, part in enumerate(_split(piece, s, parts, rng))}
    return pieces


def _split(piece: np.ndarray, s: SBP, parts: int, rng) -> list[np.ndarray]:
    if isinstance(s, Split):
        return [piece[(slice(None),) * s.axis + (slice(a, b),)] for a, b in balanced_split(piece.shape[s.axis], parts)]
    if isinstance(s, Broadcast):
        return [piece] * parts
    if rng is None:
        return [piece] + [np.zeros_like(piece) for _ in range(parts - 1)]
    low = 0 if piece.dtype.kind in "ub" else -4
    parts_ = [rng.integers(low, 5, piece.shape).astype(piece.dtype) for _ in range(parts - 1)]
    rest = functools.reduce(np.subtract, parts_, piece) if parts_ else piece
    return parts_ + [np.asarray(rest, piece.dtype)]


def assemble(pieces: dict[Index, np.ndarray], sbp: SBP | tuple[SBP, ...], placement, check: bool = True) -> np.ndarray:
    """The logical array from the pieces split_array gives (or an op's physical outputs): Split axes
    concatenate, PartialSum axes add, Broadcast axes take the first copy. With check, ValueError
    unless every copy is equal (off where copies are sums that may round differently)."""
    hierarchy = hierarchy_of(placement)
    sbp = nd_sbp(sbp, len(hierarchy))
    for level in reversed(range(len(hierarchy))):
        groups: dict[Index, list[np.ndarray]] = {}
        for index in sorted(pieces):
            groups.setdefault(index[:level], []).append(pieces[index])
        pieces = {prefix: _combine(group, sbp[level], check) for prefix, group in groups.items()}
    return pieces[()]


def _combine(group: list[np.ndarray], s: SBP, check: bool) -> np.ndarray:
    if isinstance(s, Split):
        return np.concatenate(group, axis=s.axis)
    if isinstance(s, PartialSum):
        # np.add of 0-d arrays gives a scalar.
        return np.asarray(functools.reduce(np.add, group[1:], group[0]))
    if not check:
        return group[0]
    nan = group[0].dtype.kind in "fc"
    for i, copy in enumerate(group[1:], 1):
        if copy.shape != group[0].shape or not np.array_equal(copy, group[0], equal_nan=nan):
            raise ValueError(f"pieces: broadcast copy {i} differs from copy 0")
    return group[0]
