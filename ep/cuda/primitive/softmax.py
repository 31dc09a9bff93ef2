"""The softmax family's CUDA kernels: OneFlow's three paths (oneflow/core/cuda/softmax.cuh).

- warp: cols <= warp_max_cols (1024; 512 for float64). A group of `width` lanes (a power of two up to a warp) per
  row, each lane holding CPT elements of it in registers (one kernel per CPT in 1, 2, 4, ..., 32;
  small rows take groups narrower than a warp, several rows per warp); reductions by shuffles.
- block, row in shared memory: a block per row, which each thread reads once from global memory
  into dynamic shared memory (the compute dtype), when it fits in smem_max_bytes.
- block, uncached: a block per row re-reading it from global memory, for rows beyond that.

The thresholds are attributes of each op's CudaSoftmaxKernels, so a test lowers them to run every
path on small arrays. Every loop over rows is uniform across a block (whole batches of rows, the
rows past the end masked), so shuffles and barriers are reached by every thread.

Numba's simulator has no shuffles: there a group's reduction is a stand-in exchanging values
through the block (`_simulated_group_reduce`), which is why warp launches there take a whole warp.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterator

import numba
import numpy as np
from numba import config, cuda
from numba.np.numpy_support import as_dtype

from ep.common.jit import bound, scalar_function, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.softmax import SOFTMAX_OPS, SoftmaxOp, add, formulas, maximum
from ep.common.primitive.softmax import FACTORIES, SoftmaxKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import FLOATING_TYPES, DataType
from ep.common.runtime.device import DeviceType, cuda_device_count
from ep.cuda.kernel import CudaKernel, device_function
from ep.cuda.simulated import lanes_reduce
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

WARP = 32
# Elements per lane of the warp kernels: a row of up to WARP * CPT elements.
CPT_CHOICES = (1, 2, 4, 8, 16, 32)
# float64 rows stop at 16 per lane: 32 spill (ptxas: a lane's 32 doubles and libm's exp exceed 255 registers).
_MAX_CPT = {4: 32, 8: 16}
# Threads per block: the warp path's (4 warps) and the block paths'; the simulator runs each
# thread as a Python thread, and its warp launches need a whole warp.
_SIM = config.ENABLE_CUDASIM
WARP_THREADS = WARP if _SIM else 128
BLOCK_THREADS = 8 if _SIM else 256
# Blocks per launch at most: the simulator's tiny grids, or enough to fill every SM once (rows
# beyond are looped over).
_SIM_MAX_BLOCKS = 2
_THREADS_PER_SM = 2048
# Warp partial results a block reduction holds (1024 threads at most).
_MAX_WARPS = 32


@template("load", "store", "term", "finish", "output", "FORWARD", "COMPUTE", "CPT", "registers", "group_max", "group_sum")
def _warp(a, b, dst, rows, cols, width, shift):
    # Lane `lane` of group `group` holds columns j * width + lane (j < CPT) of its row: coalesced.
    tid = cuda.threadIdx.x
    lane = tid & (width - 1)
    group = tid >> shift
    groups = cuda.blockDim.x >> shift
    step = groups * cuda.gridDim.x
    zero = bound.COMPUTE(0)
    pad = bound.COMPUTE(-np.inf) if bound.FORWARD else zero
    held_a = bound.registers(bound.COMPUTE)
    held_b = bound.registers(bound.COMPUTE)
    first_row = cuda.blockIdx.x * groups
    while first_row < rows:
        row = first_row + group
        valid = row < rows
        offset = row * cols
        mx = bound.COMPUTE(-np.inf)
        for j in range(bound.CPT):
            col = j * width + lane
            if valid and col < cols:
                held_a[j] = bound.load(a[offset + col])
                held_b[j] = bound.load(b[offset + col])
            else:
                held_a[j] = pad
                held_b[j] = zero
            if bound.FORWARD:
                mx = maximum(mx, held_a[j])
        if bound.FORWARD:
            mx = bound.group_max(mx, width)
        s = zero
        for j in range(bound.CPT):
            s = add(s, bound.term(held_a[j], held_b[j], mx))
        s = bound.group_sum(s, width)
        p, q = bound.finish(mx, s)
        for j in range(bound.CPT):
            col = j * width + lane
            if valid and col < cols:
                dst[offset + col] = bound.store(bound.output(held_a[j], held_b[j], p, q))
        first_row += step


@template("load", "store", "term", "finish", "output", "FORWARD", "COMPUTE", "CACHED", "block_max", "block_sum")
def _block(a, b, dst, rows, cols):
    # A block per row. Thread t takes columns t, t + threads, ...; CACHED keeps them in shared
    # memory (a's at [col], b's at [cols + col] backward), read back only by the thread that
    # wrote them, so the cache needs no barrier.
    tid = cuda.threadIdx.x
    threads = cuda.blockDim.x
    partial = cuda.shared.array(_MAX_WARPS, bound.COMPUTE)
    cache = cuda.shared.array(0, bound.COMPUTE)
    zero = bound.COMPUTE(0)
    second = 0 if bound.FORWARD else cols
    row = cuda.blockIdx.x
    while row < rows:
        offset = row * cols
        mx = bound.COMPUTE(-np.inf)
        if bound.FORWARD or bound.CACHED:
            col = tid
            while col < cols:
                va = bound.load(a[offset + col])
                if bound.CACHED:
                    cache[col] = va
                    if not bound.FORWARD:
                        cache[cols + col] = bound.load(b[offset + col])
                if bound.FORWARD:
                    mx = maximum(mx, va)
                col += threads
        if bound.FORWARD:
            mx = bound.block_max(mx, partial)

        def held(col):
            # The row's a and b at col, read back from the cache or again from global memory.
            if bound.CACHED:
                return cache[col], cache[second + col]
            return bound.load(a[offset + col]), bound.load(b[offset + col])

        s = zero
        col = tid
        while col < cols:
            va, vb = held(col)
            s = add(s, bound.term(va, vb, mx))
            col += threads
        s = bound.block_sum(s, partial)
        p, q = bound.finish(mx, s)
        col = tid
        while col < cols:
            va, vb = held(col)
            dst[offset + col] = bound.store(bound.output(va, vb, p, q))
            col += threads
        row += cuda.gridDim.x


def _shuffle_reduce(combine: Callable) -> Callable:
    """A group's reduction by combine: a butterfly of shuffles over its `width` lanes, so every
    lane ends with the result (width a power of two up to a warp; the groups tile the warp)."""

    @scalar_function
    def reduce(value, width):
        offset = width >> 1
        while offset > 0:
            value = combine(value, cuda.shfl_xor_sync(0xFFFFFFFF, value, offset))
            offset >>= 1
        return value

    return reduce


def _simulated_group_reduce(combine: Callable) -> Callable:
    """The simulator's stand-in for _shuffle_reduce: each thread posts its value in a table of its
    block, and after a barrier reduces its group's entries (a group clipped to the block, which
    there may be smaller than a warp). Called by every thread of the block alike, as a shuffle is."""

    def reduce(value, width):
        return lanes_reduce(value, combine, lambda tid, size: range(tid - tid % width, min(tid - tid % width + width, size)))

    return reduce


if _SIM:
    GROUP_MAX, GROUP_SUM = _simulated_group_reduce(np.fmax), _simulated_group_reduce(np.add)
else:
    GROUP_MAX, GROUP_SUM = _shuffle_reduce(maximum), _shuffle_reduce(add)


def _block_reduce(group_reduce: Callable, combine: Callable) -> Callable:
    """A block's reduction: group_reduce over each warp, whose lane 0 posts the result in
    partial[warp] (shared, a slot per warp), then the warps' results combined in order, so every
    thread ends with the result. Called by every thread of the block alike; the last barrier keeps
    partial until every thread has read it."""

    def reduce(value, partial):
        tid = cuda.threadIdx.x
        value = group_reduce(value, WARP)
        if tid & (WARP - 1) == 0:
            partial[tid >> 5] = value
        cuda.syncthreads()
        value = partial[0]
        for w in range(1, (cuda.blockDim.x + WARP - 1) >> 5):
            value = combine(value, partial[w])
        cuda.syncthreads()
        return value

    return device_function(reduce)


BLOCK_MAX, BLOCK_SUM = _block_reduce(GROUP_MAX, maximum), _block_reduce(GROUP_SUM, add)


@functools.cache
def _registers(cpt: int) -> Callable:
    """A lane's cpt elements of a dtype: a local array Numba types with cpt as a constant, which
    NVVM keeps in registers (every index is a constant once the loops over it unroll)."""
    if _SIM:
        return lambda dtype: np.empty(cpt, as_dtype(dtype))

    @scalar_function
    def registers(dtype):
        return cuda.local.array(cpt, dtype)

    return registers


def _warp_shape(cols: int) -> tuple[int, int]:
    """(width, CPT) of the warp kernel for rows of cols: the narrowest group holding a row with one
    element per lane, else a warp with the fewest elements per lane."""
    if cols <= WARP:
        return 1 << (cols - 1).bit_length(), 1
    return WARP, 1 << (-(-cols // WARP) - 1).bit_length()


def _launch(stream, kernel: CudaKernel, blocks: int, threads: int, shared: int, *args: object) -> None:
    """kernel on blocks of threads with shared bytes of dynamic shared memory, on stream's device."""
    configured = kernel.compiled[blocks, threads, stream.native, shared]
    if cuda_device_count() > 1:
        with cuda.gpus[stream.device.index]:
            configured(*args)
    else:
        configured(*args)


