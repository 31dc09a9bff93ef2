"""Matmul, BatchMatmul and BroadcastMatmul on every device: New's resolution, Launch's checks, the
one GEMM plan all three reduce to, and what a device supplies (a BLAS call, not a kernel of ep's).

The three primitives differ only in how the caller describes the batch: none (Matmul), batch_size
consecutive matrices (BatchMatmul) or broadcast batch dims (BroadcastMatmul). Each becomes a
GemmPlan: the batch dims left after NumPy's broadcasting is simplified (dims of one dropped,
neighbours merged where each operand is broadcast in both or in neither), the element stride of
each operand along them (0 where it is broadcast), and m, n, k. A batch that only a reads (b the
same matrix for all) is folded into m, as OneFlow's BroadcastMatmul does, so it is one GEMM.

Floats run on the BLAS; integers (as NumPy and PyTorch multiply them: exactly, wrapping) on a
kernel of ep's per device, one product per element of c summed in int64 (int_dot, written once).
"""
from __future__ import annotations

import abc
import math
from typing import Iterator, NamedTuple

import numpy as np

from ep.common.jit import scalar_function
from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.launch import Attr, Count, Declared, In, Out, Scalar, declare
from ep.common.primitive.sample import Sample, float_rtol, values, zeros
from ep.common.runtime import validate
from ep.common.runtime.data_type import FLOATING_TYPES, INTEGER_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.include.primitive.batch_matmul import BatchMatmul, BatchMatmulFactory
from ep.include.primitive.blas import BlasTransposeType, as_transpose
from ep.include.primitive.broadcast_matmul import BroadcastMatmul, BroadcastMatmulFactory
from ep.include.primitive.matmul import Matmul, MatmulFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

#: The dtypes every device's BLAS path takes (float16 and bfloat16 are computed in float32).
MATMUL_TYPES = FLOATING_TYPES
#: The dtypes ep's integer GEMM kernels take: products summed in int64, stored wrapping.
INTEGER_MATMUL_TYPES = INTEGER_TYPES
#: Batch dims an integer GEMM kernel takes (a plan's, padded with ones): BroadcastMatmul's at most.
BATCH_DIMS = validate.MAX_NUM_DIMS
_T = BlasTransposeType.T


class GemmPlan(NamedTuple):
    """One launch's GEMMs: for every index of batch, c's matrix (m, n) = alpha * op(a's) @ op(b's)
    + beta * c's. a's matrix at a batch index starts at the dot product of the index and
    a_strides (elements; 0 along a dim a is broadcast in), b's likewise, c's matrices are
    consecutive. A matrix is stored row-major: a's (m, k), or (k, m) when trans_a."""

    trans_a: bool
    trans_b: bool
    m: int
    n: int
    k: int
    batch: tuple[int, ...]
    a_strides: tuple[int, ...]
    b_strides: tuple[int, ...]
    counts: tuple[int, int, int]
    """The elements a, b and c must hold."""

    @property
    def batch_count(self) -> int:
        return math.prod(self.batch)


@scalar_function
def batch_offsets(index, dims, a_strides, b_strides):
    """The element offsets of a's and b's matrices at flat batch index (dims and strides padded to
    BATCH_DIMS, the last dim fastest)."""
    a_offset = np.int64(0)
    b_offset = np.int64(0)
    for d in range(len(dims) - 1, -1, -1):
        quotient = index // dims[d]
        position = index - quotient * dims[d]
        index = quotient
        a_offset += position * a_strides[d]
        b_offset += position * b_strides[d]
    return a_offset, b_offset


@scalar_function
def int_dot(a, a_start, a_step, b, b_start, b_step, k):
    """The sum over kk < k of a[a_start + kk * a_step] * b[b_start + kk * b_step], in int64 (a
    wrapping sum: its low bits are those of the exact one, as a narrower result keeps them)."""
    total = np.int64(0)
    for kk in range(k):
        total += np.int64(a[a_start + kk * a_step]) * np.int64(b[b_start + kk * b_step])
    return total


class IntegerLayout(NamedTuple):
    """An integer GEMM's strides: op(a)[i, kk] is a[offset + i * a_row + kk * a_col], op(b)[kk, j]
    b[offset + kk * b_row + j * b_col]; the batch dims and strides padded to BATCH_DIMS."""

    a_row: int
    a_col: int
    b_row: int
    b_col: int
    dims: tuple[int, ...]
    a_strides: tuple[int, ...]
    b_strides: tuple[int, ...]


