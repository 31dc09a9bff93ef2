"""Expand, ExpandGrad and the ops built on them (expand, expand_grad, repeat, contiguous), against NumPy."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.primitive.strided_copy import copy_plan
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.cpu.parallel_for import PARALLEL_THRESHOLD
from ep.cpu.primitive.copy_nd import STREAM_BYTES
from ep.common.primitive.operands import contiguous
from ep.ops.expand import expand_shape
from ep.testing import to_device, to_numpy, transposed
from samples import sample
from dtype_lists import ALL as ALL_DTYPES
from dtype_lists import BY_WIDTH

SUM_DTYPES = [np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]


def same_bytes(a, b):
    """Equal shapes and bytes: Expand moves bytes, so NaN payloads must survive too."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def launch_expand(device, x, dst_dims, src_dims=None):
    """Expand.Launch of x into a new dst of dst_dims; returns (dst, src) on the host."""
    primitive = ep.NewPrimitive(ep.ExpandFactory, device, x.dtype)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x, device)
    dst = to_device(np.zeros(dst_dims, x.dtype), device)
    primitive.Launch(stream, x.shape if src_dims is None else src_dims, src, dst_dims, dst)
    stream.Sync()
    return to_numpy(dst).reshape(dst_dims), to_numpy(src)


# ---- the Expand primitive

# (input dims, broadcast dims) pairs that Expand and ExpandGrad both run.
BROADCASTS = [
    ((4, 3, 1, 2), (4, 3, 5, 2)),
    ((1, 4, 3, 5), (2, 1, 2, 4, 3, 5)),
    ((), (3, 2)),
    ((1,), (7,)),
    ((3, 1), (3, 5)),
    ((1, 3), (4, 3)),
    ((2, 1, 3, 1), (2, 5, 3, 7)),
    ((5,), (5,)),
]


@pytest.mark.parametrize("dtype", BY_WIDTH)
@pytest.mark.parametrize("src_dims, dst_dims", BROADCASTS)
def test_expand_moves_every_dtype_like_broadcast_to(device, dtype, src_dims, dst_dims):
    x = sample(src_dims, dtype)
    got, src_after = launch_expand(device, x, dst_dims)
    assert same_bytes(got, np.broadcast_to(x, dst_dims))
    assert same_bytes(src_after.reshape(src_dims), x)


@pytest.mark.parametrize(
    "src_dims, dst_dims, dtype",
    [
        ((1, 4099), (2, 4099), np.int8),  # odd runs move as bytes, longer than one piece
        ((1,), (300,), np.float32),  # a long fill
        ((3, 1), (3, 600), np.uint8),
        ((2, 1, 520), (2, 3, 520), np.float16),
    ],
)
def test_long_runs(device, src_dims, dst_dims, dtype):
    x = sample(src_dims, dtype, seed=9)
    got, _ = launch_expand(device, x, dst_dims)
    assert same_bytes(got, np.broadcast_to(x, dst_dims))


def test_every_dtype_has_an_expand(device):
    for dtype in ep.DataType:
        assert ep.NewPrimitive(ep.ExpandFactory, device, dtype) is not None


@st.composite
def broadcastable_dims(draw, max_rank=4, max_dim=4):
    dst = tuple(draw(st.lists(st.integers(1, max_dim), max_size=max_rank)))
    rank = draw(st.integers(0, len(dst)))
    src = tuple(draw(st.sampled_from((d, 1))) for d in dst[len(dst) - rank :])
    return src, dst


@given(broadcastable_dims(), st.sampled_from(ALL_DTYPES))
@settings(max_examples=40, deadline=None)
def test_random_broadcastable_dims(device, dims, dtype):
    src_dims, dst_dims = dims
    x = sample(src_dims, dtype, seed=len(src_dims))
    got, _ = launch_expand(device, x, dst_dims)
    assert same_bytes(got, np.broadcast_to(x, dst_dims))


def test_empty_dst_writes_nothing(device):
    got, _ = launch_expand(device, np.ones((1, 3), np.float32), (0, 3))
    assert got.shape == (0, 3)


def test_dst_larger_than_needed_is_written_only_up_to_its_dims(device):
    primitive = ep.NewPrimitive(ep.ExpandFactory, device, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    dst = to_device(np.full(10, -1, np.int32), device)
    primitive.Launch(stream, (2,), to_device(np.array([1, 2], np.int32), device), (3, 2), dst)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst), [1, 2, 1, 2, 1, 2, -1, -1, -1, -1])


