"""Reduce on every device: New's resolution, Launch's checks, the plan of (outer, reduced, inner),
and the kernels a device supplies (ep.common.math.reduce's formulas)."""
from __future__ import annotations

import abc
import math
import numbers
from dataclasses import dataclass
from typing import Callable, Iterator

import numba
import numpy as np

from ep.common.jit import define, scalar_function
from ep.common.math.convert import load_fn
from ep.common.primitive.broadcast_dims import MAX_CALLER_DIMS
from ep.common.primitive.elementwise_fused import scalar_indices
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.fused_formula import compose_formula, grouped
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import ALL_TYPES, FLOATING_TYPES, HALF_TYPES, INTEGER_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.keys import exact_key
from ep.common.runtime.names import lookup
from ep.common.runtime.validate import INT64_MAX, dims as check_dims
from ep.include.primitive.reduce import Reduce, ReduceFactory, ReduceOp


# Ops whose result is a float of the input's float dtype.
FLOAT_OPS = (ReduceOp.kLogSumExp, ReduceOp.kMean, ReduceOp.kVar, ReduceOp.kStd)
# Ops with no identity: an empty reduction is refused (NumPy's ValueError).
NO_IDENTITY = (ReduceOp.kMax, ReduceOp.kMin, ReduceOp.kArgMax, ReduceOp.kArgMin)
INDEX_OPS = (ReduceOp.kArgMax, ReduceOp.kArgMin)
LOGICAL_OPS = (ReduceOp.kAny, ReduceOp.kAll)


@dataclass(frozen=True)
class ReducePlan:
    """src read as (outer, length, inner), reduced over length into dst's outer * inner elements;
    correction as a float (kVar, kStd)."""

    src_count: int
    dst_count: int
    outer: int
    length: int
    inner: int
    correction: float


class ReduceKernels(abc.ABC):
    """What a device supplies: its kernels, and the launch of a plan."""

    @abc.abstractmethod
    def kernel(
        self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, merging: bool = False, source: FusedSource | None = None
    ) -> object:
        """op's kernel from src_dtype into dst_dtype: the one reducing elements, or (merging) the
        one merging the states of a reduction cut into slices; source: as launch's, its arguments
        read instead of an array (ReduceFused's)."""

    @abc.abstractmethod
    def launcher(
        self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, plan: ReducePlan, source: FusedSource | None = None
    ) -> Callable[..., None]:
        """run(stream, src, dst): op over plan's layout of src into dst (flat storage; dst holds at
        least one element), with all that depends on the plan alone worked out here, once.
        source None: src is an array of src_dtype; else (a ReduceFused's) the expression whose
        one output's elements are reduced, and src the tuple of its arguments (flat storage of
        plan.src_count elements, or compute-dtype scalars): see source_element."""

    def all_kernels(self) -> Iterator[object]:
        """Every kernel a launch of Reduce can run, for the PTX check."""
        for op, (src, dst) in combinations():
            yield self.kernel(op, src, dst)
            yield self.kernel(op, src, dst, True)


@dataclass(frozen=True, eq=False)
class FusedSource:
    """A fused expression whose one output a reduction reads (ReduceFused's), and its arguments'
    dtypes; kernels are keyed by it exactly (an attribute of -0.0 is not one of 0.0)."""

    outputs: tuple
    dtypes: tuple[DataType, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (exact_key(self.outputs), self.dtypes))

    @property
    def scalars(self) -> frozenset[int]:
        """The indices of the arguments that are Scalars (the others are arrays)."""
        return frozenset(scalar_indices(self.outputs[0]))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FusedSource) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


@function_cache("kernels")
def source_element(device: DeviceType, src_dtype: DataType, source: FusedSource | None, nan_payload: bool = True) -> Callable:
    """The kernels' element(src, i) slot on device: element i of the source in src_dtype's compute
    dtype, src an array of src_dtype, or (source) the tuple of a fused expression's arguments, its
    value computed at i. The index is unsigned (i >= 0): Numba then drops the negative-index
    wraparound, which would keep LLVM from vectorizing a kernel's loops. A kernel passes src, not
    slices of it: a slice, or an array passed to an inlined function that branches, costs atomic
    reference counts that a second thread's on the same array make contend (rows of 512 took 6x).
    nan_payload: load_fn's."""
    globals_ = {"load": load_fn(src_dtype, device, nan_payload), "uint64": np.uint64}
    if source is None:
        text = "def element(src, i):\n    return load(src[uint64(i)])\n"
    else:
        arguments = [f"a{k}" for k in range(len(source.dtypes))]
        operands = [name if k in source.scalars else f"{name}[u]" for k, name in enumerate(arguments)]
        text = (
            f"def element(src, i):\n    {', '.join(arguments)}, = src\n    u = uint64(i)\n"
            f"    return load(formula({grouped(operands)})[0])\n"
        )
        globals_["formula"] = compose_formula(source.outputs, source.dtypes, device)
    # Its compiled functions are its globals (the simulator's stand-in types their results).
    return scalar_function(define(text, "element", globals_))


