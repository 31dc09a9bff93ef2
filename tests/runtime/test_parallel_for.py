"""ParallelFor's chunks (a CPU mechanism, so no cuda case): every item in exactly one span, and
with aligned=, every span after the head starting where that array is 64-byte aligned."""
import numba
import numpy as np
import pytest

from ep.common.jit import template
from ep.cpu.parallel_for import PARALLEL_THRESHOLD, ParallelFor, output_array


@template()
def _record_starts(start, stop, args):
    # Each item gets the start of the span that ran it.
    dst, _ = args
    for i in range(start, stop):
        dst[i] = start


_TYPES = (output_array(np.dtype(np.int32)), numba.int64)
SPANS = {aligned: ParallelFor(_record_starts, f"test_record_starts_{aligned}", _TYPES, aligned=aligned) for aligned in (None, 0)}


def _at_offset(count: int, offset: int) -> np.ndarray:
    """count int32 elements offset bytes past a 64-byte boundary."""
    raw = np.zeros(count * 4 + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + count * 4].view(np.int32)


@pytest.mark.parametrize("count", [1, 5, 100, PARALLEL_THRESHOLD * 3 + 7])
@pytest.mark.parametrize("offset", [0, 4, 16, 60])
@pytest.mark.parametrize("aligned", [None, 0])
def test_every_item_runs_once_and_aligned_spans_start_on_64_bytes(count, offset, aligned):
    dst = _at_offset(count, offset)
    dst[:] = -1
    SPANS[aligned].launch(None, count, dst, count)
    starts = np.unique(dst)
    assert starts[0] == 0 and np.all(dst <= np.arange(count))
    # Spans are contiguous runs: an item's span starts at an item of that same span.
    np.testing.assert_array_equal(dst[dst], dst)
    head = (-offset % 64) // 4
    if aligned is None:
        assert count >= PARALLEL_THRESHOLD or list(starts) == [0]
    else:
        later = starts[starts > 0].astype(np.int64)
        assert np.all((dst.ctypes.data + 4 * later) % 64 == 0), later
        if 0 < head < count:
            assert head in starts
