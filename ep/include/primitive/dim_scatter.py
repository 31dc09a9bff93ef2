"""DimScatter: src's elements written (or added, or multiplied) into out along one dim, at the
positions an index names, and ScatterOp (OneFlow's dim_scatter_update, _add and _mul kernels)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.common.runtime.names import NamedEnum
from ep.include.primitive.primitive import Factory, Primitive


class ScatterOp(NamedEnum):
    """What DimScatter does with the element already at a position: replace it, add to it or
    multiply it (the values are torch.scatter's reduce names; kUpdate is reduce=None)."""

    kUpdate = "update"
    kAdd = "add"
    kMul = "multiply"


class DimScatter(Primitive):
    @abc.abstractmethod
    def Launch(
        self,
        stream,
        num_dims: int,
        dims: Sequence[int],
        dim: int,
        index,
        index_dims: Sequence[int],
        src,
        src_dims: Sequence[int],
        out,
        out_dims: Sequence[int],
    ) -> None:
        """For every position p of dims (num_dims of them), out at p with p[dim] replaced by
        index[p] = src[p] (kUpdate), out + src[p] (kAdd) or out * src[p] (kMul), in place.

        index has index_dims, each 1 (read at 0: torch.index_add's one index per slice) or dims';
        src has src_dims, each at least dims'; out has out_dims, each at least dims' but at dim.
        The positions along dim are taken in order, one line of them per thread, so repeats
        combine in index order on every device, as on PyTorch's CPU (no atomics: the result is
        the same on every run). An index outside [0, out_dims[dim]) is dropped (check the index
        first where that is an error: ep.ops.scatter does). kAdd and kMul compute in the
        dtype's compute dtype (float16 through float32), rounding at each step, as torch's CPU.
        """


class DimScatterFactory(Factory):
    @abc.abstractmethod
    def New(self, op, data_dtype, index_dtype) -> DimScatter | None:
        """A DimScatter of op (a ScatterOp) on data_dtype elements (any dtype; kUpdate copies their
        bits) by int32 or int64 indices, or None if unsupported."""
