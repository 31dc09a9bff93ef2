"""BroadcastElementwiseBinary on every device: New's resolution, Launch's checks, the plan, and what
a device supplies.

A Launch simplifies the broadcast (OneFlow's SimplifyBroadcastDims) and picks the path: elementwise
(equal shapes), scalar (a value or a one-element operand), row or column broadcast (two dims after
simplification), or general (NdIndexOffsetHelper, 0 strides on broadcast dims). The plan is made
once per (dims0, dims1) and kept; kernels get only sizes and strides from it, never shapes.
"""
from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

import numpy as np

from ep.common.math.binary_functor import BINARY_FUNCTORS, binary_combinations, resolve_binary
from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime import validate
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinary, BroadcastElementwiseBinaryFactory

# The operands' dims of each path and side the samples launch (None: a scalar value).
SAMPLE_DIMS = (
    ((4,), (4,)),  # elementwise
    ((4,), None), (None, (4,)),  # scalar
    ((2, 3), (1, 3)), ((1, 3), (2, 3)),  # row
    ((2, 3), (2, 1)), ((2, 1), (2, 3)),  # column
    ((2, 1, 3), (1, 2, 1)),  # general
)

# Kernels take strides as tuples of this length (padded with 0), so one compiled kernel serves
# every rank.
STRIDES_LEN = MAX_NUM_DIMS

def padded(values: tuple[int, ...]) -> tuple[int, ...]:
    """values padded with 0 to STRIDES_LEN entries."""
    return tuple(values) + (0,) * (STRIDES_LEN - len(values))


@dataclass(frozen=True)
class BinaryPlan:
    """How a launch runs.

    path: "empty" (nothing to write), "elementwise" (both operands have count elements in dst's
    order), "scalar" (operand `side` is one element), "row" / "column" (dst is rows x cols and
    operand `side` is one row, of cols elements, or one column, of rows elements), or "general".
    dims is the simplified dst shape and strides0/strides1/dst_strides its element strides, 0 on
    the broadcast dims; they describe every path but "empty". value0/value1 say an operand is a
    scalar value rather than storage.
    """

    path: str
    count: int
    side: int
    dims: tuple[int, ...]
    strides0: tuple[int, ...]
    strides1: tuple[int, ...]
    dst_strides: tuple[int, ...]
    value0: bool = False
    value1: bool = False

    @property
    def rows(self) -> int:
        return self.dims[0]

    @property
    def cols(self) -> int:
        return self.dims[-1]


def plan_binary(dims0: tuple[int, ...], dims1: tuple[int, ...], value0: bool, value1: bool) -> BinaryPlan:
    """The path for operands of dims0 and dims1; value0/value1 say an operand is a scalar value."""
    a, b = simplify_broadcast_dims(dims0, dims1)
    dims = broadcast_shape(a, b)
    count = math.prod(dims)
    strides0, strides1 = broadcast_strides(a, dims), broadcast_strides(b, dims)
    size0, size1 = math.prod(a), math.prod(b)
    side = 0
    if count == 0:
        path = "empty"
    elif a == b and not (value0 or value1):
        path = "elementwise"
    elif value0 or value1 or size0 == 1 or size1 == 1:
        path = "scalar"
        # A value is always the scalar side; else the one-element operand.
        side = 0 if value0 or (size0 == 1 and not value1) else 1
    elif len(dims) == 2 and (size0 == count or size1 == count):
        side = 1 if size0 == count else 0
        broadcast = b if side else a
        path = "row" if broadcast[0] == 1 else "column"
    else:
        path = "general"
    return BinaryPlan(path, count, side, dims, strides0, strides1, contiguous_strides(dims), value0, value1)


class BroadcastElementwiseBinaryKernels(abc.ABC):
    """What a device supplies: how each path of a plan launches, and its kernels for the PTX check."""

    @abc.abstractmethod
    def launcher(self, op, src_dtype: DataType, dst_dtype: DataType, plan: BinaryPlan) -> Callable[..., None]:
        """run(stream, src0, src1, dst, attr0, attr1) for a plan that writes something, made once
        per plan: src0/src1 are flat storage, or a compute-dtype value where plan.value0/value1."""

    @abc.abstractmethod
    def combination_kernels(self, op, src_dtype: DataType, dst_dtype: DataType) -> Iterator[object]:
        """Every kernel of (op, src_dtype, dst_dtype), on every path; compiles nothing."""

    def all_kernels(self) -> Iterator[object]:
        for op, src_dtype, dst_dtype in binary_combinations():
            yield from self.combination_kernels(op, src_dtype, dst_dtype)


