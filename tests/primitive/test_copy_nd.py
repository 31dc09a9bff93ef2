"""CopyNd: n-d boxes between flat buffers, strided sources, and the ops inputs it makes contiguous, against NumPy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT
from ep.common.math.nd_index_offset_helper import contiguous_strides
from ep.common.primitive.copy_nd import CopyNdImpl
from ep.common.primitive.strided_copy import copy_plan
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.testing import to_device, to_numpy, transposed
from samples import sample
from dtype_lists import ALL as ALL_DTYPES
from dtype_lists import BY_WIDTH

GUARD = 5


def guarded(dst_host, device):
    """dst_host's elements on device between GUARD elements on each side: (whole buffer, the dst slice)."""
    fill = np.ones(GUARD, dst_host.dtype)
    whole = to_device(np.concatenate([fill, dst_host.reshape(-1), fill]), device)
    return whole, whole[GUARD : GUARD + dst_host.size]


def copy_box(device, src_host, dst_host, src_pos, dst_pos, extent, max_num_dims=None):
    """CopyNd of the box into a guarded copy of dst_host; returns the whole buffer (guards included) on the host."""
    num_dims = src_host.ndim
    primitive = ep.NewPrimitive(ep.CopyNdFactory, device, max_num_dims or num_dims)
    stream = ep.GetDevice(device).CreateStream()
    whole, dst = guarded(dst_host, device)
    src = to_device(src_host, device).reshape(src_host.size)
    primitive.Launch(stream, src_host.dtype, num_dims, dst, dst_host.shape, dst_pos, src, src_host.shape, src_pos, extent)
    stream.Sync()
    return to_numpy(whole)


def expected_box(src_host, dst_host, src_pos, dst_pos, extent):
    want = dst_host.copy()
    dst_box = tuple(slice(p, p + e) for p, e in zip(dst_pos, extent))
    src_box = tuple(slice(p, p + e) for p, e in zip(src_pos, extent))
    want[dst_box] = src_host[src_box]
    fill = np.ones(GUARD, dst_host.dtype)
    return np.concatenate([fill, want.reshape(-1), fill])


