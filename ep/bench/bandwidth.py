"""The physical limit: the copy bandwidth of this machine, measured in the same run."""
from __future__ import annotations

import numpy as np

from ep.bench.timing import measure
from ep.common.jit import template
from ep.cpu.parallel_for import ParallelFor, input_array, output_array

COPY_BYTES = 256 << 20
_F32 = np.dtype(np.float32)


@template()
def _copy_span(start, stop, args):
    # Slices indexed by the range variable alone: LLVM vectorizes the loop.
    src, dst = args
    a, b = src[start:stop], dst[start:stop]
    for i in range(stop - start):
        b[i] = a[i]


# A copy on every thread, by the CPU's one parallel loop (which also fixes ep's threading layer
# and LLVM options before this first parallel launch).
_THREADED_COPY = ParallelFor(_copy_span, "bench_copy", (input_array(_F32), output_array(_F32)), aligned=1)


def _threaded_copy(src: np.ndarray, dst: np.ndarray) -> None:
    _THREADED_COPY.run((src, dst), src.size, src.size)


def copy_bandwidth(device: str, repeats: int) -> dict:
    """GB/s (bytes read + written) of a 256 MiB copy: on the CPU the faster of memcpy (np.copyto,
    one thread) and a ParallelFor copy on every thread; on CUDA a device-to-device copy."""
    count = COPY_BYTES // 4
    if device == "cuda":
        from numba import cuda

        src, dst = cuda.to_device(np.ones(count, np.float32)), cuda.device_array(count, np.float32)
        timing = measure(lambda: dst.copy_to_device(src), cuda.synchronize, repeats=repeats, min_sample_s=0.01)
        rates = {"device_to_device_GBps": 2 * COPY_BYTES / timing.median_s / 1e9}
    else:
        src, dst = np.ones(count, np.float32), np.zeros(count, np.float32)
        _threaded_copy(src, dst)
        rates = {}
        copies = {"memcpy_GBps": lambda: np.copyto(dst, src), "threaded_GBps": lambda: _threaded_copy(src, dst)}
        for name, fn in copies.items():
            timing = measure(fn, lambda: None, repeats=repeats, min_sample_s=0.01)
            rates[name] = 2 * COPY_BYTES / timing.median_s / 1e9
    return {"GBps": max(rates.values()), "bytes": 2 * COPY_BYTES, **rates}
