"""The physical limit: the copy bandwidth of this machine, measured in the same run."""
from __future__ import annotations

import importlib

import numpy as np
from numba import njit, prange

from ep.bench.timing import measure

COPY_BYTES = 256 << 20


@njit(parallel=True, cache=True)
def _threaded_copy(src, dst):
    for i in prange(src.size):
        dst[i] = src[i]


def copy_bandwidth(device: str, repeats: int) -> dict:
    """GB/s (bytes read + written) of a 256 MiB copy: on the CPU the faster of memcpy (np.copyto,
    one thread) and a prange copy on every thread; on CUDA a device-to-device copy."""
    count = COPY_BYTES // 4
    if device == "cuda":
        from numba import cuda

        src, dst = cuda.to_device(np.ones(count, np.float32)), cuda.device_array(count, np.float32)
        timing = measure(lambda: dst.copy_to_device(src), cuda.synchronize, repeats=repeats, min_sample_s=0.01)
        rates = {"device_to_device_GBps": 2 * COPY_BYTES / timing.median_s / 1e9}
    else:
        # ep's threading layer and LLVM target options, set on importing its CPU kernels, hold
        # from the first parallel compilation and launch on: this copy's.
        importlib.import_module("ep.cpu.kernel")
        src, dst = np.ones(count, np.float32), np.zeros(count, np.float32)
        _threaded_copy(src, dst)
        rates = {}
        copies = {"memcpy_GBps": lambda: np.copyto(dst, src), "threaded_GBps": lambda: _threaded_copy(src, dst)}
        for name, fn in copies.items():
            timing = measure(fn, lambda: None, repeats=repeats, min_sample_s=0.01)
            rates[name] = 2 * COPY_BYTES / timing.median_s / 1e9
    return {"GBps": max(rates.values()), "bytes": 2 * COPY_BYTES, **rates}
