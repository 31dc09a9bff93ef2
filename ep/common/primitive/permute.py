"""Permute on every device: New's resolution, Launch's checks, the dims-merging rule and the plans.

A permute is planned once per (data type, dims, permutation). Dims of size 1 go and src dims that
stay adjacent in dst merge (simplify_permutation, OneFlow's SimplifyPermutation). Then:

- the last src dim stays last: every dst row is a contiguous run of src, a strided copy (the copy
  kernels behind CopyNd, which move 16-byte units on CUDA where the rows allow);
- it moves: a transpose of two dims, src's last (the cols, contiguous in src) and the one that
  becomes dst's last (the rows, contiguous in dst), under any other dims (outer dims, arbitrary
  strides), which a device runs in tiles (TransposePlan), or, where the device declines the tiles,
  again as the strided copy.
"""
from __future__ import annotations

import abc
import math
from typing import Iterator, NamedTuple, Sequence

from ep.common.math.nd_index_offset_helper import contiguous_strides
from ep.common.primitive.factory import MaxDimsFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.primitive.strided_copy import CopyArgs, StridedCopyKernels
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import INT64_MAX, MAX_NUM_DIMS, check_sequence, count as check_count, dims as check_dims, integer
from ep.include.primitive.permute import Permute, PermuteFactory


