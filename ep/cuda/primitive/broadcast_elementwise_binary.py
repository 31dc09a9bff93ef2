"""BroadcastElementwiseBinary's CUDA kernel: one grid-stride kernel per (op, src dtype, dst dtype).

Every path is the simplified dst shape (1 to MAX_NUM_DIMS dims after the host's folding) read
through each operand's strides (0 on its broadcast dims; a scalar value is a kernel argument):
split_offsets turns a flat offset into both operands' offsets with one 32-bit fast_divmod per dim
but the outermost (one dim: none; row and column broadcast: one), unrolled over MAX_NUM_DIMS so
that the rank is a uniform branch, not a tuple indexed at run time. Offsets are 32-bit: a dst of
more than 2**31 - 1 elements runs as several launches of boxes that fit (launch_parts), so there is
no 64-bit variant, and the formula is inlined once: the PTX check keeps one kernel per (op, dtype).
A work item is a pack of 16 bytes of consecutive dst elements (ep.cuda.pack) where no pack crosses
a row (one dim, or rows of whole packs) and the buffers read or written a pack at a time are
aligned to it, else one element: split_offsets runs once per pack.
"""
from __future__ import annotations

import math
from typing import Callable, Iterator, NamedTuple

import numba
import numpy as np
from numba import types

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.binary_functor import BINARY_FUNCTORS, binary_attr_dtype, binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.fast_divmod import index_bindings, size_type
from ep.common.math.nd_index_offset_helper import SPLIT_DIMS, boxes, split_args, split_offsets
from ep.common.primitive.broadcast_elementwise_binary import (
    BinaryPlan,
    BroadcastElementwiseBinaryFactoryImpl,
    BroadcastElementwiseBinaryKernels,
)
from ep.common.runtime.buffer import address
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import HALF_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.element import pack_grid, pack_item
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import op_lanes, pack_bindings, pack_bytes, pack_count
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Derivatives computed in float64 at every dtype (digamma's and trigamma's, ops/transcendental.py).
FLOAT64_FORMULAS = frozenset({BinaryOp.kDigammaBackwardWithDyX, BinaryOp.kLgammaBackwardWithDyX})
_INTEGER_DIVISIONS = tuple(op for op, record in BINARY_FUNCTORS.items() if record.divides_integers)
_TRIGONOMETRIC_DERIVATIVES = (BinaryOp.kSinBackwardWithDyX, BinaryOp.kCosBackwardWithDyX, BinaryOp.kTanBackwardWithDyX)
# Pack bytes below 16 for (op, src dtype), where 16 spill under the 32 registers of full occupancy
# (the ptxas check): int8 and int32 divisions compute in int64, a 64-bit division routine per lane
# (two lanes fit); the sin/cos/tan derivatives keep libdevice's argument reduction per lane; float16
# and bfloat16 gelu's derivative and uint8 max/min (fmax/fmin too) spilled a few bytes at 16, and
# lcm's 64-bit divisions at two lanes of int64.
NARROW_PACKS = {
    **{(op, dtype): 2 for op in _INTEGER_DIVISIONS for dtype in (DataType.kInt8, DataType.kInt16)},
    **{(op, DataType.kInt32): 8 for op in _INTEGER_DIVISIONS},
    **{(op, dtype): 8 for op in _TRIGONOMETRIC_DERIVATIVES for dtype in (*HALF_TYPES, DataType.kFloat)},
    **{(BinaryOp.kGeluBackwardWithDyX, dtype): 8 for dtype in HALF_TYPES},
    **{(op, DataType.kUInt8): 8 for op in (BinaryOp.kMax, BinaryOp.kMin, BinaryOp.kFmax, BinaryOp.kFmin)},
    **{(BinaryOp.kLcm, dtype): 8 for dtype in (DataType.kInt64, DataType.kUInt64)},
}


@template(
    "formula", "compute", "load", "store", "INDEX", "DIVMOD", "PACK", "SRC", "DST", "pack_array", "load_pack", "store_pack", "opaque"
)
def _binary(
    src0, value0, is_value0, src1, value1, is_value1, dst, count, ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1,
    attr0, attr1, packs, inner0, inner1,
):
    # packs: work items 0 to packs - 1 are full packs of PACK consecutive dst elements (the host
    # found no pack crossing a row and the buffers read or written a pack at a time aligned to
    # them), the rest one element each; inner0/inner1: each operand's stride along the innermost
    # dim (1, or 0 where it is broadcast: one element for the whole pack). The lane loop has a
    # constant trip count: LLVM unrolls it and keeps the lanes in registers, and the formula is
    # inlined once.
    x0 = bound.pack_array(bound.SRC)
    x1 = bound.pack_array(bound.SRC)
    y = bound.pack_array(bound.DST)
    w, step, work = pack_grid(count, packs, bound.PACK, bound.INDEX)
    while w < work:
        full, i, lanes = pack_item(w, packs, bound.PACK, bound.INDEX)
        # ndim is the same for every thread: the unrolled dims' breaks never diverge.
        offset0, offset1 = split_offsets(
            i, ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1, bound.DIVMOD
        )
        if not is_value0:
            bound.load_pack(x0, src0, offset0, full, inner0)
        if not is_value1:
            bound.load_pack(x1, src1, offset1, full, inner1)
        for k in range(bound.PACK):
            if k < lanes:
                # compute() is free when compiled; on the simulator, which runs this as Python, it
                # keeps the operands' type (Numba returns a loaded int8 as a Python int).
                x = bound.compute(value0 if is_value0 else bound.load(x0[k]))
                z = bound.compute(value1 if is_value1 else bound.load(x1[k]))
                y[k] = bound.store(bound.formula(x, z, attr0, attr1))
        bound.store_pack(dst, i, y, full)
        w = bound.opaque(bound.INDEX(w + step))


