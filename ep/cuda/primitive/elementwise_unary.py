"""ElementwiseUnary's CUDA kernel: one grid-stride kernel per (op, src dtype, dst dtype), moving
packs (ep.cuda.pack)."""
from __future__ import annotations

import numba
import numpy as np

from ep.common.jit import bound, template
from ep.common.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl, ElementwiseUnaryKernels, unary_bindings
from ep.common.runtime.buffer import address
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.element import pack_grid, pack_item
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import op_lanes, pack_bindings, pack_bytes, pack_count
from ep.include.primitive.elementwise_unary import ElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.unary_op import UnaryOp

# Ops that compute in float64 at every dtype (ops/transcendental.py).
FLOAT64_FORMULAS = frozenset({UnaryOp.kDigamma, UnaryOp.kTrigamma, UnaryOp.kLgamma, UnaryOp.kErfInv})
# Pack bytes below 16 for (op, src dtype): two lanes of libdevice's float64 erf took 90 registers
# on sm_90 (one lane: 18), cutting that kernel (no launch bounds) to 25% occupancy.
NARROW_PACKS = {(UnaryOp.kErf, DataType.kDouble): 8}


def computes_in_float64(op, src_dtype: DataType, dst_dtype: DataType) -> bool:
    """Whether op's kernel from src_dtype to dst_dtype computes in float64. Its values take register
    pairs: under the 32-register cap of full occupancy most such kernels would spill (the ptxas
    check found 33-60 registers), so they declare no launch bounds."""
    return op in FLOAT64_FORMULAS or np.float64 in (src_dtype.compute_dtype, dst_dtype.compute_dtype)


@template("formula", "load", "store", "PACK", "SRC", "DST", "pack_array", "load_pack", "store_pack", "opaque")
def _unary(src, dst, count, attr0, attr1, packs):
    # packs: work items 0 to packs - 1 are full packs of PACK elements (the host found both buffers
    # aligned to them), the rest one element each. The lane loop has a constant trip count: LLVM
    # unrolls it and keeps the lanes in registers, and the formula is inlined once.
    x = bound.pack_array(bound.SRC)
    y = bound.pack_array(bound.DST)
    w, step, work = pack_grid(count, packs, bound.PACK, np.int64)
    while w < work:
        full, i, lanes = pack_item(w, packs, bound.PACK, np.int64)
        bound.load_pack(x, src, i, full, 1)
        for k in range(bound.PACK):
            if k < lanes:
                y[k] = bound.store(bound.formula(bound.load(x[k]), attr0, attr1))
        bound.store_pack(dst, i, y, full)
        w = bound.opaque(w + step)


class PackedUnaryKernel(CudaKernel):
    """A unary kernel launched as ElementwiseUnaryImpl launches a device's kernel; it moves packs
    of `lanes` elements where the buffers are aligned to them."""

    def __init__(self, name: str, argtypes, lanes: int, src_dtype, dst_dtype, **options: object) -> None:
        super().__init__(_unary, name, argtypes, **options, **pack_bindings(lanes, src_dtype, dst_dtype))
        self.lanes = lanes
        self._src_pack, self._dst_pack = pack_bytes(lanes, src_dtype), pack_bytes(lanes, dst_dtype)

    def launch(self, stream, work: int, src, dst, count: int, attr0, attr1) -> None:
        # work is count, as ElementwiseUnaryImpl passes it: packs make fewer work items.
        packs, work = pack_count(self.lanes, count, address(src) % self._src_pack or address(dst) % self._dst_pack)
        CudaKernel.launch(self, stream, work, src, dst, count, attr0, attr1, packs)


class CudaElementwiseUnaryKernels(ElementwiseUnaryKernels):
    @function_cache("kernels")
    def kernel(self, op, src_dtype, dst_dtype) -> CudaKernel:
        compute = numba.from_dtype(src_dtype.compute_dtype)
        argtypes = (
            numba.from_dtype(src_dtype.storage_dtype)[::1],
            numba.from_dtype(dst_dtype.storage_dtype)[::1],
            numba.int64,
            compute,
            compute,
            numba.int64,
        )
        name = f"unary_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        lanes = op_lanes(NARROW_PACKS, op, src_dtype, dst_dtype)
        return PackedUnaryKernel(
            name, argtypes, lanes, src_dtype.storage_dtype, dst_dtype.storage_dtype,
            full_occupancy=not computes_in_float64(op, src_dtype, dst_dtype), **unary_bindings(DeviceType.kCUDA, op, src_dtype, dst_dtype),
        )


# One instance, so that Cast (cast.py) launches the very kernels ElementwiseUnary compiled.
UNARY_KERNELS = CudaElementwiseUnaryKernels()
REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ElementwiseUnaryFactory, ElementwiseUnaryFactoryImpl(DeviceType.kCUDA, UNARY_KERNELS))
