"""The copy behind Expand and CopyNd: a plan in raw units, the kernels a device supplies, and their launch.

A plan describes the copied elements as `num_runs` runs of `run` units; run r, at index (i, ...) of
the dims outside the run, reads its units from `dot((i, ...), src_strides) + j * inner_stride`
(j < run), where inner_stride is 1 for a contiguous run, 0 for a broadcast element and anything
else for a strided gather, and writes them to `dot((i, ...), dst_strides) + j`. Units are the widest of 16 (CUDA), 8, 4, 2
or 1 bytes that divides the contiguous run, every stride and, where the device needs aligned units,
the addresses of the buffers, so the kernels never depend on the dtype.
"""
from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Iterator, NamedTuple, Sequence

from ep.common.primitive.byte_units import UNITS, move_unit
from ep.common.runtime.buffer import address, kept
from ep.common.runtime.data_type import DataType
from ep.common.runtime.validate import MAX_NUM_DIMS


@dataclass(frozen=True)
class CopyPlan:
    """Copied dims in units (the last is the inner run) and the strides of src and dst in units."""

    unit: int
    dims: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]

    @property
    def ndim(self) -> int:
        """How many dims the kernel indexes outside the inner run (at least 1)."""
        return max(len(self.dims) - 1, 1)

    @property
    def run(self) -> int:
        return self.dims[-1]

    @property
    def inner_stride(self) -> int:
        return self.src_strides[-1]

    @property
    def count(self) -> int:
        """Units copied."""
        return math.prod(self.dims)


def span(dims: Sequence[int], strides: Sequence[int]) -> int:
    """Elements from the first one dims and strides reach to the last, inclusive (0 when empty)."""
    if 0 in dims:
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(dims, strides))


