"""Reduce's CUDA kernel: blocks of X x Y threads over tiles of X outputs, a state per thread, then
warp shuffles and a tree in shared memory; two stages where the outputs alone would leave SMs idle.

src is read as (outer, length, inner). A tile is X consecutive outputs (X = 1 for rows, inner == 1:
the block runs along the row; else up to a warp of adjacent columns, read coalesced); thread (x, y)
steps through every Y-th element of output x's slice of the reduced run. Lanes of a warp with the
same x merge their states by shuffles (xor offsets 16 down to X), each warp's result goes to shared
memory, and a tree over the warps finishes the block. When the tiles are fewer than the SMs can
hold, each reduction is cut into slices: stage 1 writes one state per slice and output to scratch
of the stream, stage 2 (the same kernel, merging states instead of stepping elements) reduces
them. No atomics: the order of every merge is fixed, so a result is the same on every run.

Numba's simulator has no shuffles: there the warp stage is a stand-in exchanging states through
the block (_simulated_warp_merge), and blocks are a warp of 32 threads.
"""
from __future__ import annotations

import functools
from typing import Callable

import numba
import numpy as np
from numba import config, cuda

from ep.common.jit import bound, scalar_function, template
from ep.common.math.convert import store_fn
from ep.common.math.reduce import accumulate_dtype, formulas
from ep.common.primitive.reduce import FusedSource, ReduceFactoryImpl, ReduceKernels, ReducePlan, source_element, source_type
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType, cuda_device_count
from ep.cuda.kernel import THREADS_PER_BLOCK, CudaKernel, device_function
from ep.cuda.simulated import lanes_reduce
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.reduce import ReduceFactory, ReduceOp

WARP = 32
_SIM = config.ENABLE_CUDASIM
THREADS = WARP if _SIM else THREADS_PER_BLOCK
# Blocks per launch at most: the simulator's tiny grids, or enough to fill every SM (tiles beyond
# are looped over).
_SIM_MAX_BLOCKS = 2
_THREADS_PER_SM = 2048
# A slice gives each of its threads at least this many elements: shorter ones would spend more on
# states than they save.
MIN_PER_THREAD = 16


def _shared_states(acc):
    # One allocation a line: the simulator tells a block's shared arrays apart by their lines.
    values_a = cuda.shared.array(THREADS, acc)
    values_b = cuda.shared.array(THREADS, acc)
    values_c = cuda.shared.array(THREADS, acc)
    indices = cuda.shared.array(THREADS, numba.int64)
    return values_a, values_b, values_c, indices


# shared_states(acc): a state per thread of the block in shared memory, as four arrays (its three
# values of acc and its index), for Reduce's and Scan's kernels.
shared_states = device_function(_shared_states)


