"""DimScatter on every device: Launch's declaration and plan, the line of positions a thread
takes (written once, compiled for both devices), and the dtypes each op supports.

A launch is `lines` lines of positions: every position of dims outside the scatter dim names a
line, and a line walks dims[dim] positions along dim in order. Two lines write disjoint elements
of out (their coordinates outside dim differ), so a line per thread needs no atomics, and repeats
along a line combine in index order: the same result on every device and every run.
"""
from __future__ import annotations

import abc
import math
from typing import Iterator, NamedTuple

import numba
import numpy as np

from ep.common.jit import bound, specialize, template
from ep.common.math.binary_functor import binary_attr_dtype, binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.fill import UNIT_TYPES, as_units
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values
from ep.common.runtime import validate
from ep.common.runtime.data_type import ALL_TYPES, INDEX_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.names import lookup
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.dim_scatter import DimScatter, DimScatterFactory, ScatterOp

# The binary op each combining ScatterOp computes (kUpdate copies bits: its kernels are keyed by
# the element size, as UNIT_DTYPES).
BINARY_OPS = {ScatterOp.kAdd: BinaryOp.kAdd, ScatterOp.kMul: BinaryOp.kMul}


# The line dims a table holds (every dim but the scatter dim), each row of the table that long;
# the table reaches the kernels by value, as this tuple type.
LINE_DIMS = validate.MAX_NUM_DIMS - 1
TABLE_TYPE = numba.types.UniTuple(numba.int64, 4 * LINE_DIMS)


@template("UPDATE", "formula", "compute", "load", "store")
def scatter_line(first, width, index, src, out, line_ndim, table, length, index_step, src_step, out_step, size, attr):
    # Lines first to first + width - 1, consecutive along the innermost line dim, walked together
    # (each still in index order): a CPU task's rows of them are contiguous, a CUDA thread's width 1.
    rest = first
    at_index = 0
    at_src = 0
    at_out = 0
    for d in range(line_ndim - 1, -1, -1):
        n = table[d]
        c = rest % n
        rest = rest // n
        at_index += c * table[LINE_DIMS + d]
        at_src += c * table[2 * LINE_DIMS + d]
        at_out += c * table[3 * LINE_DIMS + d]
    # The innermost line dim's strides (a padding 0 when there is no line dim, and width is 1).
    inner = line_ndim - 1 if line_ndim else LINE_DIMS - 1
    index_inner, src_inner, out_inner = table[LINE_DIMS + inner], table[2 * LINE_DIMS + inner], table[3 * LINE_DIMS + inner]
    if width > 1 and index_inner == 0 and src_inner == 1 and out_inner == 1:
        # One index for the block's lines (index_add's), its rows contiguous: unsigned offsets (no
        # negative-index wrap) stepping by one, which LLVM vectorizes.
        for k in range(length):
            j = np.int64(index[at_index + k * index_step])
            if 0 <= j < size:
                row = np.uint64(at_out + j * out_step)
                values = np.uint64(at_src + k * src_step)
                for w in range(np.uint64(width)):
                    if bound.UPDATE:
                        out[row + w] = src[values + w]
                    else:
                        out[row + w] = bound.store(bound.formula(bound.compute(bound.load(out[row + w])), bound.compute(bound.load(src[values + w])), attr, attr))
        return
    for k in range(length):
        for w in range(width):
            j = np.int64(index[at_index + k * index_step + w * index_inner])
            if 0 <= j < size:
                at = at_out + j * out_step + w * out_inner
                value = src[at_src + k * src_step + w * src_inner]
                if bound.UPDATE:
                    out[at] = value
                else:
                    out[at] = bound.store(bound.formula(bound.compute(bound.load(out[at])), bound.compute(bound.load(value)), attr, attr))


class ScatterPlan(NamedTuple):
    """A launch's checked sizes: its buffers' element counts, its lines and the innermost line dim's
    size (inner: lines come in rows of it), then scatter_line's arguments after the buffers (table:
    LINE_DIMS line dims, innermost of line_ndim last, then index's, src's and out's element strides
    along them, index's 0 where it broadcasts, each row padded to LINE_DIMS; the steps: their
    strides along dim)."""

    index_count: int
    src_count: int
    out_count: int
    lines: int
    inner: int
    line_ndim: int
    table: tuple[int, ...]
    length: int
    index_step: int
    src_step: int
    out_step: int
    size: int


