"""Scan on every device: New's resolution, Launch's declaration, the plan of (outer, length, inner),
and the kernels a device supplies (ep.common.math.reduce's scan_formulas)."""
from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ep.common.primitive.broadcast_dims import MAX_CALLER_DIMS
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.reduce import combinations as reduce_combinations, dst_dtypes
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.names import lookup
from ep.common.runtime.validate import INT64_MAX, dims as check_dims, integer
from ep.include.primitive.reduce import ReduceOp
from ep.include.primitive.scan import Scan, ScanFactory

SCAN_OPS = (ReduceOp.kSum, ReduceOp.kProd, ReduceOp.kMax, ReduceOp.kMin, ReduceOp.kArgMax, ReduceOp.kArgMin, ReduceOp.kLogSumExp)
INDEX_OPS = (ReduceOp.kArgMax, ReduceOp.kArgMin)


@dataclass(frozen=True)
class ScanPlan:
    """src and dst read as (outer, length, inner): outer * inner runs of length elements, each run's
    elements inner apart."""

    count: int
    outer: int
    length: int
    inner: int


class ScanKernels(abc.ABC):
    """What a device supplies: the launch of a plan, and the list of its kernels."""

    @abc.abstractmethod
    def launch(self, stream, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, exclusive: bool, plan: ScanPlan, src, dst) -> None:
        """The scan of op along plan's runs of src into dst (flat storage of plan.count > 0 elements)."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel a launch can run, for the PTX check."""


class ScanImpl(Declared, Scan):
    launch = declare(
        Attr("src_dims"), In("src", "self.src_dtype", size="plan.count"), Attr("dim"),
        Out("dst", "self.dst_dtype", size="plan.count", reads_first=("src",)),
        plan=("src_dims", "dim"),
    )

    def __init__(self, device_type: DeviceType, kernels: ScanKernels, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, exclusive: bool) -> None:
        self.device_type, self._kernels = device_type, kernels
        self.op, self.src_dtype, self.dst_dtype, self.exclusive = op, src_dtype, dst_dtype, exclusive

    def plan(self, src_dims, dim) -> ScanPlan:
        src_dims = check_dims(src_dims, "src_dims", MAX_CALLER_DIMS)
        ndim = len(src_dims)
        dim = integer(dim, "dim")
        if not 0 <= dim < max(ndim, 1):
            raise IndexError(f"dim: {dim} is out of range for src_dims {src_dims}; expected 0 <= dim < {max(ndim, 1)}")
        count = math.prod(src_dims)
        if count > INT64_MAX:
            raise ValueError(f"src_dims: {src_dims} holds more than 2**63 - 1 elements")
        if not ndim:
            return ScanPlan(count, 1, 1, 1)
        return ScanPlan(count, math.prod(src_dims[:dim]), src_dims[dim], math.prod(src_dims[dim + 1 :]))

    def run(self, stream, plan: ScanPlan, src, dst) -> None:
        if plan.count:
            self._kernels.launch(stream, self.op, self.src_dtype, self.dst_dtype, self.exclusive, plan, src, dst)


def combinations() -> Iterator[tuple[ReduceOp, tuple[DataType, DataType]]]:
    """Every (op, (src dtype, dst dtype)) New takes: Reduce's dtypes, for the ops a scan has."""
    return ((op, dtypes) for op, dtypes in reduce_combinations() if op in SCAN_OPS)


class ScanFactoryImpl(GenericFactory, ScanFactory):
    primitive_type = ScanImpl

    def New(self, op, src_dtype, dst_dtype, exclusive: bool = False) -> Scan | None:
        op = lookup(ReduceOp, op, "op", "a reduce op", "sum")
        src, dst = as_data_type(src_dtype, "src_dtype"), as_data_type(dst_dtype, "dst_dtype")
        if not isinstance(exclusive, bool):
            raise TypeError(f"exclusive: {type(exclusive).__name__} {exclusive!r} is not a bool")
        if op not in SCAN_OPS or dst not in dst_dtypes(op, src) or (exclusive and op in INDEX_OPS):
            return None
        return self._new((op, src, dst, exclusive))

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        return combinations()

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        src, dst = dtypes
        # Along rows (four side by side, and one), and across columns.
        for dims, dim in (((4, 3), 1), ((1, 3), 1), ((2, 3), 0)):
            x = values(math.prod(dims), src, dims)
            args = {"src_dims": dims, "src": x, "dim": dim, "dst": zeros(math.prod(dims), dst)}
            expected = {"dst": np.cumsum(x, dim, dtype=dst.dtype).ravel()} if op is ReduceOp.kSum else None
            yield Sample((op, src, dst), args, expected)
