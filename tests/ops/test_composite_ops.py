"""ep.ops.clamp, lerp, addcmul, addcdiv, nan_to_num and masked_fill (one fused kernel each) against torch and
NumPy computed here, on each device: array and scalar operands, broadcasting, NaN and infinities,
the dtypes torch takes and refuses, out= and torch tensors in and out."""
import math

import ml_dtypes
import numpy as np
import pytest

import ep
import ep.ops
from ep.testing import to_device, to_numpy
from dtype_lists import BFLOAT16, assert_same, comparable

torch = pytest.importorskip("torch")

FLOAT_DTYPES = [np.float16, BFLOAT16, np.float32, np.float64]
TOLERANCE = {2: 1e-2, 4: 1e-6, 8: 1e-14}


def _values(dtype, n=24, seed=0):
    rng = np.random.default_rng(seed)
    values = np.concatenate([rng.standard_normal(n - 6) * 4, [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0]])
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def _torch(function, *arrays, **kwargs):
    tensors = [torch.from_numpy(comparable(a)) if isinstance(a, np.ndarray) else a for a in arrays]
    return function(*tensors, **kwargs).numpy()


def _close(got, want, dtype):
    got, want = comparable(got).astype(np.float64), comparable(want).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=TOLERANCE[np.dtype(dtype).itemsize], atol=0, equal_nan=True)


def _on(device, *arrays):
    return [to_device(a, device) if isinstance(a, np.ndarray) else a for a in arrays]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_clamp_is_torchs(device, dtype):
    x = _values(np.float64).astype(dtype) if np.dtype(dtype).kind == "f" else np.arange(-12, 12, dtype=dtype)
    low = (np.linspace(-3, 1, x.size)).astype(dtype)
    high = np.full(x.size, 2, dtype)
    cases = [((x, -1.5 if dtype != np.int32 else -1, 2), {}), ((x, low, high), {}), ((x, low[:1], None), {}),
             ((x, None, high), {}), ((x, 3, 1), {})]  # min > max: max wins
    for args, kwargs in cases:
        got = to_numpy(ep.ops.clamp(*_on(device, *args)))
        want = _torch(torch.clamp, *args)
        assert got.dtype == want.dtype
        assert_same(got, want)
    if np.dtype(dtype).kind == "f":  # a NaN bound gives NaN, as in torch
        bound = np.full(x.size, np.nan, dtype)
        assert np.isnan(to_numpy(ep.ops.clamp(*_on(device, x, bound, None)))).all()
    with pytest.raises(ValueError, match="min, max: both are None"):
        ep.ops.clamp(to_device(x, device))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_lerp_is_torchs(device, dtype):
    start, end = _values(dtype, seed=1), _values(dtype, seed=2)[::-1].copy()
    weights = np.linspace(-1, 2, start.size).astype(dtype)
    for weight in (weights, 0.25, 0.75, 1.0, -0.5):
        got = to_numpy(ep.ops.lerp(*_on(device, start, end, weight)))
        want = _torch(torch.lerp, start, end, weight)
        assert got.dtype == want.dtype
        _close(got, want, dtype)
    # Weight 1 gives end exactly (the formula from end), as torch's.
    finite = np.isfinite(start) & np.isfinite(end)
    assert_same(to_numpy(ep.ops.lerp(*_on(device, start[finite], end[finite], 1.0))), end[finite])
    with pytest.raises(TypeError, match="start: has dtype int32"):
        ep.ops.lerp(*_on(device, np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32), 0.5))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64])
def test_addcmul_and_addcdiv_are_torchs(device, dtype):
    rng = np.random.default_rng(4)
    a, b = (rng.integers(-9, 9, (3, 8)).astype(dtype) for _ in range(2))
    c = rng.integers(1, 9, (1, 8)).astype(dtype)  # broadcast; no zero divisor
    value = 3 if dtype == np.int64 else 0.5
    got = to_numpy(ep.ops.addcmul(*_on(device, a, b, c), value=value))
    want = _torch(torch.addcmul, a, b, c, value=value)
    assert got.dtype == want.dtype
    _close(got, want, got.dtype) if got.dtype.kind == "f" else assert_same(got, want)
    if dtype == np.int64:
        with pytest.raises(TypeError, match="tensor1: has dtype int64"):
            ep.ops.addcdiv(*_on(device, a, b, c))
        return
    got = to_numpy(ep.ops.addcdiv(*_on(device, a, b, c), value=value))
    want = _torch(torch.addcdiv, a, b, c, value=value)
    _close(got, want, dtype)


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16, np.float32, np.float64])
def test_nan_to_num_is_torchs_and_numpys(device, dtype):
    x = _values(dtype)
    got = to_numpy(ep.ops.nan_to_num(to_device(x, device)))
    assert got.dtype == x.dtype
    if dtype == BFLOAT16:  # NumPy has no bfloat16 nan_to_num: its rule, with bfloat16's largest value
        finite = np.isfinite(comparable(x))
        assert_same(got[finite], x[finite])
        assert (comparable(got)[np.isnan(comparable(x))] == 0).all()
        assert (comparable(got)[np.isposinf(comparable(x))] == float(ml_dtypes.finfo(BFLOAT16).max)).all()
        assert (comparable(got)[np.isneginf(comparable(x))] == -float(ml_dtypes.finfo(BFLOAT16).max)).all()
    else:
        assert_same(got, np.nan_to_num(x))
        assert_same(got, _torch(torch.nan_to_num, x))
    got = to_numpy(ep.ops.nan_to_num(to_device(x, device), 1.5, 100.0, -100.0))
    assert_same(got, np.nan_to_num(comparable(x), nan=1.5, posinf=100.0, neginf=-100.0).astype(dtype))


def test_nan_to_num_of_integers_is_a_copy(device):
    x = to_device(np.arange(5, dtype=np.int32), device)
    got = ep.ops.nan_to_num(x)
    assert got is not x
    assert_same(to_numpy(got), np.arange(5, dtype=np.int32))


def test_out_and_torch_tensors(device):
    x = _values(np.float32)
    out = to_device(np.empty_like(x), device)
    assert ep.ops.nan_to_num(to_device(x, device), out=out) is out
    assert_same(to_numpy(out), np.nan_to_num(x))
    if device == "cpu":
        t = torch.from_numpy(x.copy())
        result = ep.ops.clamp(t, -1.0, 1.0)
        assert isinstance(result, torch.Tensor)
        assert_same(result.numpy(), torch.clamp(t, -1.0, 1.0).numpy())


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16, np.float32, np.bool_])
def test_masked_fill_is_torchs(device, dtype):
    x = np.arange(-6, 6).reshape(3, 4).astype(dtype)
    mask = np.array([True, False, True, False])  # broadcast along rows
    for value in (1, 1.7, True, np.array(3)):
        got = to_numpy(ep.ops.masked_fill(*_on(device, x, mask), value))
        want = torch.masked_fill(torch.from_numpy(x), torch.from_numpy(mask), torch.from_numpy(value) if isinstance(value, np.ndarray) else value)
        assert got.dtype == x.dtype
        assert_same(got, want.numpy())
    if dtype == np.int8:
        with pytest.raises(OverflowError, match="value: 300"):
            ep.ops.masked_fill(*_on(device, x, mask), 300)
    with pytest.raises(TypeError, match="condition"):
        ep.ops.masked_fill(*_on(device, x, mask.astype(np.int8)), 1)
