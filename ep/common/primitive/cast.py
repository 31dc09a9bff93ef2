"""Cast on every device: ElementwiseUnary's kCast, under OneFlow's Cast interface.

The conversion rules are the cast record's (ep/common/math/ops/conversion.py) and the kernels are
the device's ElementwiseUnary kernels for kCast: one formula and one kernel per dtype pair, shared
by both primitives, so Cast and ep.ops.unary("cast") can never disagree.
"""
from __future__ import annotations

from typing import Iterator

from ep.common.math.unary_functor import resolve_unary, unary_dst_dtypes
from ep.common.primitive.elementwise_unary import ElementwiseUnaryImpl, ElementwiseUnaryKernels
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import ALL_TYPES, as_data_type
from ep.common.runtime.device import DeviceType
from ep.include.primitive.cast import Cast, CastFactory
from ep.include.primitive.unary_op import UnaryOp


class CastKernels:
    """A device's ElementwiseUnary kernels, narrowed to kCast (the PTX check compiles those)."""

    def __init__(self, unary: ElementwiseUnaryKernels) -> None:
        self.unary = unary

    def all_kernels(self) -> Iterator[object]:
        for src_dtype in ALL_TYPES:
            for dst_dtype in unary_dst_dtypes(UnaryOp.kCast, src_dtype):
                yield self.unary.kernel(UnaryOp.kCast, src_dtype, dst_dtype)


class CastImpl(ElementwiseUnaryImpl, Cast):
    """ElementwiseUnary's Launch (its checks: stream, count, src and dst storage) for kCast."""

    def __init__(self, device_type: DeviceType, kernels: CastKernels, from_dtype, to_dtype, attrs) -> None:
        super().__init__(device_type, kernels.unary, UnaryOp.kCast, from_dtype, to_dtype, attrs)


class CastFactoryImpl(GenericFactory, CastFactory):
    primitive_type = CastImpl

    def New(self, from_dtype, to_dtype) -> Cast | None:
        resolved = resolve_unary(
            UnaryOp.kCast, as_data_type(from_dtype, "from_dtype"), as_data_type(to_dtype, "to_dtype"), None, None
        )
        return None if resolved is None else self._new(resolved[1:])

    def Combinations(self):
        for src_dtype in ALL_TYPES:
            for dst_dtype in unary_dst_dtypes(UnaryOp.kCast, src_dtype):
                yield None, (src_dtype, dst_dtype)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        src, dst = dtypes
        x = values(4, src)
        yield Sample(dtypes, {"src": x, "dst": zeros(4, dst), "count": 4}, {"dst": x.astype(dst.dtype)})