def _dims(value: object, name: str, num_dims: int) -> tuple[int, ...]:
    checked = validate.dims(value, name)
    if len(checked) != num_dims:
        raise ValueError(f"{name}: has {len(checked)} dims; expected num_dims={num_dims}")
    if math.prod(checked) > validate.INT64_MAX:
        raise ValueError(f"{name}: {checked} holds more elements than int64 counts")
    return checked


def _strides(dims: tuple[int, ...]) -> list[int]:
    return [math.prod(dims[d + 1 :]) for d in range(len(dims))]


def scatter_plan(num_dims, dims, dim, index_dims, src_dims, out_dims) -> ScatterPlan:
    """The checked plan of a launch; TypeError or ValueError naming the argument that is wrong."""
    num_dims = validate.count(num_dims, "num_dims")
    if not 1 <= num_dims <= validate.MAX_NUM_DIMS:
        raise ValueError(f"num_dims: {num_dims}; expected 1 to {validate.MAX_NUM_DIMS}")
    dims, index_dims = _dims(dims, "dims", num_dims), _dims(index_dims, "index_dims", num_dims)
    src_dims, out_dims = _dims(src_dims, "src_dims", num_dims), _dims(out_dims, "out_dims", num_dims)
    dim = validate.integer(dim, "dim")
    if not 0 <= dim < num_dims:
        raise ValueError(f"dim: {dim}; expected a dim in [0, {num_dims})")
    for d, n in enumerate(dims):
        if index_dims[d] not in (1, n):
            raise ValueError(f"index_dims[{d}]: {index_dims[d]}; expected 1 or dims[{d}]={n}")
        if src_dims[d] < n:
            raise ValueError(f"src_dims[{d}]: {src_dims[d]} is below dims[{d}]={n}")
        if d != dim and out_dims[d] < n:
            raise ValueError(f"out_dims[{d}]: {out_dims[d]} is below dims[{d}]={n} (out may differ from dims only at dim={dim})")
    index_strides = [0 if size == 1 else s for size, s in zip(index_dims, _strides(index_dims))]
    src_strides, out_strides = _strides(src_dims), _strides(out_dims)
    line_dims = [d for d in range(num_dims) if d != dim]
    pad = [0] * (LINE_DIMS - len(line_dims))
    table = tuple(
        value for row in (dims, index_strides, src_strides, out_strides) for value in [row[d] for d in line_dims] + pad
    )
    lines = math.prod(dims) // dims[dim] if dims[dim] else 0
    return ScatterPlan(
        math.prod(index_dims), math.prod(src_dims), math.prod(out_dims), lines, dims[line_dims[-1]] if line_dims else 1, len(line_dims), table, dims[dim],
        index_strides[dim], src_strides[dim], out_strides[dim], out_dims[dim],
    )


class DimScatterKernels(abc.ABC):
    """What a device supplies: its kernel of scatter_line over a plan's lines, and its run."""

    @staticmethod
    def line(op: ScatterOp, dtype: DataType, index_dtype: DataType, device: DeviceType) -> tuple[str, object]:
        """(the kernel's name, scatter_line specialized) for op on dtype (kernel_dtype's) in device's kernels."""
        name = f"dim_scatter_{op.value}_{dtype.value}_{index_dtype.value}"
        combine = BINARY_OPS.get(op, BinaryOp.kAdd)  # kUpdate never reaches its formula
        bindings = {
            "UPDATE": op is ScatterOp.kUpdate, "formula": binary_formula(combine, dtype), "compute": dtype.compute_dtype.type,
            "load": load_fn(dtype, device), "store": store_fn(dtype, device),
        }
        return name, specialize(scatter_line, f"{name}_line", **bindings)

    @abc.abstractmethod
    def kernel(self, op: ScatterOp, dtype: DataType, index_dtype: DataType) -> object:
        """The device's kernel of op on dtype (kernel_dtype's) by indices of index_dtype."""

    @abc.abstractmethod
    def run(self, primitive: DimScatterImpl, plan: ScatterPlan, stream, index, src, out) -> None:
        """scatter_line over plan.lines lines of index, src and out (storage; kUpdate's as units)."""

    def all_kernels(self) -> Iterator[object]:
        """Every device kernel a run can launch, for the PTX check."""
        return (self.kernel(*key) for key in kernel_keys())


