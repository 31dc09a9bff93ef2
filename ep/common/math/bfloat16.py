"""bfloat16 <-> float32 on 16-bit patterns, for kernels that move bfloat16 as uint16.

bfloat16 is float32's top half: the same sign and exponent, 7 of its 23 fraction bits. Loading is
a shift; storing rounds the low 16 bits away, to nearest even, in integer arithmetic (no branch
but NaN's, so loops vectorize). The same routine on every device, the GPU included: it is a few
integer instructions beside a memory-bound load or store, gives the same bits everywhere, and needs
no sm_80 (where cvt.rn.bf16.f32 starts).

Bit-exact with ml_dtypes (NumPy's bfloat16, JAX's) and PyTorch for every float32: subnormals and
infinities round as finite values do, overflow goes to infinity, and a NaN becomes the quiet NaN
0x7FC0 of its sign (ml_dtypes'; PyTorch keeps other payload bits). float64 rounds through float32,
as both libraries do: twice, so a float64 just above a bfloat16 tie can round down.
"""
import numpy as np

from ep.common.jit import scalar_function
from ep.common.math.half import float32_from_bits, float32_to_bits


@scalar_function
def bfloat16_to_float(bits):
    """The float32 value of a bfloat16 bit pattern (exact)."""
    return float32_from_bits(np.uint32(bits) << np.uint32(16))


@scalar_function
def float_to_bfloat16(value):
    """The bfloat16 bit pattern nearest to a float32 value (ties to even; a NaN becomes 0x7FC0 of its sign)."""
    f = float32_to_bits(np.float32(value))
    if (f & 0x7FFFFFFF) > 0x7F800000:
        return np.uint16(((f >> 16) & 0x8000) | 0x7FC0)
    return np.uint16((f + 0x7FFF + ((f >> 16) & 1)) >> 16)
