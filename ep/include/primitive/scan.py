"""Scan: the running reduction (cumulative sum, product, maximum, ...) along one dim of an n-d layout."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class Scan(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src_dims: Sequence[int], src, dim: int, dst) -> None:
        """dst[..., r, ...] = the reduction of src[..., :r + 1, ...] along dim (exclusive: of
        src[..., :r, ...], the op's identity at r = 0); src and dst are storage of shape src_dims.

        kSum and kProd: NumPy's cumsum and cumprod (floats accumulate in float64, at least as
        accurate as NumPy's); kArgMax and kArgMin: the index along dim of the running extreme,
        the last of equal ones (PyTorch's cummax and cummin; a NaN's, the latest, once one is
        met); kMax and kMin: the element at that index (so NaN from the first NaN on, and -0.0
        after an equal 0.0); kLogSumExp: log(cumsum(exp(src))) without overflow. dst may be
        exactly src (in place).
        """


class ScanFactory(Factory):
    @abc.abstractmethod
    def New(self, op, src_dtype, dst_dtype, exclusive: bool = False) -> Scan | None:
        """A Scan of op (a ReduceOp: kSum, kProd, kMax, kMin, kArgMax, kArgMin or kLogSumExp) from
        src_dtype into dst_dtype, or None if unsupported.

        kSum and kProd: any numeric src into itself, and integers or bool into int64 (wrapping);
        kMax and kMin: any dtype into itself; kArgMax and kArgMin: any dtype into int64, inclusive
        only; kLogSumExp: floating dtypes into themselves.
        """
