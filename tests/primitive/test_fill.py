"""Fill through NewPrimitive + Launch, against np.full computed here: every dtype, special values
bit for bit, packs and tails, misaligned buffers; bad arguments named before anything is written."""
import math

import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, BFLOAT16, BY_WIDTH, FLOATS, assert_same, kind

# Elements on each side of a launch's dst that it must leave alone.
GUARD = 5
# 0, less than a pack, a pack and a tail, several packs (a pack is 16 bytes).
COUNTS = [0, 1, 3, 17, 40]
# Bit patterns: NaN payloads (quiet and signaling), -0.0, infinities, the smallest subnormal.
SPECIAL_BITS = {
    np.dtype(np.float16): [0x7E01, 0xFE3F, 0x7C01, 0x8000, 0xFC00, 0x0001],
    BFLOAT16: [0x7FC1, 0xFFC1, 0x7F81, 0x8000, 0xFF80, 0x0001],
    np.dtype(np.float32): [0x7FC12345, 0xFFC00001, 0x7F800001, 0x80000000, 0xFF800000, 0x00000001],
    np.dtype(np.float64): [0x7FF8000000012345, 0xFFF8000000000001, 0x7FF0000000000001, 1 << 63, 0xFFF0 << 48, 1],
}
UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def guarded(device, dtype, n, offset=0):
    """A buffer of n elements between GUARD elements of a pattern each side (offset bytes into a
    byte buffer: offset 1 misaligns every element): (whole, dst, pattern)."""
    dtype = np.dtype(dtype)
    total = (n + 2 * GUARD) * dtype.itemsize
    pattern = np.random.default_rng(n).integers(0, 256, total, dtype=np.uint8)
    if dtype == np.bool_:
        pattern &= 1
    raw = np.zeros(total + offset, np.uint8)
    raw[offset:] = pattern
    whole = to_device(raw, device)[offset:].view(dtype)
    return whole, whole[GUARD : GUARD + n], pattern


def fill(device, dtype, scalar, n, count=None, offset=0):
    """Launch a Fill of count (default n) elements into a guarded buffer of n; the buffer's middle,
    after checking that nothing outside it changed."""
    whole, dst, pattern = guarded(device, dtype, n, offset)
    stream = ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.FillFactory, device, dtype).Launch(stream, dst, scalar, n if count is None else count)
    stream.Sync()
    after = to_numpy(whole).view(np.uint8)
    edge = GUARD * np.dtype(dtype).itemsize
    assert np.array_equal(after[:edge], pattern[:edge]) and np.array_equal(after[-edge:], pattern[-edge:]), "wrote outside dst"
    return after[edge:-edge].view(dtype), pattern[edge:-edge].view(dtype)


def bits(array):
    array = np.asarray(array)
    return array.view(f"u{array.itemsize}") if kind(array.dtype) == "f" else array


def test_every_dtype_is_registered(device):
    factory = ep.include.primitive.GetFactory(ep.FillFactory, device)
    assert sorted(dtypes[0].value for _, dtypes in factory.Combinations()) == sorted(d.name for d in ALL)
    for dtype in ALL:
        assert ep.NewPrimitive(ep.FillFactory, device, dtype) is ep.NewPrimitive(ep.FillFactory, device, dtype.name)


@pytest.mark.parametrize("dtype", BY_WIDTH, ids=str)
@pytest.mark.parametrize("n", COUNTS)
def test_fill_matches_numpy(device, dtype, n):
    value = {"b": True, "i": -7, "u": 200, "f": -2.75}[kind(dtype)]
    got, _ = fill(device, dtype, value, n)
    assert_same(got, np.full(n, value, dtype))


@pytest.mark.parametrize("dtype", BY_WIDTH, ids=str)
def test_misaligned_dst_and_a_partial_count(device, dtype):
    # dst off its packs (on the cpu every element misaligned; CUDA refuses that): elements one by
    # one; the elements past count keep their bytes.
    offset = 1 if device == "cpu" else dtype.itemsize
    got, before = fill(device, dtype, 1, 21, count=19, offset=offset)
    assert_same(got[:19], np.ones(19, dtype))
    assert bits(got[19:]).tobytes() == bits(before[19:]).tobytes()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_special_floats_arrive_bit_for_bit(device, dtype):
    for pattern in SPECIAL_BITS[dtype]:
        value = np.array(pattern, UNSIGNED[dtype.itemsize]).view(dtype)[()]
        got, _ = fill(device, dtype, value, 18)
        assert set(bits(got).tolist()) == {pattern}, hex(pattern)
    # A Python float converts as NumPy converts it (a float64 NaN's payload keeps its top bits).
    nan = np.array(0x7FF8000000012345 << 0, np.uint64).view(np.float64)[()]
    for value in (-0.0, float(nan), math.inf, 1e-8, 65504.0, 70000.0, 1 / 3):
        with np.errstate(over="ignore"):
            got, _ = fill(device, dtype, value, 3)
            assert bits(got).tobytes() == bits(np.full(3, value, dtype)).tobytes(), value


