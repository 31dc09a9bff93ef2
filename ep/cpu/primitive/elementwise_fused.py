"""ElementwiseFused's CPU kernels: a span per expression and argument kinds, run by ParallelFor.

The span is written per arity and kinds (the composed formula is its one slot, so its digest is the
expression's): flat, one loop over the output's elements when every array argument has the
output's dims; rows otherwise, as Where's general span: each output row's start is mapped to the
arguments' offsets once (NdIndexOffsetHelper), then a row argument is read as a slice, a column
argument once per row (a value the row's loop holds), a scalar as given.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterator

import numba
import numpy as np

from ep.common.jit import bound, define, template
from ep.common.math.nd_index_offset_helper import offset_to_index
from ep.common.primitive.elementwise_fused import (
    COLUMN, FLAT, ROW, SCALAR, ElementwiseFusedFactoryImpl, ElementwiseFusedImpl, ElementwiseFusedKernels, FusedPlan,
    output_strides,
)
from ep.common.primitive.fused_formula import grouped, result
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.elementwise_fused import ElementwiseFusedFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@functools.lru_cache(maxsize=256)
def fused_span(kinds: tuple[str, ...], outputs: int, flat: bool) -> Callable:
    """The span template (slot: compute) for arguments of kinds and that many outputs."""
    args = [f"a{i}" for i in range(len(kinds))]
    outs = [f"o{j}" for j in range(outputs)]
    lines = [f"{', '.join(args + outs + ([] if flat else ['strides', 'cols']))}, = args"]
    if flat:
        # Slices indexed by the range variable alone: LLVM knows every index is non-negative.
        lines += [f"x{i} = a{i}[start:stop]" for i, kind in enumerate(kinds) if kind == FLAT]
        lines += [f"y{j} = o{j}[start:stop]" for j in range(outputs)]
        loop = "for k in range(stop - start):"
    else:
        strided = [i for i, kind in enumerate(kinds) if kind in (ROW, COLUMN)]
        lines += ["ndim = strides.shape[1]", "for r in range(start, stop):", "    base = r * cols"]
        lines += [f"    p{i} = 0" for i in strided]
        lines += ["    for d in range(ndim - 1):", f"        index = offset_to_index(base, strides[{len(kinds)}], d)"]
        lines += [f"        p{i} += index * strides[{i}, d]" for i in strided]
        for i, kind in enumerate(kinds):
            if kind == FLAT:
                lines.append(f"    x{i} = a{i}[base:base + cols]")
            elif kind == ROW:
                lines.append(f"    x{i} = a{i}[p{i}:p{i} + cols]")
            elif kind == COLUMN:
                lines.append(f"    v{i} = a{i}[p{i}]")  # one value per row
        lines += [f"    y{j} = o{j}[base:base + cols]" for j in range(outputs)]
        loop = "    for k in range(cols):"
    operands = [f"a{i}" if kind == SCALAR else f"v{i}" if kind == COLUMN else f"x{i}[k]" for i, kind in enumerate(kinds)]
    indent = loop[: len(loop) - len(loop.lstrip())] + "    "
    lines += [loop, f"{indent}r = bound.compute({grouped(operands)})"]
    lines += [f"{indent}y{j}[k] = {result(j, outputs)}" for j in range(outputs)]
    source = "def span(start, stop, args):\n" + "".join(f"    {line}\n" for line in lines)
    return template("compute")(define(source, "span", {"bound": bound, "offset_to_index": offset_to_index}))


def _arg_types(primitive: ElementwiseFusedImpl, flat: bool) -> tuple[numba.types.Type, ...]:
    types = []
    for i, dtype in enumerate(primitive.dtypes):
        if i in primitive.scalars:
            types.append(numba.from_dtype(dtype.compute_dtype))
        else:
            types.append(input_array(dtype.storage_dtype))
    types += [output_array(dtype.storage_dtype) for dtype in primitive.dst_dtypes]
    if not flat:
        types += [input_array(np.dtype(np.int64), 2), numba.int64]
    return tuple(types)


class CpuElementwiseFusedKernels(ElementwiseFusedKernels):
    def kernel(self, primitive: ElementwiseFusedImpl, kinds: tuple[str, ...]) -> ParallelFor:
        """primitive's span for arguments of kinds, made once per primitive and kinds."""
        flat = ROW not in kinds and COLUMN not in kinds
        if flat:
            kinds = tuple(SCALAR if kind == SCALAR else FLAT for kind in kinds)
        found = primitive.device_kernels.get(kinds)
        if found is None:
            span = fused_span(kinds, len(primitive.outputs), flat)
            name = "fused_flat" if flat else "fused_rows"
            aligned = len(kinds) if flat else None  # the first output, where items are its elements
            found = primitive.device_kernels.setdefault(kinds, ParallelFor(span, name, _arg_types(primitive, flat), aligned=aligned, compute=primitive.formula))
        return found

    def kernels(self, primitive: ElementwiseFusedImpl) -> Iterator[ParallelFor]:
        arrays = [i for i in range(len(primitive.dtypes)) if i not in primitive.scalars]
        yield self.kernel(primitive, tuple(SCALAR if i in primitive.scalars else FLAT for i in range(len(primitive.dtypes))))
        broadcast = {arrays[0]: ROW, arrays[-1]: COLUMN}
        yield self.kernel(primitive, tuple(SCALAR if i in primitive.scalars else broadcast.get(i, FLAT) for i in range(len(primitive.dtypes))))

    def launcher(self, primitive: ElementwiseFusedImpl, plan: FusedPlan) -> Callable[..., None]:
        run, count = self.kernel(primitive, plan.kinds).run, plan.count
        if plan.flat:
            return lambda stream, values, outs: run((*values, *outs), count, count)
        # One row per output row; the strides of the arguments (a scalar's are zeros) and the output's.
        rows = [s if s is not None else (0,) * len(plan.dims) for s in plan.strides]
        strides = np.array((*rows, output_strides(plan)), np.int64)
        cols = plan.dims[-1]
        return lambda stream, values, outs: run((*values, *outs, strides, cols), count // cols, count)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ElementwiseFusedFactory, ElementwiseFusedFactoryImpl(DeviceType.kCPU, CpuElementwiseFusedKernels()))
