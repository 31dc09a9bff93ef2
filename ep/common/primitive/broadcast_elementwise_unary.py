"""BroadcastElementwiseUnary on every device: New's resolution (ElementwiseUnary's op table), Launch's
checks, the plan, and what a device supplies.

The plan folds the two layouts as OneFlow's SimplifyBroadcastDims does: dims of dst's size 1 are
dropped, src's broadcast dims get stride 0, and neighbouring dims merge where both strides allow
it. One dim with unit strides is a flat launch of ElementwiseUnary's own kernel; anything else runs
a device's strided kernel over the plan's dims. A plan is kept per the caller's dims and strides.
"""
from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from ep.common.math.unary_functor import UNARY_FUNCTORS, resolve_unary
from ep.common.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl, ElementwiseUnaryKernels
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.primitive.strided_copy import merge_dims
from ep.common.runtime import validate
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.include.primitive.broadcast_elementwise_unary import BroadcastElementwiseUnary, BroadcastElementwiseUnaryFactory
from ep.include.primitive.unary_op import UnaryOp


@dataclass(frozen=True)
class UnaryBroadcastPlan:
    """A launch: the simplified dims dst is walked over (C order), src's and dst's element strides
    over them (src's 0 where broadcast), the elements each buffer must hold, dst's element count,
    and whether it is one flat run (one dim, unit strides)."""

    dims: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    src_extent: int
    dst_extent: int
    count: int
    flat: bool


def extent(dims: Sequence[int], strides: Sequence[int]) -> int:
    """The elements a buffer of these dims and strides spans (0 when it has none)."""
    if math.prod(dims) == 0:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(dims, strides))


def plan_broadcast_unary(src_dims, src_strides, dst_dims, dst_strides) -> UnaryBroadcastPlan:
    """The plan of checked layouts (src_dims broadcast to dst_dims)."""
    lead = len(dst_dims) - len(src_dims)
    # src's stride along each of dst's dims: 0 where src broadcasts (a leading dim, or one of size 1).
    aligned = [0 if d < lead or src_dims[d - lead] == 1 else src_strides[d - lead] for d in range(len(dst_dims))]
    dims, ss, ds = merge_dims(dst_dims, aligned, dst_strides)
    count = math.prod(dst_dims)
    if not dims:
        dims, ss, ds = [1], [1], [1]  # one element
    flat = len(dims) == 1 and ss[0] == 1 and ds[0] == 1
    return UnaryBroadcastPlan(
        tuple(dims), tuple(ss), tuple(ds), extent(src_dims, src_strides) if count else 0, extent(dst_dims, dst_strides), count, flat
    )


def check_distinct(dims: Sequence[int], strides: Sequence[int], name: str) -> None:
    """ValueError naming name unless the elements of these dims and strides are all at different
    offsets (each stride, smallest first, at least the span of the dims inside it; strides that
    interleave without colliding are refused too). No elements: nothing to collide."""
    if 0 in dims:
        return
    span = 1
    for n, s in sorted((p for p in zip(dims, strides) if p[0] > 1), key=lambda p: p[1]):
        if s < span:
            raise ValueError(f"{name}: {tuple(strides)} for dims {tuple(dims)} may put two elements at one offset; expected strides each at least the span of the dims of smaller strides")
        span += (n - 1) * s


class BroadcastElementwiseUnaryKernels(abc.ABC):
    """What a device supplies: its ElementwiseUnary kernels (unary, which run a flat plan), a
    strided plan's launch and, for the PTX check, every kernel."""

    def __init__(self, unary: ElementwiseUnaryKernels) -> None:
        self.unary = unary

    @abc.abstractmethod
    def launcher(self, op, src_dtype: DataType, dst_dtype: DataType, plan: UnaryBroadcastPlan) -> Callable[..., None]:
        """run(stream, src, dst, attr0, attr1) over flat storage, for a plan that is not flat and
        has count > 0; made once per plan."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel a launcher can run (the flat ones are ElementwiseUnary's); compiles nothing."""


