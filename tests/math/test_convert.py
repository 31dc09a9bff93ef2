"""store_fn and as_type: float -> integer saturates, integers wrap, alike in a vectorized loop,
its scalar tail, a call from Python (what the CUDA simulator makes) and the PTX a GPU runs."""
import math

import numpy as np
import pytest
from numba import njit

from ep.common.math.convert import store_fn
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from nvvm import run_without_simulator

INTS = (np.int8, np.uint8, np.int32, np.int64)
VALUES = [300.7, -300.7, 1e30, -1e30, math.nan, math.inf, -math.inf, 127.9, -128.9, 128.0, -129.0, 255.5, 256.0,
          -0.9, 0.9, -0.0, 2.0**31, 2.0**31 - 1, -(2.0**31) - 1, 2.0**32, 2.0**63, -(2.0**63), 2.0**64, 1e-30]


def saturated(v, dst):
    """clip(trunc(v), min, max) with NaN -> 0, in Python integers (float64 rounds int64's max up)."""
    info = np.iinfo(dst)
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return info.max if v > 0 else info.min
    return min(max(math.trunc(v), info.min), info.max)


def _loop(store, dst):
    # A loop LLVM vectorizes: its body converts several lanes at once, its tail one at a time.
    @njit
    def run(src):
        out = np.empty(src.size, dst)
        for i in range(src.size):
            out[i] = store(src[i])
        return out

    return run


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dst", INTS)
def test_float_to_integer_saturates_in_loops_of_every_length_and_from_python(src, dst):
    store = store_fn(DataType(dst), DeviceType.kCPU)
    run = _loop(store, dst)
    values = np.array(VALUES, src)
    for count in range(1, 71):
        x = np.resize(np.roll(values, count), count)
        expected = np.array([saturated(float(v), dst) for v in x], dst)
        np.testing.assert_array_equal(run(x), expected, err_msg=f"count {count}")
    # The simulator calls the store from Python with a Python float.
    assert [store(float(v)) for v in values] == [saturated(float(v), dst) for v in values]


@pytest.mark.parametrize("dst", INTS)
def test_integers_wrap_to_the_storage_dtype_compiled_and_from_python(dst):
    store = store_fn(DataType(dst), DeviceType.kCPU)
    wide = np.array([-(2**63), -129, -128, -1, 0, 127, 128, 255, 256, 40000, 2**31, 2**63 - 1], np.int64)
    np.testing.assert_array_equal(_loop(store, dst)(wide), wide.astype(dst))
    # A formula run from Python computes an int8 in int64 (a Python int): the store wraps it.
    assert [store(int(v)) for v in wide] == wide.astype(dst).tolist()


def test_float_to_bool_is_nonzero_with_nan_true_as_numpy():
    x = np.array([0.0, -0.0, math.nan, math.inf, 1e-30, -2.5], np.float32)
    np.testing.assert_array_equal(_loop(store_fn(DataType.kBool, DeviceType.kCPU), np.bool_)(x), x.astype(np.bool_))


PTX_SCRIPT = """
import re
import numba
from numba import cuda
from ep.common.math.convert import load_fn, store_fn
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType

def kernel_for(load, store):
    def kernel(src, dst):
        i = cuda.grid(1)
        if i < src.size:
            dst[i] = store(load(src[i]))
    return kernel

for src, dst in {pairs!r}:
    src, dst = DataType(src), DataType(dst)
    argtypes = (numba.from_dtype(src.storage_dtype)[::1], numba.from_dtype(dst.storage_dtype)[::1])
    ptx, _ = cuda.compile_ptx(kernel_for(load_fn(src, DeviceType.kCUDA), store_fn(dst, DeviceType.kCUDA, src.compute_dtype)), argtypes, cc=(9, 0))
    body = ptx.split(".entry", 1)[1]
    # Truncating conversion, then the clamps and NaN as selects: no branch, no call.
    assert re.search(r"cvt\\.rzi\\.[su]\\d+\\.f(16|32|64)", body) and "selp" in body and "call" not in body, (src, dst)
    print("ok", src.value, dst.value)
"""
PTX_PAIRS = [("float32", "int8"), ("float32", "int32"), ("float32", "int64"), ("float32", "uint8"),
             ("float16", "int8"), ("float64", "int64")]


@pytest.mark.ptx
def test_saturating_casts_compile_to_ptx():
    stdout = run_without_simulator(["-c", PTX_SCRIPT.format(pairs=PTX_PAIRS)], timeout=600)
    assert stdout.count("ok ") == len(PTX_PAIRS)
