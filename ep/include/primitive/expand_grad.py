"""ExpandGrad: Expand's backward, dst[i] = sum of src over every position that Expand filled from i."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class ExpandGrad(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src_dims: Sequence[int], src, dst_dims: Sequence[int], dst) -> None:
        """Sum src (storage of shape src_dims, the expanded gradient) into dst (storage of dst_dims).

        dst_dims broadcasts to src_dims: len(dst_dims) <= len(src_dims) and each dst dim equals its
        src dim or is 1; src is summed over the dims where dst has 1 and over src's extra leading dims.
        """


class ExpandGradFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> ExpandGrad | None:
        """An ExpandGrad for dtype (float16 accumulated in float32, integers in int64), or None (bool)."""
