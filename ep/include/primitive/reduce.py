"""Reduce: a reduction (sum, max, argmax, variance, ...) over some dims of an n-d layout, and ReduceOp."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.common.runtime.names import NamedEnum
from ep.include.primitive.primitive import Factory, Primitive


class ReduceOp(NamedEnum):
    """The reductions of Reduce, named as OneFlow names its ops; each value is ep.ops' name."""

    kSum = "sum"
    kProd = "prod"
    kMax = "amax"
    kMin = "amin"
    kArgMax = "argmax"
    kArgMin = "argmin"
    kAny = "any"
    kAll = "all"
    kLogSumExp = "logsumexp"
    kMean = "mean"
    kVar = "var"
    kStd = "std"


class Reduce(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src_dims: Sequence[int], src, dst_dims: Sequence[int], dst, correction: float = 1) -> None:
        """Reduce src (storage of shape src_dims) over the dims where dst_dims has 1 into dst
        (storage of shape dst_dims, as NumPy's keepdims=True).

        dst_dims has src_dims' length, each dim equal to src's or 1; the reduced dims must merge into
        one run of dims (outer, reduced, inner) once dims of size 1 are dropped. kMax, kMin, kArgMax and
        kArgMin refuse an empty reduction (ValueError); kSum's is 0, kProd's 1, kAny's False, kAll's
        True, kLogSumExp's -inf, kMean's NaN. kArgMax and kArgMin give the first index of the extreme
        (of a NaN, if any) counted over the reduced run, in row-major order. kVar and kStd divide the
        sum of squared deviations by max(0, n - correction), as PyTorch does.
        """


class ReduceFactory(Factory):
    @abc.abstractmethod
    def New(self, op, src_dtype, dst_dtype) -> Reduce | None:
        """A Reduce of op from src_dtype into dst_dtype, or None if unsupported.

        kSum and kProd: any numeric src into itself, and integers or bool into int64 (summed in
        int64, wrapping); kMax and kMin: any dtype into itself; kArgMax and kArgMin: any dtype into
        int64; kAny and kAll: any dtype into bool, and uint8 into uint8 (0 or 1); kLogSumExp,
        kMean, kVar and kStd: floating dtypes into themselves. float16 accumulates in float32.
        """
