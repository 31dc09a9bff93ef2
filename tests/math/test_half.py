"""float16 conversions of ep.common.math.half against NumPy and the exact routine: every bit
pattern, every float32 rounding boundary, and float64 values at ties; each device's choice of routine."""
import os

import numpy as np
import pytest
from numba import njit
from numba.core.registry import cpu_target

import ep
from ep.common.math import half
from ep.common.runtime.device import DeviceType
from ep.testing import to_device, to_numpy

ALL_HALVES = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _loop(fn, out_dtype):
    @njit
    def run(src):
        dst = np.empty(src.size, out_dtype)
        for i in range(src.size):
            dst[i] = fn(src[i])
        return dst

    return run


# The CPU kernels' routines (the hardware's with F16C), and the exact ones as the reference.
CPU = half.half_routines(DeviceType.kCPU)
half_to_float = _loop(CPU.half_to_float, np.float32)
float_to_half = _loop(CPU.float_to_half, np.uint16)
double_to_half = _loop(CPU.double_to_half, np.uint16)
half_to_float_exact = _loop(half.EXACT.half_to_float, np.float32)
float_to_half_exact = _loop(half.EXACT.float_to_half, np.uint16)
exact_double_to_half = _loop(half.EXACT.double_to_half, np.uint16)
FINITE_HALVES = np.arange(0x7C00, dtype=np.uint16)  # +0 up to the largest finite float16


def test_every_float16_bit_pattern_widens_exactly():
    got = half_to_float(ALL_HALVES)
    # Bit for bit: signed zeros, subnormals, infinities and NaN payloads all carry over.
    np.testing.assert_array_equal(got.view(np.uint32), ALL_HALVES.view(np.float16).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("narrow", [float_to_half, double_to_half], ids=["float32", "float64"])
def test_every_float16_bit_pattern_round_trips(narrow):
    wide = ALL_HALVES.view(np.float16).astype(np.float32)
    if narrow is double_to_half:
        with np.errstate(invalid="ignore"):  # signalling NaN patterns
            wide = wide.astype(np.float64)
    got = narrow(wide)
    nan = np.isnan(ALL_HALVES.view(np.float16))
    np.testing.assert_array_equal(got[~nan], ALL_HALVES[~nan])
    assert np.isnan(got[nan].view(np.float16)).all()


def near_ties():
    """float64 values at, just off and far below float32's resolution off every kind of float16 tie.

    The midpoint of two neighbouring float16 values is exact in float64; an offset too small for
    float32 to hold makes float64 -> float32 -> float16 land on the tie and round it to even,
    where the float64 lies on one side of it.
    """
    h = np.concatenate([
        np.array([0, 1, 2, 3, 0x3FF, 0x400, 0x401, 0x3C00, 0x3C01, 0x3BFF, 0x7BFE, 0x7BFF], np.uint16),
        np.random.default_rng(5).integers(0, 0x7BFF, 12, dtype=np.uint16),  # finite, below the largest
    ])
    low = h.view(np.float16).astype(np.float64)
    high = (h + 1).astype(np.uint16).view(np.float16).astype(np.float64)  # 0x7BFF + 1 is inf
    high = np.where(np.isinf(high), 65536.0, high)  # where float16 would go on: its overflow tie is 65520
    mid = (low + high) / 2
    step = high - low
    values = [mid]
    for scale in (2.0**-12, 2.0**-20, 2.0**-45):
        values += [mid + scale * step, mid - scale * step]
    values += [np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)]
    x = np.concatenate(values)
    x = x[x > 0]
    return np.concatenate([x, -x, [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1e300]])


def to_half(x):
    """NumPy's float16 of x (inf where it overflows, as the kernels give)."""
    with np.errstate(over="ignore"):
        return x.astype(np.float16)


def test_near_ties_show_the_double_rounding():
    """The construction above does reach values where rounding through float32 goes wrong."""
    x = near_ties()
    with np.errstate(over="ignore"):
        through_float32 = to_half(x.astype(np.float32))
    assert (through_float32.view(np.uint16) != to_half(x).view(np.uint16)).sum() > 50


def test_double_to_half_rounds_float64_like_numpy():
    x = near_ties()
    np.testing.assert_array_equal(double_to_half(x).view(np.float16), to_half(x))


def test_cast_float64_to_float16_rounds_once(device):
    x = near_ties()
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kCast, np.float64, np.float16)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x, device)
    dst = to_device(np.zeros(x.size, np.float16), device)
    primitive.Launch(stream, src, dst, x.size)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst), to_half(x))
    np.testing.assert_array_equal(to_numpy(src), x)


