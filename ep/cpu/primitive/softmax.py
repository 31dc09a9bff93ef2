"""The softmax family's CPU kernels: rows in parallel on ParallelFor, spans per op and dtype.

A row takes two passes over memory. The first goes through it in blocks small enough to stay in L1
(BLOCK elements): a block's max, then its sum of terms against the running max, the running sum
rescaled whenever the max grows (Milakov and Gimelshein's online normalizer); the second writes the
output. A softmax row within one block (float32 or float64) keeps exp(x - max) in its output and
scales it there instead, so exp runs once per element. Such rows have a span of their own, which
inlines one exp where the span over rows of any length inlines four: a first launch compiles only
the span it runs (Numba's inlining is most of a span's compile time). Sums and maxima are
reassociable (ep.common.math.softmax.add, maximum), so every loop vectorizes, fast_math's exp
included.
"""
from __future__ import annotations

from typing import Iterator

import numba
import numpy as np

from ep.common.jit import bound, scalar_function, specialize, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.softmax import SOFTMAX, SOFTMAX_OPS, SoftmaxOp, add, formulas, maximum
from ep.common.primitive.softmax import FACTORIES, SoftmaxKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import FLOATING_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Elements of a row per block of the first pass: 32 KiB of float32, read twice from L1 (48 KiB on
# current x86 cores), so that rows of up to 8192 float32 keep their terms (_one_block_rows).
BLOCK = 8192


@template("load", "term", "finish", "COMPUTE")
def _kept_terms_row(row_a, row_dst, cols):
    # Softmax of a row in one block, dst in the compute dtype: the terms exp(x - max) are kept in
    # dst and scaled there, so exp runs once per element (as PyTorch's does). Out may be x: each
    # element is read before its write.
    mx = bound.COMPUTE(-np.inf)
    for j in range(cols):
        mx = maximum(mx, bound.load(row_a[j]))
    s = bound.COMPUTE(0)
    for j in range(cols):
        e = bound.term(bound.load(row_a[j]), bound.load(row_a[j]), mx)
        row_dst[j] = e
        s = add(s, e)
    p, q = bound.finish(mx, s)
    for j in range(cols):
        row_dst[j] = row_dst[j] * q


@template("kept_terms_row")
def _one_block_rows(start, stop, args):
    # Rows [start, stop) of softmax, each within one block, dst in the compute dtype.
    a, b, dst, cols = args
    for r in range(start, stop):
        first = r * cols
        bound.kept_terms_row(a[first : first + cols], dst[first : first + cols], cols)


@template("load", "store", "term", "finish", "output", "rescale", "FORWARD", "COMPUTE", "KEEPS_TERMS", "kept_terms_row")
def _rows(start, stop, args):
    # Rows [start, stop), of any length. Forward, a and b are the same buffer (x), and b's loads
    # fold away.
    a, b, dst, cols = args
    zero = bound.COMPUTE(0)
    for r in range(start, stop):
        first = r * cols
        row_a = a[first : first + cols]
        row_b = b[first : first + cols]
        row_dst = dst[first : first + cols]
        mx = bound.COMPUTE(-np.inf)
        if bound.KEEPS_TERMS and cols <= BLOCK:
            # Not reached from launch(), which runs _one_block_rows for such rows: kept so that this
            # span serves every row, and because LLVM allocated the long rows' loops worse without
            # it (8x32768 float32 8% slower, measured).
            bound.kept_terms_row(row_a, row_dst, cols)
            continue
        s = zero
        for b0 in range(0, cols, BLOCK):
            n = BLOCK if BLOCK < cols - b0 else cols - b0
            block_a = row_a[b0 : b0 + n]
            block_b = row_b[b0 : b0 + n]
            if bound.FORWARD:
                block_max = bound.COMPUTE(-np.inf)
                for j in range(n):
                    block_max = maximum(block_max, bound.load(block_a[j]))
                if block_max > mx:
                    s = bound.rescale(s, mx, block_max)
                    mx = block_max
            t = zero
            for j in range(n):
                t = add(t, bound.term(bound.load(block_a[j]), bound.load(block_b[j]), mx))
            s += t
        p, q = bound.finish(mx, s)
        for j in range(cols):
            row_dst[j] = bound.store(bound.output(bound.load(row_a[j]), bound.load(row_b[j]), p, q))


class CpuSoftmaxKernels(SoftmaxKernels):
    def __init__(self, op: SoftmaxOp) -> None:
        super().__init__(op)
        # Its dtypes whose rows of one block keep their terms in dst (softmax, storage computed in).
        self._keeps_terms = frozenset(d for d in FLOATING_TYPES if op is SOFTMAX and d.storage_dtype == d.compute_dtype)

    @function_cache("kernels")
    def kernel(self, dtype: DataType, one_block: bool = False) -> ParallelFor:
        """The op's span over rows of dtype: rows of any length, or (one_block, for dtypes that keep
        their terms) rows of at most BLOCK elements. Each is compiled on its own, so that a first
        launch compiles only the one it runs."""
        compute = dtype.compute_dtype
        storage = dtype.storage_dtype
        formula = formulas(self.op, compute)
        load = load_fn(dtype, DeviceType.kCPU)
        compute_type = numba.from_dtype(compute)
        kept_terms_row = scalar_function(
            specialize(
                _kept_terms_row,
                f"{self.op.name}_row_{dtype.value}",
                load=load,
                term=formula.term,
                finish=formula.finish,
                COMPUTE=compute_type,
            )
        )
        arg_types = (input_array(storage), input_array(storage), output_array(storage), numba.int64)
        if one_block:
            name = f"{self.op.name}_one_block_{dtype.value}"
            return ParallelFor(_one_block_rows, name, arg_types, kept_terms_row=kept_terms_row)
        bindings = dict(
            load=load,
            store=store_fn(dtype, DeviceType.kCPU),
            FORWARD=self.op.forward,
            COMPUTE=compute_type,
            KEEPS_TERMS=dtype in self._keeps_terms,
            kept_terms_row=kept_terms_row,
            **vars(formula),
        )
        return ParallelFor(_rows, f"{self.op.name}_{dtype.value}", arg_types, **bindings)

    def launch(self, stream, dtype: DataType, rows: int, cols: int, a, b, dst) -> None:
        self.kernel(dtype, cols <= BLOCK and dtype in self._keeps_terms).run((a, b, dst, cols), rows, rows * cols)

    def all_kernels(self) -> Iterator[object]:
        for dtype in FLOATING_TYPES:
            yield self.kernel(dtype, False)
            if dtype in self._keeps_terms:
                yield self.kernel(dtype, True)


def _register(op: SoftmaxOp) -> None:
    interface, implementation = FACTORIES[op]
    REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, interface, implementation(DeviceType.kCPU, CpuSoftmaxKernels(op)))


for _op in SOFTMAX_OPS:
    _register(_op)