def integer_layout(plan: GemmPlan) -> IntegerLayout:
    """plan's strides as an integer GEMM kernel reads them."""
    m, n, k = plan.m, plan.n, plan.k
    a_row, a_col = (1, m) if plan.trans_a else (k, 1)
    b_row, b_col = (1, k) if plan.trans_b else (n, 1)
    pad = BATCH_DIMS - len(plan.batch)
    return IntegerLayout(
        a_row, a_col, b_row, b_col, (1,) * pad + plan.batch, (0,) * pad + plan.a_strides, (0,) * pad + plan.b_strides
    )


def matrix_dims(rows_cols: tuple[int, int], transposed: bool) -> tuple[int, int]:
    """A stored matrix's dims for op's rows and cols: (rows, cols), or (cols, rows) transposed."""
    return rows_cols[::-1] if transposed else rows_cols


def plan_gemm(a_dims: tuple[int, ...], b_dims: tuple[int, ...], c_dims: tuple[int, ...], trans_a: bool, trans_b: bool) -> GemmPlan:
    """The GemmPlan of stored shapes a_dims, b_dims and c_dims (each at least 2 dims, the last two
    a matrix; batch dims broadcast from the right, c's their broadcast); ValueError naming the
    dims that disagree."""
    for name, dims in (("a_dims", a_dims), ("b_dims", b_dims), ("c_dims", c_dims)):
        if len(dims) < 2:
            raise ValueError(f"{name}: {dims} has {len(dims)} dims; expected at least 2 (a matrix)")
    m, k = matrix_dims(a_dims[-2:], trans_a)
    kb, n = matrix_dims(b_dims[-2:], trans_b)
    if kb != k:
        ops = f"op(a) is ({m}, {k}) and op(b) is ({kb}, {n})"
        raise ValueError(f"a_dims, b_dims: {a_dims} and {b_dims} do not multiply: {ops}; expected op(b) to have {k} rows")
    batch = broadcast_shape(a_dims[:-2], b_dims[:-2], ("a_dims", "b_dims"))
    if c_dims != batch + (m, n):
        raise ValueError(f"c_dims: {c_dims}; expected {batch + (m, n)}, the broadcast batch dims and (m, n)")
    counts = tuple(_count(dims, name) for name, dims in (("a_dims", a_dims), ("b_dims", b_dims), ("c_dims", c_dims)))
    a_batch, b_batch = simplify_broadcast_dims(a_dims[:-2], b_dims[:-2]) if batch else ((), ())
    batch = tuple(max(x, y) for x, y in zip(a_batch, b_batch))
    a_strides, b_strides = _strides(a_batch, m * k), _strides(b_batch, k * n)
    if batch and not any(b_strides) and all(a_strides) and not trans_a:
        # b is one matrix for the whole batch and a's matrices are consecutive rows: one GEMM.
        m, batch, a_strides, b_strides = m * math.prod(batch), (), (), ()
    if 0 in batch:
        batch, a_strides, b_strides = (0,), (0,), (0,)
    return GemmPlan(trans_a, trans_b, m, n, k, batch, a_strides, b_strides, counts)


def _strides(dims: tuple[int, ...], matrix: int) -> tuple[int, ...]:
    """Element strides of batch dims of a C-contiguous operand, 0 where it has size 1 (broadcast)."""
    strides, step = [], matrix
    for d in reversed(dims):
        strides.append(step if d != 1 else 0)
        step *= d
    return tuple(reversed(strides))


def _count(dims: tuple[int, ...], name: str) -> int:
    count = math.prod(dims)
    if count > validate.INT64_MAX:
        raise ValueError(f"{name}: {dims} holds {count} elements, which does not fit in int64")
    return count


