"""The reductions' formulas, written once for both devices' kernels.

A reduction's running value is a state of four members (a, b, c, i): three in its accumulate dtype
and an int64. Every kernel runs one scheme, in any order and grouping of the elements:

    s = init()                      the state of no element
    s = step(s, x, r)               element x, at position r of the reduced run
    s = merge(s, t)                 two states of disjoint parts (in either order: deterministic
                                    for argmax's ties and NaNs too, as the smaller index wins)
    value = finish(s, n, correction)    the result of n elements

Sums are compensated (Kahan's step, TwoSum's merge: a - c is the sum), so a float32 sum of any
length is as good as NumPy's pairwise one wherever the kernel splits it. A kernel may step by a
block's plain value where an op has one (block: a vectorized sum of up to a few hundred elements,
as NumPy's pairwise sum adds its blocks of 128 in eight partial sums; a product, an extreme, an
any or all), and float extremes by a quick block first, taken again where its check fails.
Extremes of floats follow IEEE 754's maximum and minimum: NaN wins, and +0.0 is the larger of two
zeros whatever their order. Variance is Welford's (mean a, squared deviations b, count i; Chan's
merge), logsumexp an online (max a, sum of exp(x - a) in b with compensation c). float16
accumulates in float32, float products in float64, integers in int64 (wrapping, as NumPy's).

A scan (a reduction whose every prefix is kept) runs the same scheme, its states merged only in
the order of their elements: scan_formulas.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math import fast_math, libm
from ep.common.math.intrinsics import add_reassociable, max_quick, maximum, min_quick, minimum, mul_reassociable
from ep.common.math.special import as_type, divide

# The ops by ReduceOp's values (ep.include.primitive.reduce), which this layer does not import.
LOGICAL_OPS = ("any", "all")
_INT64_MIN, _INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def accumulate_dtype(op: str, compute_dtype: np.dtype) -> np.dtype:
    """The dtype the state of op (a ReduceOp's value) holds for elements of compute_dtype (float16
    and bfloat16 are computed in float32; float products in float64; uint64 compares and wraps in
    uint64, the other integers in int64)."""
    if op in LOGICAL_OPS:
        return np.dtype(np.int32)  # 0 or 1; 32 bits, which CUDA's shuffles move
    if op == "prod" and compute_dtype.kind == "f":
        # A float32 product of 700001 factors near 1 erred 1e-5 to 3e-4 of it in float32 (by the
        # order of its roundings; NumPy's 1.5e-5); in float64 it rounds once, in any order.
        return np.dtype(np.float64)
    if compute_dtype.kind == "f" or compute_dtype == np.uint64:
        return compute_dtype
    return np.dtype(np.int64)


@dataclasses.dataclass(frozen=True)
class ReduceFormulas:
    """An op's scalar functions for one accumulate dtype (see the module docstring)."""

    init: Callable
    step: Callable
    merge: Callable
    finish: Callable
    #: block(total, x): x taken into a block's total from identity, in any order (a loop of it is
    #: one LLVM vectorizes, on the CPU); step takes a block's total for its elements. None: an op
    #: whose every element steps (an index, a variance, logsumexp).
    block: Callable | None = None
    identity: object = 0
    #: quick(total, check, x) -> (total, check): a cheaper block (from identity and a check of 0),
    #: its total the block's unless suspect(total, check): then the kernel takes the block again
    #: with block. None: block alone.
    quick: Callable | None = None
    suspect: Callable | None = None
    #: The type of a block's total where it is not the state's (integer extremes: the elements').
    total_type: type | None = None


@scalar_function
def kahan_add(a, c, x):
    """(a, c) with x added: a - c is the sum so far."""
    y = x - c
    t = a + y
    c = (t - a) - y
    if c - c != 0:
        c = as_type(0, c)
    return t, c


@scalar_function
def kahan_merge(a1, c1, a2, c2):
    """(a1 - c1) + (a2 - c2) as (a, c), the rounding of a1 + a2 kept in c (TwoSum)."""
    s = a1 + a2
    bp = s - a1
    err = (a1 - (s - bp)) + (a2 - bp)
    c = (c1 + c2) - err
    if c - c != 0:
        c = as_type(0, c)
    return s, c


