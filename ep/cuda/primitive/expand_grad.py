"""ExpandGrad's CUDA kernel: a block-level tree reduction over tiles of outputs x slices of their sums.

A block of X x Y threads (X * Y = the block size, both powers of two) takes X consecutive outputs
and one slice of their sums (the summed elements of each, in order): thread (x, y) sums every Y-th
element of output x's slice with Kahan's compensation, then the block adds its Y partial sums of
each output in a tree in shared memory. The threads of a warp run along src's contiguous
innermost dim: along outputs (Y elements apart in the sum) when it is kept, along the sum when it
is summed. When outputs alone would not give every SM blocks, each sum is cut into slices: pass 1
writes one partial sum per slice and output (a [slices, outputs] scratch buffer of the stream),
and pass 2, the same kernel, sums those. No atomics: the order of every addition is fixed, so a
result does not change from run to run.

Each kernel comes in two index widths (fast_divmod.needs_wide): 32-bit with fast_divmod when src
and the partials fit in 2**31 - 1 elements, else 64-bit; and for 2 or 4 summed dims (after merging).
"""
from __future__ import annotations

import math
import threading
from typing import Iterator, NamedTuple

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, scalar_function, template
from ep.common.math import fast_divmod
from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT
from ep.common.math.convert import load_fn, store_fn
from ep.common.primitive.expand_grad import ExpandGradFactoryImpl, ExpandGradKernels
from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, ExpandGradPlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import HALF_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.cuda.kernel import THREADS_PER_BLOCK, CudaKernel, keep_launch, launch_config
from ep.include.primitive.expand_grad import ExpandGradFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Merged dims alternate between kept and summed, so each kind has at most half of them.
MAX_KEPT = MAX_SUMMED = MAX_NUM_DIMS // 2
# The kernels' summed-dim counts: 2 covers the common one or two (one more padding dim costs a few
# adds per element), MAX_SUMMED the rest. The 64-bit kernels, for buffers of over 2**31 - 1
# elements, come only for MAX_SUMMED: fewer kernels to compile.
SUMMED_VARIANTS = {False: (2, MAX_SUMMED), True: (MAX_SUMMED,)}
# A slice gives each of its threads at least this many elements to sum: shorter slices would
# spend more on partial sums than they save.
MIN_PER_THREAD = 8
# float16 partial sums are kept in float32; every other dtype's in its own storage (integer sums
# wrap, so summing wrapped partials gives the wrapped total).
PARTIAL_DTYPES = {dtype: np.float32 if dtype in HALF_TYPES else dtype.storage_dtype for dtype in ACCUMULATE_DTYPES}


@scalar_function
def _next(base, d, strides, steps, dims, index, four):
    """(src offset of digits d, the digits of r + Y): d are r's digits over dims, innermost first,
    steps Y's. The outermost digit passes its dim only past the last element, where it is not read."""
    offset = d[0] * strides[0] + d[1] * strides[1]
    if four:
        offset += d[2] * strides[2] + d[3] * strides[3]
    d0, d1, d2, d3 = index(d[0] + steps[0]), index(d[1] + steps[1]), d[2], d[3]
    if d0 >= dims[0]:
        d0, d1 = index(d0 - dims[0]), index(d1 + 1)
    if four:
        d2 = index(d2 + steps[2])
        if d1 >= dims[1]:
            d1, d2 = index(d1 - dims[1]), index(d2 + 1)
        d3 = index(d3 + steps[3])
        if d2 >= dims[2]:
            d2, d3 = index(d2 - dims[2]), index(d3 + 1)
    return index(base + offset), (d0, d1, d2, d3)


@scalar_function
def _add(total, error, value, compensate):
    """(total, error) after adding value; with compensate by Kahan's summation, where error keeps
    what each addition rounded off, so that a thread's sum of many terms is as good as of a few."""
    if compensate:
        y = value - error
        t = total + y
        return t, (t - total) - y
    return total + value, error


