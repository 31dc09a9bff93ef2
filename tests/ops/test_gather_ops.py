"""ep.ops.gather, batch_gather and gather_grad against NumPy references: tf.gather's semantics."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.common.runtime.device import available_device_types
from ep.ops.gather import gather_shape
from ep.testing import to_device, to_numpy
from dtype_lists import ALL as ALL_DTYPES

GRAD_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64]
INDEX_DTYPES = [np.int32, np.int64]


def synced(device):
    """Sync the device's default stream: CUDA raises a bad index there, not at the launch."""
    ep.GetDevice(device).default_stream.Sync()


def on(x, device):
    """x on device, keeping its shape (0-d included)."""
    return to_device(x, device).reshape(np.shape(x))


def random_array(rng, shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    # Small integers: exact in every dtype, and their sums too.
    return rng.integers(-8, 9, shape).astype(dtype) if np.dtype(dtype) != np.uint8 else rng.integers(0, 9, shape).astype(dtype)


def normalized(params_ndim, indices_ndim, axis, batch_dims):
    axis %= params_ndim
    return axis, batch_dims + indices_ndim if batch_dims < 0 else batch_dims


def reference_gather(params, indices, axis=0, batch_dims=0):
    """tf.gather by np.take per batch; indices outside [-n, n) give zeros."""
    axis, batch_dims = normalized(params.ndim, indices.ndim, axis, batch_dims)
    n = params.shape[axis]
    out = np.zeros(params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis + 1 :], params.dtype)
    if n == 0:
        return out
    local = axis - batch_dims
    for b in np.ndindex(*params.shape[:batch_dims]):
        p, ix = params[b], indices[b]
        valid = (ix >= -n) & (ix < n)
        taken = np.take(p, np.where(valid, ix, 0), axis=local)
        mask = valid.reshape((1,) * local + ix.shape + (1,) * (p.ndim - local - 1))
        out[b] = np.where(mask, taken, np.zeros((), params.dtype))
    return out


def reference_grad(dy, indices, params_shape, axis=0, batch_dims=0):
    """Each dy slice added into zeros of params_shape at its (wrapped) index; out-of-range dropped."""
    axis, batch_dims = normalized(len(params_shape), indices.ndim, axis, batch_dims)
    n = params_shape[axis]
    dx = np.zeros(params_shape, np.float64)
    local = axis - batch_dims
    for b in np.ndindex(*params_shape[:batch_dims]):
        dx_b, dy_b, ix = dx[b], dy[b].astype(np.float64), indices[b]
        for position in np.ndindex(*ix.shape):
            value = int(ix[position])
            if -n <= value < n:
                dx_b[(slice(None),) * local + (value % n,)] += dy_b[(slice(None),) * local + position]
    return dx.astype(dy.dtype)


@st.composite
def gather_cases(draw):
    """(params shape, indices shape, axis, batch_dims) with tf.gather's constraints, axis and batch_dims
    drawn in both signs."""
    rank = draw(st.integers(1, 5))
    params_shape = tuple(draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank)))
    axis = draw(st.integers(0, rank - 1))
    indices_rank = draw(st.integers(0, 3))
    batch_dims = draw(st.integers(0, min(axis, indices_rank)))
    indices_shape = params_shape[:batch_dims] + tuple(
        draw(st.lists(st.integers(0, 3), min_size=indices_rank - batch_dims, max_size=indices_rank - batch_dims))
    )
    if draw(st.booleans()):
        axis -= rank
    if batch_dims < indices_rank and draw(st.booleans()):
        batch_dims -= indices_rank
    return params_shape, indices_shape, axis, batch_dims


