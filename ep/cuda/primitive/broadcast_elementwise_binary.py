"""BroadcastElementwiseBinary's CUDA kernel: one grid-stride kernel per (op, src dtype, dst dtype).

The kernel branches on the simplified rank, which is the same for every thread, so the branches
never diverge: one flat dim serves equal shapes and the scalar path (each operand read at i times
a stride of 1 for a full operand, 0 for a one-element one, or VALUE_STRIDE for a scalar passed as
a kernel argument: no index arithmetic); two dims serve row and column broadcast (one division per
element); more dims take the general path (NdIndexOffsetHelper, 0 strides on broadcast dims).
The formula is inlined once, which keeps the PTX check at one kernel per (op, dtype).
"""
from __future__ import annotations

import functools
from typing import Callable, Iterator

import numba
import numpy as np
from numba import cuda, types

from ep.common.jit import bound, template
from ep.common.math.binary_functor import binary_attr_dtype, binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.nd_index_offset_helper import offset_to_index
from ep.common.primitive.broadcast_elementwise_binary import (
    STRIDES_LEN,
    BinaryPlan,
    BroadcastElementwiseBinaryFactoryImpl,
    BroadcastElementwiseBinaryKernels,
    padded,
)
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# The flat stride that marks an operand as a scalar value, passed as a kernel argument.
VALUE_STRIDE = -1
# Derivatives computed in float64 at every dtype (digamma's and trigamma's, ops/transcendental.py).
FLOAT64_FORMULAS = frozenset({BinaryOp.kDigammaBackwardWithDyX, BinaryOp.kLgammaBackwardWithDyX})


@template("formula", "compute", "load", "store")
def _binary(src0, value0, strides0, src1, value1, strides1, dst, dst_strides, ndim, count, attr0, attr1):
    i = cuda.grid(1)
    grid = cuda.gridsize(1)
    while i < count:
        # ndim is the same for every thread: these branches never diverge.
        if ndim == 1:
            # Elementwise or scalar: strides are 1 (full), 0 (one element) or -1 (a value).
            offset0 = i * strides0[0]
            offset1 = i * strides1[0]
        elif ndim == 2:
            # Row or column broadcast: dst is rows x cols, one division finds the row.
            row = i // dst_strides[0]
            col = i - row * dst_strides[0]
            offset0 = row * strides0[0] + col * strides0[1]
            offset1 = row * strides1[0] + col * strides1[1]
        else:
            offset0 = 0
            offset1 = 0
            for d in range(ndim):
                index = offset_to_index(i, dst_strides, d)
                offset0 += index * strides0[d]
                offset1 += index * strides1[d]
        # compute() is free when compiled; on the simulator, which runs this as Python, it keeps
        # the operands' type (Numba returns a loaded int8 as a Python int).
        x = bound.compute(value0 if strides0[0] < 0 else bound.load(src0[offset0]))
        y = bound.compute(value1 if strides1[0] < 0 else bound.load(src1[offset1]))
        dst[i] = bound.store(bound.formula(x, y, attr0, attr1))
        i += grid


_STRIDES = types.UniTuple(types.int64, STRIDES_LEN)


def _flat_stride(value: bool, strides: tuple[int, ...]) -> int:
    """An operand's stride over a flat dst: VALUE_STRIDE for a value, 0 for one element, else 1."""
    if value:
        return VALUE_STRIDE
    return 1 if any(strides) else 0


class CudaBroadcastElementwiseBinaryKernels(BroadcastElementwiseBinaryKernels):
    @functools.cache
    def kernel(self, op, src_dtype: DataType, dst_dtype: DataType) -> CudaKernel:
        src = numba.from_dtype(src_dtype.storage_dtype)[::1]
        dst = numba.from_dtype(dst_dtype.storage_dtype)[::1]
        compute = numba.from_dtype(src_dtype.compute_dtype)
        attr = numba.from_dtype(binary_attr_dtype(src_dtype))
        i64 = types.int64
        argtypes = (src, compute, _STRIDES, src, compute, _STRIDES, dst, _STRIDES, i64, i64, attr, attr)
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
            load=load_fn(src_dtype),
            store=store_fn(dst_dtype),
        )

    def combination_kernels(self, op, src_dtype, dst_dtype) -> Iterator[CudaKernel]:
        yield self.kernel(op, src_dtype, dst_dtype)

    def launcher(self, op, src_dtype, dst_dtype, plan: BinaryPlan) -> Callable[..., None]:
        kernel = self.kernel(op, src_dtype, dst_dtype)
        count, value0, value1 = plan.count, plan.value0, plan.value1
        if plan.path in ("elementwise", "scalar"):
            strides0, strides1 = (_flat_stride(value0, plan.strides0),), (_flat_stride(value1, plan.strides1),)
            dst_strides = (1,)
        else:
            strides0, strides1, dst_strides = plan.strides0, plan.strides1, plan.dst_strides
        ndim = len(dst_strides)
        strides0, strides1, dst_strides = padded(strides0), padded(strides1), padded(dst_strides)
        # The value argument of an operand that is a buffer (never read).
        zero = src_dtype.compute_dtype.type(0)

        def run(stream, a, b, out, attr0, attr1) -> None:
            # A value operand's buffer argument is never read: the other operand's buffer stands in.
            src0, arg0 = (b, a) if value0 else (a, zero)
            src1, arg1 = (a, b) if value1 else (b, zero)
            kernel.launch(
                stream, count, src0, arg0, strides0, src1, arg1, strides1, out, dst_strides, ndim, count, attr0, attr1
            )

        return run


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA,
    BroadcastElementwiseBinaryFactory,
    BroadcastElementwiseBinaryFactoryImpl(DeviceType.kCUDA, CudaBroadcastElementwiseBinaryKernels()),
)
