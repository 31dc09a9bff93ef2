"""BatchGather: a Gather per batch, each with its own indices."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class BatchGather(Primitive):
    @abc.abstractmethod
    def Launch(
        self,
        stream,
        indices,
        num_indices: int,
        in_,
        batch_dim_size: int,
        outer_dim_size: int,
        gather_dim_size: int,
        inner_dim_size: int,
        out,
        offset: int = 0,
    ) -> None:
        """Gather in_ ([batch, outer, gather_dim_size, inner]) by indices ([batch, num_indices]) into out.

        out ([batch, outer, num_indices, inner]) gets out[b, o, i, k] = in_[b, o, indices[b, i] - offset, k]
        when 0 <= indices[b, i] - offset < gather_dim_size, else 0 (Gather's zero and index rules).
        """


class BatchGatherFactory(Factory):
    @abc.abstractmethod
    def New(self, params_dtype, indices_dtype, *, wrap_negative: bool = False, check_bounds: bool = False) -> BatchGather | None:
        """A BatchGather of params_dtype elements by int32 or int64 indices, or None if unsupported;
        wrap_negative and check_bounds as GatherFactory.New's."""