def source_type(src_dtype: DataType, source: FusedSource | None, array: Callable[[np.dtype], numba.types.Type]) -> numba.types.Type:
    """The numba type of a launch's src: an array of src_dtype, or a fused expression's arguments;
    array(dtype) is the device's type of an input array of storage dtype."""
    if source is None:
        return array(src_dtype.storage_dtype)
    scalars = source.scalars
    return numba.types.Tuple([numba.from_dtype(d.compute_dtype) if i in scalars else array(d.storage_dtype) for i, d in enumerate(source.dtypes)])


def reduction_stages(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """The layouts (src_dims, dst_dims) of reducing shape over dims one run of adjacent reduced dims
    at a time (dims of size 1 dropped): the run of most elements first, which leaves the least for
    the next to read; of equal runs the outer first (its sums add whole rows)."""
    runs: list[list[int]] = []
    previous = False
    for d, n in enumerate(shape):
        if n != 1:
            if d in dims and previous:
                runs[-1].append(d)
            elif d in dims:
                runs.append([d])
            previous = d in dims
    runs.sort(key=lambda run: -math.prod(shape[d] for d in run))
    stages = []
    src = shape
    for run in runs:
        dst = tuple(1 if d in run else n for d, n in enumerate(src))
        stages.append((src, dst))
        src = dst
    return tuple(stages)


# The ops whose reduction over two sets of dims is their reduction over one set, then over the
# other (mean's too: every partial mean counts as many elements); var and std are not.
_STAGED = frozenset({ReduceOp.kSum, ReduceOp.kProd, ReduceOp.kMean, ReduceOp.kMax, ReduceOp.kMin, ReduceOp.kAny, ReduceOp.kAll, ReduceOp.kLogSumExp})
# Of these, the ones that round a partial result (not to be kept in float16 or bfloat16).
_ROUNDED = frozenset({ReduceOp.kSum, ReduceOp.kProd, ReduceOp.kMean, ReduceOp.kLogSumExp})


def staged(op: ReduceOp, dst: DataType) -> bool:
    """Whether op into dst over dims apart runs run by run (reduction_stages) rather than on x
    permuted: where its partial results compose without a rounding in float16 or bfloat16. 1 MiB
    of float32 (64, 64, 64) summed over (0, 2) took 36 us permuted, 15 us in two launches; 64 MiB
    (256,) * 3 7.9 ms and 1.2 ms (AMD EPYC)."""
    return op in _STAGED and not (op in _ROUNDED and dst in HALF_TYPES)


def reduce_dims(src_dims: tuple[int, ...], dst_dims: tuple[int, ...]) -> tuple[int, int, int, int | None]:
    """(outer, length, inner, an empty reduced dim or None) of reducing src_dims where dst_dims
    has 1; ValueError naming dst_dims when the reduced dims do not merge into one run."""
    if len(src_dims) != len(dst_dims):
        raise ValueError(f"dst_dims: has {len(dst_dims)} dims; expected src_dims' {len(src_dims)} (1 where a dim is reduced)")
    runs: list[list] = []  # [reduced?, product] per run of dims of one kind, dims of size 1 dropped
    empty_dim = None
    for d, (n, m) in enumerate(zip(src_dims, dst_dims)):
        if m != n and m != 1:
            raise ValueError(f"dst_dims[{d}] = {m}; expected src_dims[{d}] = {n} (kept) or 1 (reduced)")
        if n == 1:
            continue
        reduced = m != n
        if reduced and n == 0 and empty_dim is None:
            empty_dim = d
        if runs and runs[-1][0] == reduced:
            runs[-1][1] *= n
        else:
            runs.append([reduced, n])
    reduced_runs = [k for k, (reduced, _) in enumerate(runs) if reduced]
    if len(reduced_runs) > 1:
        raise ValueError(
            f"dst_dims: {dst_dims} reduces dims of src_dims {src_dims} that kept dims separate; expected the reduced"
            " dims to form one run (permute them together first)"
        )
    if not reduced_runs:
        return math.prod(src_dims), 1, 1, None
    k = reduced_runs[0]
    outer = math.prod(n for _, n in runs[:k])
    inner = math.prod(n for _, n in runs[k + 1 :])
    return outer, runs[k][1], inner, empty_dim


def check_correction(value: object) -> float:
    """correction as a float: a real number (not bool), not NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"correction: {type(value).__name__} {value!r} is not a real number")
    value = float(value)
    if value != value:
        raise ValueError("correction: is NaN; expected a number")
    return value


def reduce_plan(op: ReduceOp, src_dims, dst_dims, correction) -> ReducePlan:
    """The checked plan of reducing src_dims where dst_dims has 1 (Reduce's Launch arguments)."""
    src_dims, dst_dims = check_dims(src_dims, "src_dims", MAX_CALLER_DIMS), check_dims(dst_dims, "dst_dims", MAX_CALLER_DIMS)
    correction = check_correction(correction)
    if math.prod(src_dims) > INT64_MAX:
        raise ValueError(f"src_dims: {src_dims} holds more than 2**63 - 1 elements")
    outer, length, inner, empty_dim = reduce_dims(src_dims, dst_dims)
    if empty_dim is not None and op in NO_IDENTITY and outer * inner:
        # NumPy's rule: a reduction with no identity over nothing has no value.
        raise ValueError(f"src_dims[{empty_dim}]: dim {empty_dim} has size 0; {op.value} of an empty reduction has no identity")
    return ReducePlan(math.prod(src_dims), outer * inner, outer, length, inner, correction)


class ReduceImpl(Declared, Reduce):
    launch = declare(
        Attr("src_dims"), In("src", "self.src_dtype", size="plan[0].src_count"),
        Attr("dst_dims"), Out("dst", "self.dst_dtype", size="plan[0].dst_count"),
        Attr("correction", default="1"),
        plan=("src_dims", "dst_dims", "correction"),
    )

    def __init__(self, device_type: DeviceType, kernels: ReduceKernels, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType) -> None:
        self.device_type, self._kernels = device_type, kernels
        self.op, self.src_dtype, self.dst_dtype = op, src_dtype, dst_dtype

    def plan(self, src_dims, dst_dims, correction) -> tuple[ReducePlan, Callable | None]:
        """The checked plan, and its run (None when there is no output)."""
        return prepared(self._kernels, self.op, self.src_dtype, self.dst_dtype, reduce_plan(self.op, src_dims, dst_dims, correction))

    def run(self, stream, plan: tuple[ReducePlan, Callable | None], src, dst) -> None:
        run = plan[1]
        if run is not None:
            run(stream, src, dst)


def prepared(
    kernels: ReduceKernels, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, plan: ReducePlan, source: FusedSource | None = None
) -> tuple[ReducePlan, Callable | None]:
    """plan and its run (kernels.launcher's; None when there is no output): what a plan cache keeps."""
    return plan, kernels.launcher(op, src_dtype, dst_dtype, plan, source) if plan.dst_count else None


def dst_dtypes(op: ReduceOp, src: DataType) -> tuple[DataType, ...]:
    """The dst dtypes New takes for op of src (the interface's New says which)."""
    if op in INDEX_OPS:
        return (DataType.kInt64,)
    if op in LOGICAL_OPS:
        # uint8 too: torch.any and torch.all of uint8 give uint8.
        return (DataType.kBool, DataType.kUInt8) if src is DataType.kUInt8 else (DataType.kBool,)
    if op in FLOAT_OPS:
        return (src,) if src in FLOATING_TYPES else ()
    if op in (ReduceOp.kSum, ReduceOp.kProd):
        if src is DataType.kBool:
            return (DataType.kInt64,)
        return (src, DataType.kInt64) if src in INTEGER_TYPES and src is not DataType.kInt64 else (src,)
    return (src,)


def combinations() -> Iterator[tuple[ReduceOp, tuple[DataType, DataType]]]:
    """Every (op, (src dtype, dst dtype)) New takes."""
    for op in ReduceOp:
        for src in ALL_TYPES:
            for dst in dst_dtypes(op, src):
                yield op, (src, dst)


class ReduceFactoryImpl(GenericFactory, ReduceFactory):
    primitive_type = ReduceImpl

    def New(self, op, src_dtype, dst_dtype) -> Reduce | None:
        op = lookup(ReduceOp, op, "op", "a reduce op", "sum")
        src, dst = as_data_type(src_dtype, "src_dtype"), as_data_type(dst_dtype, "dst_dtype")
        return self._new((op, src, dst)) if dst in dst_dtypes(op, src) else None

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        return combinations()

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        src, dst = dtypes
        x = values(6, src, (2, 3))
        for dst_dims in ((2, 1), (1, 3), (1, 1)):  # along rows (inner 1), across columns, the whole array
            axis = tuple(d for d, n in enumerate(dst_dims) if n == 1)
            args = {"src_dims": (2, 3), "src": x, "dst_dims": dst_dims, "dst": zeros(math.prod(dst_dims), dst)}
            expected = {"dst": x.sum(axis, dtype=dst.dtype).ravel()} if op is ReduceOp.kSum else None
            yield Sample((op, src, dst), args, expected)
