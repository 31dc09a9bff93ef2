"""Permute: dst = src transposed by a permutation of its dims (OneFlow's ep/include/primitive/permute.h)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class Permute(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, data_type, num_dims: int, src_dims: Sequence[int], src, permutation: Sequence[int], dst) -> None:
        """Write src (C-contiguous storage of shape src_dims) permuted into dst (C-contiguous storage).

        dst's dim i is src's dim permutation[i] (numpy.transpose's axes): dst's shape is
        (src_dims[permutation[0]], ...). src_dims and permutation hold num_dims entries each, and
        permutation is a permutation of range(num_dims).
        """


class PermuteFactory(Factory):
    @abc.abstractmethod
    def New(self, max_num_dims: int) -> Permute | None:
        """A Permute for launches of at most max_num_dims dims, or None (max_num_dims 0 or above 64).

        As in OneFlow the data type is a Launch argument: a permute moves raw elements, so one
        primitive serves every dtype. Dims that stay adjacent merge before a launch.
        """
