"""UnsortedSegmentSum on every device: New's resolution and Launch, shared with the gathers
(IndexedPrimitive), and the dtypes it sums."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.gather import SAMPLE_INNER_SIZES, IndexedPrimitive, indexed_combinations, resolve_indexed
from ep.common.primitive.launch import Attr, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import HALF_TYPES, DataType
from ep.include.primitive.unsorted_segment_sum import UnsortedSegmentSum, UnsortedSegmentSumFactory

# What sums in a type that has an atomic add on CUDA (float16 through its float32 accumulator).
SUM_TYPES = (DataType.kFloat16, DataType.kBFloat16, DataType.kFloat, DataType.kDouble, DataType.kInt32, DataType.kInt64)


def accumulator_dtype(dtype: DataType) -> DataType:
    """What sums of dtype accumulate in: float16 in float32 (CUDA has no portable float16 atomic
    add, and the sum is rounded to float16 once instead of at every add)."""
    return DataType.kFloat if dtype in HALF_TYPES else dtype


class UnsortedSegmentSumImpl(IndexedPrimitive, UnsortedSegmentSum):
    is_gather = False
    names = ("segment_ids", "data", "out")
    size_names = ("num_segment_ids", "batch_dim_size", "outer_dim_size", "num_segments", "inner_dim_size", "offset")
    launch = declare(
        In("segment_ids", "self.indices_dtype", "plan[0].index_count"), Attr("num_segment_ids"), In("data", size="plan[0].gathered_count"),
        Attr("batch_dim_size"), Attr("outer_dim_size"), Attr("num_segments"), Attr("inner_dim_size"),
        Out("out", size="plan[0].params_count"), Attr("offset", "0"),
        plan=("num_segment_ids", "batch_dim_size", "outer_dim_size", "num_segments", "inner_dim_size", "offset"),
    )

    def plan(self, num_segment_ids, batch, outer, segments, inner, offset):
        return self._plan(num_segment_ids, batch, outer, segments, inner, offset)


class UnsortedSegmentSumFactoryImpl(GenericFactory, UnsortedSegmentSumFactory):
    primitive_type = UnsortedSegmentSumImpl

    def New(self, data_dtype, segment_ids_dtype, *, wrap_negative=False, check_bounds=False) -> UnsortedSegmentSum | None:
        return self._new(resolve_indexed(data_dtype, segment_ids_dtype, wrap_negative, check_bounds, SUM_TYPES, ("data_dtype", "segment_ids_dtype")))

    def Combinations(self):
        return indexed_combinations(SUM_TYPES)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        data, ids = dtypes
        for inner in SAMPLE_INNER_SIZES:
            x = values(2 * inner, data, (2, inner))
            args = {
                "segment_ids": np.array([1, 1], ids.dtype), "num_segment_ids": 2, "data": x, "batch_dim_size": 1,
                "outer_dim_size": 1, "num_segments": 2, "inner_dim_size": inner, "out": zeros(2 * inner, data), "offset": 0,
            }
            expected = np.concatenate([np.zeros(inner, x.dtype), x[0] + x[1]])  # both rows summed into segment 1
            yield Sample(dtypes, args, {"out": expected}, {"wrap_negative": True, "check_bounds": True})
