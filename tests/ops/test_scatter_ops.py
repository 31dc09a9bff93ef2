"""ep.ops.index_add and scatter_add against torch's, on cpu and the simulator: dims, alpha, repeated
positions, an index smaller than src, the dtypes that sum in int64 and wrap, 0-d and empty cases,
out=, and the refusals."""
import numpy as np
import pytest

import ep
import ep.ops
from ep.testing import to_device, to_numpy

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8, np.bool_]


def _values(shape, dtype):
    if dtype is np.bool_:
        return RNG.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(0, 120, shape).astype(dtype)


def _check(got, expected):
    expected = expected.numpy()
    got = to_numpy(got)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    # float16: torch rounds after each addition, ep once after summing in float32 (as the OpInfo suite's 1e-2).
    tolerance = {np.float16: 1e-2, np.float32: 1e-6, np.float64: 1e-12}.get(got.dtype.type, 0)
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_matches_torch(device, dtype, dim):
    x = _values((5, 6, 4), dtype)
    index = np.array([4, 0, 4, 1, 4])  # repeated positions accumulate
    source_shape = list(x.shape)
    source_shape[dim] = len(index)
    source = _values(tuple(source_shape), dtype)
    index = index % x.shape[dim]
    alpha = 1 if dtype is np.bool_ else 3
    got = ep.ops.index_add(to_device(x, device), dim, to_device(index, device), to_device(source, device), alpha=alpha)
    _check(got, torch.index_add(torch.from_numpy(x), dim, torch.from_numpy(index), torch.from_numpy(source), alpha=alpha))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim, index_shape", [(0, (4, 3)), (1, (5, 7)), (-1, (2, 2))])
def test_scatter_add_matches_torch(device, dtype, dim, index_shape):
    x, src = _values((5, 4), dtype), _values((6, 7), dtype)
    index = RNG.integers(0, x.shape[dim], index_shape)
    got = ep.ops.scatter_add(to_device(x, device), dim, to_device(index, device), to_device(src, device))
    _check(got, torch.scatter_add(torch.from_numpy(x), dim, torch.from_numpy(index), torch.from_numpy(src)))


def test_zero_dims_as_torch():
    x, src, index = np.full((), 2.5, np.float32), np.full((), 4.0, np.float32), np.zeros((), np.int64)
    got = ep.ops.scatter_add(x, 0, index, src)
    _check(got, torch.scatter_add(torch.from_numpy(x), 0, torch.from_numpy(index), torch.from_numpy(src)))
    got = ep.ops.index_add(x, -1, index, src, alpha=2)
    _check(got, torch.index_add(torch.from_numpy(x), -1, torch.from_numpy(index), torch.from_numpy(src), alpha=2))


def test_empty_index_and_out(device):
    y = _values((3, 4), np.float32)
    empty = ep.ops.index_add(to_device(y, device), 0, to_device(np.zeros(0, np.int64), device), to_device(np.zeros((0, 4), np.float32), device))
    np.testing.assert_array_equal(to_numpy(empty), y)
    out = to_device(np.zeros((3, 4), np.float32), device)
    result = ep.ops.index_add(to_device(y, device), 1, to_device(np.array([3]), device), to_device(np.ones((3, 1), np.float32), device), out=out)
    assert result is out
    expected = y.copy()
    expected[:, 3] += 1
    np.testing.assert_array_equal(to_numpy(out), expected)


def test_inputs_are_not_modified(device):
    y, source = _values((3, 4), np.int32), _values((2, 4), np.int32)
    arrays = [to_device(a, device) for a in (y, np.array([2, 2]), source)]
    ep.ops.index_add(arrays[0], 0, arrays[1], arrays[2])
    np.testing.assert_array_equal(to_numpy(arrays[0]), y)
    np.testing.assert_array_equal(to_numpy(arrays[2]), source)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: ep.ops.index_add(x, 0, np.array([3]), np.ones((1, 4), np.float32)), IndexError, r"index: holds 3; expected indices in \[0, 3\)"),
        (lambda x: ep.ops.index_add(x, 0, np.array([-1]), np.ones((1, 4), np.float32)), IndexError, "index: holds -1"),
        (lambda x: ep.ops.index_add(x, 0, np.array([0, 1]), np.ones((1, 4), np.float32)), ValueError, r"source: has shape \(1, 4\); expected \(2, 4\)"),
        (lambda x: ep.ops.index_add(x, 0, np.array([[0]]), np.ones((1, 4), np.float32)), ValueError, "index: has shape"),
        (lambda x: ep.ops.index_add(x, 2, np.array([0]), np.ones((1, 4), np.float32)), IndexError, "dim: 2 is out of range"),
        (lambda x: ep.ops.index_add(x, 0, np.array([0]), np.ones((1, 4), np.float64)), TypeError, "source: dtype float64"),
        (lambda x: ep.ops.index_add(x.astype(np.int32), 0, np.array([0]), np.ones((1, 4), np.int32), alpha=0.5), TypeError, "alpha"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([[5]]), np.ones((1, 1), np.float32)), IndexError, "index: holds 5"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([[0, 0, 0, 0, 0]]), np.ones((1, 5), np.float32)), ValueError, "index: has shape"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([0]), np.ones((1, 4), np.float32)), ValueError, "have 1 and 2 dims"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([[0.5]]), np.ones((1, 1), np.float32)), TypeError, "index: dtype float64"),
    ],
)
def test_refusals_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(np.zeros((3, 4), np.float32))
