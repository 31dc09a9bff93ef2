"""The Scan primitive against NumPy and PyTorch: every op along rows, columns and long runs (cut
into chunks), exclusive scans, dtypes, accuracy, NaN and ties, in place, determinism, bad arguments."""
import numpy as np
import pytest
import torch

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, assert_same, kind, sampled

# (src_dims, dim): along rows (inner 1), across columns (inner > 1), a middle dim, dims of size 1,
# and a 0-d array.
LAYOUTS = [((3, 5), 1), ((4, 5, 3), 1), ((6, 4), 0), ((2, 3, 4, 2), 2), ((1, 7, 1), 1), ((), 0)]
OPS = ["sum", "prod", "amax", "amin", "argmax", "argmin", "logsumexp"]
INDEX = {"argmax": np.int64, "argmin": np.int64}


def _n(device, cpu: int, cuda: int) -> int:
    # The simulator runs every CUDA thread in Python: small sizes there.
    return cpu if device == "cpu" else cuda


def launch(device, op, x, dim, dst_dtype, exclusive=False, dst=None):
    """Scan.Launch of op along dim of x into a new dst (or dst, a device buffer), on the host."""
    primitive = ep.NewPrimitive(ep.ScanFactory, device, op, x.dtype, dst_dtype, exclusive)
    assert primitive is not None, (op, x.dtype, dst_dtype, exclusive)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x.ravel(), device) if dst is None else dst
    dst = to_device(np.zeros(x.size, dst_dtype), device) if dst is None else dst
    primitive.Launch(stream, x.shape, src, dim, dst)
    stream.Sync()
    return to_numpy(dst).reshape(x.shape)


def reference(op, x, dim, exclusive=False):
    """NumPy's (PyTorch's for the indices and logcumsumexp) scan, in float64 or int64."""
    if x.ndim == 0:
        x, scalar = x.reshape(1), True
    else:
        scalar = False
    wide = x.astype(np.float64) if kind(x.dtype) == "f" else x.astype(np.int64) if op in ("sum", "prod") else x
    if op == "sum":
        result = np.cumsum(wide, dim)
        result = result - wide if exclusive else result
    elif op == "prod":
        result = np.cumprod(wide, dim)
        if exclusive:
            result = np.concatenate([np.ones_like(np.take(result, [0], dim)), np.delete(result, -1, dim)], dim)
    elif op in ("amax", "amin"):
        result = (np.maximum if op == "amax" else np.minimum).accumulate(wide, dim)
    elif op in ("argmax", "argmin"):
        t = torch.from_numpy(wide.astype(np.float64) if wide.dtype.kind == "f" or wide.dtype == np.uint64 else wide.astype(np.int64))
        result = (torch.cummax if op == "argmax" else torch.cummin)(t, dim)[1].numpy()
    else:
        result = torch.logcumsumexp(torch.from_numpy(wide), dim).numpy()
    return result.reshape(()) if scalar else result


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.7
    if kind(dtype) in "iu":
        low = 0 if kind(dtype) == "u" else -3
        return rng.integers(low, 4, shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


def check(op, got, expected, dtype):
    if op in INDEX or kind(dtype) != "f" and op in ("sum", "prod", "amax", "amin"):
        assert_same(got, expected.astype(got.dtype))
    else:
        rtol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12}[np.dtype(dtype).name]
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("src_dims, dim", LAYOUTS)
@pytest.mark.parametrize("op", OPS)
def test_every_op_of_float32_matches_the_reference(device, op, src_dims, dim):
    x = sample(np.float32, src_dims)
    check(op, launch(device, op, x, dim, INDEX.get(op, np.float32)), reference(op, x, dim), np.float32)


@pytest.mark.parametrize("dtype", sampled(ALL), ids=str)
@pytest.mark.parametrize("op", ["sum", "amax", "argmin"])
def test_every_dtype_matches_the_reference(device, op, dtype):
    x = sample(dtype, (4, 6, 3))
    dst = INDEX.get(op, np.int64 if op == "sum" and dtype == np.bool_ else dtype)
    for dim in (1, 2):
        check(op, launch(device, op, x, dim, dst), reference(op, x, dim), dtype)


@pytest.mark.parametrize("op, dtype", [("sum", np.float32), ("prod", np.int32), ("amax", np.float64), ("logsumexp", np.float32)])
def test_exclusive_scans_start_from_the_identity(device, op, dtype):
    x = sample(dtype, (3, 5, 2))
    dst = np.int64 if op == "prod" else dtype
    for dim in (1, 2):
        got = launch(device, op, x, dim, dst, exclusive=True)
        if op in ("sum", "prod"):
            check(op, got, reference(op, x, dim, exclusive=True), dtype)
        else:
            shifted = np.delete(reference(op, x, dim), -1, dim)
            first = np.full(np.take(x, [0], dim).shape, -np.inf)
            check(op, got, np.concatenate([first, shifted], dim), dtype)


