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
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import ALL_TYPES, INDEX_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
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
        """Check the buffers against plan, (sizes, what plan() made), with primitive.checked_buffers
        and run it on stream: -1, or with check the position of the first bad index (then nothing
        is written). A device that must not wait for its check (CUDA) returns -1 and has the
        stream's Sync() raise the error instead."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every device kernel a run can launch, for the PTX check."""


class IndexedPrimitive:
    """Launch's checks, plan cache and bad-index error, for every primitive that reads rows by index.

    names are what the subclass's Launch calls its indices, source and destination, size_names
    its sizes (as gather_sizes orders them); is_gather
    says whether the source is [batch, outer, gather, inner] (a gather) or the destination is.
    """

    is_gather = True
    names = ("indices", "in_", "out")
    size_names = GATHER_SIZE_NAMES

    def __init__(self, device_type: DeviceType, kernels: IndexedKernels, dtype, indices_dtype, wrap: bool, check: bool) -> None:
        self.device_type = device_type
        self.dtype, self.indices_dtype, self.wrap, self.check = dtype, indices_dtype, wrap, check
        #: The dtype of NumPy buffers a device may use as storage without a view (None for float16,
        #: whose storage is a uint16 view that a uint16 array must not pass for).
        self.plain_dtype = dtype.dtype if dtype.dtype is dtype.storage_dtype else None
        self._kernels = kernels
        self._stream_type = STREAM_TYPES[device_type]
        # Keyed by the caller's own sizes: a repeated launch skips every check and derivation.
        self._plans = PlanCache(self._make_plan)

    def _make_plan(self, num_indices, batch, outer, gather, inner, offset) -> tuple[GatherSizes, object]:
        sizes = gather_sizes(num_indices, batch, outer, gather, inner, offset, self.wrap, self.size_names)
        return sizes, self._kernels.plan(self.dtype, self.indices_dtype, sizes, self.wrap, self.check)

    def _launch(self, stream, indices, num_indices, src, batch, outer, gather, inner, dst, offset) -> None:
        # Exact types skip the general checks: a tiny launch costs little more than these lines.
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        plan = self._plans.get(num_indices, batch, outer, gather, inner, offset)
        bad = self._kernels.run(self, plan, stream, indices, src, dst)
        if bad >= 0:
            raise self._out_of_range(plan[0], indices, bad)

    def expected(self, sizes: GatherSizes) -> str:
        """The index values a launch of these sizes accepts, as its IndexOutOfRange says them."""
        n = sizes.gather
        return f"{-n} <= index < {n}" if self.wrap else f"{sizes.offset} <= index < {sizes.offset + n}"

    def _out_of_range(self, sizes: GatherSizes, indices, position: int) -> IndexOutOfRange:
        name = self.names[0]
        value = int(storage(indices, name, self.device_type, self.indices_dtype, sizes.index_count)[position])
        return IndexOutOfRange(name, position, value, sizes.gather, self.expected(sizes))

    def checked_buffers(self, sizes: GatherSizes, indices, src, dst, stream=None) -> tuple[object, object, object]:
        """indices, src and dst as flat storage of the counts sizes need (on CUDA ordered after
        their producers on stream); the error names a bad one."""
        params, gathered = sizes.params_count, sizes.gathered_count
        src_count, dst_count = (params, gathered) if self.is_gather else (gathered, params)
        indices_name, src_name, dst_name = self.names
        return (
            storage(indices, indices_name, self.device_type, self.indices_dtype, sizes.index_count, stream=stream),
            storage(src, src_name, self.device_type, self.dtype, src_count, stream=stream),
            storage(dst, dst_name, self.device_type, self.dtype, dst_count, writable=True, stream=stream),
        )


class GatherImpl(IndexedPrimitive, Gather):
    def Launch(self, stream, indices, num_indices, in_, outer_dim_size, gather_dim_size, inner_dim_size, out, offset=0) -> None:
        self._launch(stream, indices, num_indices, in_, 1, outer_dim_size, gather_dim_size, inner_dim_size, out, offset)


class BatchGatherImpl(IndexedPrimitive, BatchGather):
    def Launch(self, stream, indices, num_indices, in_, batch_dim_size, outer_dim_size, gather_dim_size, inner_dim_size, out, offset=0):
        self._launch(stream, indices, num_indices, in_, batch_dim_size, outer_dim_size, gather_dim_size, inner_dim_size, out, offset)


class _GatherFactories(GenericFactory):
    """New and Combinations of Gather and BatchGather, alike but for the primitive they make."""

    def New(self, params_dtype, indices_dtype, *, wrap_negative=False, check_bounds=False):
        return self._new(resolve_indexed(params_dtype, indices_dtype, wrap_negative, check_bounds, ALL_TYPES, ("params_dtype", "indices_dtype")))

    def Combinations(self):
        return indexed_combinations(ALL_TYPES)


class GatherFactoryImpl(_GatherFactories, GatherFactory):
    primitive_type = GatherImpl


class BatchGatherFactoryImpl(_GatherFactories, BatchGatherFactory):
    primitive_type = BatchGatherImpl
