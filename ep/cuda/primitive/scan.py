"""Scan's CUDA kernel: blocks of X x Y threads over tiles of X runs and a chunk of their length, a
block scan of the threads' states in shared memory, three phases where a run spans chunks.

src is read as (outer, length, inner): outer * inner runs, element r of run `line` at
(line // inner) * length * inner + line % inner + r * inner. A tile is X consecutive runs (adjacent
columns when inner > 1, read coalesced) and a chunk of Y * PER of their elements: thread (x, y)
steps through its PER consecutive elements of run x, the block scans the Y states of each run
(Hillis and Steele's, in shared memory), and each thread steps its elements again from the merge
of the states before it, writing the results. A run longer than a chunk takes three phases, as a
three-phase scan does: every chunk's state, each run's chunk states scanned into the carries
entering its chunks (the same kernel, its elements states), and the chunks stepped from their
carries. No atomics: a result is the same on every run.
"""
from __future__ import annotations

from typing import Iterator

import numba
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.reduce import scan_accumulate_dtype, scan_formulas
from ep.common.primitive.scan import ScanFactoryImpl, ScanKernels, ScanPlan, combinations
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.cuda.primitive.reduce import THREADS, WARP, launch_blocks, max_blocks, shared_states, state_scratch
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.reduce import ReduceOp
from ep.include.primitive.scan import ScanFactory

# Elements a thread steps in a chunk: enough to pay for the block scan of the states.
PER = 16
# The kernel's stages (see _scan).
SCAN, CUT, TOTALS, CARRY = 0, 1, 2, 3


@template("init", "step", "merge", "finish", "load", "store", "ACC")
def _scan(
    src, dst, states_in, indices_in, states_out, indices_out, third_in, third_out, lines, length, inner, chunk, chunks,
    tiles, x_size, x_shift, per, stage, exclusive,
):
    # Tile t = part * tiles + k: runs k * x_size + x, elements [part * chunk, + chunk). Stage (one
    # kernel for all, so that an op compiles once): SCAN, the results; CUT, the same from each
    # chunk's carry at part * lines + line of states_in; TOTALS, each chunk's state alone, into
    # states_out there; CARRY, elements that are states (element r of run line at r * lines + line
    # of states_in), scanned (exclusive) into states_out.
    shared_a, shared_b, shared_c, shared_i = shared_states(bound.ACC)
    tid = cuda.threadIdx.x
    x = tid & (x_size - 1)
    y = tid >> x_shift
    y_size = cuda.blockDim.x >> x_shift
    tile = cuda.blockIdx.x
    while tile < tiles * chunks:
        part = tile // tiles
        line = (tile - part * tiles) * x_size + x
        active = line < lines
        o = line // inner
        base = o * length * inner + (line - o * inner)
        r0 = part * chunk + y * per
        r1 = min(r0 + per, min(part * chunk + chunk, length))
        state = bound.init()
        if active:
            for r in range(r0, r1):
                if stage == CARRY:
                    p = r * lines + line
                    state = bound.merge(state, (states_in[p], states_in[third_in + p], states_in[2 * third_in + p], indices_in[p]))
                else:
                    state = bound.step(state, bound.load(src[base + r * inner]), r)
        # Hillis and Steele's inclusive scan of each run's Y states: slot y then holds the merge of 0 .. y.
        shared_a[tid], shared_b[tid], shared_c[tid], shared_i[tid] = state[0], state[1], state[2], state[3]
        cuda.syncthreads()
        d = 1
        while d < y_size:
            held = (shared_a[tid], shared_b[tid], shared_c[tid], shared_i[tid])
            if y >= d:
                other = tid - d * x_size
                held = bound.merge((shared_a[other], shared_b[other], shared_c[other], shared_i[other]), held)
            cuda.syncthreads()
            shared_a[tid], shared_b[tid], shared_c[tid], shared_i[tid] = held[0], held[1], held[2], held[3]
            cuda.syncthreads()
            d <<= 1
        if stage == TOTALS:
            if y == y_size - 1 and active:
                q = part * lines + line
                states_out[q], states_out[third_out + q], states_out[2 * third_out + q], indices_out[q] = (
                    shared_a[tid], shared_b[tid], shared_c[tid], shared_i[tid]
                )
        elif active:
            state = bound.init()
            if stage == CUT:
                q = part * lines + line
                state = (states_in[q], states_in[third_in + q], states_in[2 * third_in + q], indices_in[q])
            if y > 0:
                before = tid - x_size
                state = bound.merge(state, (shared_a[before], shared_b[before], shared_c[before], shared_i[before]))
            for r in range(r0, r1):
                if stage == CARRY:
                    p = r * lines + line
                    held = (states_in[p], states_in[third_in + p], states_in[2 * third_in + p], indices_in[p])
                    states_out[p], states_out[third_out + p], states_out[2 * third_out + p], indices_out[p] = (
                        state[0], state[1], state[2], state[3]
                    )
                    state = bound.merge(state, held)
                else:
                    p = base + r * inner
                    value = bound.load(src[p])
                    if exclusive:
                        dst[p] = bound.store(bound.finish(state, r, 0))
                    state = bound.step(state, value, r)
                    if not exclusive:
                        dst[p] = bound.store(bound.finish(state, r + 1, 0))
        cuda.syncthreads()
        tile += cuda.gridDim.x