def _sum_formulas(acc: type, floating: bool, scale: bool) -> ReduceFormulas:
    """kSum (scale False) or kMean (scale: divided by n)."""

    @scalar_function
    def init():
        return acc(0), acc(0), acc(0), np.int64(0)

    if floating:

        @scalar_function
        def step(s, x, r):
            a, c = kahan_add(s[0], s[1], as_type(x, s[0]))
            return a, c, s[2], s[3]

        @scalar_function
        def merge(s, t):
            a, c = kahan_merge(s[0], s[1], t[0], t[1])
            return a, c, s[2], s[3]

    else:

        @scalar_function
        def step(s, x, r):
            return s[0] + as_type(x, s[0]), s[1], s[2], s[3]

        @scalar_function
        def merge(s, t):
            return s[0] + t[0], s[1], s[2], s[3]

    if scale:

        @scalar_function
        def finish(s, n, correction):
            return divide(s[0] - s[1], as_type(n, s[0]))

    elif floating:

        @scalar_function
        def finish(s, n, correction):
            return s[0] - s[1]

    else:

        @scalar_function
        def finish(s, n, correction):
            return s[0]  # plain sums keep no compensation (a scan's finish runs for every element)

    @scalar_function
    def block(total, x):
        return add_reassociable(total, as_type(x, total))

    return ReduceFormulas(init, step, merge, finish, block=block)


def _prod_formulas(acc: type) -> ReduceFormulas:
    @scalar_function
    def init():
        return acc(1), acc(0), acc(0), np.int64(0)

    @scalar_function
    def step(s, x, r):
        return s[0] * as_type(x, s[0]), s[1], s[2], s[3]

    @scalar_function
    def merge(s, t):
        return s[0] * t[0], s[1], s[2], s[3]

    @scalar_function
    def finish(s, n, correction):
        return s[0]

    @scalar_function
    def block(total, x):
        return mul_reassociable(total, as_type(x, total))

    return ReduceFormulas(init, step, merge, finish, block=block, identity=1)


@scalar_function
def _index_of(s, n, correction):
    # The finish of an index op (argmax, argmin): the state's index.
    return s[3]


@scalar_function
def _value_of(s, n, correction):
    # The finish of an extreme (amax, amin): the state's value.
    return s[0]


def _extreme_formulas(acc: type, floating: bool, largest: bool, index: bool, element: np.dtype) -> ReduceFormulas:
    """kMax, kMin (index False) and kArgMax, kArgMin of elements of dtype element: NaN wins (the
    first one for the index ops), then the extreme (of zeros, +0.0 the larger), then the smaller
    index, so that merges in any order agree."""
    start = (-np.inf if largest else np.inf) if floating else (np.iinfo(acc).min if largest else np.iinfo(acc).max)

    @scalar_function
    def init():
        return acc(start), acc(0), acc(0), np.int64(_INT64_MAX)

    @scalar_function
    def first_wins(a1, i1, a2, i2):
        nan1, nan2 = a1 != a1, a2 != a2
        if nan1 or nan2:
            return nan1 and (not nan2 or i1 <= i2)
        if largest:
            if a1 != a2:
                return a1 > a2
        elif a1 != a2:
            return a1 < a2
        return i1 <= i2

    if floating:

        @scalar_function
        def value_wins(a1, a2):
            if a1 != a1:
                return True
            if a1 == a2:
                return a1 != 0 or (math.copysign(as_type(1, a1), a1) > 0) == largest
            return a1 > a2 if largest else a1 < a2

    else:

        @scalar_function
        def value_wins(a1, a2):
            return a1 >= a2 if largest else a1 <= a2

    finish = _index_of if index else _value_of
    if index:

        @scalar_function
        def merge(s, t):
            return s if first_wins(s[0], s[3], t[0], t[3]) else t

    else:

        @scalar_function
        def merge(s, t):
            # The value alone: which of two equal values wins matters only for zeros' signs.
            return s[0] if value_wins(s[0], t[0]) else t[0], s[1], s[2], s[3]

    @scalar_function
    def step(s, x, r):
        return merge(s, (as_type(x, s[0]), s[1], s[2], r))

    if index:
        return ReduceFormulas(init, step, merge, finish)
    if not floating:

        @scalar_function
        def block(total, x):
            x = as_type(x, total)
            return total if value_wins(total, x) else x

        # Integers' blocks in their own type: a vector holds 8 int64 lanes or 64 int8 ones (an int8
        # max of 1 MiB took 13.2 us in int64, torch's 7.0).
        if element.kind not in "iu":
            return ReduceFormulas(init, step, merge, finish, block=block, identity=start)
        own = np.iinfo(element)
        return ReduceFormulas(init, step, merge, finish, block=block, identity=own.min if largest else own.max, total_type=element.type)
    extreme = max_quick if largest else min_quick

    @scalar_function
    def quick(total, check, x):
        # check sums x * 0, NaN where an element is NaN or infinite: with a zero total (its sign),
        # what the quick extreme may get wrong.
        x = as_type(x, total)
        return extreme(total, x), add_reassociable(check, x * as_type(0, x))

    @scalar_function
    def suspect(total, check):
        return check != 0 or total == 0

    block = maximum if largest else minimum
    return ReduceFormulas(init, step, merge, finish, block=block, identity=start, quick=quick, suspect=suspect)


