"""ElementwiseUnary on every device: New's resolution, Launch's checks, and what a device supplies."""
from __future__ import annotations

import abc
from typing import Iterator

import numpy as np

from ep.common.math.convert import load_fn, store_fn
from ep.common.math.unary_functor import UNARY_FUNCTORS, resolve_unary, unary_combinations
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.launch import Count, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.include.primitive.elementwise_unary import ElementwiseUnary, ElementwiseUnaryFactory
from ep.include.primitive.unary_op import UnaryOp


def unary_bindings(device: DeviceType, op, src_dtype: DataType, dst_dtype: DataType) -> dict[str, object]:
    """The slots of device's unary template for (op, src, dst): formula, load and store."""
    return {
        "formula": UNARY_FUNCTORS[op].formula_for(src_dtype),
        "load": load_fn(src_dtype, device),
        "store": store_fn(dst_dtype, device, src_dtype.compute_dtype),
    }


class ElementwiseUnaryKernels(abc.ABC):
    """What a device supplies: its kernel for (op, src, dst), launched as
    kernel.launch(stream, count, src, dst, count, attr0, attr1) on flat storage."""

    @abc.abstractmethod
    def kernel(self, op, src_dtype: DataType, dst_dtype: DataType):
        """The device kernel of (op, src_dtype, dst_dtype), compiled on its first launch."""

    def all_kernels(self) -> Iterator[object]:
        for op, src_dtype, dst_dtype in unary_combinations():
            yield self.kernel(op, src_dtype, dst_dtype)


class ElementwiseUnaryImpl(Declared, ElementwiseUnary):
    launch = declare(In("src", "self.src_dtype"), Out("dst", "self.dst_dtype", reads_first=("src",)), Count("count"))

    def __init__(self, device_type: DeviceType, kernels: ElementwiseUnaryKernels, op, src_dtype, dst_dtype, attrs) -> None:
        self.device_type = device_type
        self.op, self.src_dtype, self.dst_dtype, self.attrs = op, src_dtype, dst_dtype, attrs
        self._kernel = kernels.kernel(op, src_dtype, dst_dtype)

    def run(self, stream, src, dst, count: int) -> None:
        if count:
            # The attributes by name, not *self.attrs: a star call costs a fifth of a tiny launch.
            attr0, attr1 = self.attrs
            self._kernel.launch(stream, count, src, dst, count, attr0, attr1)


class ElementwiseUnaryFactoryImpl(GenericFactory, ElementwiseUnaryFactory):
    primitive_type = ElementwiseUnaryImpl

    def New(self, op, src_dtype, dst_dtype, attr0=None, attr1=None) -> ElementwiseUnary | None:
        return self._new(resolve_unary(op, src_dtype, dst_dtype, attr0, attr1))

    def Combinations(self):
        for op, src_dtype, dst_dtype in unary_combinations():
            yield op, (src_dtype, dst_dtype)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        src, dst = dtypes
        x = values(4, src)
        # Attributes are launch-time scalars: any value compiles the same kernel.
        attrs = (1,) * len(UNARY_FUNCTORS[op].attrs)
        expected = {"dst": np.maximum(x, 0).astype(dst.dtype)} if op is UnaryOp.kRelu else None
        yield Sample((op, src, dst, *attrs), {"src": x, "dst": zeros(4, dst), "count": 4}, expected)
