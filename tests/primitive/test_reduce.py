"""The Reduce primitive against NumPy and PyTorch: every op over rows, columns and whole arrays,
accuracy, NaN, infinities, empty reductions, dtypes, determinism and bad arguments."""
import numpy as np
import pytest
import torch

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, assert_same, kind, sampled

# (src_dims, dst_dims): along rows (inner 1), across columns (inner > 1), a whole array, a run of
# two dims between kept ones, nothing reduced, and dims of size 1 that merge away.
LAYOUTS = [
    ((3, 5), (3, 1)),
    ((4, 5, 3), (4, 1, 3)),
    ((2, 3, 4), (1, 1, 1)),
    ((2, 3, 4, 2), (2, 1, 1, 2)),
    ((2, 3), (2, 3)),
    ((1, 4, 1, 3), (1, 1, 1, 3)),
]


def launch(device, op, x, dst_dims, dst_dtype, correction=1):
    """Reduce.Launch of op over x into a new dst of dst_dims, on the host."""
    primitive = ep.NewPrimitive(ep.ReduceFactory, device, op, x.dtype, dst_dtype)
    assert primitive is not None, (op, x.dtype, dst_dtype)
    stream = ep.GetDevice(device).CreateStream()
    dst = to_device(np.zeros(int(np.prod(dst_dims)), dst_dtype), device)
    primitive.Launch(stream, x.shape, to_device(x.ravel(), device), dst_dims, dst, correction)
    stream.Sync()
    return to_numpy(dst).reshape(dst_dims)


def as_runs(x, dst_dims):
    """x as (outer, reduced, inner) for the layout, and the keepdims shape."""
    shape = x.shape
    reduced = [d for d, (n, m) in enumerate(zip(shape, dst_dims)) if n != m]
    if not reduced:
        return x.reshape(-1, 1, 1)
    first, last = reduced[0], reduced[-1]
    outer, inner = int(np.prod(shape[:first])), int(np.prod(shape[last + 1 :]))
    return x.reshape(outer, -1, inner)


def reference(op, x, dst_dims, correction=1):
    """NumPy's (PyTorch's for logsumexp, var, std) result of op, computed in float64 or int64."""
    runs = as_runs(x, dst_dims)
    wide = runs.astype(np.float64) if kind(x.dtype) == "f" else runs
    if op == "sum":
        result = runs.astype(np.int64).sum(1) if kind(x.dtype) != "f" else wide.sum(1)
    elif op == "prod":
        result = runs.astype(np.int64).prod(1) if kind(x.dtype) != "f" else wide.prod(1)
    elif op in ("amax", "amin"):
        result = getattr(np, op)(runs, 1)
    elif op in ("argmax", "argmin"):
        result = getattr(np, op)(runs, 1)
    elif op in ("any", "all"):
        result = getattr(np, op)(runs, 1)
    elif op == "mean":
        result = wide.mean(1)
    elif op == "logsumexp":
        result = torch.logsumexp(torch.from_numpy(wide), 1).numpy()
    else:
        result = getattr(torch, op)(torch.from_numpy(wide), 1, correction=correction).numpy()
    return result.reshape(dst_dims)


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.3
    if kind(dtype) in "iu":
        low = 0 if kind(dtype) == "u" else -5
        return rng.integers(low, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def check(op, got, expected, dtype):
    if op in ("argmax", "argmin", "any", "all") or kind(dtype) != "f" and op in ("sum", "prod", "amax", "amin"):
        assert_same(got, expected.astype(got.dtype))
    else:
        rtol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-12}[np.dtype(dtype).name]
        np.testing.assert_allclose(got.astype(np.float64), expected, rtol=rtol, atol=rtol)


@pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")  # PyTorch's, for var of one element
@pytest.mark.parametrize("src_dims, dst_dims", LAYOUTS)
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "amin", "argmax", "argmin", "any", "all", "logsumexp", "mean", "var", "std"])
def test_every_op_of_float32_matches_the_reference(device, op, src_dims, dst_dims):
    x = sample(np.float32, src_dims)
    dst = {"argmax": np.int64, "argmin": np.int64, "any": np.bool_, "all": np.bool_}.get(op, np.float32)
    check(op, launch(device, op, x, dst_dims, dst), reference(op, x, dst_dims), np.float32)


@pytest.mark.parametrize("dtype", sampled(ALL), ids=str)
@pytest.mark.parametrize("op", ["sum", "amax", "argmin", "any"])
def test_every_dtype_matches_the_reference(device, op, dtype):
    x = sample(dtype, (4, 6, 3))
    for dst_dims in ((4, 1, 3), (4, 6, 1)):
        default = {"argmin": np.int64, "any": np.bool_}.get(op, dtype)
        dst = np.int64 if op == "sum" and dtype == np.bool_ else default
        check(op, launch(device, op, x, dst_dims, dst), reference(op, x, dst_dims), dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize("op", ["logsumexp", "mean", "var", "std", "prod"])
def test_float_ops_of_float16_and_float64(device, op, dtype):
    x = sample(dtype, (3, 7, 2))
    check(op, launch(device, op, x, (3, 1, 2), dtype), reference(op, x, (3, 1, 2)), dtype)


def test_integer_sums_wrap_in_their_dtype_or_give_int64(device):
    x = (np.arange(40) * 7).astype(np.int8).reshape(4, 10)
    assert_same(launch(device, "sum", x, (4, 1), np.int8).ravel(), x.sum(1, dtype=np.int8))
    assert_same(launch(device, "sum", x, (4, 1), np.int64).ravel(), x.sum(1, dtype=np.int64))
    big = np.full(6, 2**62, np.int64)
    assert launch(device, "sum", big, (1,), np.int64)[0] == big.sum()  # wraps as NumPy's


def _n(device, cpu: int, cuda: int) -> int:
    # The simulator runs every CUDA thread in Python: small sizes there.
    return cpu if device == "cpu" else cuda


def test_float32_sum_of_many_tenths_is_as_accurate_as_numpys(device):
    n = _n(device, 10**7, 5000)
    x = np.full(n, 0.1, np.float32)
    exact = n * np.float64(np.float32(0.1))
    got = launch(device, "sum", x, (1,), np.float32)[0]
    assert abs(np.float64(got) - exact) <= max(abs(np.float64(x.sum()) - exact), np.spacing(np.float32(exact)))
    # Across columns too, where NumPy adds row after row.
    columns = np.full((n // 4, 4), 0.1, np.float32)
    got = launch(device, "sum", columns, (1, 4), np.float32).ravel()
    error = np.abs(got.astype(np.float64) - n // 4 * np.float64(np.float32(0.1)))
    assert error.max() <= max(np.abs(columns.sum(0).astype(np.float64) - n // 4 * np.float64(np.float32(0.1))).max(), 1e-3)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sums_and_means_across_columns_match_float64(device, dtype):
    # Over the first dim: runs whose rows are not a multiple of four or of a block, columns wider
    # than a task's (a partial last block of them), a few columns cut into slices, and outer > 1.
    cases = [((1037, 2085), (1, 2085)), ((3001, 100), (1, 100)), ((3, 517, 9), (3, 1, 9))]
    if device != "cpu":
        cases = [((37, 45), (1, 45)), ((3, 9, 5), (3, 1, 5))]
    for shape, dst_dims in cases:
        x = sample(dtype, shape, seed=5)
        for op in ("sum", "mean"):
            check(op, launch(device, op, x, dst_dims, dtype), reference(op, x, dst_dims), dtype)


def test_float16_accumulates_in_float32(device):
    x = np.ones(_n(device, 10000, 3000), np.float16)
    # float16 steps by 2 from 2048: a float16 accumulator would stop there.
    assert launch(device, "sum", x, (1,), np.float16)[0] == x.size
    assert launch(device, "mean", x, (1,), np.float16)[0] == 1


def test_variance_of_values_far_from_zero(device):
    x = (1e4 + sample(np.float32, _n(device, 100000, 3000))).astype(np.float32)
    expected = x.astype(np.float64).var(ddof=1)
    np.testing.assert_allclose(launch(device, "var", x, (1,), np.float32)[0], expected, rtol=1e-3)
    np.testing.assert_allclose(launch(device, "var", x, (1,), np.float32, correction=0)[0], x.astype(np.float64).var(), rtol=1e-3)


def test_nan_propagates_as_numpy(device):
    x = np.array([[1, np.nan, 3, np.nan], [2, 5, -1, 0], [np.nan, 7, np.inf, -np.inf]], np.float32)
    for op in ("amax", "amin", "argmax", "argmin", "sum", "mean", "logsumexp"):
        dst = np.int64 if op.startswith("arg") else np.float32
        got, expected = launch(device, op, x, (3, 1), dst).ravel(), reference(op, x, (3, 1)).ravel()
        np.testing.assert_allclose(got, expected.astype(dst), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint64, np.bool_])
@pytest.mark.parametrize("op", ["amax", "amin", "any", "all", "sum", "prod"])
def test_ops_taken_in_blocks_match_the_reference_over_long_rows_and_columns(device, op, dtype):
    # Runs of whole blocks and a tail, on the threads and cut into slices (on the CPU), along rows
    # and across columns; products of factors near 1, which neither overflow nor vanish.
    shapes = [(3, 1500, 5), (2, 700_001, 1), (1, 1001, 2085)] if device == "cpu" else [(2, 40, 3), (2, 70, 1)]
    if op == "prod" and kind(dtype) != "f":
        pytest.skip("integer products of long runs wrap: test_every_dtype covers them")
    for shape in shapes:
        x = sample(dtype, shape, seed=7)
        if op == "prod":
            x = (1 + x / 1000).astype(dtype)
        if op in ("any", "all"):
            x = x.copy()
            x[..., ::3] = 0 if op == "any" else 1
        dst_dims = (shape[0], 1, shape[2])
        dst = {"any": np.bool_, "all": np.bool_}.get(op, np.int64 if op == "sum" and dtype == np.bool_ else dtype)
        check(op, launch(device, op, x, dst_dims, dst), reference(op, x, dst_dims), dtype)


@pytest.mark.parametrize("n", [7, 5000, 700_001])
def test_nan_anywhere_wins_extremes_along_rows_and_columns(device, n):
    n = _n(device, n, min(n, 300))
    for position in (0, n // 2, n - 1):
        x = np.arange(n, dtype=np.float32)
        x[position] = np.nan
        for op in ("amax", "amin"):
            assert np.isnan(launch(device, op, x, (1,), np.float32)[0]), (op, position)
            columns = np.stack([x, x[::-1]], axis=1)
            assert np.isnan(launch(device, op, columns, (1, 2), np.float32)).all(), (op, position)


def test_zeros_of_both_signs_give_plus_zero_for_amax_and_minus_zero_for_amin(device):
    # IEEE 754's maximum and minimum, whatever the order (NumPy's and PyTorch's results depend on it).
    for n in (2, 3000, _n(device, 700_001, 300)):
        for first in (0.0, -0.0):
            x = np.full(n, -first, np.float32)
            x[n // 2] = first
            for op, sign in (("amax", 1), ("amin", -1)):
                got = launch(device, op, x, (1,), np.float32)[0]
                assert got == 0 and np.copysign(1, got) == sign, (op, n, first)
                got = launch(device, op, np.stack([x, x], 1), (1, 2), np.float32)
                assert (got == 0).all() and (np.copysign(1, got) == sign).all(), (op, n, first)


def _ieee_extreme(op, rows):
    """IEEE 754's maximum or minimum of each row: NaN wins, +0.0 the larger of two zeros."""
    nan = np.isnan(rows).any(1)
    result = getattr(np, op)(np.where(np.isnan(rows), 0, rows), 1)
    zero_sign = np.signbit(rows) & (rows == 0)
    plus_zero, minus_zero = ((rows == 0) & ~zero_sign).any(1), zero_sign.any(1)
    wanted_zero = np.where(plus_zero if op == "amax" else ~minus_zero, 0.0, -0.0)
    result = np.where(result == 0, wanted_zero, result)
    return np.where(nan, np.nan, result).astype(rows.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_extremes_of_blocks_holding_infinities_zeros_and_nans(device, dtype):
    # Blocks of a long row (on the CPU, its quick extreme checked a block at a time) each holding
    # one kind of value it may get wrong: a NaN, an infinity of either sign, zeros of both signs
    # as the extreme or not; the others plain, and rows of one kind throughout.
    n = _n(device, 5 * 512 + 37, 150)
    rng = np.random.default_rng(3)
    rows = -(rng.random((12, n)) + 1).astype(dtype)  # in [-2, -1): a zero is any row's extreme
    rows[6:] = -rows[6:]
    for r, (value, where) in enumerate([(np.nan, 1), (np.inf, 2), (-np.inf, 3), (0.0, 0), (-0.0, 4), (0.0, -1)] * 2):
        block = slice(where * 512, where * 512 + 40) if device == "cpu" else slice(where * 20, where * 20 + 5)
        rows[r, block] = value
    rows[3, 7] = -0.0  # zeros of both signs in one block
    # And rows of one kind throughout: zeros of both signs, minus zeros, minus infinities.
    rows = np.concatenate([rows, np.zeros((1, n), dtype), np.full((1, n), -0.0, dtype), np.full((1, n), -np.inf, dtype)])
    rows[-3, n // 2] = -0.0
    for op in ("amax", "amin"):
        got = launch(device, op, rows, (len(rows), 1), dtype).ravel()
        want = _ieee_extreme(op, rows)
        assert_same(got, want)
        zeros = want == 0
        assert (np.signbit(got[zeros]) == np.signbit(want[zeros])).all(), (op, got, want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_extremes_at_the_ends_of_their_range(device, dtype):
    # Long rows (blocks taken in the elements' own type on the CPU) at and next to both ends of
    # the range, and of values drawn from all of it.
    info = np.iinfo(dtype)
    n = _n(device, 3 * 512 + 5, 70)
    rows = np.full((6, n), info.min, dtype)
    rows[1] = info.max
    rows[2, n // 2] = info.max
    rows[3] = info.max
    rows[3, -1] = info.min
    rows[4, 0] = info.min + 1
    rows[5] = np.random.default_rng(5).integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    for op in ("amax", "amin"):
        assert_same(launch(device, op, rows, (6, 1), dtype).ravel(), getattr(np, op)(rows, 1))


def test_float16_nans_of_every_kind_propagate_through_sums_and_extremes(device):
    # On the CPU a reduction loads float16 by the hardware's conversion alone (a NaN's payload not
    # kept, a signalling one quieted): any NaN still gives float16's quiet NaN (of either sign:
    # IEEE 754 leaves a maximum's NaN sign open, and NumPy's differs by dtype).
    n = _n(device, 3 * 512 + 5, 70)
    for bits in (0x7C01, 0xFC01, 0x7E00, 0xFE00, 0xFD55):  # signalling and quiet NaNs of both signs
        x = np.ones(n, np.float16)
        x.view(np.uint16)[n // 2] = bits
        for op in ("amax", "amin", "sum", "mean", "prod", "logsumexp"):
            got = launch(device, op, x, (1,), np.float16).view(np.uint16)[0]
            assert got & 0x7FFF == 0x7E00, (op, hex(bits), hex(got))


def test_ties_and_nans_give_the_first_index_in_a_long_run(device):
    n = _n(device, 10**6, 4000)
    x = np.zeros(n, np.float32)
    assert launch(device, "argmax", x, (1,), np.int64)[0] == 0
    x[[n - 1, n // 2, n // 3]] = np.nan
    assert launch(device, "argmin", x, (1,), np.int64)[0] == n // 3
    x = np.arange(n, dtype=np.float64) % 1000
    assert launch(device, "argmax", x, (1,), np.int64)[0] == 999


def test_infinities_in_sums_and_logsumexp(device):
    x = np.array([[np.inf, 1, 2], [np.inf, -np.inf, 0], [-np.inf, -np.inf, -np.inf], [np.inf, np.inf, 1]], np.float32)
    with np.errstate(invalid="ignore"):
        expected = x.sum(1)
    assert_same(launch(device, "sum", x, (4, 1), np.float32).ravel(), expected)
    expected = torch.logsumexp(torch.from_numpy(x), 1).numpy()
    assert_same(launch(device, "logsumexp", x, (4, 1), np.float32).ravel(), expected)


@pytest.mark.parametrize("op, value", [("sum", 0), ("prod", 1), ("any", False), ("all", True), ("logsumexp", -np.inf), ("mean", np.nan)])
def test_an_empty_reduction_gives_the_identity(device, op, value):
    x = np.zeros((0, 3), np.float32)
    dst = np.bool_ if op in ("any", "all") else np.float32
    assert_same(launch(device, op, x, (1, 3), dst).ravel(), np.full(3, value, dst))


@pytest.mark.parametrize("op", ["amax", "amin", "argmax", "argmin"])
def test_an_empty_reduction_without_identity_names_the_dim(device, op):
    dst = np.int64 if op.startswith("arg") else np.float32
    with pytest.raises(ValueError, match=r"src_dims\[1\]: dim 1 has size 0"):
        launch(device, op, np.zeros((2, 0), np.float32), (2, 1), dst)
    # Nothing to reduce into: no error, nothing written.
    assert launch(device, op, np.zeros((0, 0), np.float32), (0, 1), dst).size == 0


def test_results_are_the_same_on_every_run(device):
    x = sample(np.float32, _n(device, 3 * 10**6, 3000), seed=3)
    first = launch(device, "sum", x, (1,), np.float32)
    assert all(launch(device, "sum", x, (1,), np.float32).tobytes() == first.tobytes() for _ in range(2))


def test_new_refuses_combinations_it_lacks(device):
    new = lambda *args: ep.NewPrimitive(ep.ReduceFactory, device, *args)  # noqa: E731
    assert new(ep.ReduceOp.kMean, np.int32, np.int32) is None
    assert new("sum", np.bool_, np.bool_) is None
    assert new("argmax", np.float32, np.float32) is None
    assert new("var", np.float64, np.float64) is not None and new("amax", np.bool_, np.bool_) is not None
    with pytest.raises(ValueError, match="op"):
        new("median", np.float32, np.float32)
    with pytest.raises(TypeError, match="src_dtype"):
        new("sum", np.complex64, np.complex64)


def test_bad_dims_and_correction_are_named(device):
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r"dst_dims\[1\] = 2"):
        launch(device, "sum", x, (2, 2, 4), np.float32)
    with pytest.raises(ValueError, match="dst_dims: has 2 dims"):
        launch(device, "sum", x, (2, 3), np.float32)
    with pytest.raises(ValueError, match="one run"):
        launch(device, "sum", x, (1, 3, 1), np.float32)
    with pytest.raises(TypeError, match="correction"):
        launch(device, "var", x, (1, 1, 1), np.float32, correction="1")
    with pytest.raises(ValueError, match="correction"):
        launch(device, "var", x, (1, 1, 1), np.float32, correction=float("nan"))


def test_registry_lists_every_combination():
    rows = ep.include.primitive.primitive.registry_rows("cpu", "Reduce")
    listed = {(row["op"], tuple(row["dtypes"])) for row in rows}
    assert ("kSum", ("bool", "int64")) in listed and ("kArgMax", ("float16", "int64")) in listed
    assert ("kMean", ("int32", "int32")) not in listed and len(listed) == len(rows)
