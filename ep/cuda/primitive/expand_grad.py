"""ExpandGrad on CUDA: one thread per dst element, summing its strided set of src."""
from __future__ import annotations

import functools

import numba
from numba import cuda

from ep.common.math.convert import load_fn
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, prepare_expand_grad, store_sum_fn
from ep.common.math.nd_index_offset_helper import map_offset
from ep.common.runtime.stream import check_stream
from ep.common.primitive.strided_copy import MAX_NUM_DIMS
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.expand_grad import ExpandGrad, ExpandGradFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


def _expand_grad(src, dst, count, dst_strides, src_strides, outer_strides, outer_src_strides, num_outer, inner, inner_stride):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < count:
        base = map_offset(i, dst_strides, src_strides)
        total = accumulate(0)  # noqa: F821 (bound by specialize)
        for k in range(num_outer):
            offset = base + map_offset(k, outer_strides, outer_src_strides)
            for j in range(inner):
                total += load(src[offset + j * inner_stride])  # noqa: F821
        dst[i] = store(total)  # noqa: F821
        i += step


@functools.cache
def _kernel(dtype: DataType, ndim: int) -> CudaKernel:
    storage = numba.from_dtype(dtype.storage_dtype)[::1]
    strides = numba.types.UniTuple(numba.int64, ndim)
    argtypes = (storage, storage, numba.int64, strides, strides, strides, strides, numba.int64, numba.int64, numba.int64)
    return CudaKernel(
        _expand_grad,
        f"expand_grad_{dtype.value}_{ndim}d",
        argtypes,
        accumulate=ACCUMULATE_DTYPES[dtype],
        load=load_fn(dtype),
        store=store_sum_fn(dtype),
    )


class ExpandGradImpl(ExpandGrad):
    def __init__(self, dtype: DataType) -> None:
        self.dtype = dtype

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        check_stream(stream, DeviceType.kCUDA)
        prepared = prepare_expand_grad(DeviceType.kCUDA, self.dtype, src_dims, src, dst_dims, dst)
        if prepared is not None:
            plan, src, dst = prepared
            _kernel(self.dtype, plan.ndim).launch(stream, plan.count, src, dst, *plan.args())


@functools.cache
def _primitive(dtype: DataType) -> ExpandGradImpl:
    return ExpandGradImpl(dtype)


class ExpandGradFactoryImpl(ExpandGradFactory):
    def New(self, dtype) -> ExpandGrad | None:
        dtype = as_data_type(dtype)
        return _primitive(dtype) if dtype in ACCUMULATE_DTYPES else None

    def Combinations(self):
        for dtype in ACCUMULATE_DTYPES:
            yield None, (dtype,)

    def Kernels(self):
        """Every CUDA kernel this factory can launch, for the PTX check."""
        for dtype in ACCUMULATE_DTYPES:
            for ndim in range(1, MAX_NUM_DIMS + 1):
                yield _kernel(dtype, ndim)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ExpandGradFactory, ExpandGradFactoryImpl)
