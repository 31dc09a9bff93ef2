"""CopyNd: copy an n-d box between two arrays laid out in flat storage (OneFlow's ep/include/primitive/copy_nd.h)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class CopyNd(Primitive):
    @abc.abstractmethod
    def Launch(
        self,
        stream,
        data_type,
        num_dims: int,
        dst,
        dst_dims: Sequence[int],
        dst_pos: Sequence[int],
        src,
        src_dims: Sequence[int],
        src_pos: Sequence[int],
        extent: Sequence[int],
        src_strides: Sequence[int] | None = None,
    ) -> None:
        """Copy the box of extent at src_pos of src (dims src_dims) to dst_pos of dst (dims dst_dims).

        dst and src are flat C-contiguous storage of data_type; every sequence holds num_dims
        entries and each box lies inside its dims (pos + extent <= dims). src_strides (element
        strides, >= 0) lays src out as a strided view instead of C-contiguous src_dims: element
        idx of src is src[dot(idx, src_strides)]. It is this port's addition to OneFlow's
        interface, so that one primitive copies every non-negative strided view (x[:, ::2], x.T,
        broadcast views), which no box of a C-contiguous array expresses. The two boxes' byte
        ranges must not intersect (ValueError), unless they are the same elements.
        """


class CopyNdFactory(Factory):
    @abc.abstractmethod
    def New(self, max_num_dims: int) -> CopyNd | None:
        """A CopyNd for launches of at most max_num_dims dims, or None (max_num_dims 0 or above 64).

        As in OneFlow the data type is a Launch argument: the copy moves raw bytes, so one primitive
        serves every dtype. Dims are merged before a launch (OneFlow's SimplifyCopyNd); a copy that
        still needs more than 9 dims after merging raises ValueError at Launch.
        """
