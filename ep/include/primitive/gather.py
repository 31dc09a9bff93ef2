"""Gather: out[o, i, k] = in_[o, indices[i] - offset, k], zeros for rows a device does not hold."""
from __future__ import annotations

import abc

import numpy as np

from ep.include.primitive.primitive import Factory, Primitive


class IndexOutOfRange(IndexError):
    """A launch made with check_bounds met an index that selects no row; on the CPU it wrote
    nothing, on CUDA the stream's next Sync() raises it and the rows it selects hold zeros.

    name is the indices' argument name, position the index's flat position in them, value its
    value, size the launch's gather size and expected the values it accepts ("lo <= index < hi");
    with shape (the caller's indices shape) the message names the position in that shape.
    """

    def __init__(self, name: str, position: int, value: int, size: int, expected: str, shape: tuple[int, ...] | None = None) -> None:
        where = f"{name}[{position}]"
        if shape is not None:
            index = np.unravel_index(position, shape)
            where = f"{name}[{', '.join(str(int(i)) for i in index)}]" if index else name
        super().__init__(f"{where} = {value} is out of range for an axis of size {size}; expected {expected}")
        self.name, self.position, self.value, self.size, self.expected = name, position, value, size, expected


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
        zeros for the rows it lacks, so the devices' outputs sum to the logical gather. The index
        rule is New's: see GatherFactory.New.
        """


class GatherFactory(Factory):
    @abc.abstractmethod
    def New(self, params_dtype, indices_dtype, *, wrap_negative: bool = False, check_bounds: bool = False) -> Gather | None:
        """A Gather of params_dtype elements by int32 or int64 indices, or None if unsupported.

        wrap_negative: a negative index first gains gather_dim_size (counts from the end; Launch
        then needs offset 0). check_bounds: Launch raises IndexOutOfRange for the first index that
        selects no row, before it writes anything, where it otherwise writes zeros for that row.
        """
