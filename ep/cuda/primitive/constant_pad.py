"""ConstantPad's CUDA kernel: one grid-stride kernel per (unit size, index width), a thread per dst element.

An element's dst index comes from one division per merged dim (fast_divmod in 32 bits, unrolled
over MAX_NUM_DIMS); it reads src at index - padding_before where that lies inside src on every
dim, else stores the pad value. In 32 bits paddings travel modulo 2**32, so index - before wraps
a position before src to one past every size and one unsigned compare checks both ends.
"""
from __future__ import annotations

from typing import Iterator

import numba
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.fast_divmod import divisors, index_bindings, size_type
from ep.common.primitive.byte_units import as_units, unit_dtype
from ep.common.primitive.constant_pad import ConstantPadFactoryImpl, ConstantPadKernels, PadPlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.constant_pad import ConstantPadFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("INDEX", "DIVMOD")
def _pad(src, dst, count, value, ndim, sizes, multipliers, shifts, lows, highs, crops, src_strides):
    # Tuples innermost first, padded to MAX_NUM_DIMS; the outermost dim's index is what the
    # divisions leave. The loop has a constant trip count: it unrolls, and every tuple index is
    # static. Dst index k of a dim reads src index k - low + crop when low <= k < high.
    i = bound.INDEX(cuda.grid(1))
    step = bound.INDEX(cuda.gridsize(1))
    while i < count:
        n = i
        s = bound.INDEX(0)
        inside = True
        for k in range(len(sizes)):
            if k >= ndim:
                break
            if k + 1 < ndim:
                n, index = bound.DIVMOD(n, sizes[k], multipliers[k], shifts[k])
            else:
                index = n
            if index >= lows[k] and index < highs[k]:
                # In INDEX again: Numba widens 32-bit arithmetic to 64 bits.
                s = bound.INDEX(s + (index - lows[k] + crops[k]) * src_strides[k])
            else:
                inside = False
        dst[i] = src[s] if inside else value
        i = bound.INDEX(i + step)


class CudaConstantPadKernels(ConstantPadKernels):
    @function_cache("kernels")
    def kernel(self, unit: int, wide: bool) -> CudaKernel:
        """The pad of unit-byte elements with 64-bit (wide) or 32-bit indices."""
        element = numba.from_dtype(unit_dtype(unit))
        size = size_type(wide)
        dims = numba.types.UniTuple(size, MAX_NUM_DIMS)
        argtypes = (element[::1], element[::1], size, element, size, *([dims] * 7))
        # The 64-bit variant's divisions need more than 32 registers; it runs only beyond 2**31 - 1 elements.
        name = f"constant_pad_u{8 * unit}_{'i64' if wide else 'i32'}"
        return CudaKernel(_pad, name, argtypes, full_occupancy=not wide, **index_bindings(wide))

    def prepare(self, plan: PadPlan, unit: int) -> tuple:
        """(unit, kernel, arguments after the buffers and the value)."""
        wide = fast_divmod.needs_wide(plan.count, plan.src_count)
        inner_first = tuple(reversed(range(len(plan.dst_dims))))
        # The divisions: every dim but the outermost (whose size is never divided by).
        sizes, multipliers, shifts = divisors([plan.dst_dims[k] for k in inner_first[:-1]], MAX_NUM_DIMS, wide)

        def column(values):
            return tuple(values[k] for k in inner_first) + (0,) * (MAX_NUM_DIMS - len(inner_first))

        # Per dim: dst indices [low, high) read src; crop: the src elements a negative padding skips.
        lows = [max(b, 0) for b in plan.before]
        highs = [min(max(b + n, low), d) for b, n, low, d in zip(plan.before, plan.src_dims, lows, plan.dst_dims)]
        crops = [max(-b, 0) for b in plan.before]
        args = (len(plan.dst_dims), sizes, multipliers, shifts, column(lows), column(highs), column(crops), column(plan.src_strides))
        return unit, self.kernel(unit, wide), plan.count, plan.src_count, args

    def pad(self, stream, prepared, src, dst, value) -> None:
        unit, kernel, count, src_count, args = prepared
        kernel.launch(stream, count, as_units(src, src_count, unit), as_units(dst, count, unit), count, value, *args)

    def all_kernels(self) -> Iterator[object]:
        for unit in (1, 2, 4, 8):
            for wide in (False, True):
                yield self.kernel(unit, wide)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA, ConstantPadFactory, ConstantPadFactoryImpl(DeviceType.kCUDA, CudaConstantPadKernels())
)
