"""UnsortedSegmentSum on CUDA: out zeroed, then one thread per data element adding it at its
segment's row with an atomic add; float16 sums into a float32 temporary, rounded once at the end."""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.convert import load_fn, store_fn
from ep.common.primitive.gather import gather_row
from ep.common.primitive.unsorted_segment_sum import SUM_TYPES, UnsortedSegmentSumFactoryImpl, accumulator_dtype
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import HALF_TYPES, INDEX_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel, keep_launch
from ep.cuda.primitive import gather_common
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.unsorted_segment_sum import UnsortedSegmentSumFactory


@template()
def _fill_zero(array, count):
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    while t < count:
        array[t] = 0
        t += step


@template("store")
def _to_half(src, dst, count):
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    while t < count:
        dst[t] = bound.store(src[t])
        t += step


@template("INDEX", "DIVMOD", "load")
def _segment_sum(ids, data, acc, total, inner, inner_m, inner_s, num, num_m, num_s, outer, outer_m, outer_s, segments, lo, hi, wrap):
    t = bound.INDEX(cuda.grid(1))
    step = bound.INDEX(cuda.gridsize(1))
    while t < total:
        row, k = bound.DIVMOD(t, inner, inner_m, inner_s)
        batch_outer, i = bound.DIVMOD(row, num, num_m, num_s)
        b, _ = bound.DIVMOD(batch_outer, outer, outer_m, outer_s)
        r = gather_row(np.int64(ids[bound.INDEX(b * num + i)]), lo, hi, segments, wrap)
        if r >= 0:
            dst = bound.INDEX(bound.INDEX(batch_outer * segments + bound.INDEX(r)) * inner + k)
            cuda.atomic.add(acc, dst, bound.load(data[t]))
        t = bound.INDEX(t + step)


@function_cache("kernels")
def _sum_kernel(ids_dtype: DataType, dtype: DataType, wide: bool) -> CudaKernel:
    size = fast_divmod.size_type(wide)
    acc = numba.from_dtype(accumulator_dtype(dtype).dtype)[::1]
    argtypes = (
        numba.from_dtype(ids_dtype.dtype)[::1],
        numba.from_dtype(dtype.storage_dtype)[::1],
        acc,
        *([size] * 11),
        *([numba.int64] * 3),
    )
    name = f"unsorted_segment_sum_{ids_dtype.value}_{dtype.value}_{'i64' if wide else 'i32'}"
    return CudaKernel(_segment_sum, name, argtypes, load=load_fn(dtype, DeviceType.kCUDA), **fast_divmod.index_bindings(wide))


@function_cache("kernels")
def _fill_kernel(dtype: DataType) -> CudaKernel:
    return CudaKernel(_fill_zero, f"unsorted_segment_sum_zero_{dtype.value}", (numba.from_dtype(dtype.storage_dtype)[::1], numba.int64))


@function_cache("kernels")
def _to_half_kernel(dtype: DataType) -> CudaKernel:
    return CudaKernel(
        _to_half,
        f"unsorted_segment_sum_to_{dtype.value}",
        (numba.float32[::1], numba.uint16[::1], numba.int64),
        store=store_fn(dtype, DeviceType.kCUDA),
    )


class CudaUnsortedSegmentSumKernels(gather_common.CudaIndexedKernels):
    def enqueue(self, primitive, sizes, kept, stream, ids, data, out) -> None:
        # Kept on the stream per plan: the configured kernels and the sum's arguments after the buffers.
        launch = stream.launches.get((kept, "sum"))
        if launch is None:
            if sizes.params_count == 0:
                return
            launch = self._keep(primitive, sizes, kept, stream)
        acc_dtype, fill, segment_sum, to_half, args = launch
        out_count = sizes.params_count
        acc = out if to_half is None else stream.temporary(out_count, acc_dtype.dtype)
        fill(acc, out_count)
        if segment_sum is not None:
            segment_sum(ids, data, acc, *args)
        if to_half is not None:
            to_half(acc, out, out_count)

    def _keep(self, primitive, sizes, kept, stream) -> tuple:
        """(accumulator dtype, the configured fill, sum (or None) and float16 rounding (or None)
        kernels, the sum's arguments after the buffers), kept on stream."""
        # Made once per plan (launches[0]): what every launch of these sizes runs besides its buffers.
        prepared = kept.launches.get(0)
        if prepared is None:
            prepared = kept.launches[0] = self._prepare(primitive, sizes)
        acc_dtype, fill_kernel, sum_kernel, args = prepared
        out_count = sizes.params_count
        launch = (
            acc_dtype,
            fill_kernel.configured(stream, out_count),
            None if sum_kernel is None else sum_kernel.configured(stream, sizes.gathered_count),
            None if acc_dtype is primitive.dtype else _to_half_kernel(primitive.dtype).configured(stream, out_count),
            args,
        )
        return keep_launch(stream, (kept, "sum"), launch)

    @staticmethod
    def _prepare(primitive, sizes) -> tuple:
        """(accumulator dtype, its zero fill kernel, the sum kernel or None when there is no data,
        its arguments after the buffers)."""
        acc_dtype = accumulator_dtype(primitive.dtype)
        data_count = sizes.gathered_count
        if not data_count:
            return acc_dtype, _fill_kernel(acc_dtype), None, ()
        # The kernel reads ids below index_count only.
        wide = fast_divmod.needs_wide(sizes.params_count, data_count, sizes.index_count)
        args = (
            data_count,
            *fast_divmod.divisor(sizes.inner, wide),
            *fast_divmod.divisor(sizes.num_indices, wide),
            *fast_divmod.divisor(sizes.outer, wide),
            sizes.gather,
            sizes.lo,
            sizes.hi,
            int(primitive.wrap),
        )
        return acc_dtype, _fill_kernel(acc_dtype), _sum_kernel(primitive.indices_dtype, primitive.dtype, wide), args

    def all_kernels(self):
        for ids_dtype in INDEX_TYPES:
            for dtype in SUM_TYPES:
                for wide in (False, True):
                    yield _sum_kernel(ids_dtype, dtype, wide)
        for dtype in dict.fromkeys(accumulator_dtype(dtype) for dtype in SUM_TYPES):
            yield _fill_kernel(dtype)
        for dtype in HALF_TYPES:
            yield _to_half_kernel(dtype)
        yield from gather_common.bounds_kernels()


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA,
    UnsortedSegmentSumFactory,
    UnsortedSegmentSumFactoryImpl(DeviceType.kCUDA, CudaUnsortedSegmentSumKernels()),
)
