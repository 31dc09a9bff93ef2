"""What a warp shuffle reduction gives, on Numba's CUDA simulator (which has no shuffles): the one
stand-in the kernels that reduce across lanes (Softmax's rows, Reduce's warps) call there."""
from __future__ import annotations

import threading
from typing import Callable, Iterable

import numpy as np


def lanes_reduce(value: object, combine: Callable, lanes: Callable[[int, int], Iterable[int]]) -> object:
    """value of each thread of the block posted in a table of the block, and after a barrier the
    values of lanes(thread, block size) combined in order. Called by every thread of the block
    alike, as a shuffle is; a second barrier keeps the table until every thread has read it."""
    thread = threading.current_thread()
    block = thread._manager
    size = int(np.prod(block._block_dim))
    table = block.__dict__.setdefault("ep_lane_values", [None] * size)
    table[thread.thread_id] = value
    thread.syncthreads()
    lane = iter(lanes(thread.thread_id, size))
    result = table[next(lane)]
    for k in lane:
        result = combine(result, table[k])
    thread.syncthreads()
    return result
