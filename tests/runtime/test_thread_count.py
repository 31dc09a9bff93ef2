"""Launches under numba.set_num_threads: ParallelFor splits a launch into one chunk per pool thread,
and Numba's schedule shares those out among however many threads are set, so every count gives
the same result."""
import numba
import numpy as np
import pytest

import ep.ops
from ep.cpu.parallel_for import PARALLEL_THRESHOLD
from ep.testing import to_device, to_numpy


@pytest.mark.parametrize("threads", sorted({1, max(1, numba.config.NUMBA_NUM_THREADS // 2), numba.config.NUMBA_NUM_THREADS}))
def test_a_parallel_launch_gives_numpys_result_under_any_thread_count(device, threads):
    rng = np.random.default_rng(threads)
    # Above the threshold, with a count no thread count divides evenly.
    x = rng.standard_normal(PARALLEL_THRESHOLD * 3 + 7).astype(np.float32)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        got = to_numpy(ep.ops.unary("relu", to_device(x, device)))
        summed = to_numpy(ep.ops.binary("add", to_device(x, device), to_device(x[::-1].copy(), device)))
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(got, np.maximum(x, 0))
    np.testing.assert_array_equal(summed, x + x[::-1])
