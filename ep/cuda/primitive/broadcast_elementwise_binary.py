"""BroadcastElementwiseBinary on CUDA: one grid-stride kernel per (op, src dtype, dst dtype).

The kernel branches on the simplified rank, which is the same for every thread, so the branches
never diverge: one flat dim serves equal shapes and the scalar path (each operand read at i times
a stride of 1 for a full operand, 0 for a one-element one, or VALUE_STRIDE for a scalar passed as
a kernel argument: no index arithmetic); two dims serve row and column broadcast (one division per
element); more dims take the general path (NdIndexOffsetHelper, 0 strides on broadcast dims).
The formula is inlined once, which keeps the PTX check at one kernel per (op, dtype).
"""
from __future__ import annotations

import functools

import numba
from numba import cuda, types

from ep.common.math.binary_functor import binary_attr_dtype, binary_combinations, binary_formula
from ep.common.primitive.broadcast_elementwise_binary import STRIDES_LEN, is_scalar, padded, prepare_launch, resolve_new
from ep.common.math.convert import load_fn, store_fn
from ep.common.runtime.device import DeviceType
from ep.common.math.nd_index_offset_helper import offset_to_index
from ep.common.runtime.stream import check_stream
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.broadcast_elementwise_binary import (
    MAX_NUM_DIMS,
    BroadcastElementwiseBinary,
    BroadcastElementwiseBinaryFactory,
)
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Names bound by specialize: formula, compute, load, store.
# ruff: noqa: F821

# The flat stride that marks an operand as a scalar value, passed as a kernel argument.
VALUE_STRIDE = -1


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
        x = compute(value0 if strides0[0] < 0 else load(src0[offset0]))
        y = compute(value1 if strides1[0] < 0 else load(src1[offset1]))
        dst[i] = store(formula(x, y, attr0, attr1))
        i += grid


_STRIDES = types.UniTuple(types.int64, STRIDES_LEN)


@functools.cache
def _kernel(op, src_dtype, dst_dtype) -> CudaKernel:
    src = numba.from_dtype(src_dtype.storage_dtype)[::1]
    dst = numba.from_dtype(dst_dtype.storage_dtype)[::1]
    compute = numba.from_dtype(src_dtype.compute_dtype)
    attr = numba.from_dtype(binary_attr_dtype(src_dtype))
    i64 = types.int64
    argtypes = (src, compute, _STRIDES, src, compute, _STRIDES, dst, _STRIDES, i64, i64, attr, attr)
    return CudaKernel(
        _binary,
        f"binary_{op.value}_{src_dtype.value}_{dst_dtype.value}",
        argtypes,
        formula=binary_formula(op, src_dtype),
        compute=src_dtype.compute_dtype.type,
        load=load_fn(src_dtype),
        store=store_fn(dst_dtype),
    )


class BroadcastElementwiseBinaryImpl(BroadcastElementwiseBinary):
    def __init__(self, op, src_dtype, dst_dtype, max_num_dims, attrs) -> None:
        self.op, self.src_dtype, self.dst_dtype = op, src_dtype, dst_dtype
        self.max_num_dims, self.attrs = max_num_dims, attrs
        self._kernel = _kernel(op, src_dtype, dst_dtype)
        # The value argument of an operand that is a buffer (never read).
        self._zero = src_dtype.compute_dtype.type(0)

    def Launch(self, stream, src0_dims, src0, src1_dims, src1, dst) -> None:
        check_stream(stream, DeviceType.kCUDA)
        a, b, out, plan = prepare_launch(
            DeviceType.kCUDA, self.src_dtype, self.dst_dtype, self.max_num_dims, src0_dims, src0, src1_dims, src1, dst
        )
        if plan.path == "empty":
            return
        if plan.path in ("elementwise", "scalar"):
            strides0, strides1, dst_strides = (_flat_stride(a, plan.strides0),), (_flat_stride(b, plan.strides1),), (1,)
        else:
            strides0, strides1, dst_strides = plan.strides0, plan.strides1, plan.dst_strides
        # A value operand's buffer argument is never read: the other operand's buffer stands in.
        src0, value0 = (b, a) if is_scalar(a) else (a, self._zero)
        src1, value1 = (a, b) if is_scalar(b) else (b, self._zero)
        self._kernel.launch(
            stream, plan.count,
            src0, value0, padded(strides0), src1, value1, padded(strides1),
            out, padded(dst_strides), len(dst_strides), plan.count, *self.attrs,
        )


def _flat_stride(operand, strides: tuple[int, ...]) -> int:
    """An operand's stride over a flat dst: VALUE_STRIDE for a value, 0 for one element, else 1."""
    if is_scalar(operand):
        return VALUE_STRIDE
    return 1 if any(strides) else 0


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

    def Kernels(self):
        """Every CUDA kernel this factory can launch, for the PTX check."""
        for op, src_dtype, dst_dtype in binary_combinations():
            yield _kernel(op, src_dtype, dst_dtype)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, BroadcastElementwiseBinaryFactory, BroadcastElementwiseBinaryFactoryImpl)
