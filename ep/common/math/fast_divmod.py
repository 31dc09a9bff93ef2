"""Fast division by an invariant 32-bit divisor (Granlund-Montgomery, as onnxruntime's fast_divmod).

A kernel that divides by the same divisor many times gets (multiplier, shift) from the host once
and replaces each 32-bit division, dozens of instructions on a GPU, with a multiply-high, an add
and a shift: for 0 <= n < 2**31 and 1 <= d < 2**31, with l the smallest shift where 2**l >= d and
m = floor(2**32 * (2**l - d) / d) + 1, n // d == (mulhi(m, n) + n) >> l. m < 2**32 and
mulhi(m, n) < n, so every step fits in 32 bits.
"""
from __future__ import annotations

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