_INDEX = size_type(wide=False)
_DIMS = types.UniTuple(_INDEX, SPLIT_DIMS)


class _Part(NamedTuple):
    """One launch of a plan: where its box starts in src0, src1 and dst, its elements, and
    split_offsets' arguments."""

    offset0: int
    offset1: int
    offset: int
    count: int
    split: tuple


def launch_parts(plan: BinaryPlan, limit: int) -> list[_Part]:
    """The launches of plan: one, or where dst has more than limit elements, one per box of at
    most limit (nd_index_offset_helper.boxes), so that every offset a kernel computes fits in 32 bits."""
    dims, strides0, strides1, dst_strides = plan.dims, plan.strides0, plan.strides1, plan.dst_strides
    parts = []
    for start, box in boxes(dims, limit):
        k = len(dims) - len(box)
        parts.append(
            _Part(
                sum(i * s for i, s in zip(start, strides0)),
                sum(i * s for i, s in zip(start, strides1)),
                sum(i * s for i, s in zip(start, dst_strides)),
                math.prod(box),
                split_args(box, strides0[k:], strides1[k:], wide=False),
            )
        )
    return parts


class CudaBroadcastElementwiseBinaryKernels(BroadcastElementwiseBinaryKernels):
    @function_cache("kernels")
    def kernel(self, op, src_dtype: DataType, dst_dtype: DataType) -> CudaKernel:
        src = numba.from_dtype(src_dtype.storage_dtype)[::1]
        dst = numba.from_dtype(dst_dtype.storage_dtype)[::1]
        compute = numba.from_dtype(src_dtype.compute_dtype)
        attr = numba.from_dtype(binary_attr_dtype(src_dtype))
        flag = types.boolean
        argtypes = (
            src, compute, flag, src, compute, flag, dst, _INDEX, _INDEX, *([_DIMS] * 5), _INDEX, _INDEX, attr, attr,
            _INDEX, _INDEX, _INDEX,
        )
        # A float64 formula takes register pairs: under the 32-register cap of full occupancy some
        # would spill (the ptxas check found it), so they declare no launch bounds.
        in_float64 = op in FLOAT64_FORMULAS or src_dtype.compute_dtype == np.float64
        return CudaKernel(
            _binary,
            f"binary_{op.value}_{src_dtype.value}_{dst_dtype.value}",
            argtypes,
            full_occupancy=not in_float64,
            formula=binary_formula(op, src_dtype),
            compute=src_dtype.compute_dtype.type,
            load=load_fn(src_dtype, DeviceType.kCUDA),
            store=store_fn(dst_dtype, DeviceType.kCUDA),
            # Always 32-bit: a launch beyond is cut into boxes that fit (launch_parts).
            **index_bindings(wide=False),
            **pack_bindings(op_lanes(NARROW_PACKS, op, src_dtype, dst_dtype), src_dtype.storage_dtype, dst_dtype.storage_dtype),
        )

    def combination_kernels(self, op, src_dtype, dst_dtype) -> Iterator[CudaKernel]:
        yield self.kernel(op, src_dtype, dst_dtype)

    def launcher(self, op, src_dtype, dst_dtype, plan: BinaryPlan) -> Callable[..., None]:
        kernel = self.kernel(op, src_dtype, dst_dtype)
        value0, value1 = plan.value0, plan.value1
        limit = fast_divmod.FAST_DIVMOD_LIMIT
        # Beyond the limit the boxes are cut at the first run, after storage() has checked that the
        # buffers hold plan.count elements: dims no buffer could hold would take billions of boxes.
        parts = launch_parts(plan, limit) if plan.count <= limit else None
        # The value argument of an operand that is a buffer (never read).
        zero = src_dtype.compute_dtype.type(0)
        lanes = op_lanes(NARROW_PACKS, op, src_dtype, dst_dtype)
        # Packs: where no pack crosses a row (one dim, or rows of whole packs), the operands that
        # are buffers along the innermost dim (stride 1) are read a pack at a time, the others (stride
        # 0: broadcast along it) an element for the pack.
        inner0, inner1 = (plan.strides0[-1], plan.strides1[-1]) if plan.dims else (0, 0)
        packable = len(plan.dims) <= 1 or plan.dims[-1] % lanes == 0
        packed0, packed1 = inner0 == 1 and not value0, inner1 == 1 and not value1
        src_pack, dst_pack = pack_bytes(lanes, src_dtype.storage_dtype), pack_bytes(lanes, dst_dtype.storage_dtype)

        def run(stream, a, b, out, attr0, attr1) -> None:
            nonlocal parts
            if parts is None:
                parts = launch_parts(plan, limit)
            # A value operand's buffer argument is never read: the other operand's buffer stands in.
            src0, arg0 = (b, a) if value0 else (a, zero)
            src1, arg1 = (a, b) if value1 else (b, zero)
            for offset0, offset1, offset, count, split in parts:
                if offset:
                    # A box past the first: each buffer from the box's first element.
                    box0, box1, box = src0[offset0:], src1[offset1:], out[offset : offset + count]
                else:
                    box0, box1, box = src0, src1, out
                misaligned = (
                    not packable
                    or address(box) % dst_pack
                    or (packed0 and address(box0) % src_pack)
                    or (packed1 and address(box1) % src_pack)
                )
                packs, work = pack_count(lanes, count, misaligned)
                kernel.launch(
                    stream, work, box0, arg0, value0, box1, arg1, value1, box, count, *split, attr0, attr1,
                    packs, inner0, inner1,
                )

        return run


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA,
    BroadcastElementwiseBinaryFactory,
    BroadcastElementwiseBinaryFactoryImpl(DeviceType.kCUDA, CudaBroadcastElementwiseBinaryKernels()),
)
