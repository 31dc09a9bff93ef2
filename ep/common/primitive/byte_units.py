"""Moving rows of any dtype as raw bytes, in the widest unit that sizes and addresses allow.

A kernel that copies whole rows (gather's inner dimension) does not care about the dtype: it
views each buffer as bytes, then as units of 1, 2, 4, 8 or 16 bytes, and copies units. 16-byte
units are stored as pairs of uint64 words (NumPy has no 16-byte integer) and moved by move16, one
128-bit load and store (ep.common.math.intrinsics).
"""
from __future__ import annotations

import numpy as np

from ep.common.runtime.buffer import address, kept

UNITS = (16, 8, 4, 2, 1)
_UNIT_DTYPE = {
    16: np.dtype(np.uint64),
    8: np.dtype(np.uint64),
    4: np.dtype(np.uint32),
    2: np.dtype(np.uint16),
    1: np.dtype(np.uint8),
}


def move_unit(row_bytes: int, arrays, widest: int) -> int:
    """The widest unit (bytes, at most widest) dividing row_bytes and every array's address."""
    for unit in UNITS:
        if unit <= widest and row_bytes % unit == 0 and all(address(a) % unit == 0 for a in arrays):
            return unit
    raise AssertionError("unreachable: 1 divides everything")


def unit_dtype(unit: int) -> np.dtype:
    """The NumPy dtype a buffer of unit-byte units is viewed as (uint64 words for 16)."""
    return _UNIT_DTYPE[unit]


def as_units(flat, count: int, unit: int):
    """The first count elements of flat storage viewed as unit-byte units (uint64 pairs for 16);
    for a device array made once per (count, unit) and kept (kept())."""
    if type(flat) is np.ndarray:
        return _units_view(flat, count, unit)
    return kept(_units_view, flat, count, unit)


def _units_view(flat, count: int, unit: int):
    return flat[:count].view(np.uint8).view(_UNIT_DTYPE[unit])