def _shape(lines: int, length: int, inner: int, most: int | None = PER) -> tuple[int, int, int]:
    """(X, Y, elements a thread steps, at most most) of a block: Y threads along a run as its
    length asks (X adjacent runs fill the rest), at least a warp's width of X where runs are columns."""
    wanted = 1 << max(0, -(-length // (most or 1)) - 1).bit_length()
    x_least = 1 if inner == 1 else min(WARP, 1 << (min(inner, lines) - 1).bit_length())
    y_size = max(1, min(wanted, THREADS // x_least))
    per = max(1, -(-length // y_size))
    return THREADS // y_size, y_size, min(per, most) if most else per


class CudaScanKernels(ScanKernels):
    @function_cache("kernels")
    def kernel(self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType) -> CudaKernel:
        """op's kernel from src_dtype into dst_dtype, every stage."""
        rule = scan_formulas(op.value, src_dtype.compute_dtype)
        acc_dtype = scan_accumulate_dtype(op.value, src_dtype.compute_dtype)
        acc = numba.from_dtype(acc_dtype)
        storage = numba.from_dtype(src_dtype.storage_dtype)
        out = numba.from_dtype(dst_dtype.storage_dtype)
        argtypes = (storage[::1], out[::1], acc[::1], numba.int64[::1], acc[::1], numba.int64[::1], *(numba.int64,) * 13)
        # A state is four values and the formulas' branches: more registers than full occupancy's 32.
        return CudaKernel(
            _scan, f"scan_{op.value}_{src_dtype.value}_{dst_dtype.value}", argtypes, full_occupancy=False,
            load=load_fn(src_dtype, DeviceType.kCUDA), store=store_fn(dst_dtype, DeviceType.kCUDA, acc_dtype), ACC=acc,
            init=rule.init, step=rule.step, merge=rule.merge, finish=rule.finish,
        )

    def launch(self, stream, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, exclusive: bool, plan: ScanPlan, src, dst) -> None:
        acc = scan_accumulate_dtype(op.value, src_dtype.compute_dtype)
        length, inner = plan.length, plan.inner
        lines = plan.outer * inner
        limit = max_blocks(stream.device.index)
        x_size, y_size, per = _shape(lines, length, inner)
        chunk = y_size * per
        chunks = -(-length // chunk)
        tiles = -(-lines // x_size)
        shape = (lines, length, inner, chunk, chunks, tiles, x_size, x_size.bit_length() - 1, per)
        states, indices = state_scratch(stream, acc, lines * chunks if chunks > 1 else 1)
        third = states.size // 3
        kernel = self.kernel(op, src_dtype, dst_dtype)
        buffers = (src, dst, states, indices, states, indices, third, third)
        if chunks == 1:
            launch_blocks(stream, kernel, min(tiles, limit), *buffers, *shape, SCAN, int(exclusive))
            return
        launch_blocks(stream, kernel, min(tiles * chunks, limit), *buffers, *shape, TOTALS, 0)
        # Each run's chunk states: runs of length chunks (lines apart) in one chunk, scanned in place.
        cx, cy, cper = _shape(lines, chunks, lines, None)
        ctiles = -(-lines // cx)
        carries = (lines, chunks, lines, cy * cper, 1, ctiles, cx, cx.bit_length() - 1, cper)
        launch_blocks(stream, kernel, min(ctiles, limit), *buffers, *carries, CARRY, 0)
        launch_blocks(stream, kernel, min(tiles * chunks, limit), *buffers, *shape, CUT, int(exclusive))

    def all_kernels(self) -> Iterator[object]:
        for op, (src, dst) in combinations():
            yield self.kernel(op, src, dst)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ScanFactory, ScanFactoryImpl(DeviceType.kCUDA, CudaScanKernels()))
