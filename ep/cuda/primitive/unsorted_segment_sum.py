"""UnsortedSegmentSum on CUDA: out zeroed, then one thread per data element adding it at its
segment's row with an atomic add; float16 sums into a float32 temporary, rounded once at the end."""
from __future__ import annotations

import numba
from numba import cuda

from ep.common.jit import bound, specialize, template
from ep.common.math import fast_divmod
from ep.common.math.convert import load_fn, store_fn
from ep.common.primitive.unsorted_segment_sum import SUM_TYPES, UnsortedSegmentSumFactoryImpl, accumulator_dtype
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import HALF_TYPES, INDEX_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel, device_function, keep_launch
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


@template("load")
def _add(acc, data, t, dst, found):
    # gather_common's visit: data's element t is added to acc's element dst.
    if found:
        cuda.atomic.add(acc, dst, bound.load(data[t]))


@function_cache("kernels")
def _sum_kernel(ids_dtype: DataType, dtype: DataType, wide: bool) -> CudaKernel:
    acc = numba.from_dtype(accumulator_dtype(dtype).dtype)[::1]
    visit = device_function(specialize(_add, f"add_{dtype.value}", load=load_fn(dtype, DeviceType.kCUDA)))
    name = f"unsorted_segment_sum_{ids_dtype.value}_{dtype.value}"
    return gather_common.indexed_kernel(name, ids_dtype, acc, numba.from_dtype(dtype.storage_dtype)[::1], wide, True, visit)


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
            segment_sum(ids, acc, data, *args)
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
        args = gather_common.indexed_args(sizes, data_count, sizes.inner, wide, primitive.wrap)
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
