"""BroadcastElementwiseBinary's CPU kernels: one serial span per (op, src dtype, dst dtype, path),
run by ParallelFor, one build for every size.

Paths: elementwise and scalar are flat loops; row and column loop over rows with a contiguous
inner loop; general maps each row's first element through the NdIndexOffsetHelper
strides (0 on broadcast dims) and then runs along the innermost dim. A broadcast operand on the
left reuses the right-hand kernels with the formula's arguments swapped, or as they are for a
commutative op.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numba
import numpy as np

from ep.common.jit import bound, scalar_function, specialize, template
from ep.common.math.binary_functor import BINARY_FUNCTORS, binary_attr_dtype, binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.nd_index_offset_helper import offset_to_index
from ep.common.primitive.broadcast_elementwise_binary import (
    BinaryPlan,
    BroadcastElementwiseBinaryFactoryImpl,
    BroadcastElementwiseBinaryKernels,
)
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


# Spans index a chunk's slices by the range variable alone, and rows by unsigned offsets (ParallelFor's
# rule): LLVM then knows every index is non-negative and vectorizes (a signed base + c defeated that).


@template("formula", "load", "store")
def _elementwise(start, stop, args):
    src0, src1, dst, attr0, attr1 = args
    a = src0[start:stop]
    b = src1[start:stop]
    out = dst[start:stop]
    for i in range(stop - start):
        out[i] = bound.store(bound.formula(bound.load(a[i]), bound.load(b[i]), attr0, attr1))


@template("formula", "load", "store")
def _scalar(start, stop, args):
    src, value, dst, attr0, attr1 = args
    x = src[start:stop]
    out = dst[start:stop]
    for i in range(stop - start):
        out[i] = bound.store(bound.formula(bound.load(x[i]), value, attr0, attr1))


@template("formula", "load", "store")
def _row(start, stop, args):
    # Rows [start, stop) of src, each with the one row.
    src, row, dst, cols, attr0, attr1 = args
    for r in range(start, stop):
        base = np.uint64(r * cols)
        for c in range(np.uint64(cols)):
            dst[base + c] = bound.store(bound.formula(bound.load(src[base + c]), bound.load(row[c]), attr0, attr1))


@template("formula", "load", "store")
def _column(start, stop, args):
    # Rows [start, stop) of src, row r with column[r].
    src, column, dst, cols, attr0, attr1 = args
    for r in range(start, stop):
        base = np.uint64(r * cols)
        y = bound.load(column[r])
        for c in range(np.uint64(cols)):
            dst[base + c] = bound.store(bound.formula(bound.load(src[base + c]), y, attr0, attr1))


@template("formula", "load", "store")
def _general(start, stop, args):
    # dst is rows x cols, cols its innermost dim: each row's start is mapped to the operands once,
    # then the row runs contiguously. After simplification the innermost dim is broadcast in at
    # most one operand; a loop per case keeps each one contiguous (and vectorizable). strides holds
    # the element strides of src0, src1 and dst, one row each (an array: ParallelFor passes no
    # tuple nested in args).
    src0, src1, dst, strides, cols, attr0, attr1 = args
    strides0, strides1, dst_strides = strides[0], strides[1], strides[2]
    ndim = strides.shape[1]
    for r in range(start, stop):
        base = r * cols
        offset0 = 0
        offset1 = 0
        for d in range(ndim - 1):
            index = offset_to_index(base, dst_strides, d)
            offset0 += index * strides0[d]
            offset1 += index * strides1[d]
        o, s0, s1 = np.uint64(base), np.uint64(offset0), np.uint64(offset1)
        if strides0[ndim - 1] == 0:
            x = bound.load(src0[s0])
            for c in range(np.uint64(cols)):
                dst[o + c] = bound.store(bound.formula(x, bound.load(src1[s1 + c]), attr0, attr1))
        elif strides1[ndim - 1] == 0:
            y = bound.load(src1[s1])
            for c in range(np.uint64(cols)):
                dst[o + c] = bound.store(bound.formula(bound.load(src0[s0 + c]), y, attr0, attr1))
        else:
            for c in range(np.uint64(cols)):
                dst[o + c] = bound.store(bound.formula(bound.load(src0[s0 + c]), bound.load(src1[s1 + c]), attr0, attr1))


@template("formula")
def _swapped(x, y, attr0, attr1):
    return bound.formula(y, x, attr0, attr1)


# Per path: its span, over elements (elementwise, scalar) or rows (the others).
_TEMPLATES = {"elementwise": _elementwise, "scalar": _scalar, "row": _row, "column": _column, "general": _general}
_OVER_ELEMENTS = ("elementwise", "scalar")
# The paths whose kernels take the broadcast operand on the right, and so have a swapped build
# (but for a commutative op).
_SWAPPABLE = ("scalar", "row", "column")


def _swaps(op) -> bool:
    """Whether op's kernels for a broadcast operand on the left swap the formula's arguments."""
    return not BINARY_FUNCTORS[op].commutative


def _arg_types(src_dtype: DataType, dst_dtype: DataType, path: str) -> tuple[numba.types.Type, ...]:
    """The types of the args launcher() gives path's span."""
    src, dst = input_array(src_dtype.storage_dtype), output_array(dst_dtype.storage_dtype)
    attr = numba.from_dtype(binary_attr_dtype(src_dtype))  # binary_attrs' scalars
    if path == "scalar":
        return src, numba.from_dtype(src_dtype.compute_dtype), dst, attr, attr
    if path == "general":
        return src, src, dst, input_array(np.dtype(np.int64), 2), numba.int64, attr, attr
    if path in ("row", "column"):
        return src, src, dst, numba.int64, attr, attr
    return src, src, dst, attr, attr