@pytest.mark.parametrize(
    "dtype, value, expected",
    [
        (np.int8, -128, -128), (np.int8, 127, 127), (np.uint8, 255, 255), (np.int64, -(2**63), -(2**63)),
        (np.int64, 2**63 - 1, 2**63 - 1), (np.int32, 2.9, 2), (np.int32, -2.9, -2), (np.uint8, np.float32(7.5), 7),
        (np.bool_, 0.5, True), (np.bool_, 0, False), (np.bool_, -3, True), (np.float32, True, 1.0),
        (np.float16, 2**40, math.inf), (np.int64, np.uint8(255), 255),
    ],
)
def test_conversions(device, dtype, value, expected):
    with np.errstate(over="ignore"):
        got, _ = fill(device, dtype, value, 2)
    assert_same(got, np.full(2, expected, dtype))


def test_inputs_stay_and_a_launch_is_repeatable(device):
    primitive = ep.NewPrimitive(ep.FillFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    dst = to_device(np.zeros(9, np.float32), device)
    for value in (1.5, -0.0, 0.0):
        primitive.Launch(stream, dst, value, 9)
        stream.Sync()
        assert bits(to_numpy(dst)).tolist() == bits(np.full(9, value, np.float32)).tolist()


# Bad arguments: each one named, nothing written.

def _launch_bad(device, dtype, error, match, *, dst=None, scalar=1, count=4, stream=None):
    whole, good, pattern = guarded(device, dtype, 4)
    primitive = ep.NewPrimitive(ep.FillFactory, device, dtype)
    stream = ep.GetDevice(device).CreateStream() if stream is None else stream
    with pytest.raises(error, match=match):
        primitive.Launch(stream, good if dst is None else dst, scalar, count)
    assert to_numpy(whole).view(np.uint8).tobytes() == pattern.tobytes(), "a launch that raised wrote"


@pytest.mark.parametrize(
    "dtype, scalar, error, match",
    [
        (np.int8, 128, OverflowError, r"scalar: 128 is out of the range of int8 \[-128, 127\]"),
        (np.uint8, -1, OverflowError, r"scalar: -1 is out of the range of uint8"),
        (np.int64, 2**63, OverflowError, r"scalar: 9223372036854775808 is out of the range of int64"),
        (np.int32, math.nan, ValueError, r"scalar: nan has no int32 value"),
        (np.int32, math.inf, ValueError, r"scalar: inf has no int32 value"),
        (np.float32, 10**400, OverflowError, r"scalar: .* is out of the range of float32"),
        (np.float32, "1", TypeError, r"scalar: '1' is not a real scalar"),
        (np.float32, None, TypeError, r"scalar: None is not a real scalar"),
        (np.float32, 1j, TypeError, r"scalar: 1j is not a real scalar"),
        (np.float32, np.zeros(1), TypeError, r"scalar: .* is not a real scalar"),
    ],
)
def test_a_bad_scalar_is_named(device, dtype, scalar, error, match):
    _launch_bad(device, dtype, error, match, scalar=scalar)


def test_bad_buffers_counts_and_streams_are_named(device):
    other = "cuda" if device == "cpu" else "cpu"
    _launch_bad(device, np.float32, ValueError, r"dst: holds 4 elements, fewer than the 5", count=5)
    _launch_bad(device, np.float32, TypeError, r"dst: dtype float64 does not match the primitive's float32",
                dst=to_device(np.zeros(4), device))
    _launch_bad(device, np.float32, ValueError, r"dst: storage must be C-contiguous",
                dst=to_device(np.zeros(8, np.float32), device)[::2])
    _launch_bad(device, np.float32, TypeError, r"dst: ", dst=to_device(np.zeros(4, np.float32), other))
    _launch_bad(device, np.float32, TypeError, r"dst: ", dst=[0.0] * 4)
    _launch_bad(device, np.float32, ValueError, r"count: -1 is negative", count=-1)
    _launch_bad(device, np.float32, TypeError, r"count: 4.0 is not an integer", count=4.0)
    _launch_bad(device, np.float32, TypeError, r"stream", stream=ep.GetDevice(other).CreateStream())
    if device == "cpu":
        read_only = np.zeros(4, np.float32)
        read_only.flags.writeable = False
        _launch_bad(device, np.float32, ValueError, r"dst: the array is read-only", dst=read_only)


def test_new_names_a_bad_dtype():
    with pytest.raises(TypeError, match=r"^dtype: .*complex64"):
        ep.NewPrimitive(ep.FillFactory, "cpu", np.complex64)
