"""ConstantPad through NewPrimitive + Launch, against numpy.pad (and slicing for crops); its dims merging; bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.common.primitive.constant_pad import simplify_padding
from ep.testing import to_device, to_numpy
from samples import sample
from dtype_lists import ALL as ALL_DTYPES
from dtype_lists import BY_WIDTH



def reference(x, before, after, value):
    """numpy.pad of the non-negative paddings, then the crops of the negative ones."""
    padded = np.pad(x, [(max(b, 0), max(a, 0)) for b, a in zip(before, after)], constant_values=value)
    return padded[tuple(slice(max(-b, 0), padded.shape[i] - max(-a, 0)) for i, (b, a) in enumerate(zip(before, after)))]


def launch_pad(device, x, before, after, value, dst_size=None, fill=0):
    """ConstantPad.Launch of x into a new flat dst; (dst, src) on the host after."""
    primitive = ep.NewPrimitive(ep.ConstantPadFactory, device, x.dtype)
    stream = ep.GetDevice(device).CreateStream()
    count = int(np.prod([n + b + a for n, b, a in zip(x.shape, before, after)]))
    src = to_device(x, device)
    dst = to_device(np.full(count if dst_size is None else dst_size, fill, x.dtype), device)
    primitive.Launch(stream, x.ndim, x.shape, src, before, after, value, dst)
    stream.Sync()
    return to_numpy(dst), to_numpy(src)


CASES = [
    ((5,), (2,), (3,)),
    ((3, 4), (1, 0), (2, 1)),
    ((3, 4), (-1, 0), (0, -2)),
    ((2, 3, 4), (0, 1, 1), (0, 1, 1)),
    ((2, 1, 3), (1, 0, 0), (0, 0, 0)),
    ((2, 3, 4, 5), (0, 0, 2, 0), (0, 0, 1, 0)),
    ((0, 3), (1, 1), (1, 1)),
    ((3, 4), (-3, 0), (0, 0)),
    ((4, 37), (3, 5), (2, -7)),
]


@pytest.mark.parametrize("dtype", BY_WIDTH)
@pytest.mark.parametrize("shape, before, after", CASES)
def test_pad_every_dtype_like_numpy(device, dtype, shape, before, after):
    x = sample(shape, dtype, seed=len(shape))
    value = True if dtype == np.bool_ else 7
    got, src_after = launch_pad(device, x, before, after, value)
    expected = reference(x, before, after, value)
    assert got.tobytes() == np.ascontiguousarray(expected).tobytes()
    assert src_after.tobytes() == x.tobytes()


@st.composite
def pads(draw, max_rank=4):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=max_rank)))
    before, after = [], []
    for n in shape:
        b = draw(st.integers(-n, 3))
        before.append(b)
        after.append(draw(st.integers(-(n + min(b, 0)), 3)))
    return shape, tuple(before), tuple(after)


@given(pads(), st.sampled_from(ALL_DTYPES))
@settings(max_examples=30, deadline=None)
def test_random_pads(device, case, dtype):
    shape, before, after = case
    x = sample(shape, dtype, seed=len(shape))
    got, _ = launch_pad(device, x, before, after, 0)
    assert got.tobytes() == np.ascontiguousarray(reference(x, before, after, 0)).tobytes()


def test_large_pad_in_parallel_rows():
    x = sample((3, 50, 300), np.float32, seed=2)
    got, _ = launch_pad("cpu", x, (0, 2, 1), (1, 0, 3), -1.5)
    np.testing.assert_array_equal(got, reference(x, (0, 2, 1), (1, 0, 3), -1.5).ravel())


def test_large_output_of_long_rows_is_streamed():
    # Beyond STREAM_BYTES of output and STREAM_ROW_BYTES per row the rows go out with streaming
    # stores: aligned vectors and the unaligned ends element by element (a row of 4003 elements
    # leaves every row's start at another alignment).
    from ep.cpu.primitive.constant_pad import STREAM_ROW_BYTES
    from ep.cpu.primitive.copy_nd import STREAM_BYTES

    x = sample((560, 4000), np.float32, seed=3)
    got, _ = launch_pad("cpu", x, (1, 2), (0, 1), 0.5)
    assert got.nbytes >= STREAM_BYTES and 4003 * 4 >= STREAM_ROW_BYTES
    assert got.tobytes() == np.ascontiguousarray(reference(x, (1, 2), (0, 1), 0.5)).tobytes()


@pytest.mark.parametrize(
    "dtype, value, stored",
    [(np.float16, 1.5, 1.5), (np.int32, 2.9, 2), (np.int8, -128, -128), (np.bool_, 2, True), (np.float32, -0.0, -0.0)],
)
def test_the_pad_value_is_converted_to_the_dtype(device, dtype, value, stored):
    got, _ = launch_pad(device, np.zeros(1, dtype), (1,), (0,), value)
    assert got[:1].tobytes() == np.array([stored], dtype).tobytes()


def test_dst_larger_than_needed_is_written_only_up_to_its_elements(device):
    got, _ = launch_pad(device, np.array([1, 2], np.int32), (1,), (1,), 9, dst_size=7, fill=-1)
    np.testing.assert_array_equal(got, [9, 1, 2, 9, -1, -1, -1])


@pytest.mark.parametrize(
    "dims, before, after, merged",
    [
        ((32, 64, 56, 56), (0, 0, 1, 1), (0, 0, 1, 1), ((2048, 56, 56), (0, 1, 1), (0, 1, 1))),
        ((4, 5, 6), (0, 2, 0), (0, 1, 0), ((4, 30), (0, 12), (0, 6))),
        ((4, 5), (0, 0), (0, 0), ((20,), (0,), (0,))),
        ((1, 5, 1), (0, 1, 0), (0, 0, 0), ((5,), (1,), (0,))),
        ((1, 1), (0, 0), (0, 0), ((1,), (0,), (0,))),
    ],
)
def test_unpadded_dims_merge(dims, before, after, merged):
    assert simplify_padding(dims, before, after) == merged


@pytest.mark.parametrize("before, after", [((2**61, 0), (-2**61, 0)), ((-2**61, 0), (2**61, 0)), ((2**62, 1), (-2**62, -1)), ((5, 0), (-5, 0))])
def test_paddings_past_the_dim_pad_the_whole_dim(device, before, after):
    # Merging dims scales a padding by the inner size: one past the dim is clamped first, so a
    # pad whose output fits is not refused for an intermediate beyond int64.
    primitive = ep.NewPrimitive(ep.ConstantPadFactory, device, np.int64)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(np.arange(12, dtype=np.int64), device)
    dst_dims = tuple(s + b + a for s, b, a in zip((3, 4), before, after))
    dst = to_device(np.zeros(int(np.prod(dst_dims)), np.int64), device)
    primitive.Launch(stream, 2, (3, 4), src, before, after, 7, dst)
    stream.Sync()
    expected = np.full(dst_dims, 7, np.int64)
    # Which dst elements hold src's: those whose source index lies in src.
    for i in range(dst_dims[0]):
        for j in range(dst_dims[1]):
            si, sj = i - before[0], j - before[1]
            if 0 <= si < 3 and 0 <= sj < 4:
                expected[i, j] = si * 4 + sj
    np.testing.assert_array_equal(to_numpy(dst).reshape(dst_dims), expected)


def bad_launch(device, num_dims, src_dims, before, after, value=0, src_size=6, dst_size=24, dtype=np.float32):
    primitive = ep.NewPrimitive(ep.ConstantPadFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(np.arange(src_size, dtype=dtype), device)
    dst = to_device(np.zeros(dst_size, np.float32), device)
    try:
        primitive.Launch(stream, num_dims, src_dims, src, before, after, value, dst)
    finally:
        np.testing.assert_array_equal(to_numpy(dst), 0)
        np.testing.assert_array_equal(to_numpy(src), np.arange(src_size, dtype=dtype))


@pytest.mark.parametrize(
    "num_dims, src_dims, before, after, value, error, message",
    [
        (2, (2, 3), (-2, 0), (-1, 0), 0, ValueError, r"padding_before\[0\], padding_after\[0\]: -2 and -1 crop dim 0 of size 2 to -1"),
        (2, (2, 3), (0,), (0, 0), 0, ValueError, r"padding_before: has 1 entries; expected num_dims = 2"),
        (2, (2, 3), (0, 0), (0, 1.0), 0, TypeError, r"padding_after\[1\]: 1.0 is not an integer"),
        (2, (2, 3), 1, (0, 0), 0, TypeError, r"padding_before: 1 is not a sequence of paddings"),
        (2, (2, 3), (0, 2**63), (0, 0), 0, ValueError, r"padding_before\[1\]: 9223372036854775808 does not fit in int64"),
        (2, (6,), (0, 0), (0, 0), 0, ValueError, r"src_dims: has 1 entries; expected num_dims = 2"),
        (2, (2, -3), (0, 0), (0, 0), 0, ValueError, r"src_dims\[1\]: -3 is negative"),
        (0, (), (), (), 0, ValueError, r"num_dims: 0 is outside 1..64"),
        (2, (2, 3), (0, 0), (0, 0), "a", TypeError, r"pad_value: 'a' is not a real scalar"),
    ],
)
def test_bad_arguments_are_refused_before_any_write(device, num_dims, src_dims, before, after, value, error, message):
    with pytest.raises(error, match=message):
        bad_launch(device, num_dims, src_dims, before, after, value)


def test_an_integer_pad_value_out_of_range_is_refused(device):
    primitive = ep.NewPrimitive(ep.ConstantPadFactory, device, np.int8)
    with pytest.raises(OverflowError, match=r"pad_value: 300 is out of the range of int8"):
        primitive.Launch(ep.GetDevice(device).CreateStream(), 1, (1,), to_device(np.zeros(1, np.int8), device), (1,), (0,), 300,
                         to_device(np.zeros(2, np.int8), device))


def test_short_buffers_are_refused(device):
    with pytest.raises(ValueError, match="src: holds 5 elements, fewer than the 6"):
        bad_launch(device, 2, (2, 3), (1, 1), (1, 1), src_size=5)
    with pytest.raises(ValueError, match="dst: holds 19 elements, fewer than the 20"):
        bad_launch(device, 2, (2, 3), (1, 1), (1, 1), dst_size=19)


def test_wrong_dtype_buffer_is_refused(device):
    with pytest.raises(TypeError, match="src: dtype float64 does not match the primitive's float32"):
        bad_launch(device, 2, (2, 3), (0, 0), (0, 0), dtype=np.float64)


def test_every_dtype_has_a_constant_pad(device):
    for dtype in ep.DataType:
        assert ep.NewPrimitive(ep.ConstantPadFactory, device, dtype) is not None
