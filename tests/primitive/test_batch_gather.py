"""BatchGather through NewPrimitive + Launch, against NumPy: every batch gathers with its own indices."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import BY_WIDTH

INDEX_DTYPES = [np.int32, np.int64]


def random_array(rng, shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def reference(params, indices, offset=0):
    """out[b, o, i, k] = params[b, o, indices[b, i] - offset, k] inside [0, gather), else 0."""
    batch, outer, gather, inner = params.shape
    out = np.zeros((batch, outer, indices.shape[1], inner), params.dtype)
    for b in range(batch):
        for i, index in enumerate(indices[b].tolist()):
            if 0 <= index - offset < gather:
                out[b, :, i] = params[b, :, index - offset]
    return out


def launch(device, params, indices, offset=0):
    primitive = ep.NewPrimitive(ep.BatchGatherFactory, device, params.dtype, indices.dtype)
    assert primitive is not None
    stream = ep.GetDevice(device).CreateStream()
    batch, outer, gather, inner = params.shape
    num_indices = indices.shape[1]
    out = to_device(np.full((batch, outer, num_indices, inner), 1, params.dtype), device)
    primitive.Launch(
        stream, to_device(indices, device), num_indices, to_device(params, device), batch, outer, gather, inner, out, offset
    )
    stream.Sync()
    return to_numpy(out)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", BY_WIDTH)
def test_matches_numpy_for_every_dtype_pair(device, dtype, index_dtype):
    rng = np.random.default_rng(0)
    params = random_array(rng, (3, 2, 6, 5), dtype)
    indices = np.array([[0, 5, 2, 9], [3, 3, -1, 1], [4, 0, 6, 5]], index_dtype)
    np.testing.assert_array_equal(launch(device, params, indices), reference(params, indices))


@pytest.mark.parametrize("inner, dtype", [(1, np.uint8), (3, np.float16), (2, np.float32), (2, np.float64), (7, np.int8)])
def test_inner_rows_of_every_width(device, inner, dtype):
    rng = np.random.default_rng(inner)
    params = random_array(rng, (2, 3, 4, inner), dtype)
    indices = rng.integers(-1, 5, (2, 5)).astype(np.int64)
    np.testing.assert_array_equal(launch(device, params, indices), reference(params, indices))


@pytest.mark.parametrize("parts", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_split_along_the_gather_axis_sums_to_the_logical_batch_gather(device, parts, dtype):
    rng = np.random.default_rng(10 + parts)
    gather = 9
    params = random_array(rng, (2, 3, gather, 2), dtype)
    indices = rng.integers(0, gather, (2, 7)).astype(np.int32)
    cuts = np.sort(rng.choice(np.arange(1, gather), parts - 1, replace=False))
    bounds = [0, *cuts.tolist(), gather]
    total = np.zeros((2, 3, 7, 2), np.float64)
    for start, stop in zip(bounds[:-1], bounds[1:]):
        part = launch(device, np.ascontiguousarray(params[:, :, start:stop]), indices, offset=start)
        total += part.astype(np.float64)
    np.testing.assert_array_equal(total.astype(dtype), reference(params, indices))


@pytest.mark.parametrize(
    "shape, num_indices", [((0, 2, 3, 2), 2), ((2, 0, 3, 2), 2), ((2, 2, 3, 0), 2), ((2, 2, 0, 2), 3), ((2, 2, 3, 2), 0)]
)
def test_empty_sizes(device, shape, num_indices):
    params = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    indices = np.zeros((shape[0], num_indices), np.int64)
    np.testing.assert_array_equal(launch(device, params, indices), reference(params, indices))


def test_launch_leaves_inputs_unchanged(device):
    rng = np.random.default_rng(5)
    params = random_array(rng, (2, 2, 4, 3), np.float32)
    indices = np.array([[3, -1, 0], [2, 2, 7]], np.int64)
    primitive = ep.NewPrimitive(ep.BatchGatherFactory, device, np.float32, np.int64)
    stream = ep.GetDevice(device).CreateStream()
    d_params, d_indices = to_device(params, device), to_device(indices, device)
    out = to_device(np.zeros((2, 2, 3, 3), np.float32), device)
    primitive.Launch(stream, d_indices, 3, d_params, 2, 2, 4, 3, out)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), reference(params, indices))
    np.testing.assert_array_equal(to_numpy(d_params), params)
    np.testing.assert_array_equal(to_numpy(d_indices), indices)


def test_indices_must_hold_batch_times_num_indices(device):
    primitive = ep.NewPrimitive(ep.BatchGatherFactory, device, np.float32, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    indices = to_device(np.zeros(5, np.int32), device)
    in_ = to_device(np.zeros(2 * 2 * 4 * 3, np.float32), device)
    out = to_device(np.zeros(2 * 2 * 3 * 3, np.float32), device)
    with pytest.raises(ValueError, match="indices: holds 5 elements, fewer than the 6"):
        primitive.Launch(stream, indices, 3, in_, 2, 2, 4, 3, out)
    with pytest.raises(ValueError, match="batch_dim_size: -2 is negative"):
        primitive.Launch(stream, indices, 3, in_, -2, 2, 4, 3, out)


@pytest.mark.parametrize("index_dtype", [np.float32, np.uint8, np.int8])
def test_new_returns_none_unless_indices_are_int32_or_int64(device, index_dtype):
    assert ep.NewPrimitive(ep.BatchGatherFactory, device, np.float32, index_dtype) is None


def test_the_64_bit_kernels_match_the_32_bit_ones(device, monkeypatch):
    if device == "cpu":
        pytest.skip("the CPU kernel has one index width")
    from ep.common.math import fast_divmod

    rng = np.random.default_rng(6)
    params = random_array(rng, (2, 3, 5, 4), np.float32)
    indices = np.array([[4, 0, 9], [1, 1, 3]], np.int64)
    narrow = launch(device, params, indices, 1)
    monkeypatch.setattr(fast_divmod, "needs_wide", lambda *counts: True)
    np.testing.assert_array_equal(launch(device, params, indices, 1), narrow)
    np.testing.assert_array_equal(narrow, reference(params, indices, 1))


def test_wrap_negative_and_check_bounds(device):
    rng = np.random.default_rng(12)
    params = random_array(rng, (2, 3, 4, 2), np.float32)
    indices = np.array([[3, -1, 0], [-4, 2, 2]], np.int64)
    primitive = ep.NewPrimitive(ep.BatchGatherFactory, device, np.float32, np.int64, wrap_negative=True, check_bounds=True)
    stream = ep.GetDevice(device).CreateStream()
    out = to_device(np.zeros((2, 3, 3, 2), np.float32), device)
    primitive.Launch(stream, to_device(indices, device), 3, to_device(params, device), 2, 3, 4, 2, out)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), reference(params, indices % 4))
    bad = np.array([[3, -1, 0], [-4, 2, -5]], np.int64)
    out = to_device(np.full((2, 3, 3, 2), 7, np.float32), device)
    with pytest.raises(IndexError, match=r"indices\[5\] = -5 is out of range for an axis of size 4; expected -4 <= index < 4"):
        primitive.Launch(stream, to_device(bad, device), 3, to_device(params, device), 2, 3, 4, 2, out)
        stream.Sync()  # where CUDA, which does not wait for the check, raises
    if device == "cuda":
        # The gather ran: the bad index's rows hold zeros.
        expected = reference(params, bad % 4)
        expected[1, :, 2] = 0
    else:
        expected = np.full((2, 3, 3, 2), 7, np.float32)
    np.testing.assert_array_equal(to_numpy(out), expected)
