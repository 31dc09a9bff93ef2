"""Matmul, BatchMatmul and BroadcastMatmul on the CPU: the BLAS NumPy ships, through np.matmul.

A plan's operands are strided views of the launch's flat storage (a transposed operand is the
swapped view of its stored matrix, which np.matmul hands to the BLAS as a transpose, not a copy; a
broadcast batch dim has stride 0), and np.matmul writes c in one call: for a batch, NumPy's loop
over the matrices runs in C, one BLAS GEMM each. BLAS's alpha and beta are not reachable through
np.matmul, so alpha != 1 costs one pass over c and beta != 0 a scratch product and two; float16
is converted to float32 scratch first (NumPy's own float16 matmul is not a BLAS call).
"""
from __future__ import annotations

import numpy as np

from ep.common.primitive.matmul import (
    MATMUL_TYPES,
    BatchMatmulFactoryImpl,
    BroadcastMatmulFactoryImpl,
    GemmPlan,
    MatmulFactoryImpl,
    MatmulKernels,
    matrix_dims,
)
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.include.primitive.batch_matmul import BatchMatmulFactory
from ep.include.primitive.broadcast_matmul import BroadcastMatmulFactory
from ep.include.primitive.matmul import MatmulFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

_as_strided = np.lib.stride_tricks.as_strided


def _matrices(flat: np.ndarray, plan: GemmPlan, strides: tuple[int, ...], rows_cols: tuple[int, int], transposed: bool) -> np.ndarray:
    """op(x) for every batch index of plan: a read-only strided view of flat (batch dims, rows, cols)."""
    rows, cols = matrix_dims(rows_cols, transposed)
    size = flat.itemsize
    view = _as_strided(flat, plan.batch + (rows, cols), tuple(s * size for s in strides) + (cols * size, size), writeable=False)
    return view.swapaxes(-1, -2) if transposed else view


def _values(flat: np.ndarray, dtype: DataType, count: int) -> np.ndarray:
    """The first count elements of flat storage as arrays of the compute dtype (float16: converted)."""
    if dtype is DataType.kFloat16:
        return flat[:count].view(np.float16).astype(np.float32)
    return flat


def _scale(c: np.ndarray, beta) -> None:
    """c = beta * c; zeros for beta == 0, whatever c held (BLAS does not read c then)."""
    if beta == 0:
        c.fill(0)
    elif beta != 1:
        np.multiply(c, beta, out=c)


class CpuMatmulKernels(MatmulKernels):
    def supports(self, dtype: DataType) -> bool:
        return dtype in MATMUL_TYPES

    def gemm(self, stream, dtype: DataType, plan: GemmPlan, alpha, a, b, beta, c) -> None:
        # The cpu stream runs it at once.
        m, n, k = plan.m, plan.n, plan.k
        c_count = plan.counts[2]
        out = c[:c_count].view(dtype.dtype).reshape(plan.batch + (m, n))
        if alpha == 0 or k == 0:
            # BLAS's quick return (cuBLAS's too): no product is formed, so alpha times an empty
            # sum is never inf * 0.
            _scale(out, beta)
            return
        a = _matrices(_values(a, dtype, plan.counts[0]), plan, plan.a_strides, (m, k), plan.trans_a)
        b = _matrices(_values(b, dtype, plan.counts[1]), plan, plan.b_strides, (k, n), plan.trans_b)
        if dtype is DataType.kFloat16:
            product = np.matmul(a, b)
            if alpha != 1:
                np.multiply(product, alpha, out=product)
            if beta != 0:
                product += beta * out.astype(np.float32)
            np.copyto(out, product, casting="same_kind")  # one rounding, from float32
        elif beta == 0:
            np.matmul(a, b, out=out)
            if alpha != 1:
                np.multiply(out, alpha, out=out)
        else:
            product = np.matmul(a, b)
            if alpha != 1:
                np.multiply(product, alpha, out=product)
            _scale(out, beta)
            out += product


KERNELS = CpuMatmulKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, MatmulFactory, MatmulFactoryImpl(DeviceType.kCPU, KERNELS))
REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, BatchMatmulFactory, BatchMatmulFactoryImpl(DeviceType.kCPU, KERNELS))
REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, BroadcastMatmulFactory, BroadcastMatmulFactoryImpl(DeviceType.kCPU, KERNELS))
