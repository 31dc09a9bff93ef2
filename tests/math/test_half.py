"""float16 conversions of ep.common.math.half against NumPy: every bit pattern, and float64 values at ties."""
import numpy as np
import pytest
from numba import njit

import ep
from ep.common.math import half
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


half_to_float = _loop(half.half_to_float, np.float32)
float_to_half = _loop(half.float_to_half, np.uint16)
double_to_half = _loop(half.double_to_half, np.uint16)


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


def _cast(device, x, dtype):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kCast, x.dtype, dtype)
    stream = ep.GetDevice(device).CreateStream()
    dst = to_device(np.zeros(x.size, dtype), device)
    primitive.Launch(stream, to_device(x, device), dst, x.size)
    stream.Sync()
    return to_numpy(dst)


def test_every_float16_bit_pattern_through_a_kernel(device):
    """float16 -> float32 -> float16 in the device's kernels (CUDA's conversion instructions on a
    GPU, the integer routine on the CPU and the simulator) against NumPy, bit for bit but NaN payloads."""
    halves = ALL_HALVES.view(np.float16)
    wide = _cast(device, halves, np.float32)
    nan = np.isnan(halves)
    expected = halves.astype(np.float32)
    np.testing.assert_array_equal(wide[~nan].view(np.uint32), expected[~nan].view(np.uint32))
    assert np.isnan(wide[nan]).all()
    # float32 values between neighbouring float16 values (ties among them) round to nearest even.
    finite = expected[np.abs(expected) < 65504]  # below the largest float16, whose spacing overflows
    step = np.spacing(finite.astype(np.float16)).astype(np.float32)
    offsets = np.random.default_rng(11).random(finite.size, np.float32)
    edges = np.array([65519.0, 65520.0, 1e30], np.float32)  # below, at and past float16's overflow tie
    narrow = np.concatenate([expected, finite + offsets * step, finite + step / 2, edges])
    got = _cast(device, narrow, np.float16)
    with np.errstate(over="ignore"):
        reference = narrow.astype(np.float16)
    nan = np.isnan(reference)
    np.testing.assert_array_equal(got[~nan].view(np.uint16), reference[~nan].view(np.uint16))
    assert np.isnan(got[nan]).all()
