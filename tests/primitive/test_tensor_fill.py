"""TensorFill through NewPrimitive + Launch: dst filled with src's first element, bit for bit, on
every dtype; src read on the device and left as it was; bad arguments named, nothing written."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, BY_WIDTH

GUARD = 4


def sample(dtype, n, seed):
    """n elements of dtype: random bytes (NaNs with payloads and -0.0 among the floats)."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    return rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype)


def tensor_fill(device, dtype, src, n, count=None):
    """TensorFill of count (default n) elements into a buffer of n between GUARD-element guards;
    (dst's elements, the guarded buffer's bytes before)."""
    before = sample(dtype, n + 2 * GUARD, n)
    whole = to_device(before, device)
    stream = ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.TensorFillFactory, device, dtype).Launch(stream, src, whole[GUARD : GUARD + n], n if count is None else count)
    stream.Sync()
    after = to_numpy(whole)
    assert after[:GUARD].tobytes() == before[:GUARD].tobytes() and after[-GUARD:].tobytes() == before[-GUARD:].tobytes()
    return after[GUARD:-GUARD], before[GUARD:-GUARD]


@pytest.mark.parametrize("dtype", BY_WIDTH, ids=str)
@pytest.mark.parametrize("n", [0, 1, 19, 40])
def test_every_dtype_bit_for_bit(device, dtype, n):
    value = sample(dtype, 3, 7)  # src may hold more than one element: the first is read
    src = to_device(value, device)
    got, _ = tensor_fill(device, dtype, src, n)
    assert got.tobytes() == np.full(n, value[0], dtype).tobytes()
    assert to_numpy(src).tobytes() == value.tobytes(), "src changed"


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(np.float64)], ids=str)
def test_nan_payload_and_a_partial_count(device, dtype):
    value = np.array([0x7E01 if dtype.itemsize == 2 else 0x7FF8000000000ABC], f"u{dtype.itemsize}").view(dtype)
    got, before = tensor_fill(device, dtype, to_device(value, device), 21, count=17)
    assert got[:17].tobytes() == np.full(17, value[0], dtype).tobytes()
    assert got[17:].tobytes() == before[17:].tobytes()


def test_src_inside_dst(device):
    # Every element written is the value read, so src may be one of dst's own elements.
    data = np.arange(12, dtype=np.int32)
    dst = to_device(data, device)
    stream = ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.TensorFillFactory, device, np.int32).Launch(stream, dst[5:6], dst, 12)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst), np.full(12, 5, np.int32))


def test_every_dtype_is_registered(device):
    factory = ep.include.primitive.GetFactory(ep.TensorFillFactory, device)
    assert sorted(d[0].value for _, d in factory.Combinations()) == sorted(d.name for d in ALL)
    with pytest.raises(TypeError, match="^dtype: .*complex64"):
        ep.NewPrimitive(ep.TensorFillFactory, device, np.complex64)


def test_bad_arguments_are_named_and_write_nothing(device):
    other = "cuda" if device == "cpu" else "cpu"
    good_src = to_device(np.ones(1, np.float32), device)
    cases = [
        ({"src": to_device(np.ones(0, np.float32), device)}, ValueError, r"src: holds 0 elements, fewer than the 1"),
        ({"src": to_device(np.ones(1, np.float64), device)}, TypeError, r"src: dtype float64 does not match"),
        ({"src": to_device(np.ones(1, np.float32), other)}, TypeError, r"src: "),
        ({"src": 1.0}, TypeError, r"src: "),
        ({"dst": to_device(np.zeros(3, np.float32), device)}, ValueError, r"dst: holds 3 elements, fewer than the 4"),
        ({"dst": to_device(np.zeros(8, np.float32), device)[::2]}, ValueError, r"dst: storage must be C-contiguous"),
        ({"count": -2}, ValueError, r"count: -2 is negative"),
        ({"count": None}, TypeError, r"count: None is not an integer"),
        ({"stream": ep.GetDevice(other).CreateStream()}, TypeError, r"stream"),
    ]
    primitive = ep.NewPrimitive(ep.TensorFillFactory, device, np.float32)
    for change, error, match in cases:
        before = np.arange(4, dtype=np.float32)
        dst = to_device(before, device)
        args = {"stream": ep.GetDevice(device).CreateStream(), "src": good_src, "dst": dst, "count": 4, **change}
        with pytest.raises(error, match=match):
            primitive.Launch(**args)
        np.testing.assert_array_equal(to_numpy(dst), before)