@template("INDEX", "DIVMOD", "SUMMED", "COMPENSATE", "accumulate", "load", "store")
def _expand_grad(
    src, dst, count, length, chunk, num_tiles, tiles, tiles_m, tiles_s, x_size, y_size, fast_mask, fast_shift, along_sum,
    kept, kept_m, kept_s, kept_strides, summed, summed_m, summed_s, summed_strides, steps,
):
    # count outputs, each the sum of length elements, in slices of chunk: tile t is slice t // tiles
    # of outputs (t % tiles) * x_size ... + x_size - 1. Dims and strides are innermost first.
    sums = cuda.shared.array(THREADS_PER_BLOCK, bound.accumulate)
    lane = bound.INDEX(cuda.threadIdx.x)
    fast = bound.INDEX(lane & fast_mask)
    slow = bound.INDEX(lane >> fast_shift)
    tx, ty = (slow, fast) if along_sum else (fast, slow)
    slot = bound.INDEX(ty * x_size + tx)
    tile = bound.INDEX(cuda.blockIdx.x)
    while tile < num_tiles:
        part, first = bound.DIVMOD(tile, tiles, tiles_m, tiles_s)
        i = bound.INDEX(first * x_size + tx)
        total = bound.accumulate(0)
        error = bound.accumulate(0)
        r = bound.INDEX(part * chunk + ty)
        end = min(bound.INDEX(part * chunk + chunk), length)
        if i < count and r < end:
            q, k0 = bound.DIVMOD(i, kept[0], kept_m[0], kept_s[0])
            q, k1 = bound.DIVMOD(q, kept[1], kept_m[1], kept_s[1])
            q, k2 = bound.DIVMOD(q, kept[2], kept_m[2], kept_s[2])
            q, k3 = bound.DIVMOD(q, kept[3], kept_m[3], kept_s[3])
            base = k0 * kept_strides[0] + k1 * kept_strides[1] + k2 * kept_strides[2] + k3 * kept_strides[3]
            base = bound.INDEX(base)
            # r's digits over the summed dims; each step adds Y, whose digits are steps.
            q, d0 = bound.DIVMOD(r, summed[0], summed_m[0], summed_s[0])
            q, d1 = bound.DIVMOD(q, summed[1], summed_m[1], summed_s[1])
            d2 = d3 = bound.INDEX(0)
            if bound.SUMMED > 2:
                q, d2 = bound.DIVMOD(q, summed[2], summed_m[2], summed_s[2])
                q, d3 = bound.DIVMOD(q, summed[3], summed_m[3], summed_s[3])
            d = (d0, d1, d2, d3)
            four = bound.SUMMED > 2
            # Four elements a round, their loads issued before their sums: a thread keeps four
            # loads in flight, not one. Then one at a time; the order of the additions is the same.
            while bound.INDEX(r + 3 * y_size) < end:
                o0, d = _next(base, d, summed_strides, steps, summed, bound.INDEX, four)
                o1, d = _next(base, d, summed_strides, steps, summed, bound.INDEX, four)
                o2, d = _next(base, d, summed_strides, steps, summed, bound.INDEX, four)
                o3, d = _next(base, d, summed_strides, steps, summed, bound.INDEX, four)
                # A loop over the loaded tuple: one inlined load and add to compile, not four.
                for raw in (src[o0], src[o1], src[o2], src[o3]):
                    total, error = _add(total, error, bound.load(raw), bound.COMPENSATE)
                r = bound.INDEX(r + 4 * y_size)
            while r < end:
                o0, d = _next(base, d, summed_strides, steps, summed, bound.INDEX, four)
                total, error = _add(total, error, bound.load(src[o0]), bound.COMPENSATE)
                r = bound.INDEX(r + y_size)
        sums[slot] = total - error
        cuda.syncthreads()
        half = bound.INDEX(y_size >> 1)
        while half > 0:
            if ty < half:
                sums[slot] += sums[slot + half * x_size]
            cuda.syncthreads()
            half = bound.INDEX(half >> 1)
        if ty == 0 and i < count:
            dst[part * count + i] = bound.store(sums[slot])
        tile = bound.INDEX(tile + cuda.gridDim.x)


class Layout(NamedTuple):
    """How one pass covers count sums of length elements: tiles of x_size outputs by y_size threads
    per output, each sum in slices of chunk elements; along_sum: a warp runs along the sum."""

    count: int
    length: int
    along_sum: bool
    x_size: int
    y_size: int
    tiles: int
    slices: int
    chunk: int


class Pass(NamedTuple):
    """One launch of the kernel: its layout, index width, summed-dim variant, work items and size arguments."""

    layout: Layout
    wide: bool
    summed: int
    work: int
    args: tuple


class Geometry(NamedTuple):
    """How a plan runs: one pass straight into dst, or two with partials elements of scratch between."""

    passes: tuple[Pass, ...]
    partials: int



def _floor_pow2(n: int, cap: int) -> int:
    return min(cap, 1 << (max(n, 1).bit_length() - 1))


