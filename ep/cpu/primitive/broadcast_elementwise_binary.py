"""BroadcastElementwiseBinary on the CPU: one prange kernel per (op, src dtype, dst dtype, path).

Paths: elementwise and scalar are flat loops; row and column loop over rows in parallel with a
contiguous inner loop; general maps each row's first element through the NdIndexOffsetHelper
strides (0 on broadcast dims) and then runs along the innermost dim. A broadcast operand on the
left reuses the right-hand kernels with the formula's arguments swapped.
"""
from __future__ import annotations

import functools

from numba import prange

from ep.common.binary_functor import binary_combinations, binary_formula
from ep.common.broadcast_elementwise_binary import host_element, is_scalar, padded, prepare_launch, resolve_new
from ep.common.convert import load_fn, store_fn
from ep.common.device import DeviceType
from ep.common.jit import scalar_function, specialize
from ep.common.nd_index_offset_helper import offset_to_index
from ep.common.stream import check_stream
from ep.cpu.kernel import CpuKernel
from ep.include.primitive.broadcast_elementwise_binary import (
    MAX_NUM_DIMS,
    BroadcastElementwiseBinary,
    BroadcastElementwiseBinaryFactory,
)
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Names bound by specialize: formula, load, store.
# ruff: noqa: F821


def _elementwise(src0, src1, dst, count, attr0, attr1):
    for i in prange(count):
        dst[i] = store(formula(load(src0[i]), load(src1[i]), attr0, attr1))


def _scalar(src, value, dst, count, attr0, attr1):
    for i in prange(count):
        dst[i] = store(formula(load(src[i]), value, attr0, attr1))


def _row(src, row, dst, rows, cols, attr0, attr1):
    for r in prange(rows):
        base = r * cols
        for c in range(cols):
            dst[base + c] = store(formula(load(src[base + c]), load(row[c]), attr0, attr1))


def _column(src, column, dst, rows, cols, attr0, attr1):
    for r in prange(rows):
        base = r * cols
        y = load(column[r])
        for c in range(cols):
            dst[base + c] = store(formula(load(src[base + c]), y, attr0, attr1))


def _general(src0, strides0, src1, strides1, dst, dst_strides, ndim, rows, cols, attr0, attr1):
    # dst is rows x cols, cols its innermost dim: each row's start is mapped to the operands once,
    # then the row runs contiguously. After simplification the innermost dim is broadcast in at
    # most one operand; a loop per case keeps each one contiguous (and vectorizable).
    broadcast0 = strides0[ndim - 1] == 0
    broadcast1 = strides1[ndim - 1] == 0
    for r in prange(rows):
        base = r * cols
        offset0 = 0
        offset1 = 0
        for d in range(ndim - 1):
            index = offset_to_index(base, dst_strides, d)
            offset0 += index * strides0[d]
            offset1 += index * strides1[d]
        if broadcast0:
            x = load(src0[offset0])
            for c in range(cols):
                dst[base + c] = store(formula(x, load(src1[offset1 + c]), attr0, attr1))
        elif broadcast1:
            y = load(src1[offset1])
            for c in range(cols):
                dst[base + c] = store(formula(load(src0[offset0 + c]), y, attr0, attr1))
        else:
            for c in range(cols):
                dst[base + c] = store(formula(load(src0[offset0 + c]), load(src1[offset1 + c]), attr0, attr1))


def _swapped(x, y, attr0, attr1):
    return formula(y, x, attr0, attr1)


@functools.cache
def _formula(op, src_dtype, swap: bool):
    formula = binary_formula(op, src_dtype)
    if not swap:
        return formula
    return scalar_function(specialize(_swapped, f"swapped_{op.value}_{src_dtype.value}", formula=formula))


_TEMPLATES = {"elementwise": _elementwise, "scalar": _scalar, "row": _row, "column": _column, "general": _general}


@functools.cache
def _kernel(op, src_dtype, dst_dtype, path: str, swap: bool = False) -> CpuKernel:
    suffix = "_swapped" if swap else ""
    return CpuKernel(
        _TEMPLATES[path],
        f"binary_{path}{suffix}_{op.value}_{src_dtype.value}_{dst_dtype.value}",
        formula=_formula(op, src_dtype, swap),
        load=load_fn(src_dtype),
        store=store_fn(dst_dtype),
    )


class BroadcastElementwiseBinaryImpl(BroadcastElementwiseBinary):
    def __init__(self, op, src_dtype, dst_dtype, max_num_dims, attrs) -> None:
        self.op, self.src_dtype, self.dst_dtype = op, src_dtype, dst_dtype
        self.max_num_dims, self.attrs = max_num_dims, attrs

    def Launch(self, stream, src0_dims, src0, src1_dims, src1, dst) -> None:
        check_stream(stream, DeviceType.kCPU)
        a, b, out, plan = prepare_launch(
            DeviceType.kCPU, self.src_dtype, self.dst_dtype, self.max_num_dims, src0_dims, src0, src1_dims, src1, dst
        )
        count = plan.count
        kernel = functools.partial(_kernel, self.op, self.src_dtype, self.dst_dtype)
        if plan.path == "elementwise":
            kernel("elementwise")(count, a, b, out, count, *self.attrs)
        elif plan.path == "scalar":
            # The kernels take the broadcast operand on the right; on the left, the formula is swapped.
            scalar, full = (a, b) if plan.side == 0 else (b, a)
            if not is_scalar(scalar):
                scalar = host_element(scalar, self.src_dtype)
            kernel("scalar", plan.side == 0)(count, full, scalar, out, count, *self.attrs)
        elif plan.path in ("row", "column"):
            broadcast, full = (a, b) if plan.side == 0 else (b, a)
            kernel(plan.path, plan.side == 0)(count, full, broadcast, out, plan.rows, plan.cols, *self.attrs)
        elif plan.path == "general":
            cols = plan.dims[-1]
            strides = (padded(plan.strides0), b, padded(plan.strides1), out, padded(plan.dst_strides))
            kernel("general")(count, a, *strides, len(plan.dims), count // cols, cols, *self.attrs)


@functools.cache
def _primitive(op, src_dtype, dst_dtype, max_num_dims, attrs) -> BroadcastElementwiseBinaryImpl:
    return BroadcastElementwiseBinaryImpl(op, src_dtype, dst_dtype, max_num_dims, attrs)


class BroadcastElementwiseBinaryFactoryImpl(BroadcastElementwiseBinaryFactory):
    def New(self, op, src_dtype, dst_dtype, max_num_dims=MAX_NUM_DIMS, attr0=None, attr1=None):
        resolved = resolve_new(op, src_dtype, dst_dtype, max_num_dims, attr0, attr1)
        return None if resolved is None else _primitive(*resolved)

    def Combinations(self):
        for op, src_dtype, dst_dtype in binary_combinations():
            yield op, (src_dtype, dst_dtype)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, BroadcastElementwiseBinaryFactory, BroadcastElementwiseBinaryFactoryImpl)
