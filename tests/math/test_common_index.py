"""NdIndexOffsetHelper (split_offsets and boxes included) and the broadcast rules, against NumPy."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT, divmod64, fast_divmod, fast_divmod_params
from ep.common.math.nd_index_offset_helper import (
    SPLIT_DIMS,
    boxes,
    broadcast_strides,
    contiguous_strides,
    index_to_offset,
    map_offset,
    offset_to_index,
    split_args,
    split_offsets,
)
from ep.common.runtime.validate import MAX_NUM_DIMS

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=5).map(tuple)


@njit
def _unravel(offset, strides, ndim):
    return [offset_to_index(offset, strides, d) for d in range(ndim)]


@njit
def _ravel(index, strides):
    return index_to_offset(index, strides)


@njit
def _map(offset, strides, other):
    return map_offset(offset, strides, other)


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5).map(tuple), st.data())
@settings(max_examples=50, deadline=None)
def test_offset_and_index_round_trip(dims, data):
    strides = contiguous_strides(dims)
    assert strides == tuple(s // 8 for s in np.empty(dims, np.int64).strides)
    offset = data.draw(st.integers(0, int(np.prod(dims)) - 1))
    index = tuple(np.unravel_index(offset, dims))
    assert tuple(_unravel(offset, strides, len(dims))) == index
    assert _ravel(index, strides) == offset


@given(shapes, shapes)
@settings(max_examples=100, deadline=None)
def test_broadcast_shape_matches_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(ValueError, match="do not broadcast"):
            broadcast_shape(a, b)
        return
    assert broadcast_shape(a, b) == expected


@given(shapes, shapes)
@settings(max_examples=100, deadline=None)
def test_simplified_dims_index_the_same_elements(a, b):
    try:
        out = np.broadcast_shapes(a, b)
    except ValueError:
        return
    x = np.arange(int(np.prod(a))).reshape(a)
    y = np.arange(int(np.prod(b))).reshape(b)
    sa, sb = simplify_broadcast_dims(a, b)
    assert len(sa) == len(sb) <= len(out)
    so = tuple(max(p, q) for p, q in zip(sa, sb))
    for p, q in zip(sa, sb):
        assert p == q or 1 in (p, q)
    # neighbours never share a broadcast pattern after simplification
    for (p0, q0), (p1, q1) in itertools.pairwise(zip(sa, sb)):
        assert (p0 == 1, q0 == 1) != (p1 == 1, q1 == 1)
    np.testing.assert_array_equal(np.broadcast_to(x.reshape(sa), so).ravel(), np.broadcast_to(x, out).ravel())
    np.testing.assert_array_equal(np.broadcast_to(y.reshape(sb), so).ravel(), np.broadcast_to(y, out).ravel())


def test_simplify_merges_neighbours_with_one_pattern():
    # padded: a=(1,2,5,10,5) b=(5,1,5,10,1); the middle (5,10) dims are unbroadcast in both and merge.
    assert simplify_broadcast_dims((2, 5, 10, 5), (5, 1, 5, 10, 1)) == ((1, 2, 50, 5), (5, 1, 50, 1))
    assert simplify_broadcast_dims((3, 1, 1), (1, 1, 1)) == ((3,), (1,))
    assert simplify_broadcast_dims((), ()) == ((), ())


@given(shapes, shapes)
@settings(max_examples=60, deadline=None)
def test_map_offset_reads_the_broadcast_element(src, extra):
    try:
        dst = np.broadcast_shapes(src, extra)
    except ValueError:
        return
    src_padded = (1,) * (len(dst) - len(src)) + src
    x = np.arange(int(np.prod(src))).reshape(src)
    expected = np.broadcast_to(x, dst).ravel()
    strides, other = contiguous_strides(dst), broadcast_strides(src_padded, dst)
    got = [x.ravel()[_map(o, strides, other)] for o in range(expected.size)] if dst else [x.ravel()[0]]
    np.testing.assert_array_equal(got, expected)


@njit
def _split_all(count, ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1, wide, out):
    for n in range(count):
        if wide:
            split = split_offsets(np.int64(n), ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1, divmod64)
        else:
            split = split_offsets(np.uint32(n), ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1, fast_divmod)
        out[n, 0], out[n, 1] = split


@pytest.mark.parametrize("wide", [False, True], ids=["32-bit", "64-bit"])
@pytest.mark.parametrize("ndim", range(1, MAX_NUM_DIMS + 1))
def test_split_offsets_is_the_dot_of_the_index_with_either_strides(ndim, wide):
    rng = np.random.default_rng(ndim)
    dims = tuple(int(d) for d in rng.integers(1, 4, ndim))
    strides0 = tuple(int(s) for s in rng.integers(0, 50, ndim))
    strides1 = broadcast_strides(tuple(1 if rng.random() < 0.3 else d for d in dims), dims)
    count = int(np.prod(dims))
    out = np.empty((count, 2), np.int64)
    _split_all(count, *split_args(dims, strides0, strides1, wide), wide, out)
    index = np.stack(np.unravel_index(np.arange(count), dims), axis=1)
    np.testing.assert_array_equal(out[:, 0], index @ np.array(strides0))
    np.testing.assert_array_equal(out[:, 1], index @ np.array(strides1))


def test_split_args_lay_out_innermost_first_padded_with_divisions_by_one():
    ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1 = split_args((3, 4, 5), (20, 5, 1), (0, 5, 1), wide=False)
    assert ndim == 3
    assert len(sizes) == len(multipliers) == len(shifts) == len(strides0) == len(strides1) == SPLIT_DIMS
    assert sizes == (5, 4) + (1,) * (SPLIT_DIMS - 2)
    assert (multipliers[0], shifts[0]) == fast_divmod_params(5) and (multipliers[1], shifts[1]) == fast_divmod_params(4)
    assert strides0[:2] == (1, 5) and strides1[:2] == (1, 5) and set(strides0[2:]) == {0}
    assert (outer0, outer1) == (20, 0)
    # No dims (one element): one dim of one element.
    assert split_args((), (), (), wide=True)[0] == 1


@pytest.mark.parametrize(
    "dims, limit",
    [((3, 4, 5), 7), ((3, 4, 5), 25), ((3, 4, 5), 60), ((3, 4, 5), 1000), ((10,), 3), ((2, 17), 5), ((), 1), ((6, 1, 4), 9)],
)
def test_boxes_tile_the_shape_in_order_each_contiguous_and_within_the_limit(dims, limit):
    strides = contiguous_strides(dims)
    covered = []
    for start, box in boxes(dims, limit):
        count = int(np.prod(box))
        assert 1 <= count <= limit
        # The box is the dims inside its first ranged dim, so its elements are contiguous in dst.
        k = len(dims) - len(box)
        assert box[1:] == dims[k + 1 :] and start[k + 1 :] == (0,) * (len(box) - 1)
        first = sum(i * s for i, s in zip(start, strides))
        covered.extend(range(first, first + count))
    assert covered == list(range(int(np.prod(dims))))


def test_boxes_of_a_shape_beyond_32_bits_are_few():
    dims = (3, 5_000_000_000)
    parts = list(boxes(dims, FAST_DIVMOD_LIMIT))
    assert [box for _, box in parts] == [(FAST_DIVMOD_LIMIT,), (FAST_DIVMOD_LIMIT,), (5_000_000_000 - 2 * FAST_DIVMOD_LIMIT,)] * 3
