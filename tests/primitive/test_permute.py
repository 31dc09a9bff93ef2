"""Permute through NewPrimitive + Launch, against numpy.transpose; its dims merging; bad input."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.common.primitive.permute import simplify_permutation, transpose_plan
from ep.testing import to_device, to_numpy
from samples import sample
from dtype_lists import ALL as ALL_DTYPES
from dtype_lists import BY_WIDTH



def launch_permute(device, x, permutation, dst_size=None, fill=0):
    """Permute.Launch of x into a new flat dst (of dst_size elements, filled with fill); dst and src on the host after."""
    primitive = ep.NewPrimitive(ep.PermuteFactory, device, 8)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x, device)
    dst = to_device(np.full(x.size if dst_size is None else dst_size, fill, x.dtype), device)
    primitive.Launch(stream, x.dtype, x.ndim, x.shape, src, permutation, dst)
    stream.Sync()
    return to_numpy(dst), to_numpy(src)


def same_bytes(a, b):
    """Equal bytes: Permute moves elements unchanged, NaN payloads included."""
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


# (shape, permutation): plain copies, 2-d and batched transposes with partial tiles (rows and cols
# >= 32 take CUDA's shared-memory tiles), outer dims between the transposed ones, size-1 dims.
CASES = [
    ((5,), (0,)),
    ((3, 4), (1, 0)),
    ((33, 40), (1, 0)),
    ((2, 35, 33), (0, 2, 1)),
    ((33, 2, 34), (2, 1, 0)),
    ((2, 3, 4), (1, 0, 2)),
    ((2, 3, 4, 5), (0, 2, 3, 1)),
    ((1, 3, 1, 4), (3, 2, 0, 1)),
    ((2, 1, 3), (2, 1, 0)),
]


@pytest.mark.parametrize("dtype", BY_WIDTH)
@pytest.mark.parametrize("shape, permutation", CASES)
def test_permute_moves_every_dtype_like_transpose(device, dtype, shape, permutation):
    x = sample(shape, dtype, seed=len(shape))
    got, src_after = launch_permute(device, x, permutation)
    assert same_bytes(got, np.transpose(x, permutation))
    assert same_bytes(src_after, x)


@st.composite
def permutes(draw, max_rank=5, max_dim=5):
    shape = tuple(draw(st.lists(st.integers(1, max_dim), min_size=1, max_size=max_rank)))
    return shape, tuple(draw(st.permutations(range(len(shape)))))


@given(permutes(), st.sampled_from(ALL_DTYPES))
@settings(max_examples=30, deadline=None)
def test_random_permutes(device, case, dtype):
    shape, permutation = case
    x = sample(shape, dtype, seed=len(shape))
    got, _ = launch_permute(device, x, permutation)
    assert same_bytes(got, np.transpose(x, permutation))


def test_every_permutation_of_four_dims(device):
    x = sample((2, 3, 4, 5), np.float32, seed=4)
    for permutation in itertools.permutations(range(4)):
        got, _ = launch_permute(device, x, permutation)
        assert same_bytes(got, np.transpose(x, permutation)), permutation


def test_large_transpose_in_parallel_tiles():
    # Above ParallelFor's threshold, tiles split between threads; (0, 2, 3, 1) is NCHW -> NHWC.
    x = sample((3, 70, 9, 20), np.float32, seed=1)
    got, _ = launch_permute("cpu", x, (0, 2, 3, 1))
    assert same_bytes(got, np.transpose(x, (0, 2, 3, 1)))


def test_empty_permute_writes_nothing(device):
    got, _ = launch_permute(device, np.ones((0, 3), np.float32), (1, 0), dst_size=4, fill=-1)
    np.testing.assert_array_equal(got, -1)


def test_dst_larger_than_needed_is_written_only_up_to_its_elements(device):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got, _ = launch_permute(device, x, (1, 0), dst_size=10, fill=-1)
    np.testing.assert_array_equal(got, [0, 3, 1, 4, 2, 5, -1, -1, -1, -1])


@pytest.mark.parametrize(
    "src_dims, permutation, dims, merged",
    [
        ((32, 64, 56, 56), (0, 2, 3, 1), (32, 64, 3136), (0, 2, 1)),
        ((2, 3, 4), (0, 1, 2), (24,), (0,)),
        ((2, 1, 3), (2, 1, 0), (2, 3), (1, 0)),
        ((1, 1), (1, 0), (1,), (0,)),
        ((4, 5, 6, 7), (2, 3, 0, 1), (20, 42), (1, 0)),
        ((4, 5, 6, 7), (3, 2, 1, 0), (4, 5, 6, 7), (3, 2, 1, 0)),
        ((2, 0, 3), (2, 0, 1), (0, 3), (1, 0)),
    ],
)
def test_dims_that_stay_adjacent_merge(src_dims, permutation, dims, merged):
    assert simplify_permutation(src_dims, permutation) == (dims, merged)


def test_transpose_plan_of_nchw_to_nhwc():
    plan = transpose_plan((32, 64, 3136), (0, 2, 1))
    assert (plan.rows, plan.cols, plan.src_row_stride, plan.dst_col_stride) == (64, 3136, 3136, 64)
    assert (plan.outer_dims, plan.outer_src_strides, plan.outer_dst_strides) == ((32,), (64 * 3136,), (64 * 3136,))


def test_new_refuses_max_num_dims_outside_its_range(device):
    assert ep.NewPrimitive(ep.PermuteFactory, device, 0) is None
    assert ep.NewPrimitive(ep.PermuteFactory, device, 65) is None
    with pytest.raises(TypeError, match="max_num_dims: 2.0 is not an integer"):
        ep.NewPrimitive(ep.PermuteFactory, device, 2.0)


def bad_launch(device, num_dims, src_dims, permutation, src_size=6, dst_size=6, dtype=np.float32, data_type=np.float32, max_num_dims=8):
    primitive = ep.NewPrimitive(ep.PermuteFactory, device, max_num_dims)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(np.arange(src_size, dtype=dtype), device)
    dst = to_device(np.zeros(dst_size, np.float32), device)
    try:
        primitive.Launch(stream, data_type, num_dims, src_dims, src, permutation, dst)
    finally:
        np.testing.assert_array_equal(to_numpy(dst), 0)
        np.testing.assert_array_equal(to_numpy(src), np.arange(src_size, dtype=dtype))


@pytest.mark.parametrize(
    "num_dims, src_dims, permutation, error, message",
    [
        (2, (2, 3), (0, 0), ValueError, r"permutation: \(0, 0\) is not a permutation of range\(2\)"),
        (2, (2, 3), (1, 2), ValueError, r"permutation: \(1, 2\) is not a permutation of range\(2\)"),
        (2, (2, 3), (-1, 0), ValueError, r"permutation: \(-1, 0\) is not a permutation of range\(2\)"),
        (2, (2, 3), (1,), ValueError, r"permutation: has 1 entries; expected num_dims = 2"),
        (2, (2, 3), (1.0, 0), TypeError, r"permutation\[0\]: 1.0 is not an integer"),
        (2, (2, 3), 10, TypeError, r"permutation: 10 is not a sequence of dims"),
        (2, (6,), (1, 0), ValueError, r"src_dims: has 1 entries; expected num_dims = 2"),
        (1, (6, 4), (0,), ValueError, r"src_dims: has 2 entries; expected num_dims = 1"),
        (2, (2, -3), (1, 0), ValueError, r"src_dims\[1\]: -3 is negative"),
        (0, (), (), ValueError, r"num_dims: 0 is outside 1..8"),
        (9, (1,) * 9, tuple(range(9)), ValueError, r"num_dims: 9 is outside 1..8"),
        (True, (6,), (0,), TypeError, r"num_dims: True is not an integer"),
    ],
)
def test_bad_arguments_are_refused_before_any_write(device, num_dims, src_dims, permutation, error, message):
    with pytest.raises(error, match=message):
        bad_launch(device, num_dims, src_dims, permutation)


def test_short_buffers_are_refused(device):
    with pytest.raises(ValueError, match="src: holds 5 elements, fewer than the 6"):
        bad_launch(device, 2, (2, 3), (1, 0), src_size=5)
    with pytest.raises(ValueError, match="dst: holds 5 elements, fewer than the 6"):
        bad_launch(device, 2, (2, 3), (1, 0), dst_size=5)


def test_wrong_dtype_buffer_is_refused(device):
    with pytest.raises(TypeError, match="src: dtype float64 does not match the primitive's float32"):
        bad_launch(device, 2, (2, 3), (1, 0), dtype=np.float64)
    with pytest.raises(TypeError, match="data_type"):
        bad_launch(device, 2, (2, 3), (1, 0), data_type="complex64")


def test_stream_of_another_device_is_refused(device):
    with pytest.raises(TypeError, match="stream: "):
        primitive = ep.NewPrimitive(ep.PermuteFactory, device, 2)
        x = to_device(np.ones(2, np.float32), device)
        primitive.Launch(object(), np.float32, 1, (2,), x, (0,), to_device(np.zeros(2, np.float32), device))


def test_read_only_dst_is_refused_on_cpu():
    primitive = ep.NewPrimitive(ep.PermuteFactory, "cpu", 2)
    dst = np.zeros(6, np.float32)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="dst: the array is read-only"):
        primitive.Launch(ep.GetDevice("cpu").CreateStream(), np.float32, 2, (2, 3), np.ones(6, np.float32), (1, 0), dst)


def test_a_repeated_launch_with_list_or_numpy_sizes_is_checked_again(device):
    # Launch keeps checked arguments by value; 2.0 == 2 must not hit a kept entry.
    primitive = ep.NewPrimitive(ep.PermuteFactory, device, 2)
    stream = ep.GetDevice(device).CreateStream()
    x, y = to_device(np.arange(6, dtype=np.float32), device), to_device(np.zeros(6, np.float32), device)
    primitive.Launch(stream, np.float32, 2, (2, 3), x, (1, 0), y)
    primitive.Launch(stream, np.float32, 2, [np.int64(2), 3], x, [1, 0], y)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(y), np.arange(6).reshape(2, 3).T.ravel())
    with pytest.raises(TypeError, match=r"src_dims\[0\]: 2.0 is not an integer"):
        primitive.Launch(stream, np.float32, 2, (2.0, 3), x, (1, 0), y)
