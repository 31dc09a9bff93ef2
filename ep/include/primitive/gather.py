"""Gather: out[o, i, k] = in_[o, indices[i] - offset, k], zeros for rows a device does not hold."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class Gather(Primitive):
    @abc.abstractmethod
    def Launch(
        self,
        stream,
        indices,
        num_indices: int,
        in_,
        outer_dim_size: int,
        gather_dim_size: int,
        inner_dim_size: int,
        out,
        offset: int = 0,
    ) -> None:
        """Gather rows of in_ ([outer, gather_dim_size, inner]) into out ([outer, num_indices, inner]).

        out[o, i, k] = in_[o, indices[i] - offset, k] when 0 <= indices[i] - offset < gather_dim_size,
        else 0: a device holding rows [offset, offset + gather_dim_size) of the logical params writes
        zeros for the rows it lacks, so the devices' outputs sum to the logical gather.
        """


class GatherFactory(Factory):
    @abc.abstractmethod
    def New(self, params_dtype, indices_dtype) -> Gather | None:
        """A Gather of params_dtype elements by int32 or int64 indices, or None if unsupported."""