@template("init", "step", "merge", "finish", "element", "store", "warp_merge", "ACC", "STATES")
def _reduce(
    src, dst, states_in, indices_in, states_out, indices_out, count, length, inner, outer_stride, r_stride, chunk, tiles,
    num_tiles, x_size, x_shift, final, parts_in, total, correction,
):
    # Tile t = part * tiles + k: outputs k * x_size ... + x_size - 1, elements [part * chunk, + chunk)
    # of their runs; output out's element r is at (out // inner) * outer_stride + out % inner + r * r_stride.
    # STATES: the elements are stage 1's states (parts_in of each array's three), merged. src is
    # read through element(src, p), element p in the compute dtype: an array's, or a fused
    # expression's over its arguments (a tuple).
    shared_a, shared_b, shared_c, shared_i = shared_states(bound.ACC)
    tid = cuda.threadIdx.x
    x = tid & (x_size - 1)
    y = tid >> x_shift
    y_size = cuda.blockDim.x >> x_shift
    warp, lane = tid >> 5, tid & (WARP - 1)
    warps = (cuda.blockDim.x + WARP - 1) >> 5
    tile = cuda.blockIdx.x
    while tile < num_tiles:
        part = tile // tiles
        out = (tile - part * tiles) * x_size + x
        state = bound.init()
        if out < count:
            o = out // inner
            base = o * outer_stride + (out - o * inner)
            r = part * chunk + y
            end = min(part * chunk + chunk, length)
            while r < end:
                p = base + r * r_stride
                if bound.STATES:
                    held = (states_in[p], states_in[parts_in + p], states_in[2 * parts_in + p], indices_in[p])
                    state = bound.merge(state, held)
                else:
                    state = bound.step(state, bound.element(src, p), r)
                r += y_size
        # Lanes x, x + X, ... of a warp merge; lane x < X then holds the warp's state of output x.
        state = bound.warp_merge(state, x_size)
        if lane < x_size:
            slot = warp * x_size + lane
            shared_a[slot], shared_b[slot], shared_c[slot], shared_i[slot] = state[0], state[1], state[2], state[3]
        cuda.syncthreads()
        half = warps >> 1
        while half > 0:
            if tid < half * x_size:
                other = tid + half * x_size
                merged = bound.merge(
                    (shared_a[tid], shared_b[tid], shared_c[tid], shared_i[tid]),
                    (shared_a[other], shared_b[other], shared_c[other], shared_i[other]),
                )
                shared_a[tid], shared_b[tid], shared_c[tid], shared_i[tid] = merged[0], merged[1], merged[2], merged[3]
            cuda.syncthreads()
            half >>= 1
        if tid < x_size and out < count:
            state = (shared_a[tid], shared_b[tid], shared_c[tid], shared_i[tid])
            if final:
                dst[out] = bound.store(bound.finish(state, total, correction))
            else:
                q = part * count + out
                parts = num_tiles // tiles * count
                states_out[q], states_out[parts + q], states_out[2 * parts + q], indices_out[q] = state[0], state[1], state[2], state[3]
        cuda.syncthreads()
        tile += cuda.gridDim.x


def _shuffle_merge(merge: Callable, acc) -> Callable:
    """A warp's merge of the states of lanes with the same x: shuffles over xor offsets 16 down
    to x_size, so that lane x ends with the merge of lanes x, x + x_size, ..."""
    # shfl_sync takes no uint64: a uint64 state moves as the int64 of the same bits.
    word = numba.int64 if acc == numba.uint64 else acc

    @scalar_function
    def warp_merge(state, x_size):
        offset = WARP >> 1
        while offset >= x_size:
            other = (
                acc(cuda.shfl_xor_sync(0xFFFFFFFF, word(state[0]), offset)),
                acc(cuda.shfl_xor_sync(0xFFFFFFFF, word(state[1]), offset)),
                acc(cuda.shfl_xor_sync(0xFFFFFFFF, word(state[2]), offset)),
                cuda.shfl_xor_sync(0xFFFFFFFF, state[3], offset),
            )
            state = merge(state, other)
            offset >>= 1
        return state

    return warp_merge


def _simulated_warp_merge(merge: Callable) -> Callable:
    """The simulator's stand-in for _shuffle_merge: each thread posts its state in a table of its
    block, and after a barrier merges the states of its warp's lanes with its x."""

    def warp_merge(state, x_size):
        return lanes_reduce(state, merge, lambda tid, size: range(tid - tid % WARP + tid % x_size, min(tid - tid % WARP + WARP, size), x_size))

    return warp_merge


def _x_size(inner: int) -> int:
    """Outputs a tile takes: 1 along rows, else the power of two covering inner, up to a warp."""
    return 1 if inner == 1 else min(WARP, 1 << (inner - 1).bit_length())