def same_bytes(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


BOXES = [
    ((7,), (9,), (2,), (3,), (5,)),
    ((4, 6), (5, 7), (1, 2), (0, 3), (3, 4)),
    ((3, 4, 5), (4, 5, 6), (0, 1, 1), (1, 0, 2), (2, 3, 4)),
    ((2, 3, 4, 5), (3, 3, 5, 6), (1, 0, 1, 0), (0, 0, 1, 1), (1, 3, 3, 5)),
    ((2, 3, 4, 5), (2, 3, 4, 5), (0, 0, 0, 0), (0, 0, 0, 0), (2, 3, 4, 5)),  # the whole array
    ((4, 6), (4, 6), (1, 0), (2, 0), (2, 6)),  # whole rows: one contiguous run
    ((4, 6), (4, 6), (0, 5), (0, 0), (4, 1)),  # a column
]


@pytest.mark.parametrize("dtype", BY_WIDTH)
@pytest.mark.parametrize("src_dims, dst_dims, src_pos, dst_pos, extent", BOXES)
def test_boxes_of_every_rank_match_numpy_slicing(device, dtype, src_dims, dst_dims, src_pos, dst_pos, extent):
    src_host, dst_host = sample(src_dims, dtype, seed=1), sample(dst_dims, dtype, seed=2)
    got = copy_box(device, src_host, dst_host, src_pos, dst_pos, extent)
    assert same_bytes(got, expected_box(src_host, dst_host, src_pos, dst_pos, extent))


@st.composite
def boxes(draw):
    rank = draw(st.integers(1, 4))
    extent = [draw(st.integers(0, 4)) for _ in range(rank)]
    src_pos = [draw(st.integers(0, 3)) for _ in range(rank)]
    dst_pos = [draw(st.integers(0, 3)) for _ in range(rank)]
    src_dims = [p + e + draw(st.integers(0, 2)) for p, e in zip(src_pos, extent)]
    dst_dims = [p + e + draw(st.integers(0, 2)) for p, e in zip(dst_pos, extent)]
    return tuple(src_dims), tuple(dst_dims), tuple(src_pos), tuple(dst_pos), tuple(extent)


@given(boxes(), st.sampled_from(ALL_DTYPES))
@settings(max_examples=40, deadline=None)
def test_random_boxes_match_numpy_slicing(device, box, dtype):
    src_dims, dst_dims, src_pos, dst_pos, extent = box
    src_host, dst_host = sample(src_dims, dtype, seed=3), sample(dst_dims, dtype, seed=4)
    got = copy_box(device, src_host, dst_host, src_pos, dst_pos, extent, max_num_dims=4)
    assert same_bytes(got, expected_box(src_host, dst_host, src_pos, dst_pos, extent))


def test_large_box_on_cpu_runs_in_parallel():
    src_host, dst_host = sample((300, 260), np.float32, seed=5), sample((310, 270), np.float32, seed=6)
    got = copy_box("cpu", src_host, dst_host, (0, 3), (7, 1), (290, 256))
    assert same_bytes(got, expected_box(src_host, dst_host, (0, 3), (7, 1), (290, 256)))


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float64])
@pytest.mark.parametrize(
    "base_shape, view",
    [((6, 8), np.s_[:, ::2]), ((6, 8), np.s_[1::2, 1:]), ((4, 5, 6), np.s_[::2, :, 3]), ((5, 7), tuple)],
)
def test_strided_sources_match_numpy_views(device, dtype, base_shape, view):
    x = sample(base_shape, dtype, seed=7)
    if view is tuple:  # a transpose
        strided = x.T
    else:
        strided = x[view]
    itemsize = x.dtype.itemsize
    strides = tuple(s // itemsize for s in strided.strides)
    start = (strided.__array_interface__["data"][0] - x.__array_interface__["data"][0]) // itemsize
    primitive = ep.NewPrimitive(ep.CopyNdFactory, device, strided.ndim)
    dst = to_device(np.zeros(strided.shape, dtype), device)
    src = to_device(x, device).reshape(x.size)[start:]
    zeros = (0,) * strided.ndim
    stream = ep.GetDevice(device).CreateStream()
    primitive.Launch(stream, dtype, strided.ndim, dst, strided.shape, zeros, src, strided.shape, zeros, strided.shape, strides)
    stream.Sync()
    assert same_bytes(to_numpy(dst), np.ascontiguousarray(strided))


def test_zero_strides_broadcast_the_source(device):
    x = np.arange(4, dtype=np.int32)
    primitive = ep.NewPrimitive(ep.CopyNdFactory, device, 2)
    dst = to_device(np.zeros((3, 4), np.int32), device)
    primitive.Launch(ep.GetDevice(device).CreateStream(), "int32", 2, dst, (3, 4), (0, 0), to_device(x, device), (3, 4), (0, 0), (3, 4), (0, 1))
    np.testing.assert_array_equal(to_numpy(dst), np.broadcast_to(x, (3, 4)))


def launch_bad(device, **changes):
    """A launch of a 2-d box with some arguments changed; dst (guarded) must stay untouched."""
    args = dict(
        data_type=np.float32,
        num_dims=2,
        dst_dims=(3, 4),
        dst_pos=(0, 0),
        src_dims=(3, 4),
        src_pos=(1, 1),
        extent=(2, 3),
        src_strides=None,
    )
    args.update(changes)
    primitive = ep.NewPrimitive(ep.CopyNdFactory, device, 2)
    whole, dst = guarded(np.zeros((3, 4), np.float32), device)
    src = to_device(np.ones(12, np.float32), device)
    try:
        primitive.Launch(
            ep.GetDevice(device).CreateStream(),
            args["data_type"],
            args["num_dims"],
            args.get("dst", dst),
            args["dst_dims"],
            args["dst_pos"],
            args.get("src", src),
            args["src_dims"],
            args["src_pos"],
            args["extent"],
            args["src_strides"],
        )
    finally:
        host = to_numpy(whole)
        np.testing.assert_array_equal(host[GUARD:-GUARD], 0)
        np.testing.assert_array_equal(host[:GUARD], 1)
        np.testing.assert_array_equal(host[-GUARD:], 1)


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"num_dims": 3}, ValueError, r"num_dims: 3 is outside 1..2"),
        ({"num_dims": 0}, ValueError, r"num_dims: 0 is outside"),
        ({"num_dims": 2.0}, TypeError, r"num_dims: 2.0 is not an integer"),
        ({"dst_dims": (3,)}, ValueError, r"dst_dims: has 1 entries; expected num_dims = 2"),
        ({"src_pos": (1, -1)}, ValueError, r"src_pos\[1\]: -1 is negative"),
        ({"extent": (2, True)}, TypeError, r"extent\[1\]: True is not an integer"),
        ({"dst_pos": "ab"}, TypeError, r"dst_pos: 'ab' is not a sequence"),
        ({"src_strides": (4, 1, 1)}, ValueError, r"src_strides: has 3 dims; expected at most 2"),
        ({"data_type": np.complex64}, TypeError, r"data_type: .*complex64.* is not a supported data type"),
        ({"data_type": np.float64}, TypeError, r"src: dtype float32 does not match the primitive's float64"),
        ({"src": [1.0] * 12}, TypeError, r"src: list"),
        ({"src_dims": (4, 4)}, ValueError, r"src: holds 12 elements, fewer than the 16"),
        ({"src_strides": (5, 1)}, ValueError, r"src: holds 12 elements, fewer than the 14"),
    ],
)
def test_bad_arguments_are_named(device, changes, error, message):
    with pytest.raises(error, match=message):
        launch_bad(device, **changes)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"src_pos": (2, 1)}, r"src_pos\[0\] \+ extent\[0\] = 2 \+ 2 = 4 exceeds src_dims\[0\] = 3"),
        ({"dst_pos": (0, 2)}, r"dst_pos\[1\] \+ extent\[1\] = 2 \+ 3 = 5 exceeds dst_dims\[1\] = 4"),
        ({"extent": (3, 3)}, r"src_pos\[0\] \+ extent\[0\] = 1 \+ 3 = 4 exceeds src_dims\[0\] = 3"),
    ],
)
def test_out_of_bounds_boxes_are_refused_before_any_write(device, changes, message):
    with pytest.raises(IndexError, match=message):
        launch_bad(device, **changes)


