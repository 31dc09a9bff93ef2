"""Matmul, BatchMatmul and BroadcastMatmul on the CPU: the BLAS NumPy ships, through np.matmul.

A plan's operands are strided views of the launch's flat storage (a transposed operand is the
swapped view of its stored matrix, which np.matmul hands to the BLAS as a transpose, not a copy; a
broadcast batch dim has stride 0), and np.matmul writes c in one call: for a batch, NumPy's loop
over the matrices runs in C, one BLAS GEMM each. BLAS's alpha and beta are not reachable through
np.matmul, so alpha != 1 costs one pass over c and beta != 0 a scratch product and two; float16
and bfloat16 are converted to float32 scratch first (NumPy's own float16 matmul is not a BLAS call). Integers
run on ep's span over c's rows (ParallelFor), each element an int64 sum (int_dot).
"""
from __future__ import annotations

import numba
import numpy as np

from ep.common.jit import template
from ep.common.primitive import matmul as common
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import HALF_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array

_as_strided = np.lib.stride_tricks.as_strided


def _matrices(flat: np.ndarray, plan: common.GemmPlan, strides: tuple[int, ...], rows_cols: tuple[int, int], transposed: bool) -> np.ndarray:
    """op(x) for every batch index of plan: a read-only strided view of flat (batch dims, rows, cols)."""
    rows, cols = common.matrix_dims(rows_cols, transposed)
    size = flat.itemsize
    view = _as_strided(flat, plan.batch + (rows, cols), tuple(s * size for s in strides) + (cols * size, size), writeable=False)
    return view.swapaxes(-1, -2) if transposed else view


def _values(flat: np.ndarray, dtype: DataType, count: int) -> np.ndarray:
    """The first count elements of flat storage as arrays of the compute dtype (float16 and
    bfloat16: converted)."""
    if dtype in HALF_TYPES:
        return flat[:count].view(dtype.dtype).astype(np.float32)
    return flat


def _scale(c: np.ndarray, beta) -> None:
    """c = beta * c; zeros for beta == 0, whatever c held (BLAS does not read c then)."""
    if beta == 0:
        c.fill(0)
    elif beta != 1:
        np.multiply(c, beta, out=c)


@template()
def _integer_gemm(start, stop, args):
    # Items are c's rows over the batch: row r is row i of the batch's matrix r // m.
    a, b, c, layout, m, n, k, a_row, a_col, b_row, b_col, alpha, beta = args
    nd = common.BATCH_DIMS
    dims, a_strides, b_strides = layout[:nd], layout[nd : 2 * nd], layout[2 * nd :]
    for r in range(start, stop):
        a_offset, b_offset = common.batch_offsets(r // m, dims, a_strides, b_strides)
        a_start = a_offset + (r % m) * a_row
        for j in range(n):
            value = alpha * common.int_dot(a, a_start, a_col, b, b_offset + j * b_col, b_row, k)
            if beta != 0:
                value += beta * np.int64(c[r * n + j])
            c[r * n + j] = value


@function_cache("kernels")
def integer_gemm_kernel(dtype: DataType) -> ParallelFor:
    """The integer GEMM span of dtype."""
    types = (input_array(dtype.dtype), input_array(dtype.dtype), output_array(dtype.dtype), input_array(np.int64), *([numba.int64] * 9))
    return ParallelFor(_integer_gemm, f"integer_gemm_{dtype.value}", types)


class CpuMatmulKernels(common.MatmulKernels):
    def supports(self, dtype: DataType) -> bool:
        return dtype in common.MATMUL_TYPES

    def gemm(self, stream, dtype: DataType, plan: common.GemmPlan, alpha, a, b, beta, c) -> None:
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
        if dtype in HALF_TYPES:
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


    def integer_gemm(self, stream, dtype: DataType, plan: common.GemmPlan, alpha, a, b, beta, c) -> None:
        layout = common.integer_layout(plan)
        packed = np.array(layout.dims + layout.a_strides + layout.b_strides, np.int64)
        rows = plan.batch_count * plan.m
        args = (a, b, c, packed, plan.m, plan.n, plan.k, layout.a_row, layout.a_col, layout.b_row, layout.b_col, np.int64(alpha), np.int64(beta))
        integer_gemm_kernel(dtype).run(args, rows, rows * plan.n * max(plan.k, 1))

    def all_kernels(self):
        return (integer_gemm_kernel(dtype) for dtype in common.INTEGER_MATMUL_TYPES)


common.register(DeviceType.kCPU, CpuMatmulKernels())
