"""BroadcastElementwiseBinary on the CPU: one prange kernel per (op, src dtype, dst dtype, path).

Paths: elementwise and scalar are flat loops; row and column loop over rows in parallel with a
contiguous inner loop; general maps each row's first element through the NdIndexOffsetHelper
strides (0 on broadcast dims) and then runs along the innermost dim. A broadcast operand on the
left reuses the right-hand kernels with the formula's arguments swapped.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numpy as np

from numba import prange

from ep.common.math.binary_functor import binary_combinations, binary_formula
from ep.common.primitive.broadcast_elementwise_binary import (
    check_launch,
    host_element,
    is_scalar,
    padded,
    plan_binary,
    prepare_launch,
    resolve_new,
)
from ep.common.runtime.buffer import storage
from ep.common.math.convert import load_fn, store_fn
from ep.common.runtime.device import DeviceType
from ep.common.jit import scalar_function, specialize
from ep.common.math.nd_index_offset_helper import offset_to_index
from ep.common.runtime.stream import CpuStream, check_stream
from ep.cpu.kernel import PARALLEL_THRESHOLD, CpuKernel
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


# Inner loops index row slices by the range variable alone: LLVM then knows every index is
# non-negative, drops Numba's wraparound checks and vectorizes (base + c defeated that).


def _row(src, row, dst, rows, cols, attr0, attr1):
    for r in prange(rows):
        base = r * cols
        x = src[base:base + cols]
        out = dst[base:base + cols]
        for c in range(cols):
            out[c] = store(formula(load(x[c]), load(row[c]), attr0, attr1))


def _column(src, column, dst, rows, cols, attr0, attr1):
    for r in prange(rows):
        base = r * cols
        y = load(column[r])
        x = src[base:base + cols]
        out = dst[base:base + cols]
        for c in range(cols):
            out[c] = store(formula(load(x[c]), y, attr0, attr1))


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
        out = dst[base:base + cols]
        if broadcast0:
            x = load(src0[offset0])
            b = src1[offset1:offset1 + cols]
            for c in range(cols):
                out[c] = store(formula(x, load(b[c]), attr0, attr1))
        elif broadcast1:
            y = load(src1[offset1])
            a = src0[offset0:offset0 + cols]
            for c in range(cols):
                out[c] = store(formula(load(a[c]), y, attr0, attr1))
        else:
            a = src0[offset0:offset0 + cols]
            b = src1[offset1:offset1 + cols]
            for c in range(cols):
                out[c] = store(formula(load(a[c]), load(b[c]), attr0, attr1))


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


class _Launch(NamedTuple):
    """A cached launch for two array operands: what each buffer must hold, and the call.

    kernel(*operands, out, *tail, *attrs) runs it, operands being (src0, src1) or, with swap,
    (src1, src0) (the kernels take the broadcast operand on the right); the general path passes
    its strides in tail through general_args instead.
    """

    count0: int
    count1: int
    count: int
    path: str
    swap: bool
    kernel: Callable | None
    tail: tuple


_ndarray = np.ndarray
MAX_CACHED_PLANS = 256


def _new_launch(op, src_dtype, dst_dtype, dims0, dims1) -> _Launch:
    plan = plan_binary(dims0, dims1, False, False)
    count0, count1, count = math.prod(dims0), math.prod(dims1), plan.count
    if plan.path in ("empty", "scalar"):
        # Scalar launches read one element on the host; they take the checking path.
        return _Launch(count0, count1, count, plan.path, False, None, ())
    swap = plan.path != "elementwise" and plan.side == 0
    if plan.path == "general":
        swap = False
        cols = plan.dims[-1]
        tail = (padded(plan.strides0), padded(plan.strides1), padded(plan.dst_strides), len(plan.dims), count // cols, cols)
    elif plan.path == "elementwise":
        tail = (count,)
    else:
        tail = (plan.rows, plan.cols)
    kernel = _kernel(op, src_dtype, dst_dtype, plan.path, swap)
    return _Launch(count0, count1, count, plan.path, swap, kernel.parallel if count >= PARALLEL_THRESHOLD else kernel.serial, tail)


class BroadcastElementwiseBinaryImpl(BroadcastElementwiseBinary):
    def __init__(self, op, src_dtype, dst_dtype, max_num_dims, attrs) -> None:
        self.op, self.src_dtype, self.dst_dtype = op, src_dtype, dst_dtype
        self.max_num_dims, self.attrs = max_num_dims, attrs
        self._src_np, self._dst_np = src_dtype.storage_dtype, dst_dtype.storage_dtype
        self._plans: dict[tuple, _Launch] = {}

    def Launch(self, stream, src0_dims, src0, src1_dims, src1, dst) -> None:
        # Written for tiny launches, whose cost is this function: for two arrays of the storage
        # dtypes and dims seen before, one lookup, a few checks and the kernel call.
        if type(stream) is not CpuStream:
            check_stream(stream, DeviceType.kCPU)
        launch = None
        if type(src0) is _ndarray and type(src1) is _ndarray:
            # Keyed by the caller's tuples. Floats and bools compare equal to ints, so a hit
            # counts only when every dim is an int.
            try:
                launch = self._plans[src0_dims, src1_dims]
            except (KeyError, TypeError):
                launch = self._new_plan(src0_dims, src0, src1_dims, src1)
            else:
                for d in src0_dims:
                    if type(d) is not int:
                        launch = None
                for d in src1_dims:
                    if type(d) is not int:
                        launch = None
        if launch is None or launch.kernel is None:
            self._launch_checked(src0_dims, src0, src1_dims, src1, dst)
            return
        src_np = self._src_np
        a, b = src0, src1
        if not (a.dtype is src_np and a.size >= launch.count0 and a.flags.c_contiguous):
            a = storage(a, "src0", DeviceType.kCPU, self.src_dtype, launch.count0)
        if not (b.dtype is src_np and b.size >= launch.count1 and b.flags.c_contiguous):
            b = storage(b, "src1", DeviceType.kCPU, self.src_dtype, launch.count1)
        out = dst
        if not (type(out) is _ndarray and out.dtype is self._dst_np and out.size >= launch.count):
            out = storage(out, "dst", DeviceType.kCPU, self.dst_dtype, launch.count, writable=True)
        else:
            flags = out.flags
            if not (flags.c_contiguous and flags.writeable):
                out = storage(out, "dst", DeviceType.kCPU, self.dst_dtype, launch.count, writable=True)
        a, b, out = a.ravel(), b.ravel(), out.ravel()
        if launch.path == "general":
            s0, s1, sd, ndim, rows, cols = launch.tail
            launch.kernel(a, s0, b, s1, out, sd, ndim, rows, cols, *self.attrs)
        elif launch.swap:
            launch.kernel(b, a, out, *launch.tail, *self.attrs)
        else:
            launch.kernel(a, b, out, *launch.tail, *self.attrs)

    def _new_plan(self, src0_dims, src0, src1_dims, src1) -> _Launch:
        dims0, dims1, _ = check_launch(src0_dims, src0, src1_dims, src1, self.max_num_dims)
        key = (dims0, dims1)
        launch = self._plans.get(key)
        if launch is None:
            launch = _new_launch(self.op, self.src_dtype, self.dst_dtype, dims0, dims1)
            if len(self._plans) >= MAX_CACHED_PLANS:
                self._plans.clear()
            self._plans[key] = launch
        return launch

    def _launch_checked(self, src0_dims, src0, src1_dims, src1, dst) -> None:
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