@settings(max_examples=60, deadline=None)
@given(
    case=gather_cases(),
    dtype=st.sampled_from(ALL_DTYPES),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    check_bounds=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_gather_matches_numpy(device, case, dtype, index_dtype, check_bounds, seed):
    params_shape, indices_shape, axis, batch_dims = case
    rng = np.random.default_rng(seed)
    params = random_array(rng, params_shape, dtype)
    n = params_shape[axis]
    # In range when bounds are checked (unless the axis is empty), some out of range otherwise.
    spread = 0 if check_bounds and n else 3
    indices = rng.integers(-n - spread, n + spread, indices_shape).astype(index_dtype)
    bad = (indices < -n) | (indices >= n)
    if check_bounds and bad.any():
        position = ", ".join(str(int(p)) for p in np.unravel_index(int(np.argmax(bad)), indices_shape))
        where = rf"indices\[{position}\]" if indices_shape else "indices"
        with pytest.raises(IndexError, match=rf"{where} = -?\d+ is out of range for an axis of size {n}"):
            ep.ops.gather(on(params, device), on(indices, device), axis, batch_dims)
            synced(device)
        return
    got = ep.ops.gather(on(params, device), on(indices, device), axis, batch_dims, check_bounds=check_bounds)
    np.testing.assert_array_equal(to_numpy(got), reference_gather(params, indices, axis, batch_dims))


@settings(max_examples=40, deadline=None)
@given(
    case=gather_cases(),
    dtype=st.sampled_from(GRAD_DTYPES),
    index_dtype=st.sampled_from(INDEX_DTYPES),
    seed=st.integers(0, 2**32 - 1),
)
def test_gather_grad_matches_numpy(device, case, dtype, index_dtype, seed):
    params_shape, indices_shape, axis, batch_dims = case
    rng = np.random.default_rng(seed)
    n = params_shape[axis]
    # Few distinct rows, so that repeated indices accumulate.
    indices = rng.integers(-n, max(n, 1), indices_shape).astype(index_dtype) if n else np.zeros(indices_shape, index_dtype)
    dy_shape = gather_shape(params_shape, indices_shape, axis, batch_dims).shape
    dy = random_array(rng, dy_shape, dtype)
    got = ep.ops.gather_grad(on(dy, device), on(indices, device), params_shape, axis, batch_dims, check_bounds=bool(n))
    np.testing.assert_array_equal(to_numpy(got), reference_grad(dy, indices, params_shape, axis, batch_dims))


def test_gather_grad_accumulates_repeated_indices(device):
    dy = np.arange(1, 7, dtype=np.float32).reshape(6, 1) * np.array([1, 10], np.float32)
    indices = np.array([2, 0, 2, -1, 2, 3], np.int64)
    got = to_numpy(ep.ops.gather_grad(on(dy, device), on(indices, device), (4, 2)))
    np.testing.assert_array_equal(got, [[2, 20], [0, 0], [9, 90], [10, 100]])


def test_gather_grad_float16_sums_in_float32(device):
    # 2048 + 1 + 1 is 2050 in float32 but 2048 when each add rounds to float16.
    dy = np.array([[2048], [1], [1]], np.float16)
    indices = np.array([0, 0, 0], np.int32)
    got = to_numpy(ep.ops.gather_grad(on(dy, device), on(indices, device), (1, 1)))
    assert got.dtype == np.float16 and got[0, 0] == np.float16(2050)


@pytest.mark.parametrize("indices_shape", [(3,), (3, 2), (3, 2, 4)])
def test_batch_gather_matches_numpy(device, indices_shape):
    rng = np.random.default_rng(len(indices_shape))
    params_shape = indices_shape[:-1] + (5, 3)
    params = random_array(rng, params_shape, np.float32)
    indices = rng.integers(-5, 5, indices_shape).astype(np.int32)
    got = ep.ops.batch_gather(on(params, device), on(indices, device))
    axis = len(indices_shape) - 1
    np.testing.assert_array_equal(to_numpy(got), reference_gather(params, indices, axis, axis))


def test_batch_gather_needs_indices_of_rank_1_or_more(device):
    with pytest.raises(ValueError, match="indices: batch_gather needs indices of rank >= 1"):
        ep.ops.batch_gather(on(np.zeros((3, 2), np.float32), device), on(np.array(1, np.int32), device))


def test_out_of_range_index_names_value_and_first_position(device):
    params = np.arange(15, dtype=np.float32).reshape(3, 5)
    indices = np.array([[0, 4], [-5, 5], [7, -6]], np.int64)
    with pytest.raises(IndexError, match=r"indices\[1, 1\] = 5 is out of range for an axis of size 5; expected -5 <= index < 5"):
        ep.ops.gather(on(params, device), on(indices, device), axis=1)
        synced(device)


def test_a_bad_index_leaves_out_as_it_was_or_zero_where_cuda(device):
    params = np.arange(15, dtype=np.float32).reshape(3, 5)
    out = on(np.full((3, 4), 7, np.float32), device)
    with pytest.raises(IndexError, match=r"indices\[3\] = -6 is out of range"):
        ep.ops.gather(on(params, device), on(np.array([0, 4, -5, -6], np.int64), device), axis=1, out=out)
        synced(device)
    # CUDA does not wait for the check: the gather ran, with zeros for the bad index.
    expected = np.concatenate([params[:, [0, 4, 0]], np.zeros((3, 1), np.float32)], axis=1) if device == "cuda" else 7
    np.testing.assert_array_equal(to_numpy(out), expected)


def test_without_check_bounds_out_of_range_gives_zeros(device):
    params = np.arange(1, 16, dtype=np.float32).reshape(3, 5)
    indices = np.array([4, 5, -5, -6, 1 << 40], np.int64)
    got = to_numpy(ep.ops.gather(on(params, device), on(indices, device), axis=1, check_bounds=False))
    np.testing.assert_array_equal(got, np.stack([params[:, 4], 0 * params[:, 0], params[:, 0], 0 * params[:, 0], 0 * params[:, 0]], 1))


def test_negative_indices_wrap_and_the_callers_indices_stay_as_they_were(device):
    params = np.arange(12, dtype=np.int32).reshape(4, 3)
    indices = np.array([-1, -4, 0, 3], np.int32)
    d_indices = on(indices, device)
    got = to_numpy(ep.ops.gather(on(params, device), d_indices))
    np.testing.assert_array_equal(got, params[[3, 0, 0, 3]])
    np.testing.assert_array_equal(to_numpy(d_indices), indices)


def test_scalar_index_drops_the_axis(device):
    params = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    got = to_numpy(ep.ops.gather(on(params, device), on(np.array(-2, np.int64), device), axis=1))
    np.testing.assert_array_equal(got, params[:, 1])


@pytest.mark.parametrize(
    "params_shape, indices_shape, axis", [((0, 3), (2,), 1), ((3, 4), (0,), 0), ((3, 0, 2), (2, 0), 2), ((2, 3), (0, 4), 1)]
)
def test_empty_params_or_indices_give_empty_results(device, params_shape, indices_shape, axis):
    params = np.zeros(params_shape, np.float32)
    indices = np.zeros(indices_shape, np.int64)
    got = ep.ops.gather(on(params, device), on(indices, device), axis)
    assert tuple(got.shape) == gather_shape(params_shape, indices_shape, axis).shape
    assert to_numpy(got).size == 0


def test_an_empty_axis_has_no_valid_index(device):
    params = np.zeros((3, 0), np.float32)
    with pytest.raises(IndexError, match=r"indices\[0\] = 0 is out of range for an axis of size 0"):
        ep.ops.gather(on(params, device), on(np.array([0], np.int32), device), axis=1)
        synced(device)
    got = ep.ops.gather(on(params, device), on(np.array([0, -1], np.int32), device), axis=1, check_bounds=False)
    np.testing.assert_array_equal(to_numpy(got), np.zeros((3, 2), np.float32))


def test_out_receives_the_result(device):
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = on(np.zeros((3, 2), np.float32), device)
    result = ep.ops.gather(on(params, device), on(np.array([3, 1], np.int32), device), axis=1, out=out)
    assert result is out
    np.testing.assert_array_equal(to_numpy(out), params[:, [3, 1]])
    with pytest.raises(ValueError, match=r"out: has shape \(3, 2\); expected \(2, 4\)"):
        ep.ops.gather(on(params, device), on(np.array([0, 1], np.int32), device), out=out)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"indices": np.array([0.0, 1.0])}, TypeError, "indices: dtype float64 is not an index type; expected int32 or int64"),
        ({"indices": np.array([0, 1], np.int16)}, TypeError, "indices: dtype int16 is not an index type"),
        ({"indices": np.array([0, 1], np.uint32)}, TypeError, "indices: dtype uint32 is not an index type"),
        ({"axis": 3}, ValueError, "axis: 3 is out of range for params of rank 3; expected -3 <= axis < 3"),
        ({"axis": -4}, ValueError, "axis: -4 is out of range for params of rank 3"),
        ({"axis": 1.0}, TypeError, "axis: 1.0 is not an integer"),
        ({"axis": 0, "batch_dims": 1, "indices": np.zeros((2, 2), np.int32)}, ValueError, "batch_dims: 1 is greater than axis 0"),
        (
            {"axis": 2, "batch_dims": 1, "indices": np.zeros((3, 2), np.int32)},
            ValueError,
            r"indices: batch shape \(3,\) differs from params' \(2,\)",
        ),
        (
            {"axis": 2, "batch_dims": 2, "indices": np.zeros((2,), np.int32)},
            ValueError,
            "batch_dims: 2 is out of range for indices of rank 1",
        ),
    ],
)
def test_bad_arguments_are_refused(device, kwargs, error, message):
    params = np.zeros((2, 3, 4), np.float32)
    kwargs = dict(kwargs)
    indices = kwargs.pop("indices", np.array([0, 1], np.int32))
    d_params, d_indices = on(params, device), on(indices, device)
    with pytest.raises(error, match=message):
        ep.ops.gather(d_params, d_indices, **kwargs)
    np.testing.assert_array_equal(to_numpy(d_params), params)
    np.testing.assert_array_equal(to_numpy(d_indices), indices)


