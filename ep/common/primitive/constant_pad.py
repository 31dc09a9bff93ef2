"""ConstantPad on every device: New's resolution, Launch's checks, the dims-merging rule and the plan.

The kernels move raw units (the element's bytes as an unsigned integer), so one kernel per element
size serves every dtype; the pad value reaches them as its bit pattern in that unit. A plan is
made once per (dims, paddings): dims merge (simplify_padding), then the kernels see dst as rows of
its last dim, each [pad | src run | pad], or all pad where an outer index lies outside src.
"""
from __future__ import annotations

import abc
import math
from typing import Iterator, NamedTuple, Sequence

import numpy as np

from ep.common.math.nd_index_offset_helper import contiguous_strides
from ep.common.primitive.broadcast_dims import MAX_CALLER_DIMS
from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, Scalar, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import INT64_MAX, MAX_NUM_DIMS, check_sequence, count as check_count, dims as check_dims, int64
from ep.include.primitive.constant_pad import ConstantPad, ConstantPadFactory


def simplify_padding(
    src_dims: Sequence[int], before: Sequence[int], after: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(src_dims, before, after) of the same pad with each dim that an unpadded dim follows merged
    into it (its paddings scaled by that dim's size) and unpadded dims of size 1 dropped; at least
    one dim. The one shape rule of a pad: every device plans on its result."""
    dims: list[int] = []
    pads: list[list[int]] = []
    # From the innermost out: a dim merges into the group inside it when that group's outermost dim
    # is unpadded (it then steps through src and dst alike).
    for size, b, a in reversed(tuple(zip(src_dims, before, after))):
        # A padding past the dim's far end pads no more: clamped to [-size, dst size] (the same
        # pad), so that merging, which scales it, stays within int64.
        dst = size + b + a
        b = -size if b < -size else dst if b > dst else b
        a = dst - size - b
        if dims and pads[0] == [0, 0]:
            inner = dims[0]
            dims[0], pads[0] = size * inner, [b * inner, a * inner]
        elif size == 1 and b == 0 and a == 0:
            continue
        else:
            dims.insert(0, size)
            pads.insert(0, [b, a])
    if not dims:
        return (1,), (0,), (0,)
    return tuple(dims), tuple(p[0] for p in pads), tuple(p[1] for p in pads)


class PadPlan(NamedTuple):
    """A merged pad: src dims, dst dims and the paddings before each (negative: cropped), with src's
    element strides; count: dst's elements."""

    src_dims: tuple[int, ...]
    dst_dims: tuple[int, ...]
    before: tuple[int, ...]
    src_strides: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.dst_dims)

    @property
    def src_count(self) -> int:
        return math.prod(self.src_dims)


class ConstantPadKernels(abc.ABC):
    """What a device supplies: a plan's launch arguments and the launch, in units of unit bytes."""

    @abc.abstractmethod
    def prepare(self, plan: PadPlan, unit: int) -> object:
        """What pad() needs of plan besides the buffers and the value; cached with the plan."""

    @abc.abstractmethod
    def pad(self, stream, prepared: object, src, dst, value) -> None:
        """Run a prepared pad from flat storage src to dst; value: the pad value's bits as a unit."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel a pad can launch, for the PTX check."""


class PadArgs(NamedTuple):
    """A checked pad, all but its buffers and value: the elements each buffer holds and the plan
    (None when dst is empty)."""

    src_count: int
    dst_count: int
    prepared: object | None


class ConstantPadImpl(Declared, ConstantPad):
    # dst holds src's elements at other offsets: it shares no memory with src.
    launch = declare(
        Attr("num_dims"), Attr("src_dims"), In("src", size="plan.src_count"), Attr("padding_before"),
        Attr("padding_after"), Scalar("pad_value", bits=True), Out("dst", size="plan.dst_count"),
        plan=("num_dims", "src_dims", "padding_before", "padding_after"),
    )

    def __init__(self, device_type: DeviceType, kernels: ConstantPadKernels, dtype: DataType) -> None:
        self.device_type = device_type
        self.dtype = dtype
        self._kernels = kernels

    def run(self, stream, plan: PadArgs, src, pad_value, dst) -> None:
        if plan.prepared is not None:
            self._kernels.pad(stream, plan.prepared, src, dst, pad_value)

    def plan(self, num_dims, src_dims, padding_before, padding_after) -> PadArgs:
        num_dims = check_count(num_dims, "num_dims")
        if not 1 <= num_dims <= MAX_CALLER_DIMS:
            raise ValueError(f"num_dims: {num_dims} is outside 1..{MAX_CALLER_DIMS}")
        src_dims = check_dims(src_dims, "src_dims", num_dims)
        before = _paddings(padding_before, "padding_before", num_dims)
        after = _paddings(padding_after, "padding_after", num_dims)
        if len(src_dims) != num_dims:
            raise ValueError(f"src_dims: has {len(src_dims)} entries; expected num_dims = {num_dims}")
        dst_dims = tuple(s + b + a for s, b, a in zip(src_dims, before, after))
        for i, (s, b, a, d) in enumerate(zip(src_dims, before, after, dst_dims)):
            if d < 0:
                raise ValueError(
                    f"padding_before[{i}], padding_after[{i}]: {b} and {a} crop dim {i} of size {s} to {d};"
                    " expected a size >= 0"
                )
        for name, dims in (("src_dims", src_dims), ("dst", dst_dims)):
            if math.prod(dims) > INT64_MAX:
                raise ValueError(f"{name}: {dims} holds more than 2**63 - 1 elements")
        src_count, dst_count = math.prod(src_dims), math.prod(dst_dims)
        if dst_count == 0:
            return PadArgs(src_count, 0, None)
        dims, merged_before, merged_after = simplify_padding(src_dims, before, after)
        if len(dims) > MAX_NUM_DIMS:
            raise ValueError(f"src_dims: needs {len(dims)} dims after merging; at most {MAX_NUM_DIMS} are supported")
        plan = PadPlan(
            dims,
            tuple(s + b + a for s, b, a in zip(dims, merged_before, merged_after)),
            merged_before,
            contiguous_strides(dims),
        )
        return PadArgs(src_count, dst_count, self._kernels.prepare(plan, self.dtype.itemsize))


def _paddings(value: object, name: str, num_dims: int) -> tuple[int, ...]:
    """value as num_dims ints in int64's range (negative ones crop)."""
    check_sequence(value, name, "paddings")
    checked = tuple(int64(p, f"{name}[{i}]") for i, p in enumerate(value))
    if len(checked) != num_dims:
        raise ValueError(f"{name}: has {len(checked)} entries; expected num_dims = {num_dims}")
    return checked


class ConstantPadFactoryImpl(DtypeFactory, ConstantPadFactory):
    primitive_type = ConstantPadImpl

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        x = values(6, dtypes[0], (2, 3))
        args = {
            "num_dims": 2, "src_dims": (2, 3), "src": x, "padding_before": (1, 0), "padding_after": (0, 1), "pad_value": 0,
            "dst": zeros(12, dtypes[0]),
        }
        yield Sample(dtypes, args, {"dst": np.pad(x, ((1, 0), (0, 1))).ravel()})
