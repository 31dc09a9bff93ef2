"""Per-element kernels on CUDA (ep.common.primitive.element): a grid-stride kernel storing body's
elements in 16-byte packs (ep.cuda.pack) where dst is aligned to them. Its loop over packs
(pack_grid, pack_item) is every packed elementwise kernel's."""
from __future__ import annotations

import numba
import numpy as np
from numba import config, cuda

from ep.common.jit import bound, template
from ep.common.math.convert import store_fn
from ep.common.primitive.element import Array, ElementKernels
from ep.common.runtime.buffer import address
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel, device_function
from ep.cuda.pack import pack_bindings, pack_bytes, pack_count, pack_lanes


@device_function
def pack_grid(count, packs, pack, index):
    """(this thread's first work item, the grid's stride, the work items) of a grid-stride loop over
    count elements whose work items 0 to packs - 1 are full packs of pack elements, the rest one
    element each (ep.cuda.pack.pack_count); in index's type."""
    return index(cuda.grid(1)), index(cuda.gridsize(1)), index(count - packs * (pack - 1))


@device_function
def pack_item(w, packs, pack, index):
    """(whether work item w of pack_grid's loop is a full pack, its first element in index's type,
    its elements)."""
    full = w < packs
    return full, index(w * pack if full else w + packs * (pack - 1)), pack if full else 1


@template("body", "store", "PACK", "DST", "pack_array", "store_pack", "opaque")
def _element(dst, count, values, packs):
    # packs: work items 0 to packs - 1 are full packs of PACK elements (the host found dst aligned
    # to them), the rest one element each.
    y = bound.pack_array(bound.DST)
    w, step, work = pack_grid(count, packs, bound.PACK, np.int64)
    while w < work:
        full, i, lanes = pack_item(w, packs, bound.PACK, np.int64)
        for k in range(bound.PACK):
            if k < lanes:
                y[k] = bound.store(bound.body(i + k, values))
        bound.store_pack(dst, i, y, full)
        w = bound.opaque(w + step)


class ElementKernel(CudaKernel):
    """A per-element kernel: launch(stream, count, dst, count, values) stores packs of `lanes`
    elements where dst is aligned to them."""

    def __init__(self, name: str, argtypes, body, dst: DataType) -> None:
        self.lanes = pack_lanes(dst.storage_dtype)
        slots = {key: value for key, value in pack_bindings(self.lanes, dst.storage_dtype, dst.storage_dtype).items() if key != "SRC" and key != "load_pack"}
        super().__init__(_element, name, argtypes, body=body, store=store_fn(dst, DeviceType.kCUDA), **slots)
        self._pack = pack_bytes(self.lanes, dst.storage_dtype)

    def launch(self, stream, elements: int, dst, count: int, values: tuple) -> None:
        # elements is count (ElementKernels' form); the grid covers the work items pack_count finds.
        packs, work = pack_count(self.lanes, count, address(dst) % self._pack)
        CudaKernel.launch(self, stream, work, dst, count, values, packs)


class CudaElementKernels(ElementKernels):
    @function_cache("kernels")
    def kernel(self, body, dst: DataType, values: tuple) -> ElementKernel:
        types = numba.types.Tuple([numba.from_dtype(v.dtype)[::1] if isinstance(v, Array) else numba.from_dtype(v) for v in values])
        argtypes = (numba.from_dtype(dst.storage_dtype)[::1], numba.int64, types, numba.int64)
        # The simulator runs kernels as Python: a body reading a device array runs as Python too.
        if config.ENABLE_CUDASIM and any(isinstance(v, Array) for v in values):
            body = body.py_func
        return ElementKernel(f"{body.__name__}_{dst.value}", argtypes, body, dst)


KERNELS = CudaElementKernels()
