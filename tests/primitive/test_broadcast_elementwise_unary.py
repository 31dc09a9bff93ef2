"""BroadcastElementwiseUnary through NewPrimitive + Launch, against the op's NumPy reference
(test_elementwise_unary.py's REFERENCES, through its check) of np.broadcast_to of the strided src,
written through dst's strides."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import ep
from ep.common.math import fast_divmod
from ep.include.primitive.broadcast_elementwise_unary import BroadcastElementwiseUnaryFactory
from ep.testing import to_device, to_numpy
from test_elementwise_unary import check, inputs

U = ep.UnaryOp
F32 = np.dtype(np.float32)
GUARD = 121  # what dst's buffer holds where no element of dst lies (fits every dtype)


def contiguous(dims):
    strides, stride = [], 1
    for n in reversed(dims):
        strides.append(stride)
        stride *= max(n, 1)
    return tuple(reversed(strides))


def span(dims, strides):
    return 0 if 0 in dims else 1 + sum((n - 1) * s for n, s in zip(dims, strides))


def launch(device, op, src_buffer, src_dims, src_strides, dst_dims, dst_strides, dst_dtype, attrs=(), max_num_dims=8):
    """The launch's dst buffer (guard values where no element lies) and dst's elements as an array of dst_dims."""
    primitive = ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, op, src_buffer.dtype, dst_dtype, max_num_dims, *attrs)
    assert primitive is not None
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(src_buffer, device)
    dst = to_device(np.full(span(dst_dims, dst_strides) + 3, GUARD, dst_dtype), device)
    primitive.Launch(stream, len(src_dims), src_dims, src_strides, src, len(dst_dims), dst_dims, dst_strides, dst)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(src), src_buffer)
    buffer = to_numpy(dst)
    itemsize = buffer.itemsize
    return buffer, as_strided(buffer, dst_dims, tuple(s * itemsize for s in dst_strides))


def broadcast_src(src_buffer, src_dims, src_strides, dst_dims):
    view = as_strided(src_buffer, src_dims, tuple(s * src_buffer.itemsize for s in src_strides))
    return np.broadcast_to(view, dst_dims)


def assert_only_dst_written(buffer, dst_dims, dst_strides):
    written = np.zeros(buffer.size, bool)
    for index in np.ndindex(*dst_dims):
        written[sum(i * s for i, s in zip(index, dst_strides))] = True
    np.testing.assert_array_equal(buffer[~written], GUARD)


# (src dims, src strides, dst dims, dst strides): src broadcast on the left, inside and inner;
# src strided; dst transposed or with gaps; a scalar filling dst; one element; empty; flat.
LAYOUTS = [
    ((3, 1, 5), (5, 5, 1), (2, 3, 4, 5), (60, 20, 5, 1)),
    ((3, 1, 5), (5, 5, 1), (2, 3, 4, 5), (1, 2, 6, 24)),
    ((4, 1), (3, 7), (2, 4, 6), (48, 12, 2)),
    ((2, 3), (1, 2), (2, 3), (3, 1)),
    ((), (), (3, 4), (4, 1)),
    ((1,), (1,), (1, 1), (5, 1)),
    ((3, 1), (1, 1), (0, 3, 4), (12, 4, 1)),
    ((2, 6), (6, 1), (2, 6), (6, 1)),
    ((6,), (1,), (5, 6), (1, 5)),
]


@pytest.mark.parametrize("src_dims, src_strides, dst_dims, dst_strides", LAYOUTS, ids=str)
def test_layouts_against_numpy_broadcast_to(device, src_dims, src_strides, dst_dims, dst_strides):
    src_buffer = np.arange(max(span(src_dims, src_strides), 1), dtype=np.float32) - 4
    buffer, got = launch(device, U.kRelu, src_buffer, src_dims, src_strides, dst_dims, dst_strides, F32)
    np.testing.assert_array_equal(got, np.maximum(broadcast_src(src_buffer, src_dims, src_strides, dst_dims), 0))
    assert_only_dst_written(buffer, dst_dims, dst_strides)


# A sample of the op table (each case compiles a kernel per device): every kind of formula, attributes, casts.
OP_CASES = [
    (U.kIdentity, np.dtype(np.int8), np.dtype(np.int8), ()),
    (U.kIdentity, np.dtype(np.float16), np.dtype(np.float16), ()),
    (U.kAbs, np.dtype(np.int64), np.dtype(np.int64), ()),
    (U.kExp, np.dtype(np.float32), np.dtype(np.float32), ()),
    (U.kTanh, np.dtype(np.float16), np.dtype(np.float16), ()),
    (U.kLeakyRelu, np.dtype(np.float64), np.dtype(np.float64), (0.25,)),
    (U.kIsNan, np.dtype(np.float32), np.dtype(np.bool_), ()),
    (U.kLogicalNot, np.dtype(np.bool_), np.dtype(np.bool_), ()),
    (U.kCast, np.dtype(np.float32), np.dtype(np.uint8), ()),
    (U.kCast, np.dtype(np.int32), np.dtype(np.float16), ()),
]


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("op, src, dst, attrs", OP_CASES, ids=[f"{c[0].name}-{c[1]}-{c[2]}" for c in OP_CASES])
def test_ops_against_their_reference(device, op, src, dst, attrs):
    x = inputs(op, src)
    if op is U.kCast and src.kind == "f":
        x = x[np.isfinite(x) & (x >= 0) & (x < 256)]  # float -> uint8 in range: NumPy's astype is undefined outside
    n = x.size
    # x as a column broadcast across 3 columns of a transposed dst: every element by a strided path.
    buffer, got = launch(device, op, x, (n, 1), (1, 1), (n, 3), (1, n), dst, attrs)
    expected = np.broadcast_to(x[:, None], (n, 3))
    for column in range(3):
        if op is U.kCast:
            np.testing.assert_array_equal(got[:, column], expected[:, column].astype(dst))
        else:
            reference_attrs = (attrs + (0, 0))[:2] if attrs else (None, None)
            check(np.ascontiguousarray(got[:, column]), op, np.ascontiguousarray(expected[:, column]), dst, reference_attrs)


def test_large_dsts_run_as_boxes_that_fit_32_bits(device, monkeypatch):
    # The limit lowered so that a small dst takes the boxes path a dst of 2**31 elements would.
    monkeypatch.setattr(fast_divmod, "FAST_DIVMOD_LIMIT", 7)
    src_buffer = np.arange(15, dtype=np.float32)
    dims, src_strides, dst_strides = (3, 4, 5), (5, 0, 1), (1, 3, 12)
    buffer, got = launch(device, U.kNegative, src_buffer, (3, 1, 5), src_strides, dims, dst_strides, F32)
    np.testing.assert_array_equal(got, -broadcast_src(src_buffer, (3, 1, 5), src_strides, dims))


def test_new_follows_the_unary_table(device):
    assert ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, "relu", np.float32, np.float32, 8) is not None
    assert ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, "exp", np.int32, np.int32, 8) is None
    assert ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, "relu", np.float32, np.float32, 9) is None
    with pytest.raises(ValueError, match="attr0"):
        ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, "relu", np.float32, np.float32, 8, 1.0)
    with pytest.raises(TypeError, match="max_num_dims"):
        ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, "relu", np.float32, np.float32, 8.0)


def _bad_launch(device, **changes):
    primitive = ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, "negative", np.int32, np.int32, 3)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(np.arange(3, dtype=np.int32), device)
    dst = to_device(np.full(6, 7, np.int32), device)
    args = dict(num_src_dims=1, src_dims=(3,), src_strides=(1,), src=src, num_dst_dims=2, dst_dims=(2, 3), dst_strides=(3, 1), dst=dst)
    args.update(changes)
    try:
        primitive.Launch(stream, *args.values())
    finally:
        np.testing.assert_array_equal(to_numpy(dst), np.full(6, 7, np.int32))
        np.testing.assert_array_equal(to_numpy(src), np.arange(3))


@pytest.mark.parametrize(
    "changes, error, named",
    [
        ({"num_src_dims": 2}, ValueError, "src_dims: has 1 entries; expected num_src_dims=2"),
        ({"num_dst_dims": 4, "dst_dims": (1, 1, 2, 3), "dst_strides": (6, 6, 3, 1)}, ValueError, "num_dst_dims: 4 is above max_num_dims=3"),
        ({"num_src_dims": 1.0}, TypeError, "num_src_dims"),
        ({"src_strides": (-1,)}, ValueError, r"src_strides\[0\]"),
        ({"dst_strides": (3,)}, ValueError, "dst_strides: has 1 entries"),
        ({"src_dims": (2,)}, ValueError, r"src_dims: \(2,\) do not broadcast to dst_dims=\(2, 3\)"),
        ({"num_src_dims": 3, "src_dims": (1, 2, 3), "src_strides": (6, 3, 1)}, ValueError, "do not broadcast"),
        ({"dst_strides": (1, 1)}, ValueError, "dst_strides: .* put two elements at one offset"),
        ({"dst_strides": (0, 1)}, ValueError, "dst_strides"),
        ({"dst_strides": (4, 1)}, ValueError, "dst"),  # spans 7 elements of a buffer of 6
        ({"src_strides": (2,)}, ValueError, "src"),  # spans 5 elements of a buffer of 3
        ({"dst": None}, TypeError, "dst"),
    ],
)
def test_bad_arguments_are_named_and_write_nothing(device, changes, error, named):
    with pytest.raises(error, match=named):
        _bad_launch(device, **changes)


def test_an_empty_dst_with_numpys_zero_strides_is_launched(device):
    # NumPy gives an empty (3, 0) array strides (0, 0): nothing is written, so no two elements collide.
    primitive = ep.NewPrimitive(BroadcastElementwiseUnaryFactory, device, "relu", np.float32, np.float32, 2)
    stream = ep.GetDevice(device).CreateStream()
    empty = np.empty((3, 0), np.float32)
    primitive.Launch(stream, 0, (), (), to_device(np.ones(1, np.float32), device), 2, (3, 0), (0, 0), to_device(empty.reshape(-1), device))
    stream.Sync()


def test_a_src_of_another_dtype_is_refused(device):
    with pytest.raises(TypeError, match="src"):
        _bad_launch(device, src=to_device(np.arange(3, dtype=np.int64), device))
