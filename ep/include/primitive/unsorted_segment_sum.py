"""UnsortedSegmentSum: rows of data added into the segments their ids name; Gather's transpose."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class UnsortedSegmentSum(Primitive):
    @abc.abstractmethod
    def Launch(
        self,
        stream,
        segment_ids,
        num_segment_ids: int,
        data,
        batch_dim_size: int,
        outer_dim_size: int,
        num_segments: int,
        inner_dim_size: int,
        out,
        offset: int = 0,
    ) -> None:
        """out ([batch, outer, num_segments, inner]) = zeros plus every row data[b, o, i, :] of data
        ([batch, outer, num_segment_ids, inner]) added at out[b, o, segment_ids[b, i] - offset, :].

        Rows whose segment_ids[b, i] - offset is outside [0, num_segments) are dropped, so devices
        holding rows [offset, offset + num_segments) of the logical out together hold the logical
        sum. This is the gradient of a BatchGather with respect to its params. Float16 sums in
        float32, rounded once. The index rule is New's (as GatherFactory.New's).
        """


class UnsortedSegmentSumFactory(Factory):
    @abc.abstractmethod
    def New(
        self, data_dtype, segment_ids_dtype, *, wrap_negative: bool = False, check_bounds: bool = False
    ) -> UnsortedSegmentSum | None:
        """An UnsortedSegmentSum of data_dtype (float16, float32, float64, int32 or int64) by int32
        or int64 segment ids, or None if unsupported.

        wrap_negative: a negative id first gains num_segments (Launch then needs offset 0).
        check_bounds: Launch raises IndexOutOfRange for the first id that names no segment, before
        it writes anything, where it otherwise drops that row.
        """
