"""The softmax family's formulas, written once for both devices' kernels.

Every kernel of the four primitives (Softmax, LogSoftmax and their backward) runs one scheme over a
row of two inputs a and b (x and x forward; y and dy backward):

    m = max over the row of a                  (forward only: the row max subtracted, so exp never overflows)
    s = sum over the row of term(a, b, m)      (exp(x - m) forward; y * dy or dy backward)
    p, q = finish(m, s)                        (once per row)
    out = output(a, b, p, q)                   (each element)

so a kernel differs from another only in these formulas (a SoftmaxFormulas) and the dtypes.
float32 (and float16, computed in float32) uses fast_math's vectorizing exp and log, float64 libm's.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math import fast_math, libm
from ep.common.math.intrinsics import add_reassociable, max_number
from ep.common.math.special import as_type, divide


@scalar_function
def add(a, b):
    """a + b, reassociable: a sum of a row in one variable vectorizes (intrinsics.add_reassociable)."""
    return add_reassociable(a, b)


@scalar_function
def maximum(a, b):
    """The larger of a and b, NaN ignored (a row holding NaN gets NaN through its sum)."""
    return max_number(a, b)


@dataclasses.dataclass(frozen=True)
class SoftmaxOp:
    """One of the four primitives: its name, whether it is a backward, whether it is the log variant."""

    name: str
    backward: bool
    log: bool

    @property
    def forward(self) -> bool:
        return not self.backward


SOFTMAX = SoftmaxOp("softmax", backward=False, log=False)
LOG_SOFTMAX = SoftmaxOp("log_softmax", backward=False, log=True)
SOFTMAX_BACKWARD = SoftmaxOp("softmax_backward", backward=True, log=False)
LOG_SOFTMAX_BACKWARD = SoftmaxOp("log_softmax_backward", backward=True, log=True)
SOFTMAX_OPS = (SOFTMAX, LOG_SOFTMAX, SOFTMAX_BACKWARD, LOG_SOFTMAX_BACKWARD)


@dataclasses.dataclass(frozen=True)
class SoftmaxFormulas:
    """An op's scalar functions in one compute dtype (see the module docstring), plus `rescale`:
    a partial sum taken against max `old` made relative to a larger max `new` (s * exp(old - new)),
    with which the CPU merges its blocks of a row into one pass (Milakov and Gimelshein's online
    normalizer)."""

    term: Callable
    finish: Callable
    output: Callable
    rescale: Callable


@functools.cache
def formulas(op: SoftmaxOp, compute_dtype: np.dtype) -> SoftmaxFormulas:
    """op's formulas computing in compute_dtype (float32 or float64)."""
    m = fast_math if np.dtype(compute_dtype) == np.float32 else libm

    @scalar_function
    def rescale(s, old, new):
        return s * m.exp(old - new)

    if op.forward:

        @scalar_function
        def term(a, b, mx):
            return m.exp(a - mx)

        if op.log:

            @scalar_function
            def finish(mx, s):
                return mx, m.log(s)

            # (x - max) - log(sum), not x - (max + log(sum)): beside a large max, log(sum) is lost.
            @scalar_function
            def output(a, b, p, q):
                return (a - p) - q

        else:

            @scalar_function
            def finish(mx, s):
                return mx, divide(as_type(1, s), s)

            @scalar_function
            def output(a, b, p, q):
                return m.exp(a - p) * q

    elif op.log:
        # dx = dy - exp(y) * sum(dy)

        @scalar_function
        def term(a, b, mx):
            return b

        @scalar_function
        def finish(mx, s):
            return s, s

        @scalar_function
        def output(a, b, p, q):
            return b - m.exp(a) * p

    else:
        # dx = y * (dy - sum(y * dy))

        @scalar_function
        def term(a, b, mx):
            return a * b

        @scalar_function
        def finish(mx, s):
            return s, s

        @scalar_function
        def output(a, b, p, q):
            return a * (b - p)

    return SoftmaxFormulas(term, finish, output, rescale)