class DimScatterImpl(Declared, DimScatter):
    launch = declare(
        Attr("num_dims"), Attr("dims"), Attr("dim"),
        In("index", "self.index_dtype", "plan.index_count"), Attr("index_dims"),
        In("src", size="plan.src_count"), Attr("src_dims"),
        Out("out", size="plan.out_count"), Attr("out_dims"),
        plan=("num_dims", "dims", "dim", "index_dims", "src_dims", "out_dims"),
    )

    def __init__(self, device_type: DeviceType, kernels: DimScatterKernels, op: ScatterOp, dtype: DataType, index_dtype: DataType) -> None:
        self.device_type = device_type
        self.op, self.dtype, self.index_dtype = op, dtype, index_dtype
        # What the kernels run in (kUpdate's unit of dtype's size), and their unused formula scalar.
        self.kernel_dtype = kernel_dtype(op, dtype)
        self.attr = binary_attr_dtype(self.kernel_dtype).type(0)
        self._kernels = kernels

    def plan(self, num_dims, dims, dim, index_dims, src_dims, out_dims) -> ScatterPlan:
        return scatter_plan(num_dims, dims, dim, index_dims, src_dims, out_dims)

    def run(self, stream, plan: ScatterPlan, index, src, out) -> None:
        if not plan.lines or not plan.length:
            return
        if self.op is ScatterOp.kUpdate:
            src, out = as_units(src, self.dtype.itemsize), as_units(out, self.dtype.itemsize)
        self._kernels.run(self, plan, stream, index, src, out)


def kernel_dtype(op: ScatterOp, dtype: DataType) -> DataType:
    """The dtype a kernel of op on dtype is built for: kUpdate's unit of dtype's size, else dtype."""
    return UNIT_TYPES[dtype.itemsize] if op is ScatterOp.kUpdate else dtype


def kernel_keys() -> Iterator[tuple[ScatterOp, DataType, DataType]]:
    """(op, kernel dtype, index dtype) of every kernel a device builds."""
    for op in ScatterOp:
        for dtype in dict.fromkeys(kernel_dtype(op, dtype) for dtype in ALL_TYPES):
            for index_dtype in INDEX_TYPES:
                yield op, dtype, index_dtype


class DimScatterFactoryImpl(GenericFactory, DimScatterFactory):
    primitive_type = DimScatterImpl

    def New(self, op, data_dtype, index_dtype) -> DimScatter | None:
        op = lookup(ScatterOp, op, "op", "a scatter op", "add")
        data_dtype, index_dtype = as_data_type(data_dtype, "data_dtype"), as_data_type(index_dtype, "index_dtype")
        if index_dtype not in INDEX_TYPES:
            return None
        return self._new((op, data_dtype, index_dtype))

    def Combinations(self):
        for op in ScatterOp:
            for dtype in ALL_TYPES:
                for index_dtype in INDEX_TYPES:
                    yield op, (dtype, index_dtype)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        dtype, index_dtype = dtypes
        # One kernel for every layout: one sample, 3 x 3 along dim 0 by a permutation of each
        # column, so that every element of out is written (the bad-input tests' good call).
        src, out = values(9, dtype, (3, 3)), values(9, dtype, (3, 3))[::-1].copy()
        index = np.array([[2, 0, 1], [0, 1, 2], [1, 2, 0]])
        expected = out.copy()
        for (i, j), value in np.ndenumerate(src):
            expected[index[i, j], j] = _combine(op, expected[index[i, j], j], value)
        args = {
            "num_dims": 2, "dims": (3, 3), "dim": 0, "index": index.astype(index_dtype.dtype).ravel(), "index_dims": (3, 3),
            "src": src.ravel(), "src_dims": (3, 3), "out": out.ravel(), "out_dims": (3, 3),
        }
        yield Sample((op, dtype, index_dtype), args, {"out": expected.ravel()})


def _combine(op: ScatterOp, old, new):
    """op on two NumPy scalars of one dtype, in it (bool's add is or, its multiply and)."""
    if op is ScatterOp.kUpdate:
        return new
    with np.errstate(over="ignore"):
        return (old + new) if op is ScatterOp.kAdd else (old * new)