def test_cpu_kernels_convert_by_f16c_exactly_where_the_cpu_target_has_it():
    """The routine is chosen by the features Numba compiles for, and the choice reaches the machine code."""
    has_f16c = "+f16c" in cpu_target.target_context.codegen().magic_tuple()[2].split(",")
    assert CPU is (half.HARDWARE if has_f16c else half.EXACT)
    # Compiled here: this test may run alone, or on an xdist worker that ran none of the others.
    half_to_float(ALL_HALVES[:1])
    float_to_half(np.zeros(1, np.float32))
    widen = "".join(half_to_float.inspect_asm().values())
    narrow = "".join(float_to_half.inspect_asm().values())
    assert ("vcvtph2ps" in widen, "vcvtps2ph" in narrow) == (has_f16c, has_f16c)


def test_widening_matches_the_exact_routine_bit_for_bit():
    # Signalling NaNs included: F16C quiets them, the routine (and NumPy) keep them signalling.
    np.testing.assert_array_equal(half_to_float(ALL_HALVES).view(np.uint32), half_to_float_exact(ALL_HALVES).view(np.uint32))


def float32_rounding_boundaries():
    """Every float32 tie between neighbouring float16 values (normal and subnormal, and the overflow
    tie 65520) with its float32 neighbours on both sides, both signs, and float32 NaNs of every kind."""
    low = FINITE_HALVES.view(np.float16).astype(np.float32)
    high = np.append(low[1:], np.float32(65536.0))  # past the largest finite value, float16 would go on to 65536
    mid = (low + high) / np.float32(2)  # exact: a float16 tie is a float32 with 12 significand bits
    x = np.concatenate([mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(0)), low, high])
    nans = np.array([0x7F800001, 0x7FA00000, 0x7FBFFFFF, 0x7FC00000, 0x7FC00001, 0x7FE01000, 0x7FFFFFFF], np.uint32)
    x = np.concatenate([x, -x, nans.view(np.float32), (nans | 0x80000000).view(np.float32)])
    extremes = np.array([np.inf, -np.inf, np.finfo(np.float32).max, np.finfo(np.float32).tiny], np.float32)
    return np.concatenate([x, extremes])  # all float32: through float64 a signalling NaN would turn quiet


def test_every_float32_rounding_boundary_rounds_to_nearest_even():
    x = float32_rounding_boundaries()
    got = float_to_half(x)
    np.testing.assert_array_equal(got, float_to_half_exact(x))
    nan = np.isnan(x)
    np.testing.assert_array_equal(got[~nan], to_half(x[~nan]).view(np.uint16))
    # A NaN becomes the quiet NaN of its sign, whatever its payload (F16C would keep the payload's top bits).
    np.testing.assert_array_equal(got[nan], np.where(np.signbit(x[nan]), 0xFE00, 0x7E00).astype(np.uint16))


def test_random_float32_bit_patterns_match_the_exact_routine():
    x = np.random.default_rng(13).integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(float_to_half(x), float_to_half_exact(x))


@pytest.mark.parametrize("narrow", [double_to_half, exact_double_to_half], ids=["cpu", "exact"])
def test_every_float64_tie_rounds_once(narrow):
    """float64 just off every float16 tie, closer than float32 resolves: rounded once, as NumPy does."""
    low = FINITE_HALVES.view(np.float16).astype(np.float64)
    high = np.append(low[1:], 65536.0)
    mid, step = (low + high) / 2, high - low
    x = np.concatenate([mid, mid + step * 2.0**-30, mid - step * 2.0**-30])
    x = np.concatenate([x, -x])
    np.testing.assert_array_equal(narrow(x).view(np.float16), to_half(x))


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_cast_to_float16_at_every_rounding_boundary(device, src):
    with np.errstate(invalid="ignore"):  # float64 quiets the signalling NaNs
        x = float32_rounding_boundaries().astype(src)
    if device == "cuda":  # the simulator runs each element in Python: a spread sample
        x = x[::97]
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kCast, src, np.float16)
    stream = ep.GetDevice(device).CreateStream()
    dst = to_device(np.zeros(x.size, np.float16), device)
    primitive.Launch(stream, to_device(x, device), dst, x.size)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst).view(np.uint16), float_to_half_exact(x.astype(np.float32)))


def test_cast_from_float16_widens_every_bit_pattern(device):
    h = ALL_HALVES if device == "cpu" else ALL_HALVES[::97]
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kCast, np.float16, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    dst = to_device(np.zeros(h.size, np.float32), device)
    primitive.Launch(stream, to_device(h.view(np.float16), device), dst, h.size)
    stream.Sync()
    got, expected = to_numpy(dst).view(np.uint32), half_to_float_exact(h).view(np.uint32)
    if device == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        # The simulator hands the kernel's float32 through a Python float (float64), which quiets a
        # signalling NaN: there only quiet NaNs compare.
        quiet = np.where(np.isnan(h.view(np.float16)), np.uint32(1 << 22), np.uint32(0))
        got, expected = got | quiet, expected | quiet
    np.testing.assert_array_equal(got, expected)
