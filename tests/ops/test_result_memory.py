"""Large CPU results reuse the memory of released ones, and never memory a live result still uses."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import ep.ops
from ep.common.runtime import allocator


@pytest.fixture
def x():
    # A (1024, 512) float32 repeated (4, 2): a 16 MiB result, above the size results are cached from.
    return np.random.default_rng(3).standard_normal((1024, 512), dtype=np.float32)


def test_a_live_result_or_view_keeps_its_memory(device, x):
    if device != "cpu":
        pytest.skip("the cache serves CPU results")
    first = ep.ops.repeat(x, (4, 2))
    assert first.nbytes >= allocator._CACHED_BYTES
    view = first[1:]
    del first
    second = ep.ops.repeat(x, (4, 2))
    assert not np.shares_memory(second, view)
    np.testing.assert_array_equal(view, np.tile(x, (4, 2))[1:])


def test_a_released_result_is_reused_with_correct_values(device, x):
    if device != "cpu":
        pytest.skip("the cache serves CPU results")
    first = ep.ops.repeat(x, (4, 2))
    address = first.ctypes.data
    first[...] = np.nan  # what the next result must overwrite
    del first
    second = ep.ops.repeat(x, (4, 2))
    assert second.ctypes.data == address
    assert second.flags.c_contiguous and second.flags.writeable
    np.testing.assert_array_equal(second, np.tile(x, (4, 2)))
    relu = ep.ops.unary("relu", second)  # another op, another shape of the same size class
    np.testing.assert_array_equal(relu, np.maximum(second, 0))


def test_a_fork_while_another_thread_holds_the_cache_lock(device, x):
    """The child of a fork gets a lock of its own: its first large result does not wait forever."""
    if device != "cpu" or not hasattr(os, "fork"):
        pytest.skip("the cache serves CPU results; fork is POSIX")
    held, release = threading.Event(), threading.Event()

    def hold():
        with allocator._CACHE._lock:
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                ok = np.array_equal(ep.ops.repeat(x, (4, 2)), np.tile(x, (4, 2)))
            finally:
                os._exit(0 if ok else 1)
        deadline = time.monotonic() + 120
        while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung on the result cache's lock")
            time.sleep(0.05)
        assert os.waitstatus_to_exitcode(waited[1]) == 0
    finally:
        release.set()
        holder.join()