def merge_dims(dims: Sequence[int], src: Sequence[int], dst: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """dims, with src's and dst's strides over them, simplified: dims of size 1 go, and a dim merges
    into its outer neighbour when, in src and in dst, the two step through memory as one dim would
    (broadcast dims of stride 0 merge with each other). Empty when every dim is 1."""
    out_dims: list[int] = []
    out_src: list[int] = []
    out_dst: list[int] = []
    for d, s, t in zip(dims, src, dst):
        if d == 1:
            continue
        if out_dims and out_src[-1] == s * d and out_dst[-1] == t * d:
            out_dims[-1] *= d
            out_src[-1], out_dst[-1] = s, t
        else:
            out_dims.append(d)
            out_src.append(s)
            out_dst.append(t)
    return out_dims, out_src, out_dst


def _end_on_a_run(dims: list[int], src: list[int], dst: list[int], src_too: bool) -> tuple[list[int], list[int], list[int]]:
    # The kernels write each run contiguously: where dst's (or, src_too, src's) innermost dim is
    # not, the copy becomes runs of one.
    if not dims or dst[-1] != 1 or (src_too and src[-1] != 1):
        return dims + [1], src + [1], dst + [1]
    return dims, src, dst


def copy_plan(
    dims: Sequence[int], src_strides: Sequence[int], dst_strides: Sequence[int], itemsize: int, buffers: Sequence, widest: int, name: str
) -> CopyPlan:
    """The plan for copying dims elements, with these element strides in src and dst, in units.

    The unit is the widest (at most widest bytes) dividing the contiguous run, every stride, and
    the address of every array in buffers (none where unaligned moves are fine). The element's
    bytes become an innermost dim, so merging folds them into the contiguous inner run; once that
    run is counted in units a run of one unit is a size-1 dim, and merging again drops it, leaving
    e.g. a broadcast dim as the inner run (a fill). name is the argument an oversized plan blames.
    """
    # In bytes the inner run is contiguous in both, unless one-byte elements are strided: then it is one byte.
    byte_dims, src, dst = _end_on_a_run(
        *merge_dims(tuple(dims) + (itemsize,), [s * itemsize for s in src_strides] + [1], [s * itemsize for s in dst_strides] + [1]),
        src_too=True,
    )
    unit = move_unit(math.gcd(byte_dims[-1], *src[:-1], *dst[:-1]), tuple(buffers), widest)
    byte_dims[-1] //= unit
    units, src, dst = _end_on_a_run(
        *merge_dims(byte_dims, [s // unit for s in src[:-1]] + [1], [s // unit for s in dst[:-1]] + [1]), src_too=False
    )
    plan = CopyPlan(unit, tuple(units), tuple(src), tuple(dst))
    if plan.ndim > MAX_NUM_DIMS:
        raise ValueError(f"{name}: needs {plan.ndim + 1} dims after simplification; at most {MAX_NUM_DIMS + 1} are supported")
    return plan


class CopyLaunch(NamedTuple):
    """A planned copy: the device's launch arguments and the elements each buffer spans."""

    prepared: object
    src_span: int
    dst_span: int


class StridedCopyKernels(abc.ABC):
    """What a device supplies: its copy kernels, how a plan becomes a launch, and that launch."""

    #: The widest move unit in bytes.
    widest_unit: int
    #: Whether a unit must divide the buffers' addresses (else unaligned units are fine).
    aligned_units: bool

    @abc.abstractmethod
    def moves_elements(self, count: int) -> bool:
        """Whether a copy of count elements moves whole elements (a tiny launch) rather than the widest units."""

    @abc.abstractmethod
    def prepare(self, plan: CopyPlan, elements: bool) -> object:
        """What launch() needs of plan besides the buffers; cached with the plan."""

    @abc.abstractmethod
    def launch(self, stream, launch: CopyLaunch, src, dst) -> object:
        """Run launch on stream from flat src to flat dst (storage, each from the first element
        copied); what it returns, run() returns (a device may keep it)."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel a copy can launch, for the PTX check."""

    def alignment(self, src, dst) -> int:
        """The low address bits of src and dst that decide the unit (0 where units ignore addresses)."""
        return (address(src) | address(dst)) & (max(UNITS) - 1) if self.aligned_units else 0

    def run(self, stream, args: CopyArgs, src, dst, name: str) -> object:
        """Copy as args says from flat storage src to dst (checked to hold what args needs); name is
        the argument an oversized plan blames. Returns what launch() returns."""
        if args.src_offset or args.dst_offset:
            # Each buffer from the copy's first element, so that the unit also divides where it starts.
            if self.aligned_units:
                # Kept (a device array's views: kept()), and with them their addresses and unit views.
                src, dst = kept(_tail, src, args.src_offset), kept(_tail, dst, args.dst_offset)
            else:
                src, dst = src[args.src_offset :], dst[args.dst_offset :]
        alignment = self.alignment(src, dst) if self.aligned_units else 0
        launch = args.launches.get(alignment)
        if launch is None:
            itemsize = args.data_type.itemsize
            launch = plan_copy(self, itemsize, args.dims, args.src_strides, args.dst_strides, src, dst, name)
            args.launches[alignment] = launch
        return self.launch(stream, launch, src, dst)


class CopyArgs(NamedTuple):
    """A checked copy, all but its buffers."""

    data_type: DataType
    # The elements each buffer must hold, and where in each the copy starts.
    src_count: int
    dst_count: int
    src_offset: int
    dst_offset: int
    # The copied elements' dims, and their element strides in each buffer.
    dims: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    # Plans by the buffers' alignment (kernels.alignment); None when nothing is copied.
    launches: dict[int, CopyLaunch] | None


def _tail(array, offset: int):
    return array[offset:]


def plan_copy(
    kernels: StridedCopyKernels,
    itemsize: int,
    dims: Sequence[int],
    src_strides: Sequence[int],
    dst_strides: Sequence[int],
    src,
    dst,
    name: str,
) -> CopyLaunch:
    """The launch of a copy of dims elements (at least one) from src to dst on kernels' device."""
    elements = kernels.moves_elements(math.prod(dims))
    buffers = (src, dst) if kernels.aligned_units else ()
    plan = copy_plan(dims, src_strides, dst_strides, itemsize, buffers, itemsize if elements else kernels.widest_unit, name)
    return CopyLaunch(kernels.prepare(plan, elements), span(dims, src_strides), span(dims, dst_strides))