class MatmulKernels(abc.ABC):
    """What a device supplies: its BLAS, for the float dtypes it takes, and its integer GEMM."""

    @abc.abstractmethod
    def supports(self, dtype: DataType) -> bool:
        """Whether this device can run GEMMs of dtype now (CUDA: cuBLAS is installed and a GPU,
        not the simulator, runs them)."""

    @abc.abstractmethod
    def gemm(self, stream, dtype: DataType, plan: GemmPlan, alpha: np.floating, a, b, beta: np.floating, c) -> None:
        """Run plan on stream: a, b, c flat storage holding plan.counts elements (float16 as its
        16-bit patterns), alpha and beta in the compute dtype; c is not read when beta == 0, and
        neither are a and b when alpha == 0 (BLAS's rule: their NaNs do not reach c)."""

    @abc.abstractmethod
    def integer_gemm(self, stream, dtype: DataType, plan: GemmPlan, alpha: np.int64, a, b, beta: np.int64, c) -> None:
        """Run plan for an integer dtype: c = alpha * op(a) @ op(b) + beta * c, summed in int64 and
        stored wrapping; c is not read when beta == 0."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """The integer GEMM kernels (the float GEMMs are the BLAS's, nothing for the PTX check)."""


# a, b and c by the plan's counts; c is read (beta * c) and written, so it shares memory with
# neither a nor b (a BLAS reads them while it writes c).
_BUFFERS = (
    In("a", size="plan.counts[0]"), In("b", size="plan.counts[1]"), Scalar("beta", "self.scalar_type"),
    Out("c", size="plan.counts[2]"),
)


class _GemmPrimitive(Declared):
    """What the three primitives share: New's key, and the run of a checked GemmPlan."""

    def __init__(self, device_type: DeviceType, kernels: MatmulKernels, dtype: DataType, trans_a: bool, trans_b: bool, *rest) -> None:
        self.device_type, self.dtype, self.trans_a, self.trans_b = device_type, dtype, trans_a, trans_b
        self._kernels = kernels
        # alpha and beta in the compute dtype: float16's is float32, an integer's int64.
        integer = dtype in INTEGER_MATMUL_TYPES
        self.scalar_type = DataType.kInt64 if integer else DataType.kDouble if dtype is DataType.kDouble else DataType.kFloat
        self._gemm = kernels.integer_gemm if integer else kernels.gemm

    def _run(self, stream, plan: GemmPlan, alpha, a, b, beta, c) -> None:
        if plan.counts[2]:
            self._gemm(stream, self.dtype, plan, alpha, a, b, beta, c)


class MatmulImpl(_GemmPrimitive, Matmul):
    launch = declare(Count("m"), Count("n"), Count("k"), Scalar("alpha", "self.scalar_type"), *_BUFFERS, plan=("m", "n", "k"))

    def plan(self, m: int, n: int, k: int) -> GemmPlan:
        a_dims, b_dims = matrix_dims((m, k), self.trans_a), matrix_dims((k, n), self.trans_b)
        return plan_gemm(a_dims, b_dims, (m, n), self.trans_a, self.trans_b)

    def run(self, stream, plan: GemmPlan, alpha, a, b, beta, c) -> None:
        self._run(stream, plan, alpha, a, b, beta, c)


class BatchMatmulImpl(_GemmPrimitive, BatchMatmul):
    launch = declare(
        Count("batch_size"), Count("m"), Count("n"), Count("k"), Scalar("alpha", "self.scalar_type"), *_BUFFERS,
        plan=("batch_size", "m", "n", "k"),
    )

    def plan(self, batch_size: int, m: int, n: int, k: int) -> GemmPlan:
        a_dims = (batch_size, *matrix_dims((m, k), self.trans_a))
        b_dims = (batch_size, *matrix_dims((k, n), self.trans_b))
        return plan_gemm(a_dims, b_dims, (batch_size, m, n), self.trans_a, self.trans_b)

    def run(self, stream, plan: GemmPlan, alpha, a, b, beta, c) -> None:
        self._run(stream, plan, alpha, a, b, beta, c)


class BroadcastMatmulImpl(_GemmPrimitive, BroadcastMatmul):
    launch = declare(
        Scalar("alpha", "self.scalar_type"), Attr("num_a_dims"), Attr("a_dims"), In("a", size="plan.counts[0]"),
        Attr("num_b_dims"), Attr("b_dims"), In("b", size="plan.counts[1]"), Scalar("beta", "self.scalar_type"),
        Attr("num_c_dims"), Attr("c_dims"), Out("c", size="plan.counts[2]"),
        plan=("num_a_dims", "a_dims", "num_b_dims", "b_dims", "num_c_dims", "c_dims"),
    )

    def __init__(self, device_type: DeviceType, kernels: MatmulKernels, dtype: DataType, trans_a: bool, trans_b: bool, max_num_dims: int) -> None:
        super().__init__(device_type, kernels, dtype, trans_a, trans_b)
        self.max_num_dims = max_num_dims

    def plan(self, num_a_dims, a_dims, num_b_dims, b_dims, num_c_dims, c_dims) -> GemmPlan:
        shapes = [
            validate.counted_dims(name, num, dims, self.max_num_dims)
            for name, num, dims in (("a", num_a_dims, a_dims), ("b", num_b_dims, b_dims), ("c", num_c_dims, c_dims))
        ]
        return plan_gemm(*shapes, self.trans_a, self.trans_b)

    def run(self, stream, plan: GemmPlan, alpha, a, b, beta, c) -> None:
        self._run(stream, plan, alpha, a, b, beta, c)


class _GemmFactory(GenericFactory):
    """New's resolution shared by the three factories: a supported dtype and two transposes."""

    def _key(self, dtype, trans_a, trans_b) -> tuple | None:
        dtype = as_data_type(dtype, "dtype")
        trans = as_transpose(trans_a, "trans_a") is _T, as_transpose(trans_b, "trans_b") is _T
        return (dtype, *trans) if dtype in INTEGER_MATMUL_TYPES or self.kernels.supports(dtype) else None

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        for dtype in MATMUL_TYPES + INTEGER_MATMUL_TYPES:
            if dtype in INTEGER_MATMUL_TYPES or self.kernels.supports(dtype):
                yield None, (dtype,)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        """A 2 x 2 product (the BLAS's for floats, ep's kernel for integers) of each transpose pair."""
        (dtype,) = dtypes
        a, b = values(4, dtype, (2, 2)), values(4, dtype, (2, 2))[::-1].copy()
        for trans in (False, True):
            product = (a.T if trans else a).astype(np.float64) @ (b.T if trans else b).astype(np.float64)
            args = {"alpha": 1, "a": a, "b": b, "beta": 0, "c": zeros(4, dtype)}
            if self.primitive_type is MatmulImpl:
                args = {"m": 2, "n": 2, "k": 2, **args}
            elif self.primitive_type is BatchMatmulImpl:
                args = {"batch_size": 1, "m": 2, "n": 2, "k": 2, **args}
            else:
                args = {
                    "alpha": 1, "num_a_dims": 2, "a_dims": (2, 2), "a": a, "num_b_dims": 2, "b_dims": (2, 2), "b": b, "beta": 0,
                    "num_c_dims": 2, "c_dims": (2, 2), "c": args["c"],
                }
            extra = (3,) if self.primitive_type is BroadcastMatmulImpl else ()
            rtol = float_rtol(dtype) if dtype in MATMUL_TYPES else 0.0
            yield Sample((dtype, trans, trans, *extra), args, {"c": product.astype(dtype.dtype).ravel()}, rtol=rtol)


class MatmulFactoryImpl(_GemmFactory, MatmulFactory):
    primitive_type = MatmulImpl

    def New(self, dtype, trans_a, trans_b) -> Matmul | None:
        return self._new(self._key(dtype, trans_a, trans_b))


class BatchMatmulFactoryImpl(_GemmFactory, BatchMatmulFactory):
    primitive_type = BatchMatmulImpl

    def New(self, dtype, trans_a, trans_b) -> BatchMatmul | None:
        return self._new(self._key(dtype, trans_a, trans_b))


class BroadcastMatmulFactoryImpl(_GemmFactory, BroadcastMatmulFactory):
    primitive_type = BroadcastMatmulImpl

    def New(self, dtype, trans_a, trans_b, max_num_dims: int = validate.MAX_NUM_DIMS) -> BroadcastMatmul | None:
        key = self._key(dtype, trans_a, trans_b)
        max_num_dims = validate.count(max_num_dims, "max_num_dims")
        if key is None or max_num_dims > validate.MAX_NUM_DIMS:
            return None
        return self._new((*key, max_num_dims))


def register(device_type: DeviceType, kernels: MatmulKernels) -> None:
    """Register device_type's Matmul, BatchMatmul and BroadcastMatmul factories, all over kernels."""
    for factory, impl in ((MatmulFactory, MatmulFactoryImpl), (BatchMatmulFactory, BatchMatmulFactoryImpl), (BroadcastMatmulFactory, BroadcastMatmulFactoryImpl)):
        REGISTER_PRIMITIVE_FACTORY(device_type, factory, impl(device_type, kernels))
