"""CudaKernel: a kernel template specialized for one signature, launched on a stream, compilable to PTX."""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from numba import config, cuda

from ep.common.jit import specialize

THREADS_PER_BLOCK = 256
# The simulator runs every thread as a Python thread: keep its grids tiny.
_SIM_THREADS, _SIM_MAX_BLOCKS = 16, 2


def launch_config(work: int) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over work items."""
    if config.ENABLE_CUDASIM:
        return max(1, min(_SIM_MAX_BLOCKS, -(-work // _SIM_THREADS))), _SIM_THREADS
    blocks = -(-work // THREADS_PER_BLOCK)
    return max(1, min(blocks, _max_blocks())), THREADS_PER_BLOCK


@functools.cache
def _max_blocks() -> int:
    # Enough resident blocks to fill every SM; a grid-stride loop covers the rest.
    return cuda.get_current_device().MULTIPROCESSOR_COUNT * 32


class CudaKernel:
    """template specialized with bindings for argtypes; compiled on first launch."""

    def __init__(self, template: Callable, name: str, argtypes: Sequence, **bindings: object) -> None:
        self.name = name
        self.argtypes = tuple(argtypes)
        self._fn = specialize(template, name, **bindings)
        self._ptx_library = None

    @functools.cached_property
    def compiled(self):
        return cuda.jit(self.argtypes)(self._fn)

    def launch(self, stream, work: int, *args: object) -> None:
        """Launch on an ep CudaStream with a grid sized for work items."""
        blocks, threads = launch_config(work)
        self.compiled[blocks, threads, stream.native](*args)

    def ptx(self, cc: tuple[int, int]) -> str:
        """PTX for compute capability cc; needs no GPU (NVVM only).

        Typing and lowering, most of the work, run once per kernel (for the first cc asked); NVVM then
        turns that LLVM module into PTX per cc, as numba-cuda's dispatcher does for GPUs of different
        capabilities. What `cuda.compile_ptx` runs, less its per-call lowering: numba-cuda's lowering
        depends on the capability only below sm_75.
        """
        if self._ptx_library is None:
            # numba.cuda.compiler exists only outside the simulator, where PTX is made.
            from numba.core.compiler_lock import global_compiler_lock
            from numba.cuda.compiler import _compile_pyfunc_with_fixup

            with global_compiler_lock:
                self._ptx_library, _ = _compile_pyfunc_with_fixup(self._fn, self.argtypes, device=False, abi="numba", cc=cc)
        return self._ptx_library.get_asm_str(cc=cc)