def _padded(dims: tuple[int, ...], strides: tuple[int, ...], size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    # Innermost first, padded with dims of one element.
    return tuple(reversed(dims)) + (1,) * (size - len(dims)), tuple(reversed(strides)) + (0,) * (size - len(dims))


def layout(kept, summed, summed_strides, threads: int, target: int, max_slices: int) -> Layout:
    """The layout for blocks of threads summing over summed dims for every index over kept dims
    (dims outer to inner): at most max_slices per sum, enough for target tiles where the outputs'
    tiles are fewer."""
    count, length = math.prod(kept), math.prod(summed)
    along_sum = length > 1 and summed_strides[-1] == 1
    if along_sum:
        # src's innermost dim is summed: a warp's threads read consecutive elements of one sum.
        y_size = _floor_pow2(summed[-1], threads)
        x_size = threads // y_size
    else:
        # It is kept: a warp's threads read consecutive outputs; narrower tiles when there are
        # few outputs, so that more tiles share the sums.
        x_size = _floor_pow2(kept[-1] if kept else 1, threads)
        while x_size > 32 and -(-count // x_size) < target:
            x_size //= 2
        y_size = threads // x_size
    tiles = -(-count // x_size)
    slices = 1
    if tiles < target:
        slices = max(1, min(max_slices, -(-target // tiles), length // (y_size * MIN_PER_THREAD)))
    chunk = -(-length // slices)
    slices = -(-length // chunk) if length else 1
    return Layout(count, length, along_sum, x_size, y_size, tiles, slices, chunk)


def _launch_pass(shape: Layout, kept, kept_strides, summed, summed_strides, threads: int, wide: bool) -> Pass:
    """The kernel launch of a layout over those dims (outer to inner)."""
    if shape.length == 0:
        summed, summed_strides = (), ()
    summed_count = min(variant for variant in SUMMED_VARIANTS[wide] if variant >= len(summed))
    kept, kept_strides = _padded(kept, kept_strides, MAX_KEPT)
    summed, summed_strides = _padded(summed, summed_strides, MAX_SUMMED)
    steps, rest = [], shape.y_size
    for dim in summed:
        rest, step = divmod(rest, dim)
        steps.append(step)
    fast = shape.y_size if shape.along_sum else shape.x_size
    args = (
        shape.count,
        shape.length,
        shape.chunk,
        shape.tiles * shape.slices,
        *fast_divmod.divisor(shape.tiles, wide),
        shape.x_size,
        shape.y_size,
        fast - 1,
        fast.bit_length() - 1,
        int(shape.along_sum),
        *_divisor_columns(kept, wide),
        kept_strides,
        *_divisor_columns(summed, wide),
        summed_strides,
        tuple(steps),
    )
    return Pass(shape, wide, summed_count, shape.tiles * shape.slices * threads, args)


def _divisor_columns(dims: tuple[int, ...], wide: bool) -> tuple[tuple[int, ...], ...]:
    # (dims, multipliers, shifts): the divisors of each dim as three tuples.
    return tuple(zip(*(fast_divmod.divisor(d, wide) for d in dims)))


def geometry(plan: ExpandGradPlan, threads: int, target: int) -> Geometry:
    """The passes of plan for blocks of threads, with target tiles to give every SM work."""
    first = layout(plan.kept_dims, plan.summed_dims, plan.summed_strides, threads, target, FAST_DIVMOD_LIMIT)
    count = plan.dst_count
    partials = count * first.slices if first.slices > 1 else 0
    wide = fast_divmod.needs_wide(plan.src_count, partials, first.tiles * first.slices * threads)
    passes = (_launch_pass(first, plan.kept_dims, plan.kept_strides, plan.summed_dims, plan.summed_strides, threads, wide),)
    if partials:
        second = layout((count,), (first.slices,), (count,), threads, target, 1)
        passes += (_launch_pass(second, (count,), (1,), (first.slices,), (count,), threads, wide),)
    return Geometry(passes, partials)


_geometries: dict[tuple[int, int], tuple[ExpandGradPlan, Geometry]] = {}
_geometries_lock = threading.Lock()
MAX_GEOMETRIES = 512


def plan_geometry(plan: ExpandGradPlan, device_index: int) -> Geometry:
    """geometry() of plan for that device, kept per plan (plans are cached per dims and live on)."""
    found = _geometries.get((id(plan), device_index))
    if found is not None and found[0] is plan:
        return found[1]
    # launch_config of more work than fits gives the device's block cap and block size.
    max_blocks, threads = launch_config(1 << 62, device_index)
    result = geometry(plan, threads, max_blocks)
    with _geometries_lock:
        if len(_geometries) >= MAX_GEOMETRIES:
            _geometries.clear()
        _geometries[id(plan), device_index] = (plan, result)
    return result


class CudaExpandGradKernels(ExpandGradKernels):
    @function_cache("kernels")
    def kernel(self, dtype: DataType, wide: bool, summed: int, stage: str = "whole") -> CudaKernel:
        """The kernel of dtype, index width and summed-dim count. stage: "whole" sums dtype into
        dtype; float16 adds "partial" (float16 into float32 partials) and "final" (those into float16)."""
        size = fast_divmod.size_type(wide)
        load, store = load_fn(dtype, DeviceType.kCUDA), store_fn(dtype, DeviceType.kCUDA)
        src_type = dst_type = numba.from_dtype(dtype.storage_dtype)[::1]
        if stage == "partial":
            dst_type, store = numba.float32[::1], store_fn(DataType.kFloat, DeviceType.kCUDA)
        elif stage == "final":
            src_type, load = numba.float32[::1], load_fn(DataType.kFloat, DeviceType.kCUDA)
        # Every kernel takes MAX_SUMMED summed dims; one for 2 reads only the first two.
        dims = numba.types.UniTuple(size, MAX_KEPT)
        argtypes = (src_type, dst_type, *([size] * 12), *([dims] * 9))
        accumulate = ACCUMULATE_DTYPES[dtype]
        name = f"expand_grad_{dtype.value}{'' if stage == 'whole' else '_' + stage}_s{summed}_{'i64' if wide else 'i32'}"
        # A 64-bit kernel (over 2**31 - 1 elements) holds its dims, strides and digits in register
        # pairs and calls 64-bit division: it would spill under the full-occupancy cap.
        return CudaKernel(
            _expand_grad,
            name,
            argtypes,
            full_occupancy=not wide,
            SUMMED=summed,
            COMPENSATE=np.dtype(accumulate).kind == "f",
            accumulate=accumulate,
            load=load,
            store=store,
            **fast_divmod.index_bindings(wide),
        )

    def launch(self, stream, dtype: DataType, plan: ExpandGradPlan, src, dst) -> None:
        # Kept on the stream by the plan's id (the entry holds the plan, so no other takes its id).
        kept = stream.launches.get(id(plan))
        if kept is None or kept[1] is not dtype:
            kept = self._keep(stream, dtype, plan)
        _, _, partials, passes = kept
        if partials is None:
            configured, args = passes[0]
            configured(src, dst, *args)
            return
        # Stream-ordered scratch: the next launch on this stream may take it once pass 2 has read it.
        scratch = stream.temporary(*partials)
        (first, first_args), (second, second_args) = passes
        first(src, scratch, *first_args)
        second(scratch, dst, *second_args)

    def _keep(self, stream, dtype: DataType, plan: ExpandGradPlan) -> tuple:
        """(plan, dtype, the partial sums' (count, dtype) or None for one pass, ((configured kernel,
        its arguments after the buffers) per pass)), kept on stream."""
        geometry = plan_geometry(plan, stream.device.index)
        if len(geometry.passes) == 1:
            partials, stages = None, ("whole",)
        else:
            partials = (geometry.partials, PARTIAL_DTYPES[dtype])
            stages = ("partial", "final") if dtype in HALF_TYPES else ("whole", "whole")
        passes = tuple(
            (self.kernel(dtype, step.wide, step.summed, stage).configured(stream, step.work), step.args)
            for step, stage in zip(geometry.passes, stages)
        )
        return keep_launch(stream, id(plan), (plan, dtype, partials, passes))

    def all_kernels(self) -> Iterator[object]:
        for dtype in ACCUMULATE_DTYPES:
            for wide in (False, True):
                for summed in SUMMED_VARIANTS[wide]:
                    yield self.kernel(dtype, wide, summed, "whole")
                    if dtype in HALF_TYPES:
                        yield self.kernel(dtype, wide, summed, "partial")
                if dtype in HALF_TYPES:
                    yield self.kernel(dtype, wide, SUMMED_VARIANTS[wide][0], "final")


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA, ExpandGradFactory, ExpandGradFactoryImpl(DeviceType.kCUDA, CudaExpandGradKernels())
)
