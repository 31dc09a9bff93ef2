"""ep.ops.index_add, scatter_add and scatter against torch's, on cpu and the simulator: dims, alpha, repeated
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
    # Repeats add in index order, as torch's CPU does; ep rounds float16 at each addition, torch's
    # scatter_add and its index_add of more than one dim add in float32 and round once.
    tolerance = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-12}.get(got.dtype.type, 0)
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


INDEX_DTYPES = [np.int64, np.int32, np.uint8, np.int8, np.int16, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=str)
@pytest.mark.parametrize("size", [2, 0])
def test_index_dtypes_are_torchs(device, index_dtype, size):
    # torch takes int32 and int64 indices; index_add refuses another even when empty, scatter and
    # scatter_add only when not.
    x, index = np.zeros((3, 4), np.float32), np.arange(size).astype(index_dtype)
    source, src = np.ones((size, 4), np.float32), np.ones((size, 1), np.float32)
    t = torch.from_numpy(x)
    calls = {
        "index_add": (lambda on: ep.ops.index_add(*on(x, 0, index, source)), lambda: torch.index_add(t, 0, torch.from_numpy(index), torch.from_numpy(source))),
        "scatter_add": (lambda on: ep.ops.scatter_add(*on(x, 0, index[:, None], src)), lambda: torch.scatter_add(t, 0, torch.from_numpy(index[:, None]), torch.from_numpy(src))),
        "scatter": (lambda on: ep.ops.scatter(*on(x, 0, index[:, None], src)), lambda: torch.scatter(t, 0, torch.from_numpy(index[:, None]), torch.from_numpy(src))),
    }
    on = lambda *args: [to_device(a, device) if isinstance(a, np.ndarray) else a for a in args]  # noqa: E731
    for name, (ours, theirs) in calls.items():
        try:
            expected = theirs().numpy()
        except RuntimeError:
            with pytest.raises(TypeError, match=f"index: dtype {np.dtype(index_dtype)}; expected int32 or int64"):
                ours(on)
        else:
            np.testing.assert_array_equal(to_numpy(ours(on)), expected, err_msg=name)


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
        (lambda x: ep.ops.index_add(x.astype(np.int32), 0, np.array([0]), np.ones((1, 4), np.int32), alpha=None), TypeError, "alpha: None"),
        (lambda x: ep.ops.index_add(x, 0, np.array([0]), np.ones((1, 4), np.float32), alpha="2"), TypeError, "alpha: '2'"),
        (lambda x: ep.ops.index_add(x, 0, np.zeros(0, np.int64), np.ones((7, 7), np.float32)), ValueError, r"source: has shape \(7, 7\); expected \(0, 4\)"),
        (lambda x: ep.ops.index_add(x, 0, np.zeros(0, np.int64), np.ones((0, 4), np.float64)), TypeError, "source: dtype float64"),
        (lambda x: ep.ops.index_add(x[0, 0, ...], 0, np.array([0, 0]), np.ones(2, np.float32)), ValueError, "a 0-d input takes a 0-d source and one index"),
        (lambda x: ep.ops.index_add(x[0, 0, ...], 0, np.array([0]), np.ones(1, np.float32)), ValueError, "a 0-d input takes a 0-d source"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([[5]]), np.ones((1, 1), np.float32)), IndexError, "index: holds 5"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([[0, 0, 0, 0, 0]]), np.ones((1, 5), np.float32)), ValueError, "index: has shape"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([0]), np.ones((1, 4), np.float32)), ValueError, "have 1 and 2 dims"),
        (lambda x: ep.ops.scatter_add(x, 0, np.array([[0.5]]), np.ones((1, 1), np.float32)), TypeError, "index: dtype float64"),
    ],
)
def test_refusals_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(np.zeros((3, 4), np.float32))


ALPHAS = [2, -1, 0, 2.7, -1.5, 127, 128, -129, 255, 256, -255, 2**63, float("inf"), float("nan"), 1e5, True]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_add_converts_alpha_as_torch(device, dtype):
    # torch converts alpha to input's dtype: floats truncate for integers, negative integers wrap
    # for uint8, a value the dtype cannot hold raises.
    x, index, source = np.zeros(2, dtype), np.array([0]), np.ones(1, dtype)
    on = [to_device(a, device) for a in (x, index, source)]
    for alpha in ALPHAS:
        try:
            expected = torch.index_add(torch.from_numpy(x), 0, torch.from_numpy(index), torch.from_numpy(source), alpha=alpha)
        except (RuntimeError, TypeError):
            with pytest.raises((TypeError, ValueError, OverflowError), match="alpha"):
                ep.ops.index_add(on[0], 0, on[1], on[2], alpha=alpha)
            continue
        got = to_numpy(ep.ops.index_add(on[0], 0, on[1], on[2], alpha=alpha))
        np.testing.assert_array_equal(got, expected.numpy(), err_msg=f"alpha {alpha!r}")
        assert got.dtype == dtype


SCATTER_DTYPES = DTYPES + [np.int16, np.uint16, np.uint32, np.uint64]


def _distinct_index(shape, dim, n, rng):
    """An index of shape whose values along dim are distinct within each line (a permutation's
    first entries), in [0, n)."""
    lines = np.moveaxis(np.zeros(shape, np.int64), dim, -1)
    flat = lines.reshape(-1, shape[dim])
    for row in flat:
        row[:] = rng.permutation(n)[: shape[dim]]
    return np.ascontiguousarray(np.moveaxis(flat.reshape(lines.shape), -1, dim))


@pytest.mark.parametrize("dtype", SCATTER_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_writes_as_torch_bit_for_bit(device, dtype, dim):
    rng = np.random.default_rng(3)
    x = _values((5, 6, 4), dtype)
    src = _values((5, 7, 4), dtype)
    if np.dtype(dtype).kind == "f":
        src.flat[0], src.flat[1] = -0.0, np.nan
    index_shape = [3, 5, 4]
    index_shape[dim] = min(index_shape[dim], x.shape[dim])
    index = _distinct_index(tuple(index_shape), dim % 3, x.shape[dim], rng)
    before = x.copy()
    got = to_numpy(ep.ops.scatter(to_device(x, device), dim, to_device(index, device), to_device(src, device)))
    expected = x.copy()
    for p in np.ndindex(index.shape):  # the definition, element by element
        q = list(p)
        q[dim] = index[p]
        expected[tuple(q)] = src[p]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    np.testing.assert_array_equal(x, before)  # input untouched
    if dtype not in (np.uint16, np.uint32, np.uint64):  # torch has no scatter of these
        t = torch.scatter(torch.from_numpy(x), dim, torch.from_numpy(index), torch.from_numpy(src))
        np.testing.assert_array_equal(got.view(np.uint8), t.numpy().view(np.uint8))


def test_scatter_takes_a_scalar_out_0d_and_empty_indices(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    index = np.array([[3], [0], [1]])
    got = to_numpy(ep.ops.scatter(to_device(x, device), 1, to_device(index, device), 9.5))
    np.testing.assert_array_equal(got, torch.scatter(torch.from_numpy(x), 1, torch.from_numpy(index), 9.5).numpy())
    out = to_device(np.zeros((3, 4), np.float32), device)
    assert ep.ops.scatter(to_device(x, device), 1, to_device(index, device), 2.0, out=out) is out
    np.testing.assert_array_equal(to_numpy(out), np.where(np.arange(4) == index, 2.0, x))
    x0, index0, src0 = (to_device(np.array(v), device).reshape(()) for v in (5.0, 0, 7.0))
    zero = to_numpy(ep.ops.scatter(x0, 0, index0, src0))
    assert zero.shape == () and zero == 7.0
    empty = to_numpy(ep.ops.scatter(to_device(x, device), 0, to_device(np.zeros((0, 4), np.int64), device), to_device(x, device)))
    np.testing.assert_array_equal(empty, x)


def test_scatter_takes_torchs_value_keyword(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    index = np.array([[3, 1], [0, 0], [1, 2]])
    want = torch.scatter(torch.from_numpy(x), 1, torch.from_numpy(index), value=-2.5).numpy()
    on, at = to_device(x, device), to_device(index, device)
    np.testing.assert_array_equal(to_numpy(ep.ops.scatter(on, 1, at, value=-2.5)), want)
    added = torch.scatter(torch.from_numpy(x), 1, torch.from_numpy(index), value=2.0, reduce="add").numpy()
    np.testing.assert_array_equal(to_numpy(ep.ops.scatter(on, 1, at, value=2.0, reduce="add")), added)
    with pytest.raises(TypeError, match="src, value: neither is given"):
        ep.ops.scatter(on, 1, at)
    with pytest.raises(TypeError, match="src, value: both are given"):
        ep.ops.scatter(on, 1, at, 1.0, value=2.0)
    with pytest.raises(TypeError, match="value: ndarray is not a scalar"):
        ep.ops.scatter(on, 1, at, value=np.ones((3, 2), np.float32))


@pytest.mark.parametrize(
    "index, error, match",
    [
        (np.array([[0, 3]]), IndexError, r"holds 3; expected indices in \[0, 3\)"),
        (np.array([[-1, 0]]), IndexError, r"holds -1"),
        (np.array([[0.0, 1.0]]), TypeError, "index: dtype float64; expected int32 or int64"),
        (np.array([0, 1]), ValueError, "have 1 and 2 dims"),
    ],
)
def test_scatter_refusals_name_the_argument(device, index, error, match):
    x = np.zeros((3, 2), np.float32)
    src = np.ones((3, 2), np.float32)
    with pytest.raises(error, match=match):
        ep.ops.scatter(to_device(x, device), 0, to_device(index, device), to_device(src, device))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_of_repeated_positions_keeps_the_last_write_as_torchs_cpu(device, dim):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    index_shape = (9, 6, 7) if dim == 0 else (5, 12, 7) if dim == 1 else (5, 6, 15)
    index = rng.integers(0, x.shape[dim], index_shape)  # every line names positions many times
    src = rng.standard_normal(index_shape).astype(np.float32)
    got = to_numpy(ep.ops.scatter(to_device(x, device), dim, to_device(index, device), to_device(src, device)))
    want = torch.scatter(torch.from_numpy(x), dim, torch.from_numpy(index), torch.from_numpy(src)).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_modes_are_torchs(device, reduce):
    x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
    index = np.array([[2, 0, 1, 2], [0, 1, 2, 0]])
    src = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    got = to_numpy(ep.ops.scatter(to_device(x, device), 0, to_device(index, device), to_device(src, device), reduce=reduce))
    want = torch.scatter(torch.from_numpy(x), 0, torch.from_numpy(index), torch.from_numpy(src), reduce=reduce).numpy()
    np.testing.assert_array_equal(got, want)
    # Repeats combine in index order, with a scalar too.
    repeated = np.array([[0, 0, 0, 0], [0, 1, 1, 1]])
    got = to_numpy(ep.ops.scatter(to_device(x, device), 0, to_device(repeated, device), 1.5, reduce=reduce))
    np.testing.assert_array_equal(got, torch.scatter(torch.from_numpy(x), 0, torch.from_numpy(repeated), 1.5, reduce=reduce).numpy())
    got = to_numpy(ep.ops.scatter(to_device(x, device), 0, to_device(repeated, device), to_device(src, device), reduce=reduce))
    want = torch.scatter(torch.from_numpy(x), 0, torch.from_numpy(repeated), torch.from_numpy(src), reduce=reduce).numpy()
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="reduce: 'sum'"):
        ep.ops.scatter(to_device(x, device), 0, to_device(index, device), to_device(src, device), reduce="sum")
