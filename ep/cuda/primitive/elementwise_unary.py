"""ElementwiseUnary on CUDA: one grid-stride kernel per (op, src dtype, dst dtype)."""
from __future__ import annotations

import functools

import numba
from numba import cuda

from ep.common.runtime.buffer import check_count, storage
from ep.common.math.convert import load_fn, store_fn
from ep.common.runtime.device import DeviceType
from ep.common.runtime.stream import check_stream
from ep.common.math.unary_functor import UNARY_FUNCTORS, resolve_unary, unary_combinations
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.elementwise_unary import ElementwiseUnary, ElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


def _unary(src, dst, count, attr0, attr1):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < count:
        dst[i] = store(formula(load(src[i]), attr0, attr1))  # noqa: F821 (bound by specialize)
        i += step


@functools.cache
def _kernel(op, src_dtype, dst_dtype) -> CudaKernel:
    compute = numba.from_dtype(src_dtype.compute_dtype)
    argtypes = (
        numba.from_dtype(src_dtype.storage_dtype)[::1],
        numba.from_dtype(dst_dtype.storage_dtype)[::1],
        numba.int64,
        compute,
        compute,
    )
    return CudaKernel(
        _unary,
        f"unary_{op.value}_{src_dtype.value}_{dst_dtype.value}",
        argtypes,
        formula=UNARY_FUNCTORS[op].formula_for(src_dtype),
        load=load_fn(src_dtype),
        store=store_fn(dst_dtype, src_dtype.compute_dtype),
    )


class ElementwiseUnaryImpl(ElementwiseUnary):
    def __init__(self, op, src_dtype, dst_dtype, attrs) -> None:
        self.op, self.src_dtype, self.dst_dtype, self.attrs = op, src_dtype, dst_dtype, attrs
        self._kernel = _kernel(op, src_dtype, dst_dtype)

    def Launch(self, stream, src, dst, count: int) -> None:
        check_stream(stream, DeviceType.kCUDA)
        count = check_count(count)
        src = storage(src, "src", DeviceType.kCUDA, self.src_dtype, count)
        dst = storage(dst, "dst", DeviceType.kCUDA, self.dst_dtype, count, writable=True)
        if count:
            self._kernel.launch(stream, count, src, dst, count, *self.attrs)


@functools.cache
def _primitive(op, src_dtype, dst_dtype, attrs) -> ElementwiseUnaryImpl:
    return ElementwiseUnaryImpl(op, src_dtype, dst_dtype, attrs)


class ElementwiseUnaryFactoryImpl(ElementwiseUnaryFactory):
    def New(self, op, src_dtype, dst_dtype, attr0=None, attr1=None) -> ElementwiseUnary | None:
        resolved = resolve_unary(op, src_dtype, dst_dtype, attr0, attr1)
        return None if resolved is None else _primitive(*resolved)

    def Combinations(self):
        for op, src_dtype, dst_dtype in unary_combinations():
            yield op, (src_dtype, dst_dtype)

    def Kernels(self):
        """Every CUDA kernel this factory can launch, for the PTX check."""
        for op, src_dtype, dst_dtype in unary_combinations():
            yield _kernel(op, src_dtype, dst_dtype)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ElementwiseUnaryFactory, ElementwiseUnaryFactoryImpl)
