"""Gather, BatchGather and UnsortedSegmentSum on every device: the index rule, New's resolution,
Launch's checks and plan cache, and what a device supplies.

Gather is BatchGather with one batch: both are one implementation (IndexedPrimitive) behind two
Launch signatures. UnsortedSegmentSum, the gather's transpose, reads its ids by the same rule
and sizes (ep/common/primitive/unsorted_segment_sum.py).
"""
from __future__ import annotations

import abc
from typing import Iterator, NamedTuple

import numpy as np

from ep.common.jit import scalar_function
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import ALL_TYPES, INDEX_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import INT64_MAX, count as check_count, int64 as check_int64
from ep.include.primitive.batch_gather import BatchGather, BatchGatherFactory
from ep.include.primitive.gather import Gather, GatherFactory, IndexOutOfRange


@scalar_function
def gather_row(value, lo, hi, size, wrap):
    """The index rule: the row an index value selects, value - lo when lo <= value <= hi (a negative
    value first gains size when wrap), else -1."""
    if wrap and value < 0:
        value += size
    return value - lo if lo <= value <= hi else -1


class GatherSizes(NamedTuple):
    """Checked sizes of a launch, the element counts of its buffers, and offset as the inclusive
    range [lo, hi] of index values a device holds (empty when hi < lo)."""

    batch: int
    outer: int
    gather: int
    inner: int
    num_indices: int
    offset: int
    lo: int
    hi: int
    # indices: batch * num_indices; params: [batch, outer, gather, inner]; gathered: [batch, outer, num_indices, inner].
    index_count: int
    params_count: int
    gathered_count: int


# What a gather's Launch calls its sizes, in gather_sizes' order.
GATHER_SIZE_NAMES = ("num_indices", "batch_dim_size", "outer_dim_size", "gather_dim_size", "inner_dim_size", "offset")


def gather_sizes(num_indices, batch, outer, gather, inner, offset, wrap: bool, names: tuple[str, ...] = GATHER_SIZE_NAMES) -> GatherSizes:
    """The sizes of a launch; TypeError or ValueError naming a bad one by its names entry (the
    caller's Launch parameter)."""
    num_indices = check_count(num_indices, names[0])
    batch = check_count(batch, names[1])
    outer = check_count(outer, names[2])
    gather = check_count(gather, names[3])
    inner = check_count(inner, names[4])
    offset = check_int64(offset, names[5])
    if wrap and offset:
        raise ValueError(f"offset: {offset} with wrap_negative; expected 0 (negative indices count from the end of all rows)")
    # Inclusive bounds clamped to int64, so that the kernels' comparisons cannot overflow.
    lo, hi = (0, -1) if gather == 0 else (offset, min(offset + gather - 1, INT64_MAX))
    return GatherSizes(
        batch,
        outer,
        gather,
        inner,
        num_indices,
        offset,
        lo,
        hi,
        batch * num_indices,
        batch * outer * gather * inner,
        batch * outer * num_indices * inner,
    )


def index_range(sizes: GatherSizes, wrap: bool) -> tuple[int, int]:
    """gather_row's rule as one inclusive range: the index values that select a row are exactly
    [least, sizes.hi], least being -gather where negatives wrap (offset is then 0), else lo."""
    return (-sizes.gather if wrap else sizes.lo), sizes.hi


def first_bad_index(indices: np.ndarray, sizes: GatherSizes, wrap: bool) -> int:
    """The position of the first of a launch's indices (flat storage) that selects no row, or -1:
    gather_row's rule on the host, with NumPy."""
    least, hi = index_range(sizes, wrap)
    values = indices[: sizes.index_count].astype(np.int64, copy=False)
    bad = np.flatnonzero((values < least) | (values > hi))
    return int(bad[0]) if bad.size else -1


def resolve_indexed(dtype: object, indices_dtype: object, wrap_negative: object, check_bounds: object, dtypes, names: tuple[str, str]):
    """New's key (dtype, indices dtype, wrap, check), or None unless dtype is one of dtypes and the
    indices are int32 or int64. names: New's names of the two dtype parameters, for errors."""
    dtype = as_data_type(dtype, names[0])
    indices_dtype = as_data_type(indices_dtype, names[1])
    if dtype not in dtypes or indices_dtype not in INDEX_TYPES:
        return None
    return dtype, indices_dtype, bool(wrap_negative), bool(check_bounds)


def indexed_combinations(dtypes) -> Iterator[tuple[None, tuple[DataType, DataType]]]:
    """(None, (dtype, indices dtype)) for every dtype of dtypes and index dtype."""
    for dtype in dtypes:
        for indices_dtype in INDEX_TYPES:
            yield None, (dtype, indices_dtype)


class IndexedKernels(abc.ABC):
    """What a device supplies for a primitive that reads rows by index (Gather, BatchGather,
    UnsortedSegmentSum): a plan of checked sizes, and its run on unchecked buffers."""

    def plan(self, dtype: DataType, indices_dtype: DataType, sizes: GatherSizes, wrap: bool, check: bool) -> object:
        """What run needs of these sizes beyond the buffers, derived once per size (it is cached);
        by default nothing, for devices whose launches depend on the buffers."""
        return None

    @abc.abstractmethod
    def run(self, primitive: IndexedPrimitive, plan: tuple, stream, indices, src, dst) -> int:
        """Run plan, (sizes, what plan() made), on stream over checked flat storage: -1, or with
        check the position of the first bad index (then nothing is written). A device that must not wait for its check (CUDA) returns -1 and has the
        stream's Sync() raise the error instead."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every device kernel a run can launch, for the PTX check."""


