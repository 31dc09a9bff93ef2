"""Where's CPU kernels: two spans per (cond bytes, data bytes), run by ParallelFor.

elementwise: one flat loop where cond, x and y all have z's dims (a select LLVM vectorizes).
general: z's rows (its innermost simplified dim); each row's start is mapped to the operands'
offsets once (NdIndexOffsetHelper), then the row runs with each operand's innermost stride (1, or
0 where it is broadcast along it).
"""
from __future__ import annotations

from typing import Callable, Iterator

import numba
import numpy as np

from ep.common.jit import template
from ep.common.primitive.byte_units import unit_dtype
from ep.common.primitive.where import COND_BYTES, DATA_BYTES, WhereFactoryImpl, WhereKernels, WherePlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.cpu.strided import row_offsets
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.where import WhereFactory


@template()
def _elementwise(start, stop, args):
    # Slices indexed by the range variable alone: LLVM knows every index is non-negative.
    cond, x, y, z = args
    c = cond[start:stop]
    a = x[start:stop]
    b = y[start:stop]
    out = z[start:stop]
    for i in range(stop - start):
        out[i] = a[i] if c[i] != 0 else b[i]


@template()
def _general(start, stop, args):
    # strides: rows of cond's, x's, y's and z's element strides over z's dims (an array:
    # ParallelFor passes no tuple nested in args).
    cond, x, y, z, strides, cols = args
    ndim = strides.shape[1]
    inner_c, inner_x, inner_y = strides[0, ndim - 1], strides[1, ndim - 1], strides[2, ndim - 1]
    offsets = np.empty(3, np.int64)
    for r in range(start, stop):
        base = r * cols
        row_offsets(base, strides, offsets)
        oc, ox, oy = offsets[0], offsets[1], offsets[2]
        out = z[base:base + cols]
        for k in range(cols):
            out[k] = x[ox + k * inner_x] if cond[oc + k * inner_c] != 0 else y[oy + k * inner_y]


class CpuWhereKernels(WhereKernels):
    @function_cache("kernels")
    def kernel(self, cond_bytes: int, data_bytes: int, path: str) -> ParallelFor:
        cond, data = unit_dtype(cond_bytes), unit_dtype(data_bytes)
        types = (input_array(cond), input_array(data), input_array(data), output_array(data))
        if path == "general":
            types += (input_array(np.dtype(np.int64), 2), numba.int64)
        span = _general if path == "general" else _elementwise
        aligned = None if path == "general" else 3  # z, where items are its elements
        return ParallelFor(span, f"where_{path}_{cond_bytes}_{data_bytes}", types, aligned=aligned)

    def all_kernels(self) -> Iterator[ParallelFor]:
        for cond_bytes in COND_BYTES:
            for data_bytes in DATA_BYTES:
                for path in ("elementwise", "general"):
                    yield self.kernel(cond_bytes, data_bytes, path)

    def launcher(self, cond_bytes: int, data_bytes: int, plan: WherePlan) -> Callable[..., None]:
        cond, data, count = unit_dtype(cond_bytes), unit_dtype(data_bytes), plan.count
        if plan.elementwise:
            run = self.kernel(cond_bytes, data_bytes, "elementwise").run
            return lambda stream, c, x, y, z: run((c.view(cond), x.view(data), y.view(data), z.view(data)), count, count)
        run = self.kernel(cond_bytes, data_bytes, "general").run
        strides = np.array((*plan.strides, plan.dst_strides), np.int64)
        cols = plan.dims[-1]
        rows = count // cols
        return lambda stream, c, x, y, z: run(
            (c.view(cond), x.view(data), y.view(data), z.view(data), strides, cols), rows, count
        )


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, WhereFactory, WhereFactoryImpl(DeviceType.kCPU, CpuWhereKernels()))