@functools.cache
def max_blocks(device_index: int) -> int:
    if _SIM:
        return _SIM_MAX_BLOCKS
    return cuda.gpus[device_index].MULTIPROCESSOR_COUNT * (_THREADS_PER_SM // THREADS)


class CudaReduceKernels(ReduceKernels):
    @function_cache("kernels")
    def kernel(self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, merging: bool = False, source: FusedSource | None = None) -> CudaKernel:
        """op's kernel from src_dtype into dst_dtype: stage 1 (or the only one), or (merging) stage 2;
        source: a fused expression's (ReduceKernels.launch), its arguments read instead of an array."""
        rule = formulas(op.value, src_dtype.compute_dtype)
        acc = numba.from_dtype(accumulate_dtype(op.value, src_dtype.compute_dtype))
        out = numba.from_dtype(dst_dtype.storage_dtype)
        src = source_type(src_dtype, source, lambda dtype: numba.from_dtype(dtype)[::1])
        argtypes = (src, out[::1], acc[::1], numba.int64[::1], acc[::1], numba.int64[::1], *(numba.int64,) * 13, acc)
        warp_merge = _simulated_warp_merge(rule.merge) if _SIM else _shuffle_merge(rule.merge, acc)
        name = f"reduce_{'fused_' if source else ''}{op.value}_{src_dtype.value}_{dst_dtype.value}{'_states' if merging else ''}"
        element = source_element(DeviceType.kCUDA, src_dtype, source)
        # The simulator runs kernels as Python: it indexes buffers it could not pass to a compiled function.
        element = element.py_func if _SIM else element
        # A state is four values (a float64 pair's and an int64's registers among them) and the
        # formulas' branches: more registers than full occupancy's 32 without spilling.
        return CudaKernel(
            _reduce, name, argtypes, full_occupancy=False, element=element,
            store=store_fn(dst_dtype, DeviceType.kCUDA), warp_merge=warp_merge, ACC=acc, STATES=merging,
            init=rule.init, step=rule.step, merge=rule.merge, finish=rule.finish,
        )

    def launcher(self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, plan: ReducePlan, source=None) -> Callable[..., None]:
        acc = accumulate_dtype(op.value, src_dtype.compute_dtype)
        correction = acc.type(plan.correction if acc.kind == "f" else 0)
        first = self.kernel(op, src_dtype, dst_dtype, False, source)
        second = self.kernel(op, src_dtype, dst_dtype, True, source)
        # The split depends on the stream's device (its multiprocessors): worked out per launch.
        return lambda stream, src, dst: _launch(stream, first, second, acc, plan, correction, src, dst)


def _launch(stream, first: CudaKernel, second: CudaKernel, acc: np.dtype, plan: ReducePlan, correction, src, dst) -> None:
    """Stage 1 of plan (each output's slices of its reduction), and when a reduction was cut into
    slices, stage 2 merging their states."""
    count, length, inner = plan.dst_count, plan.length, plan.inner
    limit = max_blocks(stream.device.index)
    x_size = _x_size(inner)
    tiles = -(-count // x_size)
    y_size = THREADS // x_size
    slices = 1
    if tiles < limit:
        slices = max(1, min(-(-limit // tiles), length // (y_size * MIN_PER_THREAD)))
    chunk = -(-length // slices) if length else 0
    slices = -(-length // chunk) if length else 1
    parts = count * slices
    states, indices = state_scratch(stream, acc, parts if slices > 1 else 1)
    launch_blocks(
        stream, first, min(tiles * slices, limit), src, dst, states, indices, states, indices, count, length, inner,
        length * inner, inner, chunk, tiles, tiles * slices, x_size, x_size.bit_length() - 1, int(slices == 1), 0, length,
        correction,
    )
    if slices > 1:
        # Stage 2: outputs' states [slice][output] reduced over slices, read as (1, slices, count).
        x_size = _x_size(count)
        tiles = -(-count // x_size)
        launch_blocks(
            stream, second, min(tiles, limit), src, dst, states, indices, states, indices, count, slices, count, 0,
            count, slices, tiles, tiles, x_size, x_size.bit_length() - 1, 1, parts, length, correction,
        )


def state_scratch(stream, acc: np.dtype, parts: int) -> tuple:
    """The stream's scratch for parts states: (three arrays of acc, one of int64), from one buffer
    when acc is int64 (the stream keeps one buffer per dtype)."""
    if acc == np.int64:
        buffer = stream.temporary(4 * parts, np.int64)
        return buffer[: 3 * parts], buffer[3 * parts :]
    return stream.temporary(3 * parts, acc), stream.temporary(parts, np.int64)


def launch_blocks(stream, kernel: CudaKernel, blocks: int, *args: object) -> None:
    """kernel on blocks of THREADS threads on stream's device."""
    configured = kernel.compiled[blocks, THREADS, stream.native]
    if cuda_device_count() > 1:
        with cuda.gpus[stream.device.index]:
            configured(*args)
    else:
        configured(*args)


# One instance, so that ReduceFused (reduce_fused.py) launches the kernels Reduce compiled.
KERNELS = CudaReduceKernels()
REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ReduceFactory, ReduceFactoryImpl(DeviceType.kCUDA, KERNELS))
