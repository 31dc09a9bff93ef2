"""CudaKernel: a kernel template specialized for one signature, launched on a stream, compilable to PTX."""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from numba import config, cuda

from ep.common.jit import is_generated, scalar_function, specialize
from ep.common.runtime.buffer import keep_for
from ep.common.runtime.caches import BOUNDS
from ep.common.runtime.device import cuda_device_count
from ep.common.runtime.once import cached_property

THREADS_PER_BLOCK = 256
# A memory-bound kernel declares __launch_bounds__(256, 8): with 8 resident blocks of 256 threads
# an SM is full (2048 threads on sm_80 and sm_90), so ptxas keeps it within 65536 / 2048 = 32
# registers: 100% occupancy. One that would spill there declares no bounds (with .maxntid alone
# ptxas trades registers for spills: 40 and 16 bytes of spill against 48 and none for a float64 exp).
FULL_OCCUPANCY = (THREADS_PER_BLOCK, 8)
# The simulator runs every thread as a Python thread: keep its grids tiny.
_SIM_THREADS, _SIM_MAX_BLOCKS = 8, 2
# Threads per block of every launch in this process (the simulator is chosen at import).
_THREADS = _SIM_THREADS if config.ENABLE_CUDASIM else THREADS_PER_BLOCK
# Launches kept per stream (CudaStream.launches): configured ones by (kernel, blocks the work asks
# for), and a primitive's prepared ones (keep_launch); beyond this many all go, and a program
# cycling through more kernels, sizes and buffers configures and prepares them again.
_MAX_CONFIGURED = BOUNDS["launch state"]


def launch_config(work: int, device_index: int = 0) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over work items on device device_index."""
    if config.ENABLE_CUDASIM:
        return max(1, min(_SIM_MAX_BLOCKS, -(-work // _SIM_THREADS))), _SIM_THREADS
    blocks = -(-work // THREADS_PER_BLOCK)
    return max(1, min(blocks, _max_blocks(device_index))), THREADS_PER_BLOCK


@functools.cache
def _max_blocks(device_index: int) -> int:
    # Enough resident blocks to fill every SM of that device; a grid-stride loop covers the rest.
    return cuda.gpus[device_index].MULTIPROCESSOR_COUNT * 32


@functools.cache
def _several_devices() -> bool:
    return cuda_device_count() > 1



def device_function(fn: Callable) -> Callable:
    """fn for CUDA kernels to call: inlined into them when compiled; on the simulator a device
    function, Python that sees the launch's simulated cuda module (a scalar function would be
    compiled for the CPU)."""
    return cuda.jit(device=True)(fn) if config.ENABLE_CUDASIM else scalar_function(fn)


class CudaKernel:
    """template specialized with bindings for argtypes; compiled on first launch."""

    def __init__(
        self, template: Callable, name: str, argtypes: Sequence, *, full_occupancy: bool = True, **bindings: object
    ) -> None:
        self.name = name
        self.argtypes = tuple(argtypes)
        self.launch_bounds = FULL_OCCUPANCY if full_occupancy else None
        self._fn = specialize(template, name, **bindings)
        self._ptx_library = None

    @cached_property
    def compiled(self):
        # The simulator's jit takes no launch bounds. The disk cache: the kernel's qualname carries
        # its kernel_digest, so Numba's cache keys it as it keys the CPU kernels, and a new process
        # loads the cubin instead of compiling; a generated kernel (ep.fuse's, jit.define) has no
        # source file for Numba's cache to locate, so it compiles once per process.
        bounds = {} if config.ENABLE_CUDASIM or self.launch_bounds is None else {"launch_bounds": self.launch_bounds}
        if config.ENABLE_CUDASIM:
            from ep.cuda.simulated import typed_bindings

            typed_bindings(self._fn.__globals__["bound"])
        return cuda.jit(self.argtypes, cache=not is_generated(self._fn), **bounds)(self._fn)

    def launch(self, stream, work: int, *args: object) -> None:
        """Launch on an ep CudaStream with a grid sized for work items, on the stream's device."""
        # The configured launch is kept: a repeated launch is one lookup and numba's own call.
        try:
            configured = stream.launches[self, -(-work // _THREADS)]
        except KeyError:
            configured = self._configure(stream, work)
        configured(*args)

    def configured(self, stream, work: int) -> Callable[..., None]:
        """The kernel configured for work items on stream, for a caller that keeps it (keep_launch):
        calling it with the kernel's arguments is launch(stream, work, ...)."""
        configured = stream.launches.get((self, -(-work // _THREADS)))
        return self._configure(stream, work) if configured is None else configured

    def _configure(self, stream, work: int) -> Callable[..., None]:
        """The kernel configured for work items on stream, kept in stream.launches."""
        configured = self._bind(stream, work)
        _make_room(stream)
        stream.launches[self, -(-work // _THREADS)] = configured
        return configured

    def _bind(self, stream, work: int) -> Callable[..., None]:
        """numba's kernel[blocks, threads, stream] for work items, made current on the stream's
        device around the call where there are several."""
        index = stream.device.index
        blocks, threads = launch_config(work, index)
        configured = self.compiled[blocks, threads, stream.native]
        if _several_devices():
            # A launch goes to the current device: make the stream's device current for it.
            device = cuda.gpus[index]
            launch = configured

            def configured(*args: object) -> None:
                with device:
                    launch(*args)

        return configured

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
                self._ptx_library, _ = _compile_pyfunc_with_fixup(
                    self._fn, self.argtypes, device=False, abi="numba", cc=cc, launch_bounds=self.launch_bounds
                )
        return self._ptx_library.get_asm_str(cc=cc)


def keep_launch(stream, key: object, launch: tuple, *buffers: object) -> tuple:
    """Keep a primitive's prepared launch on stream, in stream.launches under key, and return it:
    launch holds configured kernels (configured()) and their arguments, so that a repeated Launch
    finds it and calls numba's launch at once.

    With buffers (two: see buffer.keep_for) it is kept while they live (it holds views of them) and
    found by buffer.kept_for(stream.launches, key, *buffers), key naming them by id; without, it
    is found by stream.launches.get(key). key (or launch) must hold the plan it names, so that no
    other plan takes its id while the entry lives.
    """
    _make_room(stream)
    if buffers:
        return keep_for(stream.launches, key, launch, *buffers)
    stream.launches[key] = launch
    return launch


def _make_room(stream) -> None:
    if len(stream.launches) >= _MAX_CONFIGURED:
        stream.launches.clear()