class _Launch(NamedTuple):
    """A kept plan: the elements each buffer must hold, and the run (None when nothing is written)."""

    count0: int
    count1: int
    count: int
    run: Callable[..., None] | None


class BroadcastElementwiseBinaryImpl(Declared, BroadcastElementwiseBinary):
    # An operand of dst's size is read where dst is written, in every path: dst may be exactly it.
    launch = declare(
        Attr("src0_dims"), In("src0", "self.src_dtype", "plan.count0", scalar=True),
        Attr("src1_dims"), In("src1", "self.src_dtype", "plan.count1", scalar=True),
        Out("dst", "self.dst_dtype", "plan.count", reads_first=("src0", "src1")),
        plan=("src0_dims", "src1_dims"),
    )

    def __init__(
        self, device_type: DeviceType, kernels: BroadcastElementwiseBinaryKernels,
        op, src_dtype, dst_dtype, max_num_dims, attrs,
    ) -> None:
        self.device_type = device_type
        self.op, self.src_dtype, self.dst_dtype = op, src_dtype, dst_dtype
        self.max_num_dims, self.attrs = max_num_dims, attrs
        self._kernels = kernels

    def run(self, stream, plan: _Launch, src0, src1, dst) -> None:
        if plan.run is not None:
            attr0, attr1 = self.attrs  # not *self.attrs: a star call costs a fifth of a tiny launch
            plan.run(stream, src0, src1, dst, attr0, attr1)

    def plan(self, src0_dims, src1_dims, scalars: int) -> _Launch:
        """The plan for these dims, made after checking them: within max_num_dims, a value only
        with dims (), not two values, and broadcastable. scalars: bit 0 src0 is a value, bit 1 src1."""
        value0, value1 = bool(scalars & 1), bool(scalars & 2)
        dims0 = validate.dims(src0_dims, "src0_dims", self.max_num_dims)
        dims1 = validate.dims(src1_dims, "src1_dims", self.max_num_dims)
        for name, value, dims in (("src0", value0, dims0), ("src1", value1, dims1)):
            if value and dims != ():
                raise ValueError(f"{name}: a scalar operand has dims (); got {name}_dims={dims}")
        if value0 and value1:
            raise TypeError("src0, src1: both are scalars; at least one must be a buffer")
        broadcast_shape(dims0, dims1, names=("src0_dims", "src1_dims"))
        plan = plan_binary(dims0, dims1, value0, value1)
        run = None if plan.path == "empty" else self._kernels.launcher(self.op, self.src_dtype, self.dst_dtype, plan)
        return _Launch(math.prod(dims0), math.prod(dims1), plan.count, run)


def resolve_new(op, src_dtype, dst_dtype, max_num_dims, attr0, attr1):
    """(op, src, dst, max_num_dims, attrs) normalized for New, or None when unsupported (an (op,
    dtype) combination that does not exist, or max_num_dims above MAX_NUM_DIMS)."""
    max_num_dims = validate.count(max_num_dims, "max_num_dims")
    resolved = resolve_binary(op, src_dtype, dst_dtype, attr0, attr1)
    if resolved is None or max_num_dims > MAX_NUM_DIMS:
        return None
    op, src_dtype, dst_dtype, attrs = resolved
    return op, src_dtype, dst_dtype, max_num_dims, attrs


class BroadcastElementwiseBinaryFactoryImpl(GenericFactory, BroadcastElementwiseBinaryFactory):
    primitive_type = BroadcastElementwiseBinaryImpl

    def New(
        self, op, src_dtype, dst_dtype, max_num_dims=MAX_NUM_DIMS, attr0=None, attr1=None
    ) -> BroadcastElementwiseBinary | None:
        return self._new(resolve_new(op, src_dtype, dst_dtype, max_num_dims, attr0, attr1))

    def Combinations(self):
        for op, src_dtype, dst_dtype in binary_combinations():
            yield op, (src_dtype, dst_dtype)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        src, dst = dtypes
        attrs = (1,) * len(BINARY_FUNCTORS[op].attrs)  # launch-time scalars: any value compiles the same kernel
        for dims0, dims1 in SAMPLE_DIMS:
            a = values(1, src)[0] if dims0 is None else values(math.prod(dims0), src, dims0)
            b = values(1, src)[0] if dims1 is None else values(math.prod(dims1), src, dims1)
            shape = np.broadcast_shapes(dims0 or (), dims1 or ())
            args = {"src0_dims": dims0 or (), "src0": a, "src1_dims": dims1 or (), "src1": b, "dst": zeros(math.prod(shape), dst)}
            expected = {"dst": np.add(a, b).astype(dst.dtype).ravel()} if op is BinaryOp.kAdd else None
            yield Sample((op, src, dst, 3, *attrs), args, expected)
