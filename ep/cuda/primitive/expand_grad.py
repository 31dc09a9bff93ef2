"""ExpandGrad's CUDA kernel: one thread per dst element, summing its strided set of src."""
from __future__ import annotations

import functools
from typing import Iterator

import numba
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.nd_index_offset_helper import map_offset
from ep.common.primitive.expand_grad import ExpandGradFactoryImpl, ExpandGradKernels
from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, ExpandGradPlan
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.expand_grad import ExpandGradFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("accumulate", "load", "store")
def _expand_grad(src, dst, count, dst_strides, src_strides, outer_strides, outer_src_strides, num_outer, inner, inner_stride):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < count:
        base = map_offset(i, dst_strides, src_strides)
        total = bound.accumulate(0)
        for k in range(num_outer):
            offset = base + map_offset(k, outer_strides, outer_src_strides)
            for j in range(inner):
                total += bound.load(src[offset + j * inner_stride])
        dst[i] = bound.store(total)
        i += step


class CudaExpandGradKernels(ExpandGradKernels):
    @functools.cache
    def kernel(self, dtype: DataType, ndim: int) -> CudaKernel:
        storage = numba.from_dtype(dtype.storage_dtype)[::1]
        strides = numba.types.UniTuple(numba.int64, ndim)
        argtypes = (storage, storage, numba.int64, strides, strides, strides, strides, numba.int64, numba.int64, numba.int64)
        bindings = {"accumulate": ACCUMULATE_DTYPES[dtype], "load": load_fn(dtype), "store": store_fn(dtype)}
        # map_offset's 64-bit divisions, one per dim, need more than 32 registers from 2 dims of
        # 8-byte elements and 3 dims of any, and from 2 dims of float16 (its conversions keep NaN
        # payloads as the CPU does): those kernels would spill under the full-occupancy cap.
        full = ndim == 1 or (ndim == 2 and dtype.itemsize < 8 and dtype is not DataType.kFloat16)
        return CudaKernel(_expand_grad, f"expand_grad_{dtype.value}_{ndim}d", argtypes, full_occupancy=full, **bindings)

    def launch(self, stream, dtype: DataType, plan: ExpandGradPlan, src, dst) -> None:
        self.kernel(dtype, plan.ndim).launch(stream, plan.count, src, dst, *plan.args())

    def all_kernels(self) -> Iterator[object]:
        for dtype in ACCUMULATE_DTYPES:
            for ndim in range(1, MAX_NUM_DIMS + 1):
                yield self.kernel(dtype, ndim)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA, ExpandGradFactory, ExpandGradFactoryImpl(DeviceType.kCUDA, CudaExpandGradKernels())
)
