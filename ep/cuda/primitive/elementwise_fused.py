"""ElementwiseFused's CUDA kernel: one grid-stride kernel per expression and argument kinds.

A thread takes output elements by flat offset; an argument with the output's dims is read at that
offset, a broadcast one (row or column) at the offset split_offsets maps it to (32-bit fast_divmod,
two arguments per call: the calls share their divisions), a scalar as given; the composed formula
(the kernel's one expression-specific slot) gives every output's value, each written once.
Offsets are 32-bit: an output of more than 2**31 - 1 elements runs as launches of boxes that fit
(nd_index_offset_helper.boxes), as Where's kernel does.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Iterator

import numba
import numpy as np
from numba import cuda, types

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.fast_divmod import index_bindings, size_type
from ep.common.math.nd_index_offset_helper import SPLIT_DIMS, boxes, split_args, split_offsets
from ep.common.primitive.elementwise_fused import (
    FLAT, SCALAR, ElementwiseFusedFactoryImpl, ElementwiseFusedImpl, ElementwiseFusedKernels, FusedPlan, output_strides,
)
from ep.common.primitive.fused_formula import children, define
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import pack_functions
from ep.cuda.primitive.elementwise_unary import FLOAT64_FORMULAS
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.elementwise_fused import ElementwiseFusedFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

_INDEX = size_type(wide=False)
# intrinsics.opaque, or the simulator's stand-in: the grid-stride step LLVM does not unroll.
_OPAQUE = pack_functions(1)[3]
_DIMS = types.UniTuple(_INDEX, SPLIT_DIMS)
# On CUDA a kernel only tells the output's own elements (flat) from broadcast ones (strided).
STRIDED = "strided"


@functools.lru_cache(maxsize=256)
def fused_kernel(kinds: tuple[str, ...], outputs: int) -> Callable:
    """The kernel template (slots: compute, INDEX, opaque, and DIVMOD with strided arguments) for arguments of kinds
    (flat, strided or scalar) and that many outputs."""
    strided = [i for i, kind in enumerate(kinds) if kind == STRIDED]
    # Pairs of strided arguments per split_offsets call; an odd one is paired with itself.
    pairs = [(strided[p], strided[min(p + 1, len(strided) - 1)]) for p in range(0, len(strided), 2)]
    parameters = [f"a{i}" for i in range(len(kinds))] + [f"o{j}" for j in range(outputs)] + ["count"]
    if strided:
        parameters += ["ndim", "sizes", "multipliers", "shifts"] + [f"s{i}" for i in strided] + [f"outer{i}" for i in strided]
    lines = ["i = bound.INDEX(cuda.grid(1))", "step = bound.INDEX(cuda.gridsize(1))", "while i < count:"]
    for first, second in pairs:
        targets = f"p{first}, p{second}" if first != second else f"p{first}, _"
        lines.append(
            f"    {targets} = split_offsets(i, ndim, sizes, multipliers, shifts, s{first}, s{second}, outer{first}, outer{second}, bound.DIVMOD)"
        )
    operands = [f"a{i}" if kind == SCALAR else f"a{i}[p{i}]" if kind == STRIDED else f"a{i}[i]" for i, kind in enumerate(kinds)]
    lines.append(f"    r = bound.compute({', '.join(operands)})")
    lines += [f"    o{j}[i] = r[{j}]" for j in range(outputs)]
    lines.append("    i = bound.opaque(bound.INDEX(i + step))")
    source = f"def kernel({', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in lines)
    namespace = {"bound": bound, "cuda": cuda, "split_offsets": split_offsets}
    slots = ("compute", "INDEX", "opaque") + (("DIVMOD",) if strided else ())
    return template(*slots)(define(source, "kernel", namespace))


def _in_float64(primitive: ElementwiseFusedImpl) -> bool:
    """Whether the expression computes in float64 anywhere (register pairs: no launch bounds)."""
    def walk(node: tuple) -> bool:
        if node[0] == "unary" and node[1] in FLOAT64_FORMULAS:
            return True
        dtypes = [node[2]] if node[0] in ("input", "scalar") else [node[1]] if node[0] == "where" else [node[2], node[3]]
        return any(d.compute_dtype == np.float64 for d in dtypes) or any(walk(c) for c in children(node))

    return any(walk(node) for node in primitive.outputs)


# Binary ops whose integer formulas divide (in int64, as NumPy's): ptxas.DIVISION_ALLOWED names them.
_DIVIDING = frozenset((BinaryOp.kDiv, BinaryOp.kFmod, BinaryOp.kFloorDiv, BinaryOp.kTruncDiv, BinaryOp.kFloorMod))


def _divides(primitive: ElementwiseFusedImpl) -> bool:
    """Whether the expression divides integers (the kernel's name then says so: "_divides")."""
    def walk(node: tuple) -> bool:
        own = node[0] == "binary" and node[1] in _DIVIDING and not node[2].is_floating
        return own or any(walk(c) for c in children(node))

    return any(walk(node) for node in primitive.outputs)


class CudaElementwiseFusedKernels(ElementwiseFusedKernels):
    def kernel(self, primitive: ElementwiseFusedImpl, kinds: tuple[str, ...]) -> CudaKernel:
        """primitive's kernel for arguments of kinds, made once per primitive and kinds."""
        kinds = tuple(kind if kind in (FLAT, SCALAR) else STRIDED for kind in kinds)
        found = primitive.device_kernels.get(kinds)
        if found is not None:
            return found
        argtypes = []
        for i, dtype in enumerate(primitive.dtypes):
            scalar = i in primitive.scalars
            argtypes.append(numba.from_dtype(dtype.compute_dtype) if scalar else numba.from_dtype(dtype.storage_dtype)[::1])
        argtypes += [numba.from_dtype(dtype.storage_dtype)[::1] for dtype in primitive.dst_dtypes]
        argtypes.append(_INDEX)
        strided = kinds.count(STRIDED)
        if strided:
            argtypes += [_INDEX, _DIMS, _DIMS, _DIMS] + [_DIMS] * strided + [_INDEX] * strided
        template_ = fused_kernel(kinds, len(primitive.outputs))
        index = index_bindings(wide=False)
        if not strided:
            del index["DIVMOD"]
        kernel = CudaKernel(
            template_, "fused_" + ("strided" if strided else "flat") + ("_divides" if _divides(primitive) else ""), argtypes,
            full_occupancy=not _in_float64(primitive), compute=primitive.formula, opaque=_OPAQUE, **index,
        )
        return primitive.device_kernels.setdefault(kinds, kernel)

    def kernels(self, primitive: ElementwiseFusedImpl) -> Iterator[CudaKernel]:
        kinds = [SCALAR if i in primitive.scalars else FLAT for i in range(len(primitive.dtypes))]
        yield self.kernel(primitive, tuple(kinds))
        yield self.kernel(primitive, tuple(kind if kind == SCALAR else STRIDED for kind in kinds))

    def launcher(self, primitive: ElementwiseFusedImpl, plan: FusedPlan) -> Callable[..., None]:
        kernel = self.kernel(primitive, plan.kinds)
        strided = [i for i, kind in enumerate(plan.kinds) if kind not in (FLAT, SCALAR)]
        limit = fast_divmod.FAST_DIVMOD_LIMIT
        # Beyond the limit the boxes are cut at the first run, after storage() has checked that the
        # buffers hold the plan's counts: dims no buffer could hold would take billions of boxes.
        parts = _parts(plan, strided, limit) if plan.count <= limit else None

        def run(stream, values, outs) -> None:
            nonlocal parts
            if parts is None:
                parts = _parts(plan, strided, limit)
            for firsts, count, split in parts:
                args = values if not any(firsts) else [v if f is None else v[f:] for v, f in zip(values, firsts)]
                dsts = outs if not firsts[-1] else [o[firsts[-1]:] for o in outs]
                kernel.launch(stream, count, *args, *dsts, count, *split)

        return run


def _parts(plan: FusedPlan, strided: list[int], limit: int) -> list[tuple]:
    """(each argument's first element (None for a scalar) and the output's, elements, the kernel's
    split arguments) per launch: one, or one per box of at most limit elements, so every offset a
    kernel computes fits in 32 bits."""
    parts = []
    dst_strides = output_strides(plan)
    for start, box in boxes(plan.dims, limit):
        k = len(plan.dims) - len(box)
        firsts = [None if s is None else sum(i * t for i, t in zip(start, s)) for s in plan.strides]
        firsts.append(sum(i * t for i, t in zip(start, dst_strides)))
        split: tuple = ()
        if strided:
            inner, outer = [], []
            for i in strided:
                ndim, sizes, multipliers, shifts, s, _, o, _ = split_args(box, plan.strides[i][k:], plan.strides[i][k:], wide=False)
                inner.append(s)
                outer.append(o)
            split = (ndim, sizes, multipliers, shifts, *inner, *outer)
        parts.append((tuple(firsts), math.prod(box), split))
    return parts


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ElementwiseFusedFactory, ElementwiseFusedFactoryImpl(DeviceType.kCUDA, CudaElementwiseFusedKernels()))