def test_0_d_params_have_no_axis(device):
    with pytest.raises(ValueError, match="params: a 0-d array has no axis"):
        ep.ops.gather(on(np.array(1.0), device), on(np.array([0], np.int32), device))


def test_params_and_indices_on_different_devices(device):
    if len(available_device_types()) < 2:
        pytest.skip("needs both devices")
    other = "cpu" if device == "cuda" else "cuda"
    with pytest.raises(TypeError, match=f"indices: is on {other} but params is on {device}"):
        ep.ops.gather(on(np.zeros(3, np.float32), device), on(np.array([0], np.int32), other))


def test_gather_grad_arguments_are_checked(device):
    indices = on(np.array([0, 2], np.int32), device)
    with pytest.raises(ValueError, match=r"dy: has shape \(3, 2\); expected \(2, 2\)"):
        ep.ops.gather_grad(on(np.zeros((3, 2), np.float32), device), indices, (4, 2))
    with pytest.raises(TypeError, match="dy: dtype int8 is not supported by gather_grad"):
        ep.ops.gather_grad(on(np.zeros((2, 2), np.int8), device), indices, (4, 2))
    with pytest.raises(IndexError, match=r"indices\[1\] = 2 is out of range for an axis of size 2"):
        ep.ops.gather_grad(on(np.zeros((2, 2), np.float32), device), indices, (2, 2))
        synced(device)
    got = ep.ops.gather_grad(on(np.ones((2, 2), np.float32), device), indices, (2, 2), check_bounds=False)
    np.testing.assert_array_equal(to_numpy(got), [[1, 1], [0, 0]])


