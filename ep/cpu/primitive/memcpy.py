"""Memcpy on the CPU: a copy span per unit width (1 to 8 bytes, the widest dividing the count and
both addresses), run by ParallelFor."""
from __future__ import annotations

from ep.common.jit import template
from ep.common.primitive.byte_units import as_units, move_unit, unit_dtype
from ep.common.primitive.memcpy import MemcpyFactoryImpl, MemcpyKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.memcpy import MemcpyFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# The widest unit a span moves: one uint64 (16-byte units are uint64 pairs, which a plain loop
# moves no faster).
WIDEST_UNIT = 8


@template()
def _copy(start, stop, args):
    # Slices indexed by the range variable alone: LLVM vectorizes the loop.
    dst, src = args
    out = dst[start:stop]
    x = src[start:stop]
    for i in range(stop - start):
        out[i] = x[i]


class CpuMemcpyKernels(MemcpyKernels):
    @function_cache("kernels")
    def kernel(self, unit: int) -> ParallelFor:
        dtype = unit_dtype(unit)
        return ParallelFor(_copy, f"memcpy_u{8 * unit}", (output_array(dtype), input_array(dtype)))

    def copy(self, stream, dst, src, count: int) -> None:
        unit = move_unit(count, (dst, src), WIDEST_UNIT)
        units = count // unit
        self.kernel(unit).run((as_units(dst, count, unit), as_units(src, count, unit)), units, units)

    def all_kernels(self):
        return iter(())  # CPU kernels: nothing for the PTX check


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, MemcpyFactory, MemcpyFactoryImpl(DeviceType.kCPU, CpuMemcpyKernels()))
