"""float16 <-> float32 (and float64 -> float16) conversion on 16-bit patterns, for kernels that
move float16 as uint16.

This is the one place the conversion is chosen: CUDA kernels convert with the hardware's
instructions (cvt.f32.f16, cvt.rn.f16.f32); the CPU (and the CUDA simulator, which runs kernels
as CPU code) with branch-light integer formulations (F. Giesen's, round to nearest even) that
LLVM can vectorize. Both round to nearest even and agree on every pattern but NaN payloads.
"""
import numpy as np

from ep.common.math.intrinsics import float32_from_uint32 as _float32_from_bits
from ep.common.math.intrinsics import float32_to_half, half_to_float32
from ep.common.math.intrinsics import uint32_from_float32 as _float32_to_bits
from ep.common.jit import scalar_function


@scalar_function
def float32_from_bits(bits):
    """The float32 whose IEEE bit pattern is bits."""
    return _float32_from_bits(np.uint32(bits))


@scalar_function
def float32_to_bits(value):
    """The IEEE bit pattern of a float32, as an int64."""
    return np.int64(_float32_to_bits(np.float32(value)))


@scalar_function
def _half_to_float_bits(h):
    # Exact: float32 holds every float16.
    h = np.int64(h)
    o = (h & 0x7FFF) << 13
    exponent = o & (0x7C00 << 13)
    o += (127 - 15) << 23
    if exponent == (0x7C00 << 13):
        o += (128 - 16) << 23
    elif exponent == 0:
        o += 1 << 23
        o = float32_to_bits(float32_from_bits(o) - float32_from_bits(113 << 23))
    o |= (h & 0x8000) << 16
    return float32_from_bits(o)


_half_to_float = half_to_float32(_half_to_float_bits)


@scalar_function
def half_to_float(h):
    """The float32 value of a float16 bit pattern (exact)."""
    return _half_to_float(np.uint16(h))


@scalar_function
def _float_to_half_bits(value):
    f = float32_to_bits(value)
    sign = f & 0x80000000
    f ^= sign
    if f >= (127 + 16) << 23:
        o = 0x7E00 if f > 255 << 23 else 0x7C00
    elif f < 113 << 23:
        denorm_magic = ((127 - 15) + (23 - 10) + 1) << 23
        o = float32_to_bits(float32_from_bits(f) + float32_from_bits(denorm_magic)) - denorm_magic
    else:
        mant_odd = (f >> 13) & 1
        o = (f + ((15 - 127) << 23) + 0xFFF + mant_odd) >> 13
    return np.uint16(o | (sign >> 16))


_float_to_half = float32_to_half(_float_to_half_bits)


@scalar_function
def float_to_half(value):
    """The float16 bit pattern nearest to a float32 value (ties to even; NaN stays NaN)."""
    return _float_to_half(np.float32(value))


@scalar_function
def double_to_float_round_to_odd(value):
    """float64 -> float32 rounded to odd: truncated toward zero, low bit set when inexact.

    Rounding that float32 to float16 (nearest even) rounds the float64 correctly, since float32
    keeps 13 more significand bits than float16 (at least 2 are needed) and the odd bit stands
    for everything truncated; rounding to nearest twice would round some ties the wrong way.
    """
    d = np.float64(value)
    f = np.float32(d)
    bits = float32_to_bits(f)
    wide = np.float64(f)
    # Rounded away from zero: step the magnitude back one unit (f is then never 0).
    bits = bits - 1 if abs(wide) > abs(d) else bits
    # NaN compares unequal to itself but is no inexact result.
    bits = bits | 1 if (wide != d) & (d == d) else bits
    return float32_from_bits(bits)


@scalar_function
def double_to_half(value):
    """The float16 bit pattern nearest to a float64 value (ties to even; NaN stays NaN)."""
    return float_to_half(double_to_float_round_to_odd(value))
