"""OneHot: out[i, j] = on_value if indices[i] == lower_bound + j else off_value (OneFlow's
ep/include/primitive/one_hot.h, which OneFlow declares but implements on no device)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class OneHot(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, indices, out, on_value, off_value, num_indices: int, lower_bound: int, upper_bound: int) -> None:
        """Write num_indices rows of upper_bound - lower_bound elements to out (flat storage of
        [num_indices, upper_bound - lower_bound]): row i holds on_value at column
        indices[i] - lower_bound and off_value elsewhere. A device holding classes [lower_bound,
        upper_bound) of a logical one-hot writes its columns of it: an index outside them gives a
        row of off_value, or with New's check_bounds an IndexOutOfRange (as Gather's check_bounds:
        on CUDA raised by the stream's next Sync()). on_value and off_value are scalars converted
        to out's dtype as Fill converts its scalar."""


class OneHotFactory(Factory):
    @abc.abstractmethod
    def New(self, indices_dtype, out_dtype, *, check_bounds: bool = False) -> OneHot | None:
        """A OneHot of int32 or int64 indices into out_dtype elements, or None if unsupported.
        check_bounds: Launch raises IndexOutOfRange for the first index outside [lower_bound,
        upper_bound) (on the CPU before writing anything), where it otherwise writes off_value."""
