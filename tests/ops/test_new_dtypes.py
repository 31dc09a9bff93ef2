"""int16, uint16, uint32, uint64 and bfloat16 through the ops that compute rather than move bytes
(the byte-moving primitives run every dtype in their own tests): matmul, softmax, the reductions,
add_n, where and ep.fuse, against NumPy (ml_dtypes) and PyTorch computed here, on each device."""
import warnings

import numpy as np
import pytest
import torch
from cublas import skip_without_cublas

import ep
from dtype_lists import BFLOAT16, assert_same
from ep.testing import to_device, to_numpy

NEW_INTS = [np.dtype(t) for t in ("int16", "uint16", "uint32", "uint64")]


def as_torch(x: np.ndarray) -> torch.Tensor:
    if x.dtype == BFLOAT16:
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)


def from_torch(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.int16).numpy().view(BFLOAT16) if t.dtype == torch.bfloat16 else t.numpy()


def within_one_bfloat16_step(got: np.ndarray, want: np.ndarray) -> None:
    """got within one bfloat16 rounding (8 significant bits) of want, the same NaNs."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2**-7, atol=1e-30, equal_nan=True)


def extremes(dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.array(sorted({info.min, info.min + 1, 0, 1, 2, 7, info.max - 1, info.max}), dtype)


@pytest.mark.parametrize("dtype", NEW_INTS, ids=str)
def test_integer_matmul_wraps_as_numpy(device, dtype):
    rng = np.random.default_rng(0)
    v = extremes(dtype)
    a = rng.choice(v, (3, 5)).astype(dtype)
    b = rng.choice(v, (5, 4)).astype(dtype)
    got = to_numpy(ep.ops.matmul(to_device(a, device), to_device(b, device)))
    assert_same(got, np.matmul(a, b))
    assert got.dtype == dtype


def test_bfloat16_matmul_rounds_once_from_float32(device):
    skip_without_cublas(device)
    rng = np.random.default_rng(1)
    a = rng.normal(0, 1, (2, 7, 9)).astype(BFLOAT16)
    b = rng.normal(0, 1, (9, 5)).astype(BFLOAT16)
    got = to_numpy(ep.ops.matmul(to_device(a, device), to_device(b, device)))
    assert got.dtype == BFLOAT16
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    within_one_bfloat16_step(got, exact)
    within_one_bfloat16_step(got, from_torch(torch.matmul(as_torch(a), as_torch(b))))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_bfloat16_softmax_within_a_rounding_of_exact(device, name):
    # Against float64, not torch: torch's bfloat16 log_softmax is off by 2% near 0 (-0.1455 for -0.1426).
    x = np.random.default_rng(2).normal(0, 4, (3, 33)).astype(BFLOAT16)
    got = to_numpy(getattr(ep.ops, name)(to_device(x, device), 1))
    assert got.dtype == BFLOAT16
    wide = x.astype(np.float64)
    log = wide - wide.max(1, keepdims=True)
    log -= np.log(np.exp(log).sum(1, keepdims=True))
    within_one_bfloat16_step(got, log if name == "log_softmax" else np.exp(log))


# Each reduction compiles per dtype (seconds on the CPU): each op runs on two of the new integers.
EXTREME_REDUCTIONS = {"sum": np.sum, "prod": np.prod, "amax": np.max, "amin": np.min, "argmax": np.argmax, "argmin": np.argmin}
REDUCTION_CASES = [(dtype, name) for i, dtype in enumerate(NEW_INTS) for name in list(EXTREME_REDUCTIONS)[i % 2 :: 2]]
REDUCTION_CASES += [(np.dtype(np.uint64), "sum"), (np.dtype(np.int16), "prod")]


@pytest.mark.parametrize("dtype, name", REDUCTION_CASES, ids=str)
def test_integer_reductions_at_the_extremes(device, dtype, name):
    x = extremes(dtype)[::-1].copy()
    got = to_numpy(getattr(ep.ops, name)(to_device(x, device)))
    if name in ("sum", "prod"):
        # int64, as torch.sum gives; a uint64 sum wraps to the same bits.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = EXTREME_REDUCTIONS[name](x, dtype=np.uint64 if dtype == np.uint64 else np.int64).astype(np.int64)
    else:
        want = np.asarray(EXTREME_REDUCTIONS[name](x))
    assert got == want and got.dtype == want.dtype


def test_bfloat16_reductions_as_torch(device):
    x = np.random.default_rng(3).normal(0, 3, (4, 50)).astype(BFLOAT16)
    t = as_torch(x)
    for name in ("sum", "mean", "std"):  # each compiles for bfloat16 (logsumexp takes 15 s cold on the CPU)
        got = to_numpy(getattr(ep.ops, name)(to_device(x, device), 1))
        assert got.dtype == BFLOAT16, name
        within_one_bfloat16_step(got, from_torch(getattr(torch, name)(t, 1)).astype(np.float32))
    assert_same(to_numpy(ep.ops.argmax(to_device(x, device), 1)), torch.argmax(t, 1).numpy())


@pytest.mark.parametrize("dtype", [*NEW_INTS, BFLOAT16], ids=str)
def test_add_n_and_where(device, dtype):
    rng = np.random.default_rng(4)
    xs = [rng.integers(0, 50, 19).astype(dtype) for _ in range(3)]
    got = to_numpy(ep.ops.add_n([to_device(x, device) for x in xs]))
    assert_same(got, (xs[0].astype(np.float64) + xs[1] + xs[2]).astype(dtype))
    condition = rng.random(19) < 0.5
    got = to_numpy(ep.ops.where(to_device(condition, device), to_device(xs[0], device), to_device(xs[1], device)))
    assert_same(got, np.where(condition, xs[0], xs[1]))


def test_fuse_rounds_bfloat16_after_each_op_as_the_unfused_ops(device):
    rng = np.random.default_rng(5)
    a, b = (to_device(rng.normal(0, 2, 40).astype(BFLOAT16), device) for _ in range(2))
    fused = ep.fuse(lambda a, b: ep.ops.unary("tanh", a * b + a) - 0.5)(a, b)
    unfused = ep.ops.binary("sub", ep.ops.unary("tanh", ep.ops.binary("add", ep.ops.binary("mul", a, b), a)), 0.5)
    assert to_numpy(fused).dtype == BFLOAT16
    assert to_numpy(fused).tobytes() == to_numpy(unfused).tobytes()