def test_gather_shape_folds_dims_for_the_primitives():
    shape = gather_shape((2, 3, 5, 7, 4), (2, 3, 6, 2), axis=-2, batch_dims=-2)
    assert shape == (3, 2, (2, 3, 5, 6, 2, 4), 6, 5, 7, 4, 12)
    assert gather_shape((5,), (), 0).shape == ()


def test_strided_params_on_cpu():
    params = np.arange(60, dtype=np.float32).reshape(6, 10)[::2, 1::3]
    indices = np.array([[2, 0], [-1, 1]], np.int64)
    np.testing.assert_array_equal(ep.ops.gather(params, indices, axis=1), np.take(params, indices, axis=1))


def test_large_cpu_gather_runs_the_parallel_kernels():
    # Above the serial threshold: parallel gather, index preparation and gradient.
    rng = np.random.default_rng(7)
    params = rng.standard_normal((3000, 8)).astype(np.float32)
    indices = rng.integers(-3000, 3000, 40000).astype(np.int64)
    np.testing.assert_array_equal(ep.ops.gather(params, indices), reference_gather(params, indices))
    in_range = np.abs(indices) % 3000
    np.testing.assert_array_equal(ep.ops.gather(params, in_range), reference_gather(params, in_range))
    wide = indices * 100
    np.testing.assert_array_equal(ep.ops.gather(params, wide, check_bounds=False), reference_gather(params, wide))
    dy = rng.integers(-8, 9, (40000, 8)).astype(np.float32)
    np.testing.assert_array_equal(ep.ops.gather_grad(dy, indices, params.shape), reference_grad(dy, indices, params.shape))
    indices[[30000, 35000]] = [3000, -3001]
    with pytest.raises(IndexError, match=r"indices\[30000\] = 3000 is out of range"):
        ep.ops.gather(params, indices)