def bad_launch(device, src_dims, dst_dims, src_size=None, dst_size=None, dtype=np.float32):
    primitive = ep.NewPrimitive(ep.ExpandFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(np.ones(src_size if src_size is not None else max(math.prod(src_dims), 1), dtype), device)
    dst = to_device(np.zeros(dst_size if dst_size is not None else max(math.prod(dst_dims), 1), np.float32), device)
    try:
        primitive.Launch(stream, src_dims, src, dst_dims, dst)
    finally:
        np.testing.assert_array_equal(to_numpy(dst), 0)


@pytest.mark.parametrize(
    "src_dims, dst_dims, error, message",
    [
        ((2, 3), (3,), ValueError, r"src_dims: has 2 dims, more than the 1 of dst_dims"),
        ((2, 3), (2, 4), ValueError, r"src_dims\[1\] = 3 does not broadcast to dst_dims\[1\] = 4; expected 4 or 1"),
        ((3,), (2, 1), ValueError, r"src_dims\[0\] = 3 does not broadcast to dst_dims\[1\] = 1"),
        ((2, -1), (2, 3), ValueError, r"src_dims\[1\]: -1 is negative"),
        ((2,), (2, 2.0), TypeError, r"dst_dims\[1\]: 2.0 is not an integer"),
        ((True,), (1,), TypeError, r"src_dims\[0\]: True is not an integer"),
        (3, (3,), TypeError, r"src_dims: 3 is not a sequence of sizes"),
    ],
)
def test_bad_dims_are_refused_before_any_write(device, src_dims, dst_dims, error, message):
    with pytest.raises(error, match=message):
        bad_launch(device, src_dims, dst_dims, src_size=4, dst_size=8)


def test_short_buffers_are_refused(device):
    with pytest.raises(ValueError, match="src: holds 5 elements, fewer than the 6"):
        bad_launch(device, (2, 3), (2, 2, 3), src_size=5)
    with pytest.raises(ValueError, match="dst: holds 11 elements, fewer than the 12"):
        bad_launch(device, (2, 3), (2, 2, 3), dst_size=11)


def test_wrong_dtype_buffer_is_refused(device):
    with pytest.raises(TypeError, match="src: dtype float64 does not match the primitive's float32"):
        bad_launch(device, (3,), (2, 3), dtype=np.float64)


def test_buffer_of_the_other_device_or_a_list_is_refused(device):
    primitive = ep.NewPrimitive(ep.ExpandFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    with pytest.raises(TypeError, match="src: list"):
        primitive.Launch(stream, (2,), [1.0, 2.0], (2,), to_device(np.zeros(2, np.float32), device))
    other = "cpu" if device == "cuda" else "cuda"
    if other in [d.value for d in ep.common.runtime.device.available_device_types()]:
        with pytest.raises(TypeError, match=f"src: .* was given to a {device} primitive"):
            foreign = to_device(np.ones(2, np.float32), other)
            primitive.Launch(stream, (2,), foreign, (2,), to_device(np.zeros(2, np.float32), device))


def test_stream_of_another_device_is_refused(device):
    primitive = ep.NewPrimitive(ep.ExpandFactory, device, np.float32)
    with pytest.raises(TypeError, match="stream: "):
        primitive.Launch(object(), (2,), to_device(np.ones(2, np.float32), device), (2,), to_device(np.zeros(2, np.float32), device))


def test_read_only_dst_is_refused_on_cpu():
    primitive = ep.NewPrimitive(ep.ExpandFactory, "cpu", np.float32)
    dst = np.zeros(4, np.float32)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="dst: the array is read-only"):
        primitive.Launch(ep.GetDevice("cpu").CreateStream(), (1,), np.ones(1, np.float32), (4,), dst)


def test_dims_that_do_not_simplify_below_the_limit_are_refused(device):
    # Alternating broadcast dims never merge: 2 * (MAX_NUM_DIMS + 1) dims stay that many.
    dst_dims = (2,) * (2 * MAX_NUM_DIMS + 2)
    src_dims = (2, 1) * (MAX_NUM_DIMS + 1)
    with pytest.raises(ValueError, match="dst_dims: needs .* dims after simplification"):
        bad_launch(device, src_dims, dst_dims)


# ---- how inner runs are moved: raw units of the widest width alignment allows


def aligned(count, dtype, offset=0):
    """A zeroed array of count elements whose first element is offset bytes past a 64-byte boundary."""
    dtype = np.dtype(dtype)
    raw = np.zeros(count * dtype.itemsize + 128, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    return raw[start : start + count * dtype.itemsize].view(dtype)


def expand_plan(src_dims, dst_dims, itemsize, buffers, widest):
    """Expand's copy plan: dst_dims elements read with stride 0 along src's broadcast dims."""
    padded = (1,) * (len(dst_dims) - len(src_dims)) + tuple(src_dims)
    strides = broadcast_strides(padded, dst_dims)
    return copy_plan(dst_dims, strides, contiguous_strides(dst_dims), itemsize, buffers, widest, "dst_dims")


def test_plan_moves_contiguous_runs_in_the_widest_unit():
    src, dst = aligned(8, np.float32), aligned(64, np.float32)
    plan = expand_plan((1, 8), (8, 8), 4, (src, dst), 8)  # rows of 32 bytes
    assert (plan.unit, plan.dims, plan.src_strides) == (8, (8, 4), (0, 1))
    plan = expand_plan((1, 8), (8, 8), 4, (src, dst), 16)  # CUDA also moves 16-byte units
    assert (plan.unit, plan.dims, plan.src_strides) == (16, (8, 2), (0, 1))
    plan = expand_plan((1, 3), (8, 3), 4, (src, dst), 16)  # rows of 12 bytes
    assert (plan.unit, plan.dims, plan.src_strides) == (4, (8, 3), (0, 1))
    plan = expand_plan((8, 1), (8, 5), 4, (src, dst), 16)  # a broadcast element: a fill of 5 units
    assert (plan.unit, plan.dims, plan.src_strides) == (4, (8, 5), (1, 0))
    half = aligned(48, np.float16)
    plan = expand_plan((8, 1, 2), (8, 3, 2), 2, (half, half), 8)  # 4-byte pairs, each filled 3 times
    assert (plan.unit, plan.dims, plan.src_strides) == (4, (8, 3), (1, 0))


def test_plan_falls_back_to_narrower_units_for_misaligned_buffers():
    plan = expand_plan((1, 8), (8, 8), 4, (aligned(32, np.uint8, offset=1), aligned(64, np.float32)), 8)
    assert (plan.unit, plan.dims, plan.src_strides) == (1, (8, 32), (0, 1))
    plan = expand_plan((1, 8), (8, 8), 4, (aligned(32, np.uint8, offset=4), aligned(64, np.float32)), 16)
    assert (plan.unit, plan.dims, plan.src_strides) == (4, (8, 8), (0, 1))


def test_misaligned_cpu_buffers_still_expand():
    x = np.arange(6, dtype=np.float32).reshape(3, 1, 2)
    src = np.frombuffer(b"\0" + x.tobytes(), np.float32, offset=1)
    primitive = ep.NewPrimitive(ep.ExpandFactory, "cpu", np.float32)
    dst = np.zeros((3, 4, 2), np.float32)
    primitive.Launch(ep.GetDevice("cpu").CreateStream(), (3, 1, 2), src, (3, 4, 2), dst)
    np.testing.assert_array_equal(dst, np.broadcast_to(x, (3, 4, 2)))


# ---- the CPU's launch paths: a plan cached per dims; elements below the parallel threshold;
# raw units at any address above it; streaming stores for outputs of STREAM_BYTES and more


def cpu_launch(x, dst_dims, dst):
    primitive = ep.NewPrimitive(ep.ExpandFactory, "cpu", x.dtype)
    primitive.Launch(ep.GetDevice("cpu").CreateStream(), x.shape, x, dst_dims, dst)
    return dst.reshape(dst_dims)


def test_a_cached_plan_does_not_let_other_dims_types_through():
    primitive = ep.NewPrimitive(ep.ExpandFactory, "cpu", np.float32)
    stream = ep.GetDevice("cpu").CreateStream()
    src, dst = np.arange(2, dtype=np.float32), np.zeros(4, np.float32)
    primitive.Launch(stream, (2,), src, (2, 2), dst)
    primitive.Launch(stream, (1,), src, (2, 2), dst)
    # 2.0 and True hash and compare equal to the cached 2 and 1.
    with pytest.raises(TypeError, match=r"dst_dims\[1\]: 2.0 is not an integer"):
        primitive.Launch(stream, (2,), src, (2, 2.0), dst)
    with pytest.raises(TypeError, match=r"src_dims\[0\]: True is not an integer"):
        primitive.Launch(stream, (True,), src, (2, 2), dst)
    for src_dims, dst_dims in (([2], [2, 2]), ((np.int64(2),), (2, np.int32(2)))):
        dst[:] = 0
        primitive.Launch(stream, src_dims, src, dst_dims, dst)
        np.testing.assert_array_equal(dst, [0, 1, 0, 1])


def test_a_cached_plan_still_checks_the_buffers():
    primitive = ep.NewPrimitive(ep.ExpandFactory, "cpu", np.float32)
    stream = ep.GetDevice("cpu").CreateStream()
    primitive.Launch(stream, (3,), np.ones(3, np.float32), (2, 3), np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="dst: holds 5 elements, fewer than the 6"):
        primitive.Launch(stream, (3,), np.ones(3, np.float32), (2, 3), np.zeros(5, np.float32))
    with pytest.raises(TypeError, match="src: dtype float64 does not match"):
        primitive.Launch(stream, (3,), np.ones(3), (2, 3), np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="dst: storage must be C-contiguous"):
        primitive.Launch(stream, (3,), np.ones(3, np.float32), (2, 3), np.zeros((3, 4), np.float32)[:, :2])


def test_serial_launches_of_read_only_or_unaligned_buffers():
    x = sample((3, 1, 5), np.float64, seed=4)
    read_only = x.copy()
    read_only.flags.writeable = False
    unaligned = aligned(x.size, np.float64, offset=4)
    unaligned[:] = x.reshape(-1)
    for src in (x, read_only, unaligned.reshape(x.shape)):
        for dst in (np.zeros(60), aligned(60, np.float64, offset=2)):
            assert same_bytes(cpu_launch(src, (3, 4, 5), dst), np.broadcast_to(x, (3, 4, 5)))


def test_bool_bytes_are_moved_as_they_are(device):
    x = np.array([0, 1, 2, 255], np.uint8).view(np.bool_).reshape(4, 1)
    got, _ = launch_expand(device, x, (4, 3))
    assert same_bytes(got, np.broadcast_to(x, (4, 3)))


@pytest.mark.parametrize("dtype", BY_WIDTH)
@pytest.mark.parametrize(
    "src_dims, dst_dims",
    [
        ((64, 1, 24), (64, 30, 24)),  # rows of 8-byte units
        ((700, 1), (700, 50)),  # fills of one element
        ((1, 7, 1, 5), (3, 7, 400, 5)),  # short runs in rows that need a division each
    ],
)
def test_parallel_launches_at_any_address(dtype, src_dims, dst_dims):
    assert math.prod(dst_dims) >= PARALLEL_THRESHOLD
    x = sample(src_dims, dtype, seed=12)
    src = aligned(x.size, dtype, offset=3)
    src[:] = x.reshape(-1)
    dst = aligned(math.prod(dst_dims), dtype, offset=5)
    assert same_bytes(cpu_launch(src.reshape(src_dims), dst_dims, dst), np.broadcast_to(x, dst_dims))


@pytest.mark.parametrize(
    "src_dims, dst_dims, dtype, offset",
    [
        ((64, 1, 1024), (64, 33, 1024), np.float32, 0),  # 8-byte units, rows of whole vectors
        ((3, 1, 1023), (3, 701, 1023), np.float32, 0),  # 4-byte units, rows starting anywhere in a vector
        ((30000, 1), (30000, 37), np.float64, 0),  # fills of 8-byte units
        ((1000, 1), (1000, 2101), np.int32, 4),  # fills of 4-byte units
        ((64, 1, 1024), (64, 33, 1024), np.float32, 4),  # dst not aligned to its 8-byte units: ordinary stores
        ((2, 1, 4095), (2, 1100, 4095), np.int8, 0),  # 1-byte units: ordinary stores
    ],
)
def test_large_outputs(src_dims, dst_dims, dtype, offset):
    x = sample(src_dims, dtype, seed=11)
    dst = aligned(math.prod(dst_dims), dtype, offset)
    assert dst.nbytes >= STREAM_BYTES
    assert same_bytes(cpu_launch(x, dst_dims, dst), np.broadcast_to(x, dst_dims))


def strided_plan(view, dst, widest):
    """copy_plan of a view (non-negative strides, whole elements) into C-contiguous dst."""
    itemsize = view.dtype.itemsize
    strides = tuple(s // itemsize for s in view.strides)
    return copy_plan(view.shape, strides, contiguous_strides(view.shape), itemsize, (view, dst), widest, "src")


def test_strided_plan_merges_what_is_contiguous():
    x = aligned(4 * 6 * 8, np.float32).reshape(4, 6, 8)
    dst = aligned(96, np.float32)
    plan = strided_plan(x[::2], dst, 8)
    assert (plan.unit, plan.dims, plan.src_strides) == (8, (2, 24), (48, 1))
    plan = strided_plan(x[:, :, ::2], dst, 8)
    assert (plan.unit, plan.dims, plan.src_strides) == (4, (96,), (2,))
    plan = strided_plan(x[:, 1], dst, 16)
    assert (plan.unit, plan.dims, plan.src_strides) == (16, (4, 2), (12, 1))


# ---- contiguous(): the CopyNd launch behind every non-contiguous input of ep.ops

VIEWS = [
    np.s_[:, ::2],
    np.s_[::2],
    np.s_[1:, 1:],
    np.s_[:, 3],
    np.s_[::3, 1::2],
]


def is_c_contiguous(array):
    return array.flags.c_contiguous if isinstance(array, np.ndarray) else array.is_c_contiguous()


def copy_view(device, view):
    """contiguous() of a view on device, on a stream of its own, as a NumPy array."""
    stream = ep.GetDevice(device).CreateStream()
    copy = contiguous(view, ep.GetDevice(device), stream)
    stream.Sync()
    assert is_c_contiguous(copy)
    return to_numpy(copy)


@pytest.mark.parametrize("dtype", BY_WIDTH)
@pytest.mark.parametrize("view", VIEWS)
def test_contiguous_copies_any_view(device, dtype, view):
    x = sample((6, 8), dtype, seed=3)
    src = to_device(x, device)[view]
    assert same_bytes(copy_view(device, src), x[view])


def test_contiguous_long_rows(device):
    x = sample((4, 601), np.int8, seed=6)
    for view in (np.s_[::2], np.s_[:, ::2]):
        assert same_bytes(copy_view(device, to_device(x, device)[view]), x[view])


@pytest.mark.parametrize(
    "shape, view, dtype",
    [
        ((600, 130), np.s_[:, ::2], np.int32),  # parallel, strided runs
        ((600, 130), np.s_[::2, 1:], np.float16),  # parallel, contiguous runs
        ((2100, 2048), np.s_[:, 3:1027], np.float32),  # streamed rows
    ],
)
def test_contiguous_large_views_on_cpu(shape, view, dtype):
    x = sample(shape, dtype, seed=8)
    assert x[view].size >= PARALLEL_THRESHOLD
    assert same_bytes(copy_view("cpu", x[view]), x[view])


def test_contiguous_reads_zero_strides_on_cpu():
    x = np.arange(5, dtype=np.int32)
    view = np.broadcast_to(x[:, None], (5, 3))
    np.testing.assert_array_equal(copy_view("cpu", view), view)


def test_copy_nd_refuses_negative_strides(device):
    src = to_device(np.arange(6, dtype=np.float32), device)
    primitive = ep.NewPrimitive(ep.CopyNdFactory, device, 1)
    dst = to_device(np.zeros(6, np.float32), device)
    with pytest.raises(ValueError, match=r"src_strides\[0\]: -1 is negative"):
        primitive.Launch(ep.GetDevice(device).CreateStream(), np.float32, 1, dst, (6,), (0,), src, (6,), (0,), (6,), (-1,))


@pytest.mark.parametrize("dtype", BY_WIDTH)
def test_contiguous_copies_a_strided_array_on_its_device(device, dtype):
    x = sample((4, 3, 6), dtype, seed=5)
    array = to_device(x, device)
    for view in (np.s_[:, :, ::2], np.s_[::2, 1:], np.s_[:, 1]):
        strided = array[view]
        assert not is_c_contiguous(strided)
        assert same_bytes(copy_view(device, strided), x[view])
    assert same_bytes(to_numpy(array), x)


def test_contiguous_transposed_array_and_negative_strides(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    array = to_device(x, device)
    np.testing.assert_array_equal(copy_view(device, transposed(array)), x.T)
    # CopyNd takes strides >= 0: NumPy copies a reversed cpu array, a cuda one is turned around and back.
    for view in (np.s_[:, ::-1], np.s_[::-1, ::-1], np.s_[::-2, 1:]):
        np.testing.assert_array_equal(to_numpy(contiguous(array[view], ep.GetDevice(device))), x[view])


# ---- ep.ops.expand and the expand rule

# Per dim of each issue example: candidate size -> the size it gives, or None when the rule
# forbids it (own size, -1, 1, 0, other values); torch's expand (checked below) gives the same.
EXAMPLES = [
    (
        (4, 3, 1, 2),
        [
            {4: 4, -1: 4, 1: None, 5: None, 0: None},
            {3: 3, -1: 3, 1: None, 6: None},
            {5: 5, -1: 1, 1: 1, 0: 0, -2: None},
            {2: 2, -1: 2, 1: None, 4: None},
        ],
    ),
    (
        (1, 4, 3, 5),
        [
            {2: 2, 1: 1, -1: None, 0: 0},
            {1: 1, 3: 3, -1: None, 0: 0},
            {2: 2, -1: 1, 1: 1, 0: 0},
            {4: 4, -1: 4, 1: None, 8: None},
            {3: 3, -1: 3, 1: None},
            {5: 5, -1: 5, 1: None, 10: None},
        ],
    ),
]


def candidates(example):
    input_shape, dims = example
    for sizes in itertools.product(*dims):
        resolved = [table[size] for table, size in zip(dims, sizes)]
        bad = [dim for dim, size in enumerate(resolved) if size is None]
        yield input_shape, sizes, (None if bad else tuple(resolved)), (bad[0] if bad else None)


@pytest.mark.parametrize("example", EXAMPLES, ids=["4,3,1,2", "1,4,3,5"])
def test_expand_shape_follows_the_rule_for_every_candidate(example):
    for input_shape, sizes, expected, bad_dim in candidates(example):
        if expected is None:
            input_dim = bad_dim - (len(sizes) - len(input_shape))
            input_size = "no input size" if input_dim < 0 else f"input size {input_shape[input_dim]}"
            with pytest.raises(ValueError, match=rf"sizes\[{bad_dim}\]: dim {bad_dim} .*{input_size}.*{sizes[bad_dim]}"):
                expand_shape(input_shape, sizes)
        else:
            assert expand_shape(input_shape, sizes) == expected


@pytest.mark.parametrize("example", EXAMPLES, ids=["4,3,1,2", "1,4,3,5"])
def test_the_rule_is_torchs(example):
    torch = pytest.importorskip("torch")
    x = torch.zeros(example[0])
    for _, sizes, expected, _ in candidates(example):
        try:
            got = tuple(x.expand(*sizes).shape)
        except RuntimeError:
            got = None
        assert got == expected, (example[0], sizes)


@pytest.mark.parametrize("example", EXAMPLES, ids=["4,3,1,2", "1,4,3,5"])
def test_ops_expand_matches_broadcast_to_for_every_legal_candidate(device, example):
    x = sample(example[0], np.float32, seed=1)
    array = to_device(x, device)
    for _, sizes, expected, _ in candidates(example):
        if expected is None:
            with pytest.raises(ValueError, match=r"sizes\["):
                ep.ops.expand(array, sizes)
        else:
            assert same_bytes(to_numpy(ep.ops.expand(array, sizes)), np.broadcast_to(x, expected))
    assert same_bytes(to_numpy(array), x)


def test_expand_rule_on_the_number_of_sizes():
    assert expand_shape((4, 3, 1, 2), (4, 3, 5, 2)) == (4, 3, 5, 2)
    assert expand_shape((4, 3, 1, 2), (2, 2, 4, 3, 5, 2)) == (2, 2, 4, 3, 5, 2)
    assert expand_shape((), (3, 2)) == (3, 2)
    assert expand_shape((0, 1), (0, 3)) == (0, 3)
    with pytest.raises(ValueError, match=r"sizes: has 3 dims, fewer than the input's 4"):
        expand_shape((4, 3, 1, 2), (3, 5, 2))
    with pytest.raises(ValueError, match=r"sizes\[0\]: dim 0 is a new leading dim .* got -1"):
        expand_shape((4, 3, 1, 2), (-1, 4, 3, 5, 2))


def test_ops_expand_of_a_zero_dim_array():
    np.testing.assert_array_equal(ep.ops.expand(np.array(2.5), (2, 3)), np.full((2, 3), 2.5))


def test_expand_sizes_must_be_ints():
    with pytest.raises(TypeError, match=r"sizes\[1\]: 5.0 is not an integer"):
        expand_shape((4, 1), (4, 5.0))
    with pytest.raises(TypeError, match=r"sizes: 'ab' is not a sequence of ints"):
        expand_shape((4, 1), "ab")
    assert expand_shape((4, 1), (np.int64(4), np.int32(3))) == (4, 3)


@pytest.mark.parametrize("dtype", BY_WIDTH)
def test_ops_expand_every_dtype(device, dtype):
    x = sample((3, 1, 2), dtype, seed=2)
    got = ep.ops.expand(to_device(x, device), (2, 3, 4, -1))
    assert same_bytes(to_numpy(got), np.broadcast_to(x, (2, 3, 4, 2)))


def test_ops_expand_of_a_strided_input(device):
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    view = to_device(x, device)[::2, 1:2]
    got = ep.ops.expand(view, (3, 2, 5))
    np.testing.assert_array_equal(to_numpy(got), np.broadcast_to(x[::2, 1:2], (3, 2, 5)))


def test_ops_expand_into_out(device):
    x = np.arange(3, dtype=np.float64)
    out = to_device(np.zeros((2, 3)), device)
    assert ep.ops.expand(to_device(x, device), (2, 3), out=out) is out
    np.testing.assert_array_equal(to_numpy(out), np.broadcast_to(x, (2, 3)))
    with pytest.raises(ValueError, match=r"out: has shape \(2, 3\); expected \(4, 3\)"):
        ep.ops.expand(to_device(x, device), (4, 3), out=out)


@st.composite
def expand_cases(draw):
    input_shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    lead = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    sizes = lead + tuple(draw(st.sampled_from((n, -1) if n != 1 else (1, -1, 2, 3))) for n in input_shape)
    return input_shape, sizes


@given(expand_cases(), st.sampled_from(ALL_DTYPES))
@settings(max_examples=30, deadline=None)
def test_random_legal_expands_match_broadcast_to(device, case, dtype):
    input_shape, sizes = case
    x = sample(input_shape, dtype, seed=7)
    shape = expand_shape(input_shape, sizes)
    assert shape == np.broadcast_shapes(input_shape, tuple(abs(s) for s in sizes))
    assert same_bytes(to_numpy(ep.ops.expand(to_device(x, device), sizes)).reshape(shape), np.broadcast_to(x, shape))


# ---- ep.ops.repeat


@pytest.mark.parametrize(
    "shape, sizes",
    [
        ((3,), (2,)),
        ((2, 3), (2, 2)),
        ((2, 3), (3, 1, 2)),
        ((2, 1, 3), (1, 4, 1)),
        ((4,), (2, 1, 3)),
        ((), (2, 3)),
        ((2, 3), (1, 1)),
        ((2, 3), (0, 2)),
        ((0, 3), (2, 2)),
        # More repeated dims than one Expand takes (its strided copy stops at 9 dims): in stages.
        ((2, 2, 2, 2, 2), (2, 2, 2, 2, 2)),
        ((2, 3, 1, 2, 2, 3), (2, 1, 3, 2, 2, 2, 2)),
        ((2,) * 9, (2, 1) * 4 + (3, 2)),
    ],
)
def test_repeat_matches_tile(device, shape, sizes):
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    array = to_device(x, device)
    got = to_numpy(ep.ops.repeat(array, sizes))
    np.testing.assert_array_equal(got.reshape(np.tile(x, sizes).shape), np.tile(x, sizes))
    np.testing.assert_array_equal(to_numpy(array).reshape(shape), x)


@pytest.mark.parametrize("dtype", BY_WIDTH)
def test_repeat_every_dtype(device, dtype):
    x = sample((2, 3), dtype, seed=4)
    assert same_bytes(to_numpy(ep.ops.repeat(to_device(x, device), (2, 1, 3))), np.tile(x, (2, 1, 3)))


def test_repeat_of_a_strided_input(device):
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    view = to_device(x, device)[:, ::2]
    np.testing.assert_array_equal(to_numpy(ep.ops.repeat(view, (2, 2))), np.tile(x[:, ::2], (2, 2)))


def test_repeat_bad_sizes(device):
    array = to_device(np.ones((2, 3), np.float32), device)
    with pytest.raises(ValueError, match="sizes: has 1 dims, fewer than x's 2"):
        ep.ops.repeat(array, (2,))
    with pytest.raises(ValueError, match=r"sizes\[1\]: repeat count -1 is negative"):
        ep.ops.repeat(array, (2, -1))
    with pytest.raises(TypeError, match=r"sizes\[0\]: 1.5 is not an integer"):
        ep.ops.repeat(array, (1.5, 2))


# ---- ExpandGrad and ep.ops.expand_grad


def grad_reference(dy, input_shape):
    """dy summed over the dims expand broadcast, in dy's dtype (float16 summed in float32)."""
    lead = dy.ndim - len(input_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(input_shape) if n == 1 and dy.shape[lead + i] != 1)
    if dy.dtype == np.float16:
        return dy.astype(np.float32).sum(axis=axes).astype(np.float16).reshape(input_shape)
    return dy.sum(axis=axes, dtype=dy.dtype).reshape(input_shape)


def grad_sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.integers(-8, 8, size=shape).astype(dtype) / 4
    return rng.integers(-100, 100, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", SUM_DTYPES)
@pytest.mark.parametrize("input_shape, dy_shape", BROADCASTS + [((1,), (1,))])
def test_expand_grad_matches_numpy_sum(device, dtype, input_shape, dy_shape):
    dy = grad_sample(dy_shape, dtype)
    array = to_device(dy, device)
    got = to_numpy(ep.ops.expand_grad(array, input_shape)).reshape(input_shape)
    expected = grad_reference(dy, input_shape)
    if dtype in (np.float16, np.float32, np.float64):
        rtol = 1e-3 if dtype == np.float16 else 1e-6
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol)
    else:
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(to_numpy(array).reshape(dy_shape), dy)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("input_shape, dy_shape", [((1, 1), (1, 1)), ((3, 4), (3, 4)), ((2, 1, 5), (2, 1, 5))], ids=str)
def test_expand_grad_summing_nothing_passes_dy_bit_for_bit(device, dtype, input_shape, dy_shape):
    # As autograd passes dy through an expand that broadcast nothing: -0.0 and NaN payloads stay.
    unit = f"u{np.dtype(dtype).itemsize}"
    dy = grad_sample(dy_shape, dtype)
    flat = dy.reshape(-1)
    flat[0] = -0.0
    flat[-1:] = np.array([np.iinfo(unit).max], unit).view(dtype)  # a NaN with every payload bit set
    got = to_numpy(ep.ops.expand_grad(to_device(dy, device), input_shape))
    assert got.view(unit).tolist() == dy.reshape(input_shape).view(unit).tolist()


def test_expand_grad_float16_accumulates_in_float32(device):
    # A float16 running sum of ones stops at 2048; a float32 one reaches 3000, which float16 holds.
    dy = np.ones(3000, np.float16)
    np.testing.assert_array_equal(to_numpy(ep.ops.expand_grad(to_device(dy, device), (1,))), [3000])


def test_expand_grad_integer_sums_wrap_like_numpy(device):
    dy = np.full((4, 100), 100, np.int8)
    got = to_numpy(ep.ops.expand_grad(to_device(dy, device), (1, 100)))
    np.testing.assert_array_equal(got.reshape(100), dy.sum(axis=0, dtype=np.int8))


def test_expand_grad_over_an_empty_dim_is_zero(device):
    primitive = ep.NewPrimitive(ep.ExpandGradFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    dst = to_device(np.full(3, 7, np.float32), device)
    primitive.Launch(stream, (0, 3), to_device(np.zeros(1, np.float32), device), (1, 3), dst)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst), 0)


@st.composite
def grad_cases(draw):
    src, dst = draw(broadcastable_dims(max_rank=4, max_dim=3))
    return src, dst, draw(st.sampled_from(SUM_DTYPES))


@given(grad_cases())
@settings(max_examples=30, deadline=None)
def test_random_expand_grads_match_numpy_sum(device, case):
    input_shape, dy_shape, dtype = case
    dy = grad_sample(dy_shape, dtype, seed=len(dy_shape))
    got = to_numpy(ep.ops.expand_grad(to_device(dy, device), input_shape)).reshape(input_shape)
    np.testing.assert_allclose(got.astype(np.float64), grad_reference(dy, input_shape).astype(np.float64), rtol=1e-3)


def test_expand_grad_bad_inputs(device):
    dy = to_device(np.ones((2, 3), np.float32), device)
    with pytest.raises(ValueError, match=r"dy.shape\[1\]: dim 1 has input size 4; cannot expand it to 3"):
        ep.ops.expand_grad(dy, (2, 4))
    with pytest.raises(ValueError, match=r"dy.shape: has 2 dims, fewer than the input's 3"):
        ep.ops.expand_grad(dy, (1, 2, 3))
    with pytest.raises(ValueError, match=r"input_shape\[0\]: -2 is negative"):
        ep.ops.expand_grad(dy, (-2, 3))
    with pytest.raises(TypeError, match="dy: expand_grad does not support dtype bool"):
        ep.ops.expand_grad(to_device(np.ones((2, 3), np.bool_), device), (1, 3))
    assert ep.NewPrimitive(ep.ExpandGradFactory, device, np.bool_) is None


def test_expand_grad_primitive_refuses_bad_dims(device):
    primitive = ep.NewPrimitive(ep.ExpandGradFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src, dst = to_device(np.ones(6, np.float32), device), to_device(np.zeros(3, np.float32), device)
    with pytest.raises(ValueError, match=r"dst_dims\[0\] = 3 does not broadcast to src_dims\[1\] = 2"):
        primitive.Launch(stream, (3, 2), src, (3,), dst)
    with pytest.raises(ValueError, match="src: holds 6 elements, fewer than the 9"):
        primitive.Launch(stream, (3, 3), src, (3,), dst)
    np.testing.assert_array_equal(to_numpy(dst), 0)


# ---- ExpandGrad's CUDA reduction: each path on every device, and which path each shape takes

# (input dims, dy dims, passes on the simulator's grid, warps along the sum): few outputs with long
# sums along a kept innermost dim; one output; a kept dim between two summed; few long sums along
# the innermost dim; many outputs with short sums; two summed dims; four; three in two passes.
REDUCTION_PATHS = [
    ((1, 4), (700, 4), 2, False),
    ((1,), (1500,), 2, True),
    ((1, 2, 1), (50, 2, 4), 2, True),
    ((3, 1), (3, 700), 1, True),
    ((40, 1), (40, 3), 1, True),
    ((2, 1, 3, 1, 1), (2, 4, 3, 5, 7), 1, True),
    ((1, 2, 1, 3, 1, 2, 1), (3, 2, 5, 3, 2, 2, 3), 1, True),
    ((1, 2, 1, 2, 1), (7, 2, 5, 2, 2), 2, True),
]


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16, np.float32, np.float64])
@pytest.mark.parametrize("input_shape, dy_shape", [path[:2] for path in REDUCTION_PATHS])
def test_expand_grad_reduction_paths_match_numpy(device, dtype, input_shape, dy_shape):
    dy = grad_sample(dy_shape, dtype, seed=5)
    got = to_numpy(ep.ops.expand_grad(to_device(dy, device), input_shape)).reshape(input_shape)
    # grad_sample's values are multiples of 1/4 below 2: their sums are exact in float32 and float64.
    np.testing.assert_array_equal(got, grad_reference(dy, input_shape))


def test_expand_grad_float16_is_accurate_against_float64(device):
    dy = np.random.default_rng(11).standard_normal((2, 3000)).astype(np.float16)
    got = to_numpy(ep.ops.expand_grad(to_device(dy.T.copy(), device), (1, 2))).reshape(2)
    # The float64 sum of the same float16 values, rounded once to float16.
    np.testing.assert_array_equal(got, dy.astype(np.float64).sum(axis=1).astype(np.float16))


def test_expand_grad_float32_long_sum_is_as_accurate_as_pairwise(device):
    # Values of mixed magnitude and sign: a float32 running sum of 20000 of them drifts by many ulps.
    rng = np.random.default_rng(12)
    dy = (rng.standard_normal(20000) * 10.0 ** rng.integers(-3, 4, 20000)).astype(np.float32)
    got = to_numpy(ep.ops.expand_grad(to_device(dy, device), (1,)))[0]
    exact = dy.astype(np.float64).sum()
    pairwise = abs(float(dy.sum(dtype=np.float32)) - exact)  # NumPy's pairwise float32 sum
    assert abs(float(got) - exact) <= max(pairwise, abs(exact) * 2 * np.finfo(np.float32).eps)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_expand_grad_of_large_broadcasts_matches_float64(device, dtype):
    # Sums over leading dims and rows long enough to run on the threads (cut into slices where the
    # outputs are few), columns wider than a task's, and a summed dim between kept ones.
    cases = [((1, 100), (3001, 100)), ((2085,), (1037, 2085)), ((3, 1, 9), (3, 517, 9)), ((40, 1), (40, 9000))]
    if device != "cpu":
        cases = [((1, 45), (37, 45)), ((3, 1, 5), (3, 9, 5))]
    rtol = {np.float16: 2e-3, np.float32: 2e-5, np.float64: 1e-12}[dtype]
    for input_shape, dy_shape in cases:
        dy = np.random.default_rng(13).standard_normal(dy_shape).astype(dtype)
        got = to_numpy(ep.ops.expand_grad(to_device(dy, device), input_shape)).reshape(input_shape)
        np.testing.assert_allclose(got.astype(np.float64), grad_reference(dy.astype(np.float64), input_shape), rtol=rtol, atol=rtol)


def reduction_geometry(input_shape, dy_shape, threads, target):
    from ep.common.primitive.expand_grad_plan import expand_grad_plan

    expand_grad = pytest.importorskip("ep.cuda.primitive.expand_grad")
    return expand_grad.geometry(expand_grad_plan(dy_shape, input_shape), threads, target)


@pytest.mark.parametrize("input_shape, dy_shape, passes, along_sum", REDUCTION_PATHS)
def test_expand_grad_paths_on_the_simulators_grid(input_shape, dy_shape, passes, along_sum):
    # The simulator's launches (kernel.launch_config): blocks of _SIM_THREADS, at most _SIM_MAX_BLOCKS.
    kernel = pytest.importorskip("ep.cuda.kernel")
    geometry = reduction_geometry(input_shape, dy_shape, kernel._SIM_THREADS, kernel._SIM_MAX_BLOCKS)
    assert len(geometry.passes) == passes
    assert geometry.passes[0].layout.along_sum == along_sum


H100_TARGET = 132 * 32  # launch_config's block cap: 32 blocks per SM of 132


@pytest.mark.parametrize(
    "input_shape, dy_shape, passes, along_sum",
    [
        ((1, 1024), (65536, 1024), 2, False),  # the example: 4 of 132 SMs busy before
        ((1,), (1 << 26,), 2, True),  # one output: one thread before
        ((1024, 1), (1024, 65536), 2, True),
        ((1 << 20, 1), (1 << 20, 4), 1, True),  # outputs enough to fill the GPU: one pass
        ((1, 1 << 20), (4, 1 << 20), 1, False),
    ],
)
def test_expand_grad_fills_an_h100(input_shape, dy_shape, passes, along_sum):
    from ep.cuda.kernel import THREADS_PER_BLOCK

    geometry = reduction_geometry(input_shape, dy_shape, THREADS_PER_BLOCK, H100_TARGET)
    assert len(geometry.passes) == passes
    first = geometry.passes[0].layout
    # Every SM gets blocks: launch_config's cap of 32 per SM, or all the work allows.
    assert first.tiles * first.slices >= min(H100_TARGET, math.prod(dy_shape) // (THREADS_PER_BLOCK * 8))
    assert first.along_sum == along_sum
    assert geometry.partials == (first.slices * math.prod(input_shape) if passes == 2 else 0)


def test_expand_grad_takes_64_bit_kernels_beyond_2_to_the_31_elements():
    from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT

    narrow = reduction_geometry((1,), (FAST_DIVMOD_LIMIT,), 256, H100_TARGET)
    wide = reduction_geometry((1,), (FAST_DIVMOD_LIMIT + 1,), 256, H100_TARGET)
    assert [(p.wide, p.summed) for p in narrow.passes] == [(False, 2), (False, 2)]
    assert [(p.wide, p.summed) for p in wide.passes] == [(True, 4), (True, 4)]


@pytest.mark.parametrize("rank", range(2, MAX_NUM_DIMS + 2))
def test_expand_of_every_rank_the_kernels_index(device, rank):
    # Broadcast and kept dims alternate, the innermost broadcast: no dims merge, so the plan
    # indexes rank - 1 dims outside the inner run (MAX_NUM_DIMS at the top rank).
    src_dims = tuple(1 if (rank - d) % 2 else 2 for d in range(rank))
    dst_dims = tuple(3 if (rank - d) % 2 else 2 for d in range(rank))
    x = sample(src_dims, np.float16)
    plan = copy_plan(dst_dims, broadcast_strides(src_dims, dst_dims), contiguous_strides(dst_dims), 2, (), 16, "src")
    assert plan.ndim == rank - 1
    got, _ = launch_expand(device, x, dst_dims)
    assert same_bytes(got, np.broadcast_to(x, dst_dims))