def _logical_formulas(acc: type, every: bool) -> ReduceFormulas:
    """kAny (every False) and kAll: states of 0 or 1, an element counting as x != 0."""
    one, zero = acc(1), acc(0)

    @scalar_function
    def init():
        return (one if every else zero), zero, zero, np.int64(0)

    @scalar_function
    def step(s, x, r):
        hit = one if x != 0 else zero
        return as_type(s[0] & hit if every else s[0] | hit, s[0]), s[1], s[2], s[3]

    @scalar_function
    def merge(s, t):
        return as_type(s[0] & t[0] if every else s[0] | t[0], s[0]), s[1], s[2], s[3]

    @scalar_function
    def finish(s, n, correction):
        return s[0] != 0

    @scalar_function
    def block(total, x):
        hit = one if x != 0 else zero
        return total & hit if every else total | hit

    return ReduceFormulas(init, step, merge, finish, block=block, identity=1 if every else 0)


def _logsumexp_formulas(acc: type) -> ReduceFormulas:
    """(max a, sum of exp(x - a) as b - c): the sum rescaled whenever the max grows."""
    m = fast_math if acc is np.float32 else libm

    @scalar_function
    def init():
        return acc(-np.inf), acc(0), acc(0), np.int64(0)

    @scalar_function
    def merge(s, t):
        a1, b1, c1, a2, b2, c2 = s[0], s[1], s[2], t[0], t[1], t[2]
        # Equal maxima (infinities included) add as they are: exp(inf - inf) would be NaN.
        if a2 > a1:
            f = m.exp(a1 - a2)
            a1, b1, c1 = a2, b1 * f, c1 * f
        elif a1 > a2:
            f = m.exp(a2 - a1)
            b2, c2 = b2 * f, c2 * f
        b, c = kahan_merge(b1, c1, b2, c2)
        return a1, b, c, s[3]

    @scalar_function
    def step(s, x, r):
        x = as_type(x, s[0])
        a, b, c = s[0], s[1], s[2]
        if x > a:
            f = m.exp(a - x)
            a, b, c = x, b * f, c * f
            term = acc(1)
        elif x == a:
            term = acc(1)
        else:
            term = m.exp(x - a)  # NaN for a NaN x: the sum, and so the result, becomes NaN
        b, c = kahan_add(b, c, term)
        return a, b, c, s[3]

    @scalar_function
    def finish(s, n, correction):
        return s[0] + m.log(s[1] - s[2])

    return ReduceFormulas(init, step, merge, finish)


def _variance_formulas(acc: type, root: bool) -> ReduceFormulas:
    """Welford's (mean a, sum of squared deviations b, count i), Chan's merge; kStd's square root."""

    @scalar_function
    def init():
        return acc(0), acc(0), acc(0), np.int64(0)

    @scalar_function
    def step(s, x, r):
        x = as_type(x, s[0])
        n = s[3] + 1
        d = x - s[0]
        mean = s[0] + divide(d, as_type(n, x))
        return mean, s[1] + d * (x - mean), s[2], n

    @scalar_function
    def merge(s, t):
        n = s[3] + t[3]
        if t[3] == 0:
            return s
        if s[3] == 0:
            return t
        total, right = as_type(n, s[0]), as_type(t[3], s[0])
        d = t[0] - s[0]
        mean = s[0] + d * divide(right, total)
        m2 = s[1] + t[1] + d * d * divide(as_type(s[3], s[0]) * right, total)
        return mean, m2, s[2], n

    @scalar_function
    def finish(s, n, correction):
        divisor = as_type(n, s[0]) - correction
        variance = divide(s[1], divisor if divisor > 0 else as_type(0, divisor))
        return math.sqrt(variance) if root else variance

    return ReduceFormulas(init, step, merge, finish)