def test_boxes_whose_bytes_intersect_are_refused_before_any_write(device):
    # A copy runs in no set order: src and dst boxes sharing bytes would smear (x[:11] -> x[1:]).
    primitive = ep.NewPrimitive(ep.CopyNdFactory, device, 1)
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(12, dtype=np.float32)
    x = to_device(host, device)
    with pytest.raises(ValueError, match=r"dst, src: the boxes copied span bytes .* which intersect"):
        primitive.Launch(stream, np.float32, 1, x, (12,), (1,), x, (12,), (0,), (11,))
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(x), host)


def test_separate_boxes_of_one_buffer_and_a_box_onto_itself_are_copied(device):
    primitive = ep.NewPrimitive(ep.CopyNdFactory, device, 1)
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(12, dtype=np.float32)
    x = to_device(host, device)
    primitive.Launch(stream, np.float32, 1, x, (12,), (6,), x, (12,), (0,), (6,))
    primitive.Launch(stream, np.float32, 1, x, (12,), (2,), x, (12,), (2,), (4,))
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(x), np.concatenate([host[:6], host[:6]]))


def test_an_empty_box_writes_nothing(device):
    launch_bad(device, extent=(0, 3))


def test_stream_of_another_device_is_refused(device):
    with pytest.raises(TypeError, match="stream: "):
        primitive = ep.NewPrimitive(ep.CopyNdFactory, device, 1)
        primitive.Launch(object(), np.float32, 1, to_device(np.zeros(2, np.float32), device), (2,), (0,), to_device(np.ones(2, np.float32), device), (2,), (0,), (2,))


def test_new_resolves_max_num_dims(device):
    first = ep.NewPrimitive(ep.CopyNdFactory, device, 3)
    assert first is ep.NewPrimitive(ep.CopyNdFactory, device, np.int64(3))
    assert ep.NewPrimitive(ep.CopyNdFactory, device, 0) is None
    assert ep.NewPrimitive(ep.CopyNdFactory, device, 65) is None
    with pytest.raises(TypeError, match="max_num_dims: 2.5 is not an integer"):
        ep.NewPrimitive(ep.CopyNdFactory, device, 2.5)


def test_factory_is_registered_with_every_dtype(device):
    factory = ep.include.primitive.GetFactory(ep.CopyNdFactory, device)
    assert {dtypes for _, dtypes in factory.Combinations()} == {(dtype,) for dtype in ep.DataType}


# ---- ep.ops: every non-contiguous input is made contiguous by a CopyNd launch


@pytest.fixture
def copy_nd_launches(monkeypatch):
    """The arguments of every CopyNd launch while a test runs."""
    calls = []
    launch = CopyNdImpl.Launch

    def spy(self, *args, **kwargs):
        calls.append(args)
        return launch(self, *args, **kwargs)

    monkeypatch.setattr(CopyNdImpl, "Launch", spy)
    return calls


