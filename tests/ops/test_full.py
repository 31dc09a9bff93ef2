"""ep.ops.full against np.full and torch.full computed here: shapes, NumPy 2's dtype inference,
every dtype, bits of special floats, out= of any kind, and bad arguments named."""
import math

import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, sampled



def full(device, *args, **kwargs):
    result = ep.ops.full(*args, device=device, **kwargs)
    return to_numpy(result)


def same(got, expected):
    """Equal shape, dtype and bytes (so -0.0 and NaN payloads count)."""
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype, expected.shape, expected.dtype)
    assert got.tobytes() == expected.tobytes(), (got, expected)


@pytest.mark.parametrize("shape", [(), 0, 5, (2, 3), [3, 0, 2], (1, 2, 1, 3), np.int64(4), np.array(3), np.array([2, 3])], ids=repr)
def test_shapes(device, shape):
    same(full(device, shape, 2.5), np.full(shape, 2.5))


@pytest.mark.parametrize(
    "fill_value",
    [True, False, 0, -5, 2**63 - 1, -(2**63), 1.5, -0.0, math.inf, np.bool_(True), np.int8(-3), np.uint8(200),
     np.int32(7), np.int64(-9), np.float16(0.1), np.float32(-2.5), np.float64(1e300)],
    ids=repr,
)
def test_the_dtype_is_numpys(device, fill_value):
    same(full(device, (2, 2), fill_value), np.full((2, 2), fill_value))


@pytest.mark.parametrize("dtype", sampled(ALL), ids=str)
@pytest.mark.parametrize("fill_value", [1, -1.75, True], ids=repr)
def test_every_dtype(device, dtype, fill_value):
    if dtype.kind == "u" and fill_value == -1.75:
        fill_value = 1.75  # np.full's cast of a negative float to uint8 is undefined
    same(full(device, (3, 5), fill_value, dtype=dtype), np.full((3, 5), fill_value, dtype))


def test_nan_payloads_and_signed_zero_stay(device):
    for dtype, pattern in ((np.float32, 0x7FC12345), (np.float64, 0xFFF8000000000ABC), (np.float16, 0x7E01)):
        value = np.array(pattern, f"u{np.dtype(dtype).itemsize}").view(dtype)[()]
        same(full(device, 4, value), np.full(4, value))
    same(full(device, 3, -0.0, dtype=np.float16), np.full(3, -0.0, np.float16))


def test_like_torch_full(device):
    torch = pytest.importorskip("torch")
    for fill_value, dtype in ((3, torch.int8), (-0.5, torch.float32), (2.0, torch.float16), (1, torch.bool)):
        expected = torch.full((2, 3), fill_value, dtype=dtype).numpy()
        same(full(device, (2, 3), fill_value, dtype=dtype), expected)


def test_out_of_any_kind_is_written_and_returned(device):
    out = to_device(np.zeros((2, 3), np.int32), device)
    assert ep.ops.full((2, 3), 7.9, device=device, out=out) is out
    same(to_numpy(out), np.full((2, 3), 7, np.int32))  # out's dtype, the value truncated
    if device == "cpu":
        torch = pytest.importorskip("torch")
        tensor = torch.zeros(4, dtype=torch.float64)
        assert ep.ops.full(4, -1.5, out=tensor) is tensor
        assert tensor.tolist() == [-1.5] * 4


def test_a_large_fill_runs_in_parallel_and_is_right():
    n = (1 << 20) + 3
    got = ep.ops.full(n, np.float32(3.25))
    assert got.shape == (n,) and bool((got == np.float32(3.25)).all())


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"shape": (-1, 2), "fill_value": 1}, ValueError, r"shape\[0\]: -1 is negative"),
        ({"shape": "ab", "fill_value": 1}, TypeError, r"shape: 'ab' is not a sequence of sizes"),
        ({"shape": (2.0,), "fill_value": 1}, TypeError, r"shape\[0\]: 2.0 is not an integer"),
        ({"shape": (2**40, 2**40), "fill_value": 1}, ValueError, r"shape: \(1099511627776, 1099511627776\) of int64 is"),
        ({"shape": 2, "fill_value": 2**64}, OverflowError, r"fill_value: 18446744073709551616 does not fit int64"),
        ({"shape": 2, "fill_value": 300, "dtype": np.int8}, OverflowError, r"fill_value: 300 is out of the range of int8"),
        ({"shape": 2, "fill_value": np.int64(-1), "dtype": np.uint8}, OverflowError, r"fill_value: np.int64\(-1\) is out of the range of uint8"),
        ({"shape": 2, "fill_value": math.nan, "dtype": np.int32}, ValueError, r"fill_value: nan has no int32 value"),
        ({"shape": 2, "fill_value": 1j}, TypeError, r"fill_value: 1j is not a real scalar"),
        ({"shape": 2, "fill_value": np.zeros(2)}, TypeError, r"fill_value: .* is not a real scalar"),
        ({"shape": 2, "fill_value": np.longdouble(3)}, TypeError, r"fill_value: dtype\(.float128.\) is not a supported data type"),
        ({"shape": 2, "fill_value": 1, "dtype": np.complex64}, TypeError, r"dtype: .*complex64"),
        ({"shape": 2, "fill_value": 1, "device": "gpu"}, ValueError, r"device: 'gpu' is not a device"),
        ({"shape": 2, "fill_value": 1, "out": np.zeros(3)}, ValueError, r"out: has shape \(3,\); expected \(2,\)"),
        ({"shape": 2, "fill_value": 1, "out": np.zeros(2, np.complex64)}, TypeError, r"out: .*complex64"),
        ({"shape": 2, "fill_value": 1, "sbp": ep.sbp.broadcast}, TypeError, r"sbp: full takes sbp= only with global tensors"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        ep.ops.full(**kwargs)


def test_out_on_another_device_is_named(device):
    other = "cuda" if device == "cpu" else "cpu"
    with pytest.raises(TypeError, match=f"out: is on {other}; expected an array on {device}"):
        ep.ops.full(2, 1.0, device=device, out=to_device(np.zeros(2), other))


def test_help_says_the_semantics():
    doc = ep.ops.full.__doc__
    assert "np.full" in doc and "torch.full" in doc and "NaN payloads" in doc and "OverflowError" in doc


def test_a_0d_size_that_is_no_integer_is_named(device):
    with pytest.raises(TypeError, match=r"shape\[0\]: array\(3\.\) is not an integer"):
        ep.ops.full(np.array(3.0), 1.0, device=device)
