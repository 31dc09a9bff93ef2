"""Fill's CPU kernels (also TensorFill's and Memset's): one span per element size and value source,
run by ParallelFor."""
from __future__ import annotations

import numba

from ep.common.jit import bound, template
from ep.common.primitive.fill import UNIT_DTYPES, FillFactoryImpl, FillKernels, from_buffer, from_scalar
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.fill import FillFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("value_of")
def _fill(start, stop, args):
    # A slice indexed by the range variable alone: LLVM vectorizes the stores.
    dst, source, _ = args  # FillKernels' arguments (count: stop's bound)
    value = bound.value_of(source)
    out = dst[start:stop]
    for i in range(stop - start):
        out[i] = value


class CpuFillKernels(FillKernels):
    """The kernels of one value source: from_scalar (Fill, Memset) or from_buffer (TensorFill)."""

    def __init__(self, value_of) -> None:
        self.value_of = value_of

    @function_cache("kernels")
    def kernel(self, itemsize: int) -> ParallelFor:
        unit = UNIT_DTYPES[itemsize]
        buffered = self.value_of is from_buffer
        source = input_array(unit) if buffered else numba.from_dtype(unit)
        name = f"{'tensor_fill' if buffered else 'fill'}_u{8 * itemsize}"
        return ParallelFor(_fill, name, (output_array(unit), source, numba.int64), aligned=0, value_of=self.value_of)


KERNELS = CpuFillKernels(from_scalar)

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, FillFactory, FillFactoryImpl(DeviceType.kCPU, KERNELS))
