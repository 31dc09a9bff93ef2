"""The host result allocator: new C-contiguous NumPy arrays, a large one reusing the memory of a
released result of the same size (ep.ops' results, and the global tensors' boxing buffers)."""
from __future__ import annotations

import math
import os
import threading
import weakref

import numpy as np

from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import Device, DeviceType, Stream


class _Lease:
    """A cached block lent to one result: NumPy keeps it as the result's base, so it lives exactly
    as long as the result or a view of it does."""

    __slots__ = ("__array_interface__", "__weakref__")


class _BlockCache:
    """Memory of released large results, handed to new results of the same size.

    Fresh memory costs a page fault per page, and the OS zeroes each page it maps: for a result
    written once that costs about as much again as the writing (ep.ops.repeat of a 32 MiB result
    ran at a third of the speed of a Launch into an existing array). NumPy and PyTorch allocate
    fresh memory for every result on the CPU (malloc, with MADV_HUGEPAGE from 4 MiB on, and
    posix_memalign); the fastest contender is one that does not: like PyTorch's CUDA caching
    allocator, a released block is kept (up to limit bytes, the most recently released first)
    and reused without faulting.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._blocks: list[np.ndarray] = []  # released blocks, oldest first
        self._held = 0
        # Reentrant: a garbage collection while the lock is held may release a lease on this thread.
        self._lock = threading.RLock()
        # A fork while another thread holds the lock would leave the child's copy held forever.
        os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self) -> None:
        self._lock = threading.RLock()

    def array(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> np.ndarray:
        block = self._take(nbytes)
        lease = _Lease()
        lease.__array_interface__ = {"shape": shape, "typestr": dtype.str, "data": (block.ctypes.data, False), "version": 3}
        weakref.finalize(lease, self._give, block).atexit = False
        return np.asarray(lease)

    def held(self, nbytes: int) -> int:
        """How many released blocks of nbytes wait to be reused."""
        with self._lock:
            return sum(block.nbytes == nbytes for block in self._blocks)

    def _take(self, nbytes: int) -> np.ndarray:
        with self._lock:
            for i in range(len(self._blocks) - 1, -1, -1):
                if self._blocks[i].nbytes == nbytes:
                    self._held -= nbytes
                    return self._blocks.pop(i)
        return np.empty(nbytes, np.uint8)

    def _give(self, block: np.ndarray) -> None:
        with self._lock:
            self._blocks.append(block)
            self._held += block.nbytes
            while self._held > self._limit:
                self._held -= self._blocks.pop(0).nbytes


# This machine's memory: a result beyond it is refused up front (with overcommit the allocation
# succeeds, and writing it gets the process killed).
try:
    _PHYSICAL_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
except (AttributeError, ValueError, OSError):  # a platform without them: no bound but NumPy's
    _PHYSICAL_BYTES = None

# Results from this size on come from the cache: below it, malloc reuses freed memory itself.
_CACHED_BYTES = 4 << 20
_CACHE = _BlockCache(limit=512 << 20)
_CPU = DeviceType.kCPU


def empty(shape: tuple[int, ...], dtype: DataType, device: Device, stream: Stream, given_by: str = "result"):
    """ep's result allocator: a new C-contiguous array of shape and dtype on device (on stream);
    on the CPU one of _CACHED_BYTES or more may reuse a released result's memory. given_by: the
    caller's argument whose value gave shape, named when no such array can be made."""
    try:
        host_dtype = dtype.dtype
        nbytes = math.prod(shape) * host_dtype.itemsize
        if 0 < nbytes < _CACHED_BYTES and device.device_type is _CPU and (_PHYSICAL_BYTES is None or nbytes <= _PHYSICAL_BYTES):
            return np.empty(shape, host_dtype)  # the common case: within every limit below
        # NumPy's rule, its dims of 0 left out (numba-cuda's own check fails with a SystemError);
        # only an empty or a huge shape can break it.
        if (not nbytes or nbytes >= 1 << 62) and math.prod(n for n in shape if n) * host_dtype.itemsize >= 1 << 63:
            raise ValueError("an array holds at most 2**63 - 1 bytes")
        if device.device_type is _CPU:
            if _PHYSICAL_BYTES is not None and _PHYSICAL_BYTES < nbytes:
                raise MemoryError(f"{nbytes} bytes, more than this machine's {_PHYSICAL_BYTES} bytes of memory")
            if nbytes < _CACHED_BYTES:  # an empty array
                return np.empty(shape, host_dtype)
            return _CACHE.array(tuple(shape), host_dtype, nbytes)
        from numba import cuda

        return cuda.device_array(shape, dtype.dtype, stream=stream.native)
    except (ValueError, MemoryError) as error:
        raise type(error)(f"{given_by}: gives shape {tuple(shape)} of {dtype.value}, which no array can have here ({error})") from None


def reusable(nbytes: int) -> int:
    """How many new host arrays of nbytes empty() can give from released memory (no fresh pages)."""
    return _CACHE.held(nbytes) if nbytes >= _CACHED_BYTES else 0
