"""BroadcastElementwiseBinary's CPU kernels: one build per (op, src dtype, dst dtype, path) for
every size, its loop a prange or, below PARALLEL_THRESHOLD, run on the calling thread.

Paths: elementwise and scalar are flat loops; row and column loop over rows with a contiguous
inner loop; general maps each row's first element through the NdIndexOffsetHelper
strides (0 on broadcast dims) and then runs along the innermost dim. A broadcast operand on the
left reuses the right-hand kernels with the formula's arguments swapped.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterator

from numba import prange

from ep.common.jit import bound, scalar_function, specialize, template
from ep.common.math.binary_functor import binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.nd_index_offset_helper import offset_to_index
from ep.common.primitive.broadcast_elementwise_binary import (
    BinaryPlan,
    BroadcastElementwiseBinaryFactoryImpl,
    BroadcastElementwiseBinaryKernels,
    padded,
)
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.kernel import PARALLEL_THRESHOLD, CpuKernel
from ep.include.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "load", "store")
def _elementwise(src0, src1, dst, count, attr0, attr1, parallel):
    if parallel:
        for i in prange(count):
            dst[i] = bound.store(bound.formula(bound.load(src0[i]), bound.load(src1[i]), attr0, attr1))
    else:
        for i in range(count):
            dst[i] = bound.store(bound.formula(bound.load(src0[i]), bound.load(src1[i]), attr0, attr1))


@template("formula", "load", "store")
def _scalar(src, value, dst, count, attr0, attr1, parallel):
    if parallel:
        for i in prange(count):
            dst[i] = bound.store(bound.formula(bound.load(src[i]), value, attr0, attr1))
    else:
        for i in range(count):
            dst[i] = bound.store(bound.formula(bound.load(src[i]), value, attr0, attr1))


# Inner loops index row slices by the range variable alone: LLVM then knows every index is
# non-negative, drops Numba's wraparound checks and vectorizes (base + c defeated that).


@template("formula", "load", "store")
def _row(src, row, dst, r, cols, attr0, attr1):
    base = r * cols
    x = src[base:base + cols]
    out = dst[base:base + cols]
    for c in range(cols):
        out[c] = bound.store(bound.formula(bound.load(x[c]), bound.load(row[c]), attr0, attr1))


@template("formula", "load", "store")
def _column(src, column, dst, r, cols, attr0, attr1):
    base = r * cols
    y = bound.load(column[r])
    x = src[base:base + cols]
    out = dst[base:base + cols]
    for c in range(cols):
        out[c] = bound.store(bound.formula(bound.load(x[c]), y, attr0, attr1))


@template("step")
def _rows(src, other, dst, rows, cols, attr0, attr1, parallel):
    # Row r of the row or column path (the step), over rows in parallel or on the calling thread.
    if parallel:
        for r in prange(rows):
            bound.step(src, other, dst, r, cols, attr0, attr1)
    else:
        for r in range(rows):
            bound.step(src, other, dst, r, cols, attr0, attr1)


@template("formula", "load", "store")
def _general_row(src0, src1, dst, strides0, strides1, dst_strides, ndim, r, cols, attr0, attr1):
    # dst is rows x cols, cols its innermost dim: each row's start is mapped to the operands once,
    # then the row runs contiguously. After simplification the innermost dim is broadcast in at
    # most one operand; a loop per case keeps each one contiguous (and vectorizable).
    base = r * cols
    offset0 = 0
    offset1 = 0
    for d in range(ndim - 1):
        index = offset_to_index(base, dst_strides, d)
        offset0 += index * strides0[d]
        offset1 += index * strides1[d]
    out = dst[base:base + cols]
    if strides0[ndim - 1] == 0:
        x = bound.load(src0[offset0])
        b = src1[offset1:offset1 + cols]
        for c in range(cols):
            out[c] = bound.store(bound.formula(x, bound.load(b[c]), attr0, attr1))
    elif strides1[ndim - 1] == 0:
        y = bound.load(src1[offset1])
        a = src0[offset0:offset0 + cols]
        for c in range(cols):
            out[c] = bound.store(bound.formula(bound.load(a[c]), y, attr0, attr1))
    else:
        a = src0[offset0:offset0 + cols]
        b = src1[offset1:offset1 + cols]
        for c in range(cols):
            out[c] = bound.store(bound.formula(bound.load(a[c]), bound.load(b[c]), attr0, attr1))


@template("step")
def _general(src0, src1, dst, strides0, strides1, dst_strides, ndim, rows, cols, attr0, attr1, parallel):
    if parallel:
        for r in prange(rows):
            bound.step(src0, src1, dst, strides0, strides1, dst_strides, ndim, r, cols, attr0, attr1)
    else:
        for r in range(rows):
            bound.step(src0, src1, dst, strides0, strides1, dst_strides, ndim, r, cols, attr0, attr1)


@template("formula")
def _swapped(x, y, attr0, attr1):
    return bound.formula(y, x, attr0, attr1)


# Per path: its kernel template and, for paths that loop over rows, the row step it calls (one
# source for both of its loops).
_TEMPLATES = {
    "elementwise": (_elementwise, None),
    "scalar": (_scalar, None),
    "row": (_rows, _row),
    "column": (_rows, _column),
    "general": (_general, _general_row),
}
# The paths whose kernels take the broadcast operand on the right, and so have a swapped build.
_SWAPPABLE = ("scalar", "row", "column")


class CpuBroadcastElementwiseBinaryKernels(BroadcastElementwiseBinaryKernels):
    @functools.cache
    def formula(self, op, src_dtype: DataType, swap: bool) -> Callable:
        formula = binary_formula(op, src_dtype)
        if not swap:
            return formula
        return scalar_function(specialize(_swapped, f"swapped_{op.value}_{src_dtype.value}", formula=formula))

    @functools.cache
    def kernel(self, op, src_dtype: DataType, dst_dtype: DataType, path: str, swap: bool = False) -> CpuKernel:
        name = f"binary_{path}{'_swapped' if swap else ''}_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        bindings = {"formula": self.formula(op, src_dtype, swap), "load": load_fn(src_dtype), "store": store_fn(dst_dtype)}
        kernel_template, step = _TEMPLATES[path]
        if step is None:
            return CpuKernel(kernel_template, name, **bindings)
        return CpuKernel(kernel_template, name, step=scalar_function(specialize(step, f"{name}_row", **bindings)))

    def combination_kernels(self, op, src_dtype, dst_dtype) -> Iterator[CpuKernel]:
        for path in _TEMPLATES:
            for swap in (False, True) if path in _SWAPPABLE else (False,):
                yield self.kernel(op, src_dtype, dst_dtype, path, swap)

    def launcher(self, op, src_dtype, dst_dtype, plan: BinaryPlan) -> Callable[..., None]:
        swap = plan.path in _SWAPPABLE and plan.side == 0
        kernel = self.kernel(op, src_dtype, dst_dtype, plan.path, swap)
        fn = kernel.parallel
        parallel = plan.count >= PARALLEL_THRESHOLD
        if plan.path == "general":
            cols = plan.cols
            strides = (padded(plan.strides0), padded(plan.strides1), padded(plan.dst_strides))
            tail = (*strides, len(plan.dims), plan.count // cols, cols)
        elif plan.path in ("row", "column"):
            tail = (plan.rows, plan.cols)
        else:
            tail = (plan.count,)
        if plan.path == "scalar" and not (plan.value0 or plan.value1):
            # The one-element operand is read on the host and passed as the scalar value.
            compute, view = src_dtype.compute_dtype.type, src_dtype.dtype
            if swap:
                return lambda stream, a, b, out, x, y: fn(b, compute(a[:1].view(view)[0]), out, *tail, x, y, parallel)
            return lambda stream, a, b, out, x, y: fn(a, compute(b[:1].view(view)[0]), out, *tail, x, y, parallel)
        if swap:
            return lambda stream, a, b, out, x, y: fn(b, a, out, *tail, x, y, parallel)
        return lambda stream, a, b, out, x, y: fn(a, b, out, *tail, x, y, parallel)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU,
    BroadcastElementwiseBinaryFactory,
    BroadcastElementwiseBinaryFactoryImpl(DeviceType.kCPU, CpuBroadcastElementwiseBinaryKernels()),
)
