"""float16 <-> float32 (and float64 -> float16) conversion on 16-bit patterns, for kernels that
move float16 as uint16.

Two routines (HalfRoutines), bit-identical (but for half_to_float_any_nan, whose NaNs may differ);
which one a device's kernels get is chosen here, on the host, when they are specialized
(`half_routines`):

- exact: branch-light integer formulations (F. Giesen's, round to nearest even) that LLVM can
  vectorize, shared by the CPU and CUDA kernels; the reference, and the routine everywhere the
  target has no conversion instruction.
- hardware: LLVM's fpext/fptrunc of half, which x86 lowers to vcvtph2ps/vcvtps2ph (8 lanes an
  instruction) when the CPU the kernel is built for (the features Numba's CPU target compiles
  for) has F16C, as every AVX2 or AVX-512 CPU does, and NVPTX to cvt.f32.f16/cvt.rn.f16.f32 on
  every GPU. Made bit-identical to the exact routine, NaN included (see `_fpext_half_kept_nan`,
  `_float_to_half_hardware`).
"""
import dataclasses
import functools
from typing import Callable

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ep.common.math.intrinsics import float32_from_uint32 as _float32_from_bits
from ep.common.math.intrinsics import uint32_from_float32 as _float32_to_bits
from ep.common.jit import scalar_function
from ep.common.runtime.device import DeviceType


@intrinsic
def _fptrunc_half(typingctx, value):
    """float16 bits of a float32 by LLVM's fptrunc (vcvtps2ph, cvt.rn.f16.f32: nearest even)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.uint16(types.float32), codegen


@scalar_function
def float32_from_bits(bits):
    """The float32 whose IEEE bit pattern is bits."""
    return _float32_from_bits(np.uint32(bits))


@scalar_function
def float32_to_bits(value):
    """The IEEE bit pattern of a float32, as an int64."""
    return np.int64(_float32_to_bits(np.float32(value)))


@scalar_function
def half_to_float_exact(h):
    """The float32 value of a float16 bit pattern (exact), in integer arithmetic."""
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


@scalar_function
def float_to_half_exact(value):
    """The float16 bit pattern nearest to a float32 value (ties to even; a NaN becomes the quiet
    NaN 0x7E00 of its sign), in integer arithmetic."""
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


@intrinsic
def _fpext_half(typingctx, bits):
    """The float32 value of float16 bits by LLVM's fpext (vcvtph2ps with F16C, cvt.f32.f16 on CUDA)."""

    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.uint16), codegen


@intrinsic
def _fpext_half_kept_nan(typingctx, bits):
    """The float32 value of float16 bits by LLVM's fpext, a NaN's sign and payload kept.

    vcvtph2ps quiets a signalling NaN, cvt.f32.f16 gives the canonical 0x7FFFFFFF; the exact
    routine keeps sign and payload, as NumPy does. The fix is a select in 32-bit lanes: written in
    Numba's integer arithmetic (64-bit), a sum of 512K float16 took 46 us, not 25 (one core of an
    AMD EPYC; fpext alone 11).
    """

    def codegen(context, builder, signature, args):
        i32, f32 = ir.IntType(32), ir.FloatType()
        value = builder.fpext(builder.bitcast(args[0], ir.HalfType()), f32)
        h = builder.zext(args[0], i32)
        sign = builder.shl(builder.and_(h, ir.Constant(i32, 0x8000)), ir.Constant(i32, 16))
        payload = builder.shl(builder.and_(h, ir.Constant(i32, 0x3FF)), ir.Constant(i32, 13))
        kept = builder.bitcast(builder.or_(builder.or_(sign, payload), ir.Constant(i32, 0x7F800000)), f32)
        return builder.select(builder.fcmp_unordered("uno", value, value), kept, value)

    return types.float32(types.uint16), codegen


def _hardware_half_to_float(nan_payload: bool) -> Callable:
    """float16 bits -> float32 by the hardware's conversion, a NaN's payload kept or not."""
    fpext = _fpext_half_kept_nan if nan_payload else _fpext_half

    @scalar_function
    def half_to_float(h):
        return fpext(np.uint16(h))

    return half_to_float


@scalar_function
def _float_to_half_hardware(value):
    x = np.float32(value)
    h = _fptrunc_half(x)
    # A NaN: vcvtps2ph keeps its sign and top payload bits, cvt.rn.f16.f32 gives a canonical NaN;
    # the exact routine gives the quiet NaN 0x7E00 of its sign.
    return np.uint16(((float32_to_bits(x) >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7E00)) if x != x else h


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


def _double_to_half(float_to_half: Callable) -> Callable:
    @scalar_function
    def double_to_half(value):
        """The float16 bit pattern nearest to a float64 value (ties to even, rounded once; a NaN becomes 0x7E00 of its sign)."""
        return float_to_half(double_to_float_round_to_odd(value))

    return double_to_half


@dataclasses.dataclass(frozen=True)
class HalfRoutines:
    """One routine's conversions, bit-identical to the other's (but half_to_float_any_nan's NaNs):
    float16 bits -> float32, and float32 or float64 -> float16 bits (nearest even; a NaN becomes
    0x7E00 of its sign).
    half_to_float_any_nan: float16 bits -> float32 where a NaN may become any NaN (the hardware's
    conversion alone: x86 quiets a signalling NaN, NVPTX gives a canonical one), for kernels whose
    NaNs are arithmetic's results: a sum of 512K float16 on one core took 11 us, not 25."""

    half_to_float: Callable
    float_to_half: Callable
    double_to_half: Callable
    half_to_float_any_nan: Callable


EXACT = HalfRoutines(half_to_float_exact, float_to_half_exact, _double_to_half(float_to_half_exact), half_to_float_exact)
HARDWARE = HalfRoutines(
    _hardware_half_to_float(True), _float_to_half_hardware, _double_to_half(_float_to_half_hardware), _hardware_half_to_float(False)
)


@functools.cache
def half_routines(device: DeviceType) -> HalfRoutines:
    """The conversions for kernels of device: the hardware's where its target has conversion
    instructions (every GPU; a CPU with F16C, among the features Numba's CPU target compiles for:
    the host's, or NUMBA_CPU_FEATURES), else the exact ones.

    Chosen on the host, so that a kernel types and lowers only one routine (with both, and a
    branch the optimizer folds, a float16 kernel took twice as long to compile). The simulator
    runs CUDA kernels' scalar functions compiled for the CPU: there it is the CPU's choice.
    """
    from numba import config
    from numba.core.registry import cpu_target

    if device is DeviceType.kCUDA and not config.ENABLE_CUDASIM:
        return HARDWARE
    features = cpu_target.target_context.codegen().magic_tuple()[2].split(",")
    return HARDWARE if "+f16c" in features else EXACT
