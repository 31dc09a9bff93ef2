"""The suite's fix to Numba's CUDA simulator (tests/conftest.py): one cuda.shared.array per block
and call site, made under a lock, which every thread of the block gets."""
import numpy as np
import pytest
from numba import config, cuda

BLOCK = 64


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
    if not config.ENABLE_CUDASIM:
        pytest.skip("the simulator's shared arrays")
    out = np.zeros(20, np.int64)
    _two_shared_arrays[20, BLOCK](out)
    np.testing.assert_array_equal(out, np.full(20, BLOCK * (BLOCK - 1) // 2 + 1000 * BLOCK))
