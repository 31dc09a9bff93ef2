"""Memset through NewPrimitive + Launch: count bytes of an array of any dtype set to a byte, against
NumPy done here; bad arguments named, nothing written."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy

DTYPES = [np.dtype(t) for t in (np.bool_, np.uint8, np.int32, np.float16, np.float64)]


def memset(device, array, value, count, stream=None):
    buffer = to_device(array, device)
    stream = stream or ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.MemsetFactory, device).Launch(stream, buffer, value, count)
    stream.Sync()
    return to_numpy(buffer)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("count_of", [lambda n: 0, lambda n: 1, lambda n: n - 3, lambda n: n], ids=["0", "1", "most", "all"])
def test_bytes_set(device, dtype, count_of):
    array = np.arange(24).astype(dtype).reshape(4, 6)
    count = count_of(array.nbytes)
    value = 1 if dtype == np.bool_ else 0xA5  # a bool holds 0 or 1
    expected = array.copy()
    expected.reshape(-1).view(np.uint8)[:count] = value
    got = memset(device, array, value, count)
    assert got.dtype == dtype and got.shape == (4, 6) and got.tobytes() == expected.tobytes()


def test_an_unaligned_start_and_every_byte_value(device):
    raw = np.arange(64, dtype=np.uint8)
    for value in (0, 1, 127, 128, 255, np.uint8(9), np.int64(200)):
        buffer = to_device(raw, device)
        stream = ep.GetDevice(device).CreateStream()
        ep.NewPrimitive(ep.MemsetFactory, device).Launch(stream, buffer[3:], value, 50)
        stream.Sync()
        expected = raw.copy()
        expected[3:53] = value
        np.testing.assert_array_equal(to_numpy(buffer), expected)


def test_one_primitive(device):
    assert ep.NewPrimitive(ep.MemsetFactory, device) is ep.NewPrimitive(ep.MemsetFactory, device)


@pytest.mark.parametrize(
    "change, error, match",
    [
        ({"value": 256}, ValueError, r"value: 256 is not a byte; expected 0 <= value <= 255"),
        ({"value": -1}, ValueError, r"value: -1 is not a byte"),
        ({"value": 1.0}, TypeError, r"value: 1.0 is not an integer"),
        ({"value": True}, TypeError, r"value: True is not an integer"),
        ({"count": 33}, ValueError, r"ptr: holds 32 bytes, fewer than the 33 the launch needs"),
        ({"count": -1}, ValueError, r"count: -1 is negative"),
        ({"count": "3"}, TypeError, r"count: '3' is not an integer"),
        ({"ptr": None}, TypeError, r"ptr: NoneType was given"),
        ({"ptr": "strided"}, ValueError, r"ptr: memory must be C-contiguous"),
        ({"ptr": "other device"}, TypeError, r"ptr: "),
    ],
)
def test_bad_arguments_are_named_and_write_nothing(device, change, error, match):
    other = "cuda" if device == "cpu" else "cpu"
    before = np.arange(8, dtype=np.float32)
    buffer = to_device(before, device)
    ptr = {"strided": to_device(np.zeros(16, np.float32), device)[::2], "other device": to_device(before, other)}
    args = {"stream": ep.GetDevice(device).CreateStream(), "ptr": buffer, "value": 7, "count": 32, **change}
    args["ptr"] = ptr.get(args["ptr"], args["ptr"]) if isinstance(args["ptr"], str) else args["ptr"]
    with pytest.raises(error, match=match):
        ep.NewPrimitive(ep.MemsetFactory, device).Launch(**args)
    np.testing.assert_array_equal(to_numpy(buffer), before)


def test_read_only_and_object_arrays_are_refused():
    memset_ = ep.NewPrimitive(ep.MemsetFactory, "cpu")
    stream = ep.GetDevice("cpu").CreateStream()
    read_only = np.zeros(4, np.int32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="ptr: the array is read-only"):
        memset_.Launch(stream, read_only, 1, 4)
    with pytest.raises(TypeError, match="ptr: dtype object holds Python objects"):
        memset_.Launch(stream, np.array([None, None]), 0, 8)
