"""OneHot on every device: New's resolution, Launch's checks and plans, and what a device supplies.

A one-hot is a gather from the identity matrix: row i of out is row indices[i] - lower_bound of
eye(upper_bound - lower_bound), with on_value and off_value for its ones and zeros. So its index
rule is Gather's (gather_row, with offset lower_bound and no wrap), its sizes are GatherSizes (one
batch, one outer row, gather = the classes, inner 1), and on CUDA its bounds check is Gather's
(gather_common.check_later). The values are written as their bits (scalar_bits, ep's one
scalar conversion), so kernels are keyed by the index dtype and out's element bytes.
"""
from __future__ import annotations

import abc
from typing import Iterator

import numpy as np

from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.fill import UNIT_DTYPES, as_units
from ep.common.primitive.gather import GatherSizes, gather_sizes
from ep.common.primitive.launch import Attr, Declared, In, Out, Scalar, declare
from ep.common.primitive.sample import Sample, zeros
from ep.common.runtime import validate
from ep.common.runtime.data_type import ALL_TYPES, INDEX_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.include.primitive.gather import IndexOutOfRange
from ep.include.primitive.one_hot import OneHot, OneHotFactory

# The element sizes kernels are keyed by (out is written as unsigned units of its size).
OUT_BYTES = tuple(UNIT_DTYPES)


class OneHotKernels(abc.ABC):
    """What a device supplies: a plan of checked sizes, and its run on checked storage."""

    def plan(self, indices_dtype: DataType, out_bytes: int, sizes: GatherSizes, count: int) -> object:
        """What run needs of these sizes (count: out's elements) beyond the buffers, made once per
        size (kept in the primitive's PlanCache); by default nothing."""
        return None

    @abc.abstractmethod
    def run(self, primitive: OneHotImpl, plan: tuple, stream, indices, out, on, off) -> int:
        """Write the one-hot of plan (sizes, out's element count, what plan() made) into out (viewed as UNIT_DTYPES of
        its element size; on and off are the values' bits in that unit) on stream: -1, or with
        primitive.check the position of the first index out of range (then nothing is written). A
        device that must not wait for its check (CUDA) returns -1 and has Sync() raise instead."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every device kernel a run can launch, for the PTX check."""


def one_hot_sizes(num_indices: object, lower_bound: object, upper_bound: object) -> GatherSizes:
    """The checked sizes of a launch as a gather's: num_indices rows from upper_bound - lower_bound
    classes starting at lower_bound; TypeError or ValueError naming a bad argument."""
    num_indices = validate.count(num_indices, "num_indices")
    lower = validate.count(lower_bound, "lower_bound")
    upper = validate.count(upper_bound, "upper_bound")
    if upper < lower:
        raise ValueError(f"upper_bound: {upper} is below lower_bound={lower}; expected lower_bound <= upper_bound")
    return gather_sizes(num_indices, 1, 1, upper - lower, 1, lower, False)


class OneHotImpl(Declared, OneHot):
    # What gather_common's deferred bounds check reads of a primitive (a gather's are the same).
    names = ("indices", "out")
    wrap = False
    # Each index fills a row of out: out shares no memory with indices.
    launch = declare(
        In("indices", "self.indices_dtype", "plan[0].index_count"), Out("out", "self.out_dtype", "plan[1]"),
        Scalar("on_value", "self.out_dtype", bits=True), Scalar("off_value", "self.out_dtype", bits=True),
        Attr("num_indices"), Attr("lower_bound"), Attr("upper_bound"), plan=("num_indices", "lower_bound", "upper_bound"),
    )

    def __init__(self, device_type: DeviceType, kernels: OneHotKernels, indices_dtype: DataType, out_dtype: DataType, check: bool) -> None:
        self.device_type = device_type
        self.indices_dtype, self.out_dtype, self.check = indices_dtype, out_dtype, check
        self._kernels = kernels

    def plan(self, num_indices, lower_bound, upper_bound) -> tuple[GatherSizes, int, object]:
        sizes = one_hot_sizes(num_indices, lower_bound, upper_bound)
        count = sizes.index_count * sizes.gather
        return sizes, count, self._kernels.plan(self.indices_dtype, self.out_dtype.itemsize, sizes, count)

    def run(self, stream, plan, indices, out, on_value, off_value) -> None:
        sizes, count = plan[0], plan[1]
        if count == 0 and not (self.check and sizes.index_count):
            return
        bad = self._kernels.run(self, plan, stream, indices, as_units(out, self.out_dtype.itemsize), on_value, off_value)
        if bad >= 0:
            value = int(indices[bad])
            raise IndexOutOfRange(self.names[0], bad, value, sizes.gather, self.expected(sizes))

    def expected(self, sizes: GatherSizes) -> str:
        """The index values a launch of these sizes accepts, as its IndexOutOfRange says them."""
        return f"{sizes.offset} <= index < {sizes.offset + sizes.gather}"


class OneHotFactoryImpl(GenericFactory, OneHotFactory):
    primitive_type = OneHotImpl

    def New(self, indices_dtype, out_dtype, *, check_bounds=False) -> OneHot | None:
        indices_dtype = as_data_type(indices_dtype, "indices_dtype")
        out_dtype = as_data_type(out_dtype, "out_dtype")
        if indices_dtype not in INDEX_TYPES:
            return None
        return self._new((indices_dtype, out_dtype, bool(check_bounds)))

    def Combinations(self):
        for indices_dtype in INDEX_TYPES:
            for out_dtype in ALL_TYPES:
                yield None, (indices_dtype, out_dtype)


    def Samples(self, op, dtypes) -> Iterator[Sample]:
        indices_dtype, out_dtype = dtypes
        indices = np.array([0, 2], indices_dtype.dtype)
        args = {
            "indices": indices, "out": zeros(6, out_dtype), "on_value": 1, "off_value": 0, "num_indices": 2, "lower_bound": 0,
            "upper_bound": 3,
        }
        expected = (indices[:, None] == np.arange(3)).astype(out_dtype.dtype).ravel()
        yield Sample(dtypes, args, {"out": expected}, {"check_bounds": True})
