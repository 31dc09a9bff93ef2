"""Fill's CUDA kernels (also TensorFill's and Memset's): one grid-stride kernel per element size and
value source, storing 16-byte packs (ep.cuda.pack) where dst is aligned to them."""
from __future__ import annotations

import numba
from numba import config, cuda

from ep.common.jit import bound, template
from ep.common.primitive.fill import UNIT_DTYPES, FillFactoryImpl, FillKernels, from_buffer, from_scalar
from ep.common.runtime.buffer import address
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import pack_bindings, pack_bytes, pack_count, pack_lanes
from ep.include.primitive.fill import FillFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("value_of", "PACK", "DST", "pack_array", "store_pack", "opaque")
def _fill(dst, source, count, packs):
    # packs: work items 0 to packs - 1 are full packs of PACK elements (the host found dst aligned
    # to them), the rest one element each. The pack is made once: every thread stores the same.
    value = bound.value_of(source)
    y = bound.pack_array(bound.DST)
    for k in range(bound.PACK):
        y[k] = value
    w = cuda.grid(1)
    step = cuda.gridsize(1)
    work = count - packs * (bound.PACK - 1)
    while w < work:
        full = w < packs
        i = w * bound.PACK if full else w + packs * (bound.PACK - 1)
        bound.store_pack(dst, i, y, full)
        w = bound.opaque(w + step)


class PackedFillKernel(CudaKernel):
    """A fill kernel launched as FillKernels' launch: it stores packs of `lanes` elements where dst
    is aligned to them."""

    def __init__(self, name: str, argtypes, itemsize: int, value_of) -> None:
        unit = UNIT_DTYPES[itemsize]
        self.lanes = pack_lanes(unit)
        bindings = pack_bindings(self.lanes, unit, unit)
        slots = {slot: bindings[slot] for slot in ("PACK", "DST", "pack_array", "store_pack", "opaque")}
        super().__init__(_fill, name, argtypes, value_of=value_of, **slots)
        self._pack = pack_bytes(self.lanes, unit)

    def launch(self, stream, elements: int, dst, source, count: int) -> None:
        # elements is count (FillKernels' form); the grid covers the work items pack_count finds.
        packs, work = pack_count(self.lanes, count, address(dst) % self._pack)
        CudaKernel.launch(self, stream, work, dst, source, count, packs)


class CudaFillKernels(FillKernels):
    """The kernels of one value source: from_scalar (Fill, Memset) or from_buffer (TensorFill)."""

    def __init__(self, value_of) -> None:
        self.value_of = value_of

    @function_cache("kernels")
    def kernel(self, itemsize: int) -> PackedFillKernel:
        unit = numba.from_dtype(UNIT_DTYPES[itemsize])
        buffered = self.value_of is from_buffer
        argtypes = (unit[::1], unit[::1] if buffered else unit, numba.int64, numba.int64)
        # The simulator runs kernels as Python: it reads a buffer it could not pass to a compiled function.
        value_of = self.value_of.py_func if config.ENABLE_CUDASIM else self.value_of
        name = f"{'tensor_fill' if buffered else 'fill'}_u{8 * itemsize}"
        return PackedFillKernel(name, argtypes, itemsize, value_of)


KERNELS = CudaFillKernels(from_scalar)

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, FillFactory, FillFactoryImpl(DeviceType.kCUDA, KERNELS))