def simplify_permutation(src_dims: Sequence[int], permutation: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(dims, permutation) of the same permute with dims of size 1 dropped and src dims that stay
    adjacent in dst (i followed by i + 1) merged; at least one dim: (1,), (0,) for a single element.

    The one shape rule of a permute: every device plans on its result.
    """
    kept = [d for d in range(len(src_dims)) if src_dims[d] != 1]
    if not kept:
        return (1,), (0,)
    # The kept src dims in dst order, each a run of src dims [first, last] merged with its neighbours.
    runs: list[list[int]] = []
    for p in permutation:
        if src_dims[p] == 1:
            continue
        if runs and kept.index(p) == kept.index(runs[-1][1]) + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    in_src_order = sorted(range(len(runs)), key=lambda r: runs[r][0])
    dims = tuple(math.prod(src_dims[runs[r][0] : runs[r][1] + 1]) for r in in_src_order)
    rank = {r: i for i, r in enumerate(in_src_order)}
    return dims, tuple(rank[r] for r in range(len(runs)))


class TransposePlan(NamedTuple):
    """A permute whose last src dim moves, in elements: dst[outer_dst + c * dst_col_stride + r] =
    src[outer_src + r * src_row_stride + c] for r < rows, c < cols and every outer index, whose
    offsets are dot(index, outer_src_strides) and dot(index, outer_dst_strides)."""

    rows: int
    cols: int
    src_row_stride: int
    dst_col_stride: int
    outer_dims: tuple[int, ...]
    outer_src_strides: tuple[int, ...]
    outer_dst_strides: tuple[int, ...]

    @property
    def count(self) -> int:
        """Elements moved."""
        return self.rows * self.cols * math.prod(self.outer_dims)


def transpose_plan(dims: Sequence[int], permutation: Sequence[int]) -> TransposePlan:
    """The TransposePlan of merged dims and permutation (simplify_permutation's) whose last dim moves."""
    src_strides = contiguous_strides(dims)
    dst_strides = contiguous_strides([dims[p] for p in permutation])
    # dst's stride of each src dim.
    dst_of_src = {p: dst_strides[i] for i, p in enumerate(permutation)}
    cols, row_dim = len(dims) - 1, permutation[-1]
    outer = [p for p in permutation if p not in (cols, row_dim)]
    return TransposePlan(
        dims[row_dim],
        dims[cols],
        src_strides[row_dim],
        dst_of_src[cols],
        tuple(dims[p] for p in outer),
        tuple(src_strides[p] for p in outer),
        tuple(dst_of_src[p] for p in outer),
    )


class PermuteKernels(abc.ABC):
    """What a device supplies: its strided copy (`copy`), whether and how it tiles a transpose."""

    copy: StridedCopyKernels

    @abc.abstractmethod
    def tiles(self, plan: TransposePlan) -> bool:
        """Whether the device runs plan in tiles (else it is run as the strided copy)."""

    @abc.abstractmethod
    def prepare(self, plan: TransposePlan, data_type: DataType) -> object:
        """What transpose() needs of a tiled plan besides the buffers; cached with the plan."""

    @abc.abstractmethod
    def transpose(self, stream, prepared: object, src, dst) -> None:
        """Run a prepared tiled transpose from flat storage src to dst."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel a permute can launch (the copy's included), for the PTX check."""


class PermuteArgs(NamedTuple):
    """A checked permute, all but its buffers: the elements each holds and one of the two plans."""

    data_type: DataType
    count: int
    copy: CopyArgs | None
    tiled: object | None


class PermuteImpl(Declared, Permute):
    # dst holds src's elements in another order: they share no memory.
    launch = declare(
        Attr("data_type"), Attr("num_dims"), Attr("src_dims"), In("src", "plan.data_type", "plan.count"), Attr("permutation"),
        Out("dst", "plan.data_type", "plan.count"), plan=("data_type", "num_dims", "src_dims", "permutation"),
    )

    def __init__(self, device_type: DeviceType, kernels: PermuteKernels, max_num_dims: int) -> None:
        self.device_type = device_type
        self.max_num_dims = max_num_dims
        self._kernels = kernels

    def run(self, stream, args: PermuteArgs, src, dst) -> None:
        if args.tiled is not None:
            self._kernels.transpose(stream, args.tiled, src, dst)
        elif args.copy is not None:  # None: nothing to move
            self._kernels.copy.run(stream, args.copy, src, dst, "src_dims")

    def plan(self, data_type, num_dims, src_dims, permutation) -> PermuteArgs:
        data_type = as_data_type(data_type, "data_type")
        num_dims = check_count(num_dims, "num_dims")
        if not 1 <= num_dims <= self.max_num_dims:
            raise ValueError(f"num_dims: {num_dims} is outside 1..{self.max_num_dims} (the max_num_dims given to New)")
        src_dims = check_dims(src_dims, "src_dims", self.max_num_dims)
        if len(src_dims) != num_dims:
            raise ValueError(f"src_dims: has {len(src_dims)} entries; expected num_dims = {num_dims}")
        permutation = check_permutation(permutation, num_dims)
        elements = math.prod(src_dims)
        if elements > INT64_MAX:
            raise ValueError(f"src_dims: {src_dims} holds {elements} elements; expected at most 2**63 - 1")
        return PermuteArgs(data_type, elements, *self._plan(data_type, src_dims, permutation))

    def _plan(self, data_type: DataType, src_dims: tuple[int, ...], permutation: tuple[int, ...]) -> tuple[CopyArgs | None, object | None]:
        if 0 in src_dims:
            return None, None
        dims, perm = simplify_permutation(src_dims, permutation)
        if perm[-1] != len(dims) - 1:
            plan = transpose_plan(dims, perm)
            if len(plan.outer_dims) > MAX_NUM_DIMS:
                raise ValueError(f"src_dims: needs {len(dims)} dims after merging; at most {MAX_NUM_DIMS + 2} are supported")
            if self._kernels.tiles(plan):
                return None, self._kernels.prepare(plan, data_type)
        strides = contiguous_strides(dims)
        dst_dims = tuple(dims[p] for p in perm)
        count = math.prod(dims)
        copy = CopyArgs(data_type, count, count, 0, 0, dst_dims, tuple(strides[p] for p in perm), contiguous_strides(dst_dims), {})
        return copy, None


def check_permutation(permutation: object, num_dims: int, name: str = "permutation") -> tuple[int, ...]:
    """permutation as a tuple of ints, a permutation of range(num_dims); TypeError or ValueError
    naming name (and the entry) otherwise."""
    check_sequence(permutation, name, "dims")
    values = tuple(integer(p, f"{name}[{i}]") for i, p in enumerate(permutation))
    if len(values) != num_dims:
        raise ValueError(f"{name}: has {len(values)} entries; expected num_dims = {num_dims}")
    if sorted(values) != list(range(num_dims)):
        raise ValueError(f"{name}: {values} is not a permutation of range({num_dims}); expected each of 0..{num_dims - 1} once")
    return values


class PermuteFactoryImpl(MaxDimsFactory, PermuteFactory):
    primitive_type = PermuteImpl

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        (dtype,) = dtypes
        # A transpose of 32 x 32 (CUDA's shared-memory tiles, the CPU's tiles) and one whose last dim
        # stays (the strided copy).
        for dims, permutation in (((32, 32), (1, 0)), ((2, 3, 4), (1, 0, 2))):
            x = values(math.prod(dims), dtype, dims)
            args = {
                "data_type": dtype, "num_dims": len(dims), "src_dims": dims, "src": x, "permutation": permutation,
                "dst": zeros(x.size, dtype),
            }
            yield Sample((3,), args, {"dst": x.transpose(permutation).ravel()})