class IndexedPrimitive(Declared):
    """The plan and run, and the bad-index error, of every primitive that reads rows by index.

    names are what the subclass's Launch calls its indices, source and destination, size_names
    its sizes (as gather_sizes orders them); is_gather says whether the source is [batch, outer,
    gather, inner] (a gather) or the destination is. Each writes rows of its destination from its
    source: the destination shares memory with neither input.
    """

    is_gather = True
    names = ("indices", "in_", "out")
    size_names = GATHER_SIZE_NAMES

    def __init__(self, device_type: DeviceType, kernels: IndexedKernels, dtype, indices_dtype, wrap: bool, check: bool) -> None:
        self.device_type = device_type
        self.dtype, self.indices_dtype, self.wrap, self.check = dtype, indices_dtype, wrap, check
        self._kernels = kernels

    def _plan(self, num_indices, batch, outer, gather, inner, offset) -> tuple[GatherSizes, object]:
        sizes = gather_sizes(num_indices, batch, outer, gather, inner, offset, self.wrap, self.size_names)
        return sizes, self._kernels.plan(self.dtype, self.indices_dtype, sizes, self.wrap, self.check)

    def run(self, stream, plan, indices, src, dst) -> None:
        bad = self._kernels.run(self, plan, stream, indices, src, dst)
        if bad >= 0:
            sizes = plan[0]
            raise IndexOutOfRange(self.names[0], bad, int(indices[bad]), sizes.gather, self.expected(sizes))

    def expected(self, sizes: GatherSizes) -> str:
        """The index values a launch of these sizes accepts, as its IndexOutOfRange says them."""
        n = sizes.gather
        return f"{-n} <= index < {n}" if self.wrap else f"{sizes.offset} <= index < {sizes.offset + n}"


# The inner sizes samples launch: one element, and rows whose bytes make every raw unit (2, 4, 8 or
# 16 bytes) the kernels move, as one element or as a row of them.
SAMPLE_INNER_SIZES = (1, 2, 3, 4, 6, 8, 12, 16)

_INDICES = In("indices", "self.indices_dtype", "plan[0].index_count")
_SIZES = ("num_indices", "outer_dim_size", "gather_dim_size", "inner_dim_size")


class GatherImpl(IndexedPrimitive, Gather):
    launch = declare(
        _INDICES, Attr("num_indices"), In("in_", size="plan[0].params_count"), Attr("outer_dim_size"), Attr("gather_dim_size"),
        Attr("inner_dim_size"), Out("out", size="plan[0].gathered_count"), Attr("offset", "0"), plan=(*_SIZES, "offset"),
    )

    def plan(self, num_indices, outer, gather, inner, offset) -> tuple[GatherSizes, object]:
        return self._plan(num_indices, 1, outer, gather, inner, offset)


class BatchGatherImpl(IndexedPrimitive, BatchGather):
    launch = declare(
        _INDICES, Attr("num_indices"), In("in_", size="plan[0].params_count"), Attr("batch_dim_size"), Attr("outer_dim_size"),
        Attr("gather_dim_size"), Attr("inner_dim_size"), Out("out", size="plan[0].gathered_count"), Attr("offset", "0"),
        plan=("num_indices", "batch_dim_size", *_SIZES[1:], "offset"),
    )

    def plan(self, num_indices, batch, outer, gather, inner, offset) -> tuple[GatherSizes, object]:
        return self._plan(num_indices, batch, outer, gather, inner, offset)


class _GatherFactories(GenericFactory):
    """New and Combinations of Gather and BatchGather, alike but for the primitive they make."""

    def New(self, params_dtype, indices_dtype, *, wrap_negative=False, check_bounds=False):
        return self._new(resolve_indexed(params_dtype, indices_dtype, wrap_negative, check_bounds, ALL_TYPES, ("params_dtype", "indices_dtype")))

    def Combinations(self):
        return indexed_combinations(ALL_TYPES)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        params, indices = dtypes
        batch = {"batch_dim_size": 1} if self.primitive_type is BatchGatherImpl else {}
        for inner in SAMPLE_INNER_SIZES:
            x = values(2 * inner, params, (2, inner))
            args = {
                "indices": np.array([1, 0], indices.dtype), "num_indices": 2, "in_": x, **batch, "outer_dim_size": 1,
                "gather_dim_size": 2, "inner_dim_size": inner, "out": zeros(2 * inner, params), "offset": 0,
            }
            yield Sample(dtypes, args, {"out": x[::-1].ravel()}, {"wrap_negative": True, "check_bounds": True})


class GatherFactoryImpl(_GatherFactories, GatherFactory):
    primitive_type = GatherImpl


class BatchGatherFactoryImpl(_GatherFactories, BatchGatherFactory):
    primitive_type = BatchGatherImpl
