"""The suite's fixes to Numba's CUDA simulator (tests/simulator.py): one cuda.shared.array per block
and call site, which every thread of the block gets; and syncthreads as a barrier of the block's
live threads, which the block manager waits on instead of polling."""
import threading
import time

import numpy as np
import pytest
from numba import config, cuda

BLOCK = 64

pytestmark = pytest.mark.skipif(not config.ENABLE_CUDASIM, reason="the simulator's blocks")


@cuda.jit
def _two_shared_arrays(out):
    # Each thread writes its slot of two shared arrays; after the barrier thread 0 adds both up,
    # which gives the sum below only when all the block's threads wrote the same two arrays.
    a = cuda.shared.array(BLOCK, np.int64)
    b = cuda.shared.array(BLOCK, np.int64)
    a[cuda.threadIdx.x] = cuda.threadIdx.x
    b[cuda.threadIdx.x] = 1000
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        total = 0
        for i in range(BLOCK):
            total += a[i] + b[i]
        out[cuda.blockIdx.x] = total


def test_a_blocks_threads_share_each_shared_array():
    out = np.zeros(20, np.int64)
    _two_shared_arrays[20, BLOCK](out)
    np.testing.assert_array_equal(out, np.full(20, BLOCK * (BLOCK - 1) // 2 + 1000 * BLOCK))


@cuda.jit
def _tree_sum(values, out):
    # Each step reads what other threads wrote before the barrier: a thread let through early
    # adds a slot not yet summed.
    partial = cuda.shared.array(BLOCK, np.int64)
    t = cuda.threadIdx.x
    partial[t] = values[cuda.blockIdx.x * BLOCK + t]
    cuda.syncthreads()
    step = BLOCK // 2
    while step:
        if t < step:
            partial[t] += partial[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[cuda.blockIdx.x] = partial[0]


def test_syncthreads_holds_every_thread_until_all_arrive():
    values = np.arange(3 * BLOCK, dtype=np.int64) ** 2
    out = np.zeros(3, np.int64)
    _tree_sum[3, BLOCK](values, out)
    np.testing.assert_array_equal(out, values.reshape(3, BLOCK).sum(axis=1))


@cuda.jit
def _half_return_early(out):
    # The odd threads end before the barrier; the even ones pass it and read another's write.
    written = cuda.shared.array(BLOCK, np.int64)
    t = cuda.threadIdx.x
    if t % 2:
        return
    written[t] = t
    cuda.syncthreads()
    out[t] = written[(t + 2) % BLOCK]


def test_threads_that_ended_do_not_hold_the_barrier():
    out = np.full(BLOCK, -1, np.int64)
    _half_return_early[1, BLOCK](out)
    expected = np.full(BLOCK, -1, np.int64)
    expected[::2] = (np.arange(0, BLOCK, 2) + 2) % BLOCK
    np.testing.assert_array_equal(out, expected)


@cuda.jit
def _votes(out):
    t = cuda.threadIdx.x
    out[0, t] = cuda.syncthreads_count(t % 3 == 0)
    out[1, t] = cuda.syncthreads_and(t < BLOCK)
    out[2, t] = cuda.syncthreads_and(t < BLOCK - 1)
    out[3, t] = cuda.syncthreads_or(t == BLOCK - 1)
    out[4, t] = cuda.syncthreads_or(t == BLOCK)


def test_block_votes_count_every_thread():
    out = np.zeros((5, BLOCK), np.int64)
    _votes[1, BLOCK](out)
    expected = [len(range(0, BLOCK, 3)), 1, 0, 1, 0]
    np.testing.assert_array_equal(out, np.repeat(np.array(expected)[:, None], BLOCK, axis=1))


@cuda.jit
def _one_thread_fails(out):
    cuda.syncthreads()
    if cuda.threadIdx.x == 3:
        out[out.size] = 1  # out of bounds: the simulator raises IndexError
    cuda.syncthreads()
    out[cuda.threadIdx.x] = 1


def _block_threads() -> list[threading.Thread]:
    from numba.cuda.simulator.kernel import BlockThread

    return [thread for thread in threading.enumerate() if isinstance(thread, BlockThread)]


def test_a_failing_thread_raises_from_the_launch_and_aborts_the_block():
    out = np.zeros(BLOCK, np.int64)
    with pytest.raises(IndexError):
        _one_thread_fails[1, BLOCK](out)
    # The threads waiting at the second barrier end there (with the abort error): none writes.
    deadline = time.monotonic() + 10
    while _block_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _block_threads() and not out.any()
    _tree_sum[1, BLOCK](np.ones(BLOCK, np.int64), out[:1])
    assert out[0] == BLOCK