@functools.cache
def formulas(op: str, compute_dtype: np.dtype) -> ReduceFormulas:
    """The formulas of op (a ReduceOp's value) for elements of compute_dtype."""
    acc_dtype = accumulate_dtype(op, np.dtype(compute_dtype))
    acc, floating = acc_dtype.type, acc_dtype.kind == "f"
    if op in ("sum", "mean"):
        return _sum_formulas(acc, floating, op == "mean")
    if op == "prod":
        return _prod_formulas(acc)
    if op in ("amax", "amin", "argmax", "argmin"):
        return _extreme_formulas(acc, floating, op in ("amax", "argmax"), op.startswith("arg"), np.dtype(compute_dtype))
    if op in LOGICAL_OPS:
        return _logical_formulas(acc, op == "all")
    if op == "logsumexp":
        return _logsumexp_formulas(acc)
    if op in ("var", "std"):
        return _variance_formulas(acc, op == "std")
    raise ValueError(f"op: {op!r} is not a reduction")


def scan_accumulate_dtype(op: str, compute_dtype: np.dtype) -> np.dtype:
    """The state's dtype of a scan of op: float sums and products in float64 (a running sum
    compensated per element would cost four dependent additions; float64 is as exact for any
    float32 run), else a reduction's."""
    compute_dtype = np.dtype(compute_dtype)
    if op in ("sum", "prod") and compute_dtype.kind == "f":
        return np.dtype(np.float64)
    return accumulate_dtype(op, compute_dtype)


def _last_extreme_formulas(acc: type, floating: bool, largest: bool, index: bool) -> ReduceFormulas:
    """A scan's amax and amin (index False: the values) or argmax and argmin (PyTorch's cummax and
    cummin): the later of equal values wins, and a NaN over any number (the latest NaN); index -1
    marks the state of no element. So a value is its index's element (-0.0 after 0.0 included).
    The values need no mark: every element wins over the start, and the start over no state."""
    start = (-np.inf if largest else np.inf) if floating else (np.iinfo(acc).min if largest else np.iinfo(acc).max)

    @scalar_function
    def init():
        return acc(start), acc(0), acc(0), np.int64(-1)

    @scalar_function
    def later_wins(a1, a2):
        if a2 != a2:
            return True
        if a1 != a1:
            return False
        return a2 >= a1 if largest else a2 <= a1

    if index:

        @scalar_function
        def merge(s, t):
            if t[3] < 0:
                return s
            if s[3] < 0 or later_wins(s[0], t[0]):
                return t
            return s

        @scalar_function
        def step(s, x, r):
            x = as_type(x, s[0])
            if s[3] < 0 or later_wins(s[0], x):
                return x, s[1], s[2], r
            return s

    else:

        @scalar_function
        def merge(s, t):
            return t if later_wins(s[0], t[0]) else s

        @scalar_function
        def step(s, x, r):
            x = as_type(x, s[0])
            return (x, s[1], s[2], s[3]) if later_wins(s[0], x) else s

    return ReduceFormulas(init, step, merge, _index_of if index else _value_of)


@functools.cache
def scan_formulas(op: str, compute_dtype: np.dtype) -> ReduceFormulas:
    """The formulas of a scan of op (sum, prod, amax, amin, argmax, argmin or logsumexp) for
    elements of compute_dtype: merge(s, t) takes t as the later part."""
    acc_dtype = scan_accumulate_dtype(op, compute_dtype)
    acc, floating = acc_dtype.type, acc_dtype.kind == "f"
    if op == "sum":
        return _sum_formulas(acc, False, False)  # plain additions: see scan_accumulate_dtype
    if op in ("amax", "amin", "argmax", "argmin"):
        return _last_extreme_formulas(acc, floating, op in ("amax", "argmax"), op.startswith("arg"))
    if op in ("prod", "logsumexp"):
        return formulas(op, acc_dtype if op == "prod" else compute_dtype)
    raise ValueError(f"op: {op!r} is not a scan")