@pytest.mark.parametrize("view", ["transposed", np.s_[:, ::2], np.s_[1::2, ::3], np.s_[:, 1:4]])
def test_ops_strided_inputs_go_through_copy_nd(device, copy_nd_launches, view):
    x = np.arange(48, dtype=np.float32).reshape(6, 8) - 20
    array = to_device(x, device)
    strided, expected = (transposed(array), x.T) if view == "transposed" else (array[view], x[view])
    got = to_numpy(ep.ops.unary("relu", strided))
    np.testing.assert_array_equal(got.reshape(expected.shape), np.maximum(expected, 0))
    assert len(copy_nd_launches) == 1
    got = to_numpy(ep.ops.expand(strided, (2,) + expected.shape))
    np.testing.assert_array_equal(got, np.broadcast_to(expected, (2,) + expected.shape))
    assert len(copy_nd_launches) == 2


def test_ops_contiguous_inputs_launch_no_copy(device, copy_nd_launches):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ep.ops.unary("relu", to_device(x, device))
    ep.ops.expand(to_device(x, device), (2, 2, 3))
    assert copy_nd_launches == []


def test_ops_views_with_strides_of_partial_elements_copy_bytes(device, copy_nd_launches):
    if device == "cuda":
        pytest.skip("a cuda array's strides are whole elements")
    record = np.zeros(6, dtype=[("a", np.int8), ("b", np.int32)])
    record["b"] = np.arange(6) - 3
    field = record["b"]  # strides of 5 bytes for 4-byte elements
    np.testing.assert_array_equal(ep.ops.unary("relu", field), np.maximum(np.arange(6) - 3, 0))
    assert copy_nd_launches[0][1] is ep.DataType.kUInt8


# ---- every number of dims, and the CUDA kernels' index widths


@pytest.mark.parametrize("rank", range(2, MAX_NUM_DIMS + 2))
def test_boxes_of_every_rank_the_kernels_index(device, rank):
    # A box of 2 per dim out of 3 per dim: no dims merge, so the plan indexes rank - 1 dims
    # outside the inner run (MAX_NUM_DIMS at the top rank).
    src_host = sample((3,) * rank, np.float32)
    dst_host = sample((2,) * rank, np.float32, 1)
    extent = (2,) * rank
    plan = copy_plan(extent, contiguous_strides(src_host.shape), contiguous_strides(extent), 4, (), 16, "src")
    assert plan.ndim == rank - 1
    got = copy_box(device, src_host, dst_host, (1,) * rank, (0,) * rank, extent)
    assert same_bytes(got, expected_box(src_host, dst_host, (1,) * rank, (0,) * rank, extent))


def test_the_64_bit_kernels_match_the_32_bit_ones(device, monkeypatch):
    if device == "cpu":
        pytest.skip("the CPU kernel has one index width")
    from ep.common.math import fast_divmod

    src_host, dst_host = sample((5, 6, 7), np.int32), sample((4, 5, 9), np.int32, 1)
    box = ((1, 0, 2), (0, 1, 3), (3, 4, 5))
    narrow = copy_box(device, src_host, dst_host, *box)
    monkeypatch.setattr(fast_divmod, "needs_wide", lambda *counts: True)
    # Another max_num_dims: another primitive, whose plans are made anew.
    wide = copy_box(device, src_host, dst_host, *box, max_num_dims=7)
    assert same_bytes(wide, narrow)
    assert same_bytes(narrow, expected_box(src_host, dst_host, *box))


@pytest.mark.parametrize(
    "dims, src_strides, wide",
    [
        ((3, 1000), (1000, 1), False),
        ((3, FAST_DIVMOD_LIMIT), (FAST_DIVMOD_LIMIT, 1), True),  # too many units copied
        ((5, 1), (FAST_DIVMOD_LIMIT // 4 + 1, 1), True),  # few units, but src spans beyond 32 bits
        ((5, 1), (FAST_DIVMOD_LIMIT // 4, 1), False),
    ],
)
def test_the_host_picks_the_64_bit_kernel_only_beyond_32_bits(device, dims, src_strides, wide):
    if device == "cpu":
        pytest.skip("the CPU kernel has one index width")
    from ep.common.primitive.strided_copy import CopyPlan
    from ep.cuda.primitive.copy_nd import KERNELS

    plan = CopyPlan(4, dims, src_strides, contiguous_strides(dims))
    _, kernel, _, _ = KERNELS.prepare(plan, False)
    assert kernel is KERNELS.kernel(4, wide)
