"""Matmul, BatchMatmul and BroadcastMatmul on CUDA: cuBLAS (GemmEx, GemmStridedBatchedEx; the
64-bit-size API) through NVIDIA's nvmath-python, on the primitive's stream, with no host sync.

cuBLAS is column-major: the row-major c (m, n) = op(a) @ op(b) is the column-major c^T (n, m) =
op(b)^T @ op(a)^T, so b is cuBLAS's first operand and a its second, each read in place with its
own transpose flag (cublas_calls). A batch is one strided-batched call along the plan's last
batch dim (stride 0 where an operand is broadcast) per index of the dims before it.

Floats are unsupported (New returns None, Combinations lists none) where cuBLAS cannot run:
without nvmath-python (the cuda extra brings it) and on Numba's CUDA simulator, which runs kernels
as Python threads and has no GPU for cuBLAS. Integers run on ep's grid-stride kernel, a thread per
element of c, its int64 sum int_dot.
"""
from __future__ import annotations

import itertools
import threading
from typing import Iterator, NamedTuple

import numba
import numpy as np
from numba import config, cuda

from ep.common.jit import bound, template
from ep.common.primitive import matmul as common
from ep.common.runtime.caches import function_cache
from ep.common.runtime.cublas import cublas_bindings
from ep.common.runtime.buffer import address
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType, current_device_index
from ep.cuda.kernel import CudaKernel