@pytest.mark.parametrize("axis", [0, 1])
def test_shard_gathers_with_offsets_sum_to_the_whole_gather(device, axis):
    # OneFlow's split gather: each shard of params holds rows [offset, offset + n) of the axis and
    # gives zeros for the rows it lacks, so the shards' results add up to the gather of the whole.
    rng = np.random.default_rng(axis)
    table = rng.standard_normal((10, 7)).astype(np.float32)
    indices = np.array([[9, 0, 4], [4, 6, 2]]) % table.shape[axis]
    bounds = [(0, 3), (3, 4), (4, 10)] if axis == 0 else [(0, 2), (2, 7)]
    total = np.zeros(np.take(table, indices, axis=axis).shape, np.float32)
    for lo, hi in bounds:
        shard = np.ascontiguousarray(np.take(table, np.arange(lo, hi), axis=axis))
        part = to_numpy(ep.ops.gather(to_device(shard, device), to_device(indices, device), axis, offset=lo))
        held = (indices >= lo) & (indices < hi)
        full = np.take(table, indices, axis=axis)
        mask = held.reshape((1,) * axis + held.shape + (1,) * (table.ndim - axis - 1))
        np.testing.assert_array_equal(part, np.where(mask, full, 0))
        total += part
    np.testing.assert_array_equal(total, np.take(table, indices, axis=axis))


def test_shard_gather_grads_with_offsets_make_the_whole_grad(device):
    rng = np.random.default_rng(3)
    indices = np.array([9, 0, 4, 4, 7])
    dy = rng.standard_normal((5, 3)).astype(np.float32)
    whole = np.zeros((10, 3), np.float32)
    np.add.at(whole, indices, dy)
    for lo, hi in [(0, 4), (4, 10)]:
        part = ep.ops.gather_grad(to_device(dy, device), to_device(indices, device), (hi - lo, 3), offset=lo)
        np.testing.assert_allclose(to_numpy(part), whole[lo:hi], rtol=1e-6)


def test_an_offset_refuses_check_bounds(device):
    params, indices = to_device(np.ones((3, 2), np.float32), device), to_device(np.array([0, 5]), device)
    with pytest.raises(ValueError, match="check_bounds: True with offset=3"):
        ep.ops.gather(params, indices, offset=3, check_bounds=True)
    with pytest.raises(TypeError, match="offset"):
        ep.ops.gather(params, indices, offset=1.5)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_index_select_is_torchs(device, dim, index_dtype):
    torch = pytest.importorskip("torch")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    index = np.array([0, 1, 1, 0], index_dtype)
    got = to_numpy(ep.ops.index_select(to_device(x, device), dim, to_device(index, device)))
    want = torch.index_select(torch.from_numpy(x), dim, torch.from_numpy(index.astype(np.int64))).numpy()
    np.testing.assert_array_equal(got, want)
    zero_d = ep.ops.index_select(to_device(x, device), dim, np.array(1, index_dtype)) if device == "cpu" else None
    if zero_d is not None:  # a 0-d index selects one slice, keeping the dim (torch's rule)
        np.testing.assert_array_equal(zero_d, torch.index_select(torch.from_numpy(x), dim, torch.tensor(1)).numpy())


def test_index_select_refuses_negative_and_large_indices(device):
    x = to_device(np.zeros((3, 4), np.float32), device)
    with pytest.raises(IndexError, match="index: holds -1; expected indices in"):
        ep.ops.index_select(x, 1, to_device(np.array([0, -1], np.int64), device))
    with pytest.raises(IndexError, match="4 is out of range"):
        ep.ops.index_select(x, 1, to_device(np.array([4], np.int64), device))
        ep.GetDevice(device).default_stream.Sync()
    with pytest.raises(ValueError, match=r"index: has shape \(1, 2\)"):
        ep.ops.index_select(x, 1, to_device(np.zeros((1, 2), np.int64), device))