@functools.cache
def _max_blocks(device_index: int, threads: int) -> int:
    if _SIM:
        return _SIM_MAX_BLOCKS
    return cuda.gpus[device_index].MULTIPROCESSOR_COUNT * (_THREADS_PER_SM // threads)


class CudaSoftmaxKernels(SoftmaxKernels):
    """One op's kernels; warp_max_cols and smem_max_bytes choose the path (OneFlow's: a warp per row
    below 1024 columns; the row in shared memory where it fits the 48 KiB a kernel gets without
    opting in to more)."""

    def __init__(self, op: SoftmaxOp) -> None:
        super().__init__(op)
        self.warp_max_cols = WARP * CPT_CHOICES[-1]
        self.smem_max_bytes = 48 * 1024

    def _bindings(self, dtype: DataType) -> dict[str, object]:
        compute = dtype.compute_dtype
        return dict(
            load=load_fn(dtype, DeviceType.kCUDA),
            store=store_fn(dtype, DeviceType.kCUDA),
            FORWARD=self.op.forward,
            COMPUTE=numba.from_dtype(compute),
            **{name: value for name, value in vars(formulas(self.op, compute)).items() if name != "rescale"},
        )

    def _argtypes(self, dtype: DataType, extra: int) -> tuple:
        storage = numba.from_dtype(dtype.storage_dtype)
        return (storage[::1], storage[::1], storage[::1], numba.int64, numba.int64, *(numba.int64,) * extra)

    @function_cache("kernels")
    def warp_kernel(self, dtype: DataType, cpt: int) -> CudaKernel:
        name = f"{self.op.name}_warp{cpt}_{dtype.value}"
        bindings = self._bindings(dtype)
        return CudaKernel(
            _warp, name, self._argtypes(dtype, 2), full_occupancy=False, CPT=cpt, registers=_registers(cpt),
            group_max=GROUP_MAX, group_sum=GROUP_SUM, **bindings,
        )

    @function_cache("kernels")
    def block_kernel(self, dtype: DataType, cached: bool) -> CudaKernel:
        name = f"{self.op.name}_block_{'smem' if cached else 'uncached'}_{dtype.value}"
        return CudaKernel(
            _block, name, self._argtypes(dtype, 0), full_occupancy=False, CACHED=cached,
            block_max=BLOCK_MAX, block_sum=BLOCK_SUM, **self._bindings(dtype),
        )

    def launch(self, stream, dtype: DataType, rows: int, cols: int, a, b, dst) -> None:
        index = stream.device.index
        if cols <= min(self.warp_max_cols, WARP * _MAX_CPT[dtype.compute_dtype.itemsize]):
            width, cpt = _warp_shape(cols)
            rows_per_block = WARP_THREADS // width
            blocks = min(-(-rows // rows_per_block), _max_blocks(index, WARP_THREADS))
            kernel = self.warp_kernel(dtype, cpt)
            _launch(stream, kernel, blocks, WARP_THREADS, 0, a, b, dst, rows, cols, width, width.bit_length() - 1)
            return
        shared = cols * dtype.compute_dtype.itemsize * (1 if self.op.forward else 2)
        cached = shared <= self.smem_max_bytes
        blocks = min(rows, _max_blocks(index, BLOCK_THREADS))
        kernel = self.block_kernel(dtype, cached)
        _launch(stream, kernel, blocks, BLOCK_THREADS, shared if cached else 0, a, b, dst, rows, cols)

    def all_kernels(self) -> Iterator[object]:
        for dtype in FLOATING_TYPES:
            for cpt in CPT_CHOICES:
                if cpt <= _MAX_CPT[dtype.compute_dtype.itemsize]:
                    yield self.warp_kernel(dtype, cpt)
            yield self.block_kernel(dtype, True)
            yield self.block_kernel(dtype, False)


KERNELS = {op: CudaSoftmaxKernels(op) for op in SOFTMAX_OPS}

for _op, _kernels in KERNELS.items():
    _interface, _implementation = FACTORIES[_op]
    REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, _interface, _implementation(DeviceType.kCUDA, _kernels))
