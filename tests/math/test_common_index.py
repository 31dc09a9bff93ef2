"""NdIndexOffsetHelper and the broadcast rules, against NumPy."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.math.nd_index_offset_helper import (
    broadcast_strides,
    contiguous_strides,
    index_to_offset,
    map_offset,
    offset_to_index,
)

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
