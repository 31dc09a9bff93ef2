"""Where on every device: New's resolution, Launch's checks, the plan, and what a device supplies.

Where moves elements without computing on them, so a device's kernels are keyed by bytes (the
cond's and the data's element sizes), as CopyNd's are: cond is read as an unsigned integer of its
size (nonzero is true, whatever its dtype) and x, y and z as units of theirs. The three shapes are
simplified together (OneFlow's SimplifyBroadcastDims, broadcast.py) into the dims z is read over,
with each operand's strides (0 on its broadcast dims); a plan is kept per (cond, x, y) dims.
"""
from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime import validate
from ep.common.runtime.data_type import ALL_TYPES, DataType, INTEGER_TYPES, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.include.primitive.where import Where, WhereFactory

# OneFlow's condition types: bool and the integers (nonzero is true).
COND_TYPES = (DataType.kBool, *INTEGER_TYPES)
# The element sizes kernels are keyed by.
COND_BYTES = tuple(sorted({t.itemsize for t in COND_TYPES}))
DATA_BYTES = tuple(sorted({t.itemsize for t in ALL_TYPES}))
_OPERANDS = ("cond", "x", "y")


@dataclass(frozen=True)
class WherePlan:
    """A launch: z's simplified dims, the element strides of cond, x and y over them (0 where
    broadcast) and of z, the elements each buffer holds, and whether all three have z's dims
    (elementwise: one flat loop)."""

    dims: tuple[int, ...]
    strides: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    dst_strides: tuple[int, ...]
    counts: tuple[int, int, int]
    count: int
    elementwise: bool


def plan_where(cond_dims: tuple[int, ...], x_dims: tuple[int, ...], y_dims: tuple[int, ...]) -> WherePlan:
    """The plan of dims that broadcast together (checked by the caller)."""
    simplified = simplify_broadcast_dims(cond_dims, x_dims, y_dims)
    dims = broadcast_shape(broadcast_shape(simplified[0], simplified[1]), simplified[2])
    strides = tuple(broadcast_strides(s, dims) for s in simplified)
    counts = tuple(math.prod(d) for d in (cond_dims, x_dims, y_dims))
    count = math.prod(dims)
    return WherePlan(dims, strides, contiguous_strides(dims), counts, count, all(s == dims for s in simplified))


class WhereKernels(abc.ABC):
    """What a device supplies: a plan's launch and, for the PTX check, every kernel."""

    @abc.abstractmethod
    def launcher(self, cond_bytes: int, data_bytes: int, plan: WherePlan) -> Callable[..., None]:
        """run(stream, cond, x, y, z) over flat storage, for a plan with count > 0; made once per plan."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel, for each of COND_BYTES and DATA_BYTES; compiles nothing."""


class WhereImpl(Declared, Where):
    # z[i] reads cond, x and y where it writes (an operand of z's dims has z's strides): z may be
    # exactly one of them, never part of one.
    launch = declare(
        Attr("num_cond_dims"), Attr("cond_dims"), In("cond", "self.cond_dtype", "plan[0].counts[0]"),
        Attr("num_x_dims"), Attr("x_dims"), In("x", "self.data_dtype", "plan[0].counts[1]"),
        Attr("num_y_dims"), Attr("y_dims"), In("y", "self.data_dtype", "plan[0].counts[2]"),
        Out("z", "self.data_dtype", "plan[0].count", reads_first=("cond", "x", "y")),
        plan=("num_cond_dims", "cond_dims", "num_x_dims", "x_dims", "num_y_dims", "y_dims"),
    )

    def __init__(self, device_type: DeviceType, kernels: WhereKernels, cond_dtype: DataType, data_dtype: DataType, max_num_dims: int) -> None:
        self.device_type = device_type
        self.cond_dtype, self.data_dtype, self.max_num_dims = cond_dtype, data_dtype, max_num_dims
        self._kernels = kernels

    def run(self, stream, plan: tuple[WherePlan, Callable | None], cond, x, y, z) -> None:
        run = plan[1]
        if run is not None:
            run(stream, cond, x, y, z)

    def plan(self, *operands: object) -> tuple[WherePlan, Callable | None]:
        """The plan and run of these num_dims, dims pairs, made after checking them: each num_dims
        an int within max_num_dims and the length of its dims, and the shapes broadcastable."""
        shapes = [
            validate.counted_dims(name, num_dims, dims, self.max_num_dims)
            for name, num_dims, dims in zip(_OPERANDS, operands[::2], operands[1::2])
        ]
        broadcast_shape(broadcast_shape(shapes[0], shapes[1], ("cond_dims", "x_dims")), shapes[2], ("the broadcast of cond_dims and x_dims", "y_dims"))
        plan = plan_where(*shapes)
        run = self._kernels.launcher(self.cond_dtype.itemsize, self.data_dtype.itemsize, plan) if plan.count else None
        return plan, run


class WhereFactoryImpl(GenericFactory, WhereFactory):
    primitive_type = WhereImpl

    def New(self, cond_dtype, data_dtype, max_num_dims=MAX_NUM_DIMS) -> Where | None:
        cond_dtype = as_data_type(cond_dtype, "cond_dtype")
        data_dtype = as_data_type(data_dtype, "data_dtype")
        max_num_dims = validate.count(max_num_dims, "max_num_dims")
        if cond_dtype not in COND_TYPES or max_num_dims > MAX_NUM_DIMS:
            return None
        return self._new((cond_dtype, data_dtype, max_num_dims))

    def Combinations(self):
        for cond_dtype in COND_TYPES:
            for data_dtype in ALL_TYPES:
                yield None, (cond_dtype, data_dtype)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        cond_dtype, dtype = dtypes
        # The flat select and the broadcast rows.
        for cond_dims, x_dims in (((4,), (4,)), ((2, 1), (1, 3))):
            cond = (np.arange(math.prod(cond_dims)) % 2).astype(cond_dtype.dtype).reshape(cond_dims)
            x = values(math.prod(x_dims), dtype, x_dims)
            y = x[..., ::-1].copy()
            z = np.where(cond, x, y)
            args = {
                "num_cond_dims": len(cond_dims), "cond_dims": cond_dims, "cond": cond, "num_x_dims": len(x_dims), "x_dims": x_dims,
                "x": x, "num_y_dims": len(x_dims), "y_dims": x_dims, "y": y, "z": zeros(z.size, dtype),
            }
            yield Sample((*dtypes, 3), args, {"z": z.ravel()})
