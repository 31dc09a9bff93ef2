"""Fast division by an invariant 32-bit divisor (Granlund-Montgomery, as onnxruntime's fast_divmod).

A kernel that divides by the same divisor many times gets (multiplier, shift) from the host once
and replaces each 32-bit division, dozens of instructions on a GPU, with a multiply-high, an add
and a shift: for 0 <= n < 2**31 and 1 <= d < 2**31, with l the smallest shift where 2**l >= d and
m = floor(2**32 * (2**l - d) / d) + 1, n // d == (mulhi(m, n) + n) >> l. m < 2**32 and
mulhi(m, n) < n, so every step fits in 32 bits.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ep.common.jit import scalar_function

# The largest dividend and divisor the 32-bit formula is exact for.
FAST_DIVMOD_LIMIT = (1 << 31) - 1


def fast_divmod_params(divisor: int) -> tuple[int, int]:
    """(multiplier, shift) that make fast_divmod divide by divisor; 1 <= divisor <= FAST_DIVMOD_LIMIT."""
    if not 1 <= divisor <= FAST_DIVMOD_LIMIT:
        raise ValueError(f"divisor: {divisor} is outside the 32-bit fast divmod range [1, {FAST_DIVMOD_LIMIT}]")
    shift = (divisor - 1).bit_length()
    multiplier = ((1 << 32) * ((1 << shift) - divisor)) // divisor + 1
    return multiplier, shift


@intrinsic
def _fast_div(typingctx, n, multiplier, shift):
    # Written in LLVM IR because Numba widens uint32 arithmetic to 64 bits, and NVVM then keeps a
    # 64-bit multiply instead of the 32-bit multiply-high this needs.
    def codegen(context, builder, signature, args):
        n, multiplier, shift = args
        i32, i64 = ir.IntType(32), ir.IntType(64)
        if "nvptx" in builder.module.triple:
            mulhi = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [i32, i32]), "llvm.nvvm.mulhi.ui")
            high = builder.call(mulhi, [multiplier, n])
        else:
            wide = builder.mul(builder.zext(multiplier, i64), builder.zext(n, i64))
            high = builder.trunc(builder.lshr(wide, ir.Constant(i64, 32)), i32)
        return builder.lshr(builder.add(high, n), shift)

    return types.uint32(types.uint32, types.uint32, types.uint32), codegen


@scalar_function
def fast_divmod(n, divisor, multiplier, shift):
    """(n // divisor, n % divisor) as uint32, for 0 <= n <= FAST_DIVMOD_LIMIT.

    multiplier and shift come from fast_divmod_params(divisor).
    """
    n = np.uint32(n)
    quotient = _fast_div(n, np.uint32(multiplier), np.uint32(shift))
    return quotient, np.uint32(n - quotient * np.uint32(divisor))