@pytest.mark.parametrize("op", ["sum", "amax", "argmax", "logsumexp"])
def test_long_runs_cut_into_chunks_match(device, op):
    # Long enough that both devices cut each run into chunks (three passes), rows and columns.
    n = _n(device, 1 << 18, 1500)
    x = sample(np.float32, n, seed=1)
    if op == "argmax":
        x = np.round(x).astype(np.float32)  # ties, whose last index wins
    check(op, launch(device, op, x, 0, INDEX.get(op, np.float32)), reference(op, x, 0), np.float32)
    columns = sample(np.float32, (n // 4, 4), seed=2)
    check(op, launch(device, op, columns, 0, INDEX.get(op, np.float32)), reference(op, columns, 0), np.float32)
    exclusive = launch(device, "sum", x, 0, np.float32, exclusive=True) if op == "sum" else None
    if exclusive is not None:
        check("sum", exclusive, reference("sum", x, 0, exclusive=True), np.float32)


def test_float32_sums_are_as_accurate_as_numpys(device):
    n = _n(device, 10**6, 3000)
    x = np.full(n, 0.1, np.float32)
    exact = np.arange(1, n + 1) * np.float64(np.float32(0.1))
    got = launch(device, "sum", x, 0, np.float32).astype(np.float64)
    assert np.abs(got - exact).max() <= max(np.abs(np.cumsum(x).astype(np.float64) - exact).max(), 0)
    # float16 is accumulated wide, each count rounded once (a float16 sum would stop at 2048).
    ones = np.ones(_n(device, 5000, 3000), np.float16)
    assert_same(launch(device, "sum", ones, 0, np.float16), np.arange(1, ones.size + 1).astype(np.float16))


def test_nan_and_ties_follow_torch(device):
    x = np.array([[1, 3, 3, np.nan, 2, np.nan, 5], [-1, -1, -2, -2, -np.inf, 0, -np.inf]], np.float32)
    for op in ("amax", "amin", "argmax", "argmin", "sum", "logsumexp"):
        check(op, launch(device, op, x, 1, INDEX.get(op, np.float32)), reference(op, x, 1), np.float32)


def test_integer_sums_wrap_in_their_dtype_or_give_int64(device):
    x = (np.arange(40) * 7).astype(np.int8).reshape(4, 10)
    assert_same(launch(device, "sum", x, 1, np.int8), np.cumsum(x, 1, dtype=np.int8))
    assert_same(launch(device, "sum", x, 1, np.int64), np.cumsum(x, 1, dtype=np.int64))
    big = np.full(6, 2**62, np.int64)
    assert_same(launch(device, "sum", big, 0, np.int64), np.cumsum(big))  # wraps as NumPy's
    u = np.array([2**64 - 1, 1, 5], np.uint64)
    assert_same(launch(device, "sum", u, 0, np.uint64), np.cumsum(u))


def test_in_place_scan_reads_each_element_before_writing_it(device):
    x = sample(np.float32, (5, 300))
    buffer = to_device(x.ravel(), device)
    got = launch(device, "sum", x, 1, np.float32, dst=buffer)
    check("sum", got, reference("sum", x, 1), np.float32)


def test_a_partly_overlapping_dst_is_refused(device):
    stream = ep.GetDevice(device).CreateStream()
    buffer = to_device(np.arange(9, dtype=np.float32), device)
    primitive = ep.NewPrimitive(ep.ScanFactory, device, "sum", np.float32, np.float32)
    with pytest.raises(ValueError, match="src.*dst|dst.*src"):
        primitive.Launch(stream, (8,), buffer[:8], 0, buffer[1:])
    assert_same(to_numpy(buffer), np.arange(9, dtype=np.float32))


def test_results_are_the_same_on_every_run(device):
    x = sample(np.float32, _n(device, 3 * 10**5, 2000), seed=3)
    first = launch(device, "sum", x, 0, np.float32)
    assert all(launch(device, "sum", x, 0, np.float32).tobytes() == first.tobytes() for _ in range(2))


def test_empty_arrays_launch_nothing(device):
    for shape, dim in (((0, 3), 0), ((2, 0), 1), ((0,), 0)):
        assert launch(device, "amax", np.zeros(shape, np.float32), dim, np.float32).shape == shape


def test_new_refuses_combinations_it_lacks(device):
    new = lambda *args: ep.NewPrimitive(ep.ScanFactory, device, *args)  # noqa: E731
    assert new("logsumexp", np.int32, np.int32) is None
    assert new("sum", np.bool_, np.bool_) is None
    assert new("argmax", np.float32, np.int64, True) is None  # exclusive index scans have no first index
    assert new("any", np.bool_, np.bool_) is None
    assert new("prod", np.uint8, np.int64) is not None and new("amin", np.bool_, np.bool_) is not None
    with pytest.raises(TypeError, match="exclusive"):
        new("sum", np.float32, np.float32, 1)
    with pytest.raises(ValueError, match="op"):
        new("median", np.float32, np.float32)


def test_bad_dims_are_named(device):
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(IndexError, match="dim: 2 is out of range"):
        launch(device, "sum", x, 2, np.float32)
    with pytest.raises(IndexError, match="dim: -1"):
        launch(device, "sum", x, -1, np.float32)
    with pytest.raises(TypeError, match="dim"):
        launch(device, "sum", x, 1.0, np.float32)
    primitive = ep.NewPrimitive(ep.ScanFactory, device, "sum", np.float32, np.float32)
    with pytest.raises(ValueError, match="src"):
        primitive.Launch(ep.GetDevice(device).CreateStream(), (2, 4), to_device(x.ravel(), device), 1, to_device(np.zeros(8, np.float32), device))


def test_registry_lists_every_combination():
    rows = ep.include.primitive.primitive.registry_rows("cpu", "Scan")
    listed = {(row["op"], tuple(row["dtypes"])) for row in rows}
    assert ("kSum", ("bool", "int64")) in listed and ("kArgMax", ("float16", "int64")) in listed
    assert ("kLogSumExp", ("int32", "int32")) not in listed and ("kMean", ("float32", "float32")) not in listed
    assert len(listed) == len(rows)
