"""CUDA kernels are cached on disk like the CPU's: CudaKernel compiles with cache=True, and Numba's
CUDA cache locates a kernel's entry by its kernel_digest name, the same in every process.

Compiling needs a GPU (numba-cuda compiles for the current device), so without one the test checks
the mechanism: the flag, and the cache entry two fresh processes would read and write.
"""
from __future__ import annotations

import json
import os

import pytest

from ep.common.runtime.device import cuda_installed
from nvvm import run_without_simulator

pytestmark = pytest.mark.skipif(not cuda_installed(), reason="needs numba-cuda")

_LOCATE = """
import json
from numba import cuda
from ep.common.runtime.data_type import DataType
from ep.cuda.primitive.gather import gather_kernel

kernel = gather_kernel(DataType.kInt64, 4, False, False)
cache = cuda.jit(cache=True)(kernel._fn)._cache
print(json.dumps({"cache": type(cache).__name__, "index": cache._cache_file._index_path, "name": kernel._fn.__qualname__}))
"""


def _locate() -> dict:
    stdout = run_without_simulator(["-c", _LOCATE], timeout=300)
    return json.loads(stdout.strip().splitlines()[-1])


def test_a_kernel_has_one_cache_entry_for_every_process():
    first, second = _locate(), _locate()
    assert first["cache"] == "CUDACache"
    assert first == second
    # The entry is named by the kernel's digest name, so an edit to what it inlines renames it.
    assert first["name"].startswith("gather_int64_u4_i32_") and first["name"] in os.path.basename(first["index"])


def test_cuda_kernels_compile_with_the_disk_cache_unless_generated(monkeypatch):
    from numba import types

    from ep.common.jit import define
    from ep.common.runtime.data_type import DataType
    from ep.cuda import kernel as kernel_module
    from ep.cuda.primitive import gather_common

    asked = []

    def jit(*args, **options):
        asked.append(options)
        return lambda fn: fn

    monkeypatch.setattr(kernel_module.cuda, "jit", jit)
    argtypes = gather_common.bounds_kernel(DataType.kInt32).argtypes
    kernel = kernel_module.CudaKernel(gather_common._first_bad, "fresh", argtypes)
    # A generated kernel (ep.fuse's) has no source file for Numba's cache to locate.
    generated = define("def kernel(x):\n    x[0] = 1\n", "kernel", {})
    made = kernel_module.CudaKernel(generated, "made", (types.int32[::1],))
    assert kernel.compiled is not None and made.compiled is not None
    # Launch bounds go with them on a GPU only (the simulator's jit takes none).
    bounds = {} if kernel_module.config.ENABLE_CUDASIM else {"launch_bounds": kernel_module.FULL_OCCUPANCY}
    assert asked == [{"cache": True, **bounds}, {"cache": False, **bounds}]