class CpuBroadcastElementwiseBinaryKernels(BroadcastElementwiseBinaryKernels):
    @function_cache("kernels")
    def formula(self, op, src_dtype: DataType, swap: bool) -> Callable:
        formula = binary_formula(op, src_dtype)
        if not swap:
            return formula
        return scalar_function(specialize(_swapped, f"swapped_{op.value}_{src_dtype.value}", formula=formula))

    @function_cache("kernels")
    def kernel(self, op, src_dtype: DataType, dst_dtype: DataType, path: str, swap: bool = False) -> ParallelFor:
        name = f"binary_{path}{'_swapped' if swap else ''}_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        bindings = {"formula": self.formula(op, src_dtype, swap), "load": load_fn(src_dtype, DeviceType.kCPU), "store": store_fn(dst_dtype, DeviceType.kCPU)}
        aligned = 2 if path in _OVER_ELEMENTS else None  # dst
        return ParallelFor(_TEMPLATES[path], name, _arg_types(src_dtype, dst_dtype, path), aligned=aligned, **bindings)

    def combination_kernels(self, op, src_dtype, dst_dtype) -> Iterator[ParallelFor]:
        for path in _TEMPLATES:
            for swap in (False, True) if path in _SWAPPABLE and _swaps(op) else (False,):
                yield self.kernel(op, src_dtype, dst_dtype, path, swap)

    def launcher(self, op, src_dtype, dst_dtype, plan: BinaryPlan) -> Callable[..., None]:
        swap = plan.path in _SWAPPABLE and plan.side == 0
        run = self.kernel(op, src_dtype, dst_dtype, plan.path, swap and _swaps(op)).run
        count = plan.count
        if plan.path == "general":
            strides = np.array((plan.strides0, plan.strides1, plan.dst_strides), np.int64)
            items, tail = count // plan.cols, (strides, plan.cols)
        elif plan.path in ("row", "column"):
            items, tail = plan.rows, (plan.cols,)
        else:
            items, tail = count, ()
        # Each launch's args built without a star (a list built and copied): tail only where there is one.
        if plan.path == "scalar" and not (plan.value0 or plan.value1):
            # The one-element operand is read on the host and passed as the scalar value.
            compute, view = src_dtype.compute_dtype.type, src_dtype.dtype
            if swap:
                return lambda stream, a, b, out, x, y: run((b, compute(a[:1].view(view)[0]), out, x, y), items, count)
            return lambda stream, a, b, out, x, y: run((a, compute(b[:1].view(view)[0]), out, x, y), items, count)
        if tail:
            if swap:
                return lambda stream, a, b, out, x, y: run((b, a, out) + tail + (x, y), items, count)
            return lambda stream, a, b, out, x, y: run((a, b, out) + tail + (x, y), items, count)
        if swap:
            return lambda stream, a, b, out, x, y: run((b, a, out, x, y), items, count)
        return lambda stream, a, b, out, x, y: run((a, b, out, x, y), items, count)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU,
    BroadcastElementwiseBinaryFactory,
    BroadcastElementwiseBinaryFactoryImpl(DeviceType.kCPU, CpuBroadcastElementwiseBinaryKernels()),
)
