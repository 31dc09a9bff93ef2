"""Fast division by an invariant 32-bit divisor (Granlund-Montgomery, as onnxruntime's fast_divmod).

A kernel that divides by the same divisor many times gets (multiplier, shift) from the host once
and replaces each 32-bit division, dozens of instructions on a GPU, with a multiply-high, an add
and a shift: for 0 <= n < 2**31 and 1 <= d < 2**31, with l the smallest shift where 2**l >= d and
m = floor(2**32 * (2**l - d) / d) + 1, n // d == (mulhi(m, n) + n) >> l. m < 2**32 and
mulhi(m, n) < n, so every step fits in 32 bits.
"""
from __future__ import annotations

from typing import Sequence

import numba
import numpy as np

from ep.common.jit import scalar_function
from ep.common.math.intrinsics import mulhi_add_shift_u32

# The largest dividend and divisor the 32-bit formula is exact for.
FAST_DIVMOD_LIMIT = (1 << 31) - 1


def fast_divmod_params(divisor: int) -> tuple[int, int]:
    """(multiplier, shift) that make fast_divmod divide by divisor; 1 <= divisor <= FAST_DIVMOD_LIMIT."""
    if not 1 <= divisor <= FAST_DIVMOD_LIMIT:
        raise ValueError(f"divisor: {divisor} is outside the 32-bit fast divmod range [1, {FAST_DIVMOD_LIMIT}]")
    shift = (divisor - 1).bit_length()
    multiplier = ((1 << 32) * ((1 << shift) - divisor)) // divisor + 1
    return multiplier, shift


@scalar_function
def fast_divmod(n, divisor, multiplier, shift):
    """(n // divisor, n % divisor) as uint32, for 0 <= n <= FAST_DIVMOD_LIMIT.

    multiplier and shift come from fast_divmod_params(divisor).
    """
    n = np.uint32(n)
    quotient = mulhi_add_shift_u32(n, np.uint32(multiplier), np.uint32(shift))
    return quotient, np.uint32(n - quotient * np.uint32(divisor))


@scalar_function
def divmod64(n, divisor, multiplier, shift):
    """(n // divisor, n % divisor) in int64: fast_divmod's signature for kernels beyond its range
    (multiplier and shift are unused)."""
    quotient = n // divisor
    return quotient, n - quotient * divisor


def needs_wide(*counts: int) -> bool:
    """Whether a kernel over buffers of these element counts needs 64-bit indices (divmod64):
    the one rule of every kernel that comes in a 32-bit and a 64-bit variant."""
    return max(counts) > FAST_DIVMOD_LIMIT


def index_bindings(wide: bool) -> dict:
    """The INDEX type and DIVMOD slots of a kernel's 64-bit (wide) or 32-bit variant."""
    return {"INDEX": np.int64, "DIVMOD": divmod64} if wide else {"INDEX": np.uint32, "DIVMOD": fast_divmod}


def size_type(wide: bool) -> numba.types.Integer:
    """The Numba type of a size argument of a 64-bit (wide) or 32-bit kernel."""
    return numba.int64 if wide else numba.uint32


def divisor(value: int, wide: bool) -> tuple[int, int, int]:
    """(divisor, multiplier, shift) kernel arguments for dividing by value with index_bindings(wide)'s DIVMOD."""
    return (value, 0, 0) if wide else (value, *fast_divmod_params(value))


def divisors(values: Sequence[int], length: int, wide: bool) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(divisors, multipliers, shifts): divisor(value, wide) of each value, as three tuples padded
    to length with divisions by 1."""
    columns = [divisor(value, wide) for value in values] + [divisor(1, wide)] * (length - len(values))
    return tuple(zip(*columns)) if columns else ((), (), ())
