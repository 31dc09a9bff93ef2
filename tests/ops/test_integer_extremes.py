"""Every integer dtype at its extremes: wrapping arithmetic, NumPy's division and modulo (x // 0 = 0,
MIN // -1 wraps), comparisons, bit ops and powers, against NumPy computed here, on each device."""
import warnings

import numpy as np
import pytest

import ep
from dtype_lists import INTS
from ep.testing import to_device, to_numpy

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "floor_divide": np.floor_divide, "remainder": np.remainder,
    "fmod": np.fmod, "true_divide": np.true_divide, "maximum": np.maximum, "less": np.less, "equal": np.equal,
    "bitwise_xor": np.bitwise_xor, "power": np.power,
}
UNARY = {"negative": np.negative, "abs": np.abs, "sign": np.sign, "invert": np.invert, "square": np.square}


def extremes(dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    values = {info.min, info.min + 1, -1, 0, 1, 2, 7, info.max - 1, info.max}
    return np.array(sorted(v for v in values if info.min <= v <= info.max), dtype)


def numpy(function, *arrays):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return function(*arrays)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_binary_ops_at_the_extremes_match_numpy(device, dtype):
    v = extremes(dtype)
    a, b = np.repeat(v, len(v)), np.tile(v, len(v))
    for name, function in BINARY.items():
        if name == "power" and dtype.kind == "i":
            a, b = a[b >= 0], b[b >= 0]  # NumPy refuses negative integer powers, as ep does
        got = to_numpy(ep.ops.binary(name, to_device(a, device), to_device(b, device)))
        want = numpy(function, a, b)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_unary_ops_at_the_extremes_match_numpy(device, dtype):
    v = extremes(dtype)
    for name, function in UNARY.items():
        got = to_numpy(ep.ops.unary(name, to_device(v, device)))
        want = numpy(function, v)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