class BroadcastElementwiseUnaryImpl(Declared, BroadcastElementwiseUnary):
    # src and dst by the memory their layouts span; dst may not share any of src's (an in-place
    # transpose read elements already written: wrong, silently).
    launch = declare(
        Attr("num_src_dims"), Attr("src_dims"), Attr("src_strides"), In("src", "self.src_dtype", "plan[0].src_extent"),
        Attr("num_dst_dims"), Attr("dst_dims"), Attr("dst_strides"), Out("dst", "self.dst_dtype", "plan[0].dst_extent"),
        plan=("num_src_dims", "src_dims", "src_strides", "num_dst_dims", "dst_dims", "dst_strides"),
    )

    def __init__(self, device_type: DeviceType, kernels: BroadcastElementwiseUnaryKernels, op, src_dtype, dst_dtype, attrs, max_num_dims: int) -> None:
        self.device_type = device_type
        self.op, self.src_dtype, self.dst_dtype, self.attrs, self.max_num_dims = op, src_dtype, dst_dtype, attrs, max_num_dims
        self._kernels = kernels

    def run(self, stream, plan: tuple[UnaryBroadcastPlan, Callable | None], src, dst) -> None:
        run = plan[1]
        if run is not None:
            attr0, attr1 = self.attrs  # not *self.attrs: a star call costs a fifth of a tiny launch
            run(stream, src, dst, attr0, attr1)

    def _layout(self, name: str, num_dims, dims, strides) -> tuple[tuple[int, ...], tuple[int, ...]]:
        num_dims = validate.count(num_dims, f"num_{name}_dims")
        if num_dims > self.max_num_dims:
            raise ValueError(f"num_{name}_dims: {num_dims} is above max_num_dims={self.max_num_dims}")
        dims = validate.dims(dims, f"{name}_dims", self.max_num_dims)
        strides = validate.dims(strides, f"{name}_strides", self.max_num_dims)
        for what, entries in ((f"{name}_dims", dims), (f"{name}_strides", strides)):
            if len(entries) != num_dims:
                raise ValueError(f"{what}: has {len(entries)} entries; expected num_{name}_dims={num_dims}")
        return dims, strides

    def plan(self, num_src_dims, src_dims, src_strides, num_dst_dims, dst_dims, dst_strides) -> tuple[UnaryBroadcastPlan, Callable | None]:
        """The plan and run of these layouts, made after checking them: counts within max_num_dims,
        dims and strides of those lengths, src broadcastable to dst, dst's elements distinct."""
        src_dims, src_strides = self._layout("src", num_src_dims, src_dims, src_strides)
        dst_dims, dst_strides = self._layout("dst", num_dst_dims, dst_dims, dst_strides)
        lead = len(dst_dims) - len(src_dims)
        if lead < 0 or any(n not in (1, m) for n, m in zip(src_dims, dst_dims[lead:])):
            raise ValueError(f"src_dims: {src_dims} do not broadcast to dst_dims={dst_dims}; expected each of src's dims, aligned to the right, 1 or dst's")
        check_distinct(dst_dims, dst_strides, "dst_strides")
        plan = plan_broadcast_unary(src_dims, src_strides, dst_dims, dst_strides)
        if not plan.count:
            return plan, None
        if plan.flat:
            kernel, count = self._kernels.unary.kernel(self.op, self.src_dtype, self.dst_dtype), plan.count
            return plan, lambda stream, src, dst, attr0, attr1: kernel.launch(stream, count, src, dst, count, attr0, attr1)
        return plan, self._kernels.launcher(self.op, self.src_dtype, self.dst_dtype, plan)


class BroadcastElementwiseUnaryFactoryImpl(GenericFactory, BroadcastElementwiseUnaryFactory):
    primitive_type = BroadcastElementwiseUnaryImpl

    def New(self, op, src_dtype, dst_dtype, max_num_dims=MAX_NUM_DIMS, attr0=None, attr1=None) -> BroadcastElementwiseUnary | None:
        max_num_dims = validate.count(max_num_dims, "max_num_dims")
        key = resolve_unary(op, src_dtype, dst_dtype, attr0, attr1)
        if key is None or max_num_dims > MAX_NUM_DIMS:
            return None
        return self._new((*key, max_num_dims))

    # ElementwiseUnary's own: a broadcast applies its functors (and runs its kernel on a flat plan).
    Combinations = ElementwiseUnaryFactoryImpl.Combinations

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        src, dst = dtypes
        attrs = (1,) * len(UNARY_FUNCTORS[op].attrs)  # launch-time scalars: any value compiles the same kernel
        # A flat copy, and (2, 1, 3) broadcast to (2, 4, 3) into a transposed dst (element (i, j, k) at i + 2 j + 8 k).
        for x_dims, x_strides, dst_dims, dst_strides in (((4,), (1,), (4,), (1,)), ((2, 1, 3), (3, 3, 1), (2, 4, 3), (1, 2, 8))):
            x = values(math.prod(x_dims), src, x_dims)
            full = np.broadcast_to(x, dst_dims)
            args = {
                "num_src_dims": len(x_dims), "src_dims": x_dims, "src_strides": x_strides, "src": x, "num_dst_dims": len(dst_dims),
                "dst_dims": dst_dims, "dst_strides": dst_strides, "dst": zeros(full.size, dst),
            }
            expected = {"dst": np.maximum(full, 0).astype(dst.dtype).T.ravel()} if op is UnaryOp.kRelu else None
            yield Sample((op, src, dst, 3, *attrs), args, expected)
