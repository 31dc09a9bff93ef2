"""Per-element kernels on the CPU (ep.common.primitive.element): a ParallelFor span storing body's
elements, one for every primitive whose kernel is one."""
from __future__ import annotations

import numba

from ep.common.jit import bound, template
from ep.common.math.convert import store_fn
from ep.common.primitive.element import Array, ElementKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array


@template("body", "store")
def _element(start, stop, args):
    # A slice indexed by the range variable alone: LLVM vectorizes the stores.
    dst, _, values = args  # (dst, count: stop's bound, body's values)
    out = dst[start:stop]
    for k in range(stop - start):
        out[k] = bound.store(bound.body(start + k, values))


class CpuElementKernels(ElementKernels):
    @function_cache("kernels")
    def kernel(self, body, dst: DataType, values: tuple) -> ParallelFor:
        types = numba.types.Tuple([input_array(v.dtype) if isinstance(v, Array) else numba.from_dtype(v) for v in values])
        arg_types = (output_array(dst.storage_dtype), numba.int64, types)
        name = f"{body.__name__}_{dst.value}"
        return ParallelFor(_element, name, arg_types, aligned=0, body=body, store=store_fn(dst, DeviceType.kCPU))


KERNELS = CpuElementKernels()