@template("dot", "wrap")
def _integer_gemm(a, b, c, count, dims, a_strides, b_strides, m, n, k, a_row, a_col, b_row, b_col, alpha, beta):
    # Element e of c: column e % n of row e // n over the batch, row i of the batch's matrix.
    e = np.int64(cuda.grid(1))
    step = np.int64(cuda.gridsize(1))
    while e < count:
        r = e // n
        j = e - r * n
        a_offset, b_offset = common.batch_offsets(r // m, dims, a_strides, b_strides)
        value = alpha * bound.dot(a, a_offset + (r % m) * a_row, a_col, b, b_offset + j * b_col, b_row, k)
        if beta != 0:
            value += beta * np.int64(c[e])
        c[e] = bound.wrap(value)
        e += step


@function_cache("kernels")
def integer_gemm_kernel(dtype: DataType) -> CudaKernel:
    """The integer GEMM kernel of dtype (its sums are loops of k steps: not memory bound)."""
    array = numba.from_dtype(dtype.dtype)[::1]
    layout = numba.types.UniTuple(numba.int64, common.BATCH_DIMS)
    argtypes = (array, array, array, numba.int64, layout, layout, layout, *([numba.int64] * 9))
    # The simulator runs the kernel as Python, where int_dot's compiled form takes no device array
    # and NumPy refuses to store an int64 beyond the dtype (a compiled store wraps).
    if config.ENABLE_CUDASIM:
        dot, wrap = common.int_dot.py_func, lambda value: np.int64(value).astype(dtype.dtype)
    else:
        dot, wrap = common.int_dot, numba.from_dtype(dtype.dtype)
    return CudaKernel(_integer_gemm, f"integer_gemm_{dtype.value}", argtypes, full_occupancy=False, dot=dot, wrap=wrap)


class CublasCall(NamedTuple):
    """One cuBLAS GEMM in its column-major terms (A = ep's b, B = ep's a): element offsets of the
    first matrices, element strides between a batch's matrices, and batch_count (1: one GemmEx)."""

    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int
    a_offset: int
    lda: int
    stride_a: int
    b_offset: int
    ldb: int
    stride_b: int
    c_offset: int
    ldc: int
    stride_c: int
    batch_count: int


def cublas_calls(plan: common.GemmPlan) -> Iterator[CublasCall]:
    """The cuBLAS calls that run plan: one per index of its batch dims but the last."""
    m, n, k = plan.m, plan.n, plan.k
    # ep's b stored (k, n) is column-major (n, k), leading dim n, read as is; stored (n, k)
    # (trans_b) it is column-major (k, n), leading dim k, read transposed. a likewise.
    ldb = max(1, k if plan.trans_b else n)
    lda = max(1, m if plan.trans_a else k)
    ldc = max(1, n)
    if not plan.batch:
        yield CublasCall(plan.trans_b, plan.trans_a, n, m, k, 0, ldb, 0, 0, lda, 0, 0, ldc, 0, 1)
        return
    outer = plan.batch[:-1]
    inner = plan.batch[-1]
    c_step = m * n
    for index in itertools.product(*(range(d) for d in outer)):
        a_offset = sum(i * s for i, s in zip(index, plan.a_strides))
        b_offset = sum(i * s for i, s in zip(index, plan.b_strides))
        c_offset = 0
        for i, d in zip(index, plan.batch[1:]):
            c_offset = (c_offset + i) * d
        yield CublasCall(
            plan.trans_b, plan.trans_a, n, m, k,
            b_offset, ldb, plan.b_strides[-1],
            a_offset, lda, plan.a_strides[-1],
            c_offset * c_step, ldc, c_step, inner,
        )


class _Handles(threading.local):
    """A cuBLAS handle per thread and device: a handle's stream setting is not safe across threads.
    They live as long as the process (cuBLAS frees them at exit)."""

    def __init__(self) -> None:
        self.by_device: dict[int, int] = {}


class CudaMatmulKernels(common.MatmulKernels):
    def __init__(self) -> None:
        self._handles = _Handles()

    def supports(self, dtype: DataType) -> bool:
        return dtype in common.MATMUL_TYPES and cublas_bindings() is not None

    def _handle(self, cublas, index: int) -> int:
        handle = self._handles.by_device.get(index)
        if handle is None:
            from numba import cuda

            with cuda.gpus[index]:
                handle = self._handles.by_device[index] = cublas.create()
        return handle

    def gemm(self, stream, dtype: DataType, plan: common.GemmPlan, alpha, a, b, beta, c) -> None:
        cublas = cublas_bindings()
        index = stream.device.index
        if index != current_device_index():
            from numba import cuda

            with cuda.gpus[index]:
                self._run(cublas, stream, dtype, plan, alpha, a, b, beta, c)
        else:
            self._run(cublas, stream, dtype, plan, alpha, a, b, beta, c)

    def _run(self, cublas, stream, dtype: DataType, plan: common.GemmPlan, alpha, a, b, beta, c) -> None:
        import nvmath

        handle = self._handle(cublas, stream.device.index)
        cublas.set_stream(handle, stream.handle)
        data = {DataType.kFloat16: nvmath.CudaDataType.CUDA_R_16F, DataType.kBFloat16: nvmath.CudaDataType.CUDA_R_16BF,
                DataType.kFloat: nvmath.CudaDataType.CUDA_R_32F, DataType.kDouble: nvmath.CudaDataType.CUDA_R_64F}[dtype]
        compute = cublas.ComputeType.COMPUTE_64F if dtype is DataType.kDouble else cublas.ComputeType.COMPUTE_32F
        # alpha and beta in host memory (cuBLAS's default pointer mode): read before each call returns.
        scalars = np.array([alpha, beta], np.float64 if dtype is DataType.kDouble else np.float32)
        p_alpha, p_beta = scalars.ctypes.data, scalars.ctypes.data + scalars.itemsize
        size = dtype.itemsize
        # cuBLAS's A is ep's b and its B ep's a (cublas_calls).
        base_a, base_b, base_c = address(b), address(a), address(c)
        op = {False: cublas.Operation.N, True: cublas.Operation.T}
        algo = cublas.GemmAlgo.DEFAULT
        for call in cublas_calls(plan):
            pa, pb, pc = base_a + call.a_offset * size, base_b + call.b_offset * size, base_c + call.c_offset * size
            if call.batch_count == 1:
                cublas.gemm_ex_64(
                    handle, op[call.trans_a], op[call.trans_b], call.m, call.n, call.k, p_alpha,
                    pa, data, call.lda, pb, data, call.ldb, p_beta, pc, data, call.ldc, compute, algo,
                )
            else:
                cublas.gemm_strided_batched_ex_64(
                    handle, op[call.trans_a], op[call.trans_b], call.m, call.n, call.k, p_alpha,
                    pa, data, call.lda, call.stride_a, pb, data, call.ldb, call.stride_b, p_beta,
                    pc, data, call.ldc, call.stride_c, call.batch_count, compute, algo,
                )


    def integer_gemm(self, stream, dtype: DataType, plan: common.GemmPlan, alpha, a, b, beta, c) -> None:
        layout = common.integer_layout(plan)
        count = plan.counts[2]
        integer_gemm_kernel(dtype).launch(
            stream, count, a, b, c, count, layout.dims, layout.a_strides, layout.b_strides, plan.m, plan.n, plan.k,
            layout.a_row, layout.a_col, layout.b_row, layout.b_col, np.int64(alpha), np.int64(beta),
        )

    def all_kernels(self):
        return (integer_gemm_kernel(dtype) for dtype in common.INTEGER_MATMUL_TYPES)


common.register(DeviceType.kCUDA, CudaMatmulKernels())
