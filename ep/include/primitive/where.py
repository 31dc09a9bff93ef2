"""Where: z = cond ? x : y, broadcasting (OneFlow's ep/include/primitive/where.h)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class Where(Primitive):
    @abc.abstractmethod
    def Launch(
        self, stream, num_cond_dims: int, cond_dims: Sequence[int], cond, num_x_dims: int, x_dims: Sequence[int], x,
        num_y_dims: int, y_dims: Sequence[int], y, z,
    ) -> None:
        """Write x where cond is nonzero, else y, to z: every buffer flat C-contiguous storage of its
        dims (num_*_dims entries each); z has the NumPy broadcast of the three shapes."""


class WhereFactory(Factory):
    @abc.abstractmethod
    def New(self, cond_dtype, data_dtype, max_num_dims: int) -> Where | None:
        """A Where for cond of cond_dtype (bool or an integer type: nonzero is true) and x, y and z of
        data_dtype, over at most max_num_dims dims; None if unsupported."""
