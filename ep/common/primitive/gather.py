"""Host side of a Gather or BatchGather launch, shared by the CPU and CUDA implementations.

gather_plan checks the sizes and turns offset into the inclusive range [lo, hi] of index values a
device holds; gather_launch also checks the buffers and views them in move units (see byte_units).
"""
from __future__ import annotations

import operator
from typing import NamedTuple

from ep.common.runtime.buffer import check_count, storage
from ep.common.primitive.byte_units import as_units, move_unit
from ep.common.runtime.data_type import ALL_TYPES, INDEX_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# The dtypes gather_grad supports: what sums in a type that has an atomic add on CUDA.
GRAD_TYPES = (DataType.kFloat16, DataType.kFloat, DataType.kDouble, DataType.kInt32, DataType.kInt64)


class GatherLaunch(NamedTuple):
    """A checked launch: storage in move units and sizes; inner and the buffers count units."""

    indices: object
    in_: object
    out: object
    batch: int
    outer: int
    gather: int
    inner: int
    num_indices: int
    lo: int
    hi: int
    unit: int

    @property
    def rows(self) -> int:
        """Output rows of inner units: batch * outer * num_indices."""
        return self.batch * self.outer * self.num_indices


def resolve_gather(params_dtype: object, indices_dtype: object) -> tuple[DataType, DataType] | None:
    """(params, indices) DataTypes for a factory's New, or None unless indices are int32 or int64."""
    params_dtype = as_data_type(params_dtype, "params_dtype")
    indices_dtype = as_data_type(indices_dtype, "indices_dtype")
    return (params_dtype, indices_dtype) if indices_dtype in INDEX_TYPES else None


def gather_combinations():
    """(None, (params dtype, indices dtype)) for every pair a Gather or BatchGather factory implements."""
    for params_dtype in ALL_TYPES:
        for indices_dtype in INDEX_TYPES:
            yield None, (params_dtype, indices_dtype)


def accumulator_dtype(dtype: DataType) -> DataType:
    """What gather_grad sums gradients of dtype in: float16 in float32 (CUDA has no portable
    float16 atomic add, and the sum is rounded to float16 once instead of at every add)."""
    return DataType.kFloat if dtype is DataType.kFloat16 else dtype


def check_offset(offset: object) -> int:
    """offset as an int64 value."""
    if isinstance(offset, bool):
        raise TypeError(f"offset: {offset!r} is not an integer")
    try:
        offset = operator.index(offset)
    except TypeError:
        raise TypeError(f"offset: {offset!r} is not an integer") from None
    if not INT64_MIN <= offset <= INT64_MAX:
        raise ValueError(f"offset: {offset} does not fit in int64")
    return offset


class GatherPlan(NamedTuple):
    """Checked sizes of a launch, the element counts its buffers must hold, and offset as the
    inclusive range [lo, hi] of index values a device holds (empty when hi < lo)."""

    batch: int
    outer: int
    gather: int
    inner: int
    num_indices: int
    lo: int
    hi: int
    index_count: int
    in_count: int
    out_count: int


def gather_plan(num_indices, batch, outer, gather, inner, offset) -> GatherPlan:
    """The plan of a launch with these sizes; TypeError or ValueError naming a bad one."""
    num_indices = check_count(num_indices, "num_indices")
    batch = check_count(batch, "batch_dim_size")
    outer = check_count(outer, "outer_dim_size")
    gather = check_count(gather, "gather_dim_size")
    inner = check_count(inner, "inner_dim_size")
    offset = check_offset(offset)
    if gather == 0:
        lo, hi = 0, -1
    else:
        # Inclusive bounds clamped to int64, so that the kernels' comparisons cannot overflow.
        lo, hi = offset, min(offset + gather - 1, INT64_MAX)
    return GatherPlan(
        batch,
        outer,
        gather,
        inner,
        num_indices,
        lo,
        hi,
        batch * num_indices,
        batch * outer * gather * inner,
        batch * outer * num_indices * inner,
    )


def gather_launch(
    device_type: DeviceType,
    params_dtype: DataType,
    indices_dtype: DataType,
    indices,
    num_indices,
    in_,
    batch,
    outer,
    gather,
    inner,
    out,
    offset,
    widest: int,
) -> GatherLaunch | None:
    """The checked launch in move units, or None when out is empty; widest is the device's widest move unit."""
    plan = gather_plan(num_indices, batch, outer, gather, inner, offset)
    indices = storage(indices, "indices", device_type, indices_dtype, plan.index_count)
    in_ = storage(in_, "in_", device_type, params_dtype, plan.in_count)
    out = storage(out, "out", device_type, params_dtype, plan.out_count, writable=True)
    if plan.out_count == 0:
        return None
    # Every size is now bounded by a buffer's length, except gather when in_ is empty: then it is 0.
    row_bytes = plan.inner * params_dtype.itemsize
    unit = move_unit(row_bytes, (in_, out) if plan.in_count else (out,), widest)
    return GatherLaunch(
        indices,
        as_units(in_, plan.in_count, unit),
        as_units(out, plan.out_count, unit),
        plan.batch,
        plan.outer,
        plan.gather,
        row_bytes // unit,
        plan.num_indices,
        plan.lo,
        plan.hi,
        unit,
    )
