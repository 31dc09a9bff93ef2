"""Moving rows of any dtype as raw bytes, in the widest unit that sizes and addresses allow.

A kernel that copies whole rows (gather's inner dimension) does not care about the dtype: it
views each buffer as bytes, then as units of 1, 2, 4, 8 or 16 bytes, and copies units. 16-byte
units are stored as pairs of uint64 words (NumPy has no 16-byte integer) and moved by move16, one
128-bit load and store.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

UNITS = (16, 8, 4, 2, 1)
_UNIT_DTYPE = {
    16: np.dtype(np.uint64),
    8: np.dtype(np.uint64),
    4: np.dtype(np.uint32),
    2: np.dtype(np.uint16),
    1: np.dtype(np.uint8),
}


def address(array) -> int:
    """The address of an array's first element (NumPy, __cuda_array_interface__, or the simulator's arrays)."""
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        interface = array.__array_interface__
    return interface["data"][0]


def move_unit(row_bytes: int, arrays, widest: int) -> int:
    """The widest unit (bytes, at most widest) dividing row_bytes and every array's address."""
    for unit in UNITS:
        if unit <= widest and row_bytes % unit == 0 and all(address(a) % unit == 0 for a in arrays):
            return unit
    raise AssertionError("unreachable: 1 divides everything")


def unit_dtype(unit: int) -> np.dtype:
    """The NumPy dtype a buffer of unit-byte units is viewed as (uint64 words for 16)."""
    return _UNIT_DTYPE[unit]


def as_units(flat, count: int, unit: int):
    """The first count elements of flat storage viewed as unit-byte units (uint64 pairs for 16)."""
    return flat[:count].view(np.uint8).view(_UNIT_DTYPE[unit])


@intrinsic
def move16(typingctx, dst, dst_word, src, src_word):
    """Copy the 16 bytes at word src_word of src to word dst_word of dst (uint64 arrays, 16-byte aligned).

    One vector load and store: Numba's array accesses carry only the element's alignment, so two
    uint64 accesses would never be fused into the 128-bit transaction a GPU moves fastest.
    """

    def codegen(context, builder, signature, args):
        dst_array = context.make_array(signature.args[0])(context, builder, args[0])
        src_array = context.make_array(signature.args[2])(context, builder, args[2])
        vector = ir.VectorType(ir.IntType(64), 2)
        src_pointer = builder.bitcast(builder.gep(src_array.data, [args[3]], inbounds=True), vector.as_pointer())
        dst_pointer = builder.bitcast(builder.gep(dst_array.data, [args[1]], inbounds=True), vector.as_pointer())
        builder.store(builder.load(src_pointer, align=16, typ=vector), dst_pointer, align=16)
        return context.get_dummy_value()

    return types.none(dst, types.intp, src, types.intp), codegen


def _element_pointer(context, builder, array_type, array, index, pointee):
    """A pointer to array[index], cast to pointee*."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [index], inbounds=True), pointee.as_pointer())


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that array[index] will soon be read: its cache line is fetched into every cache level.

    A hint only (never faults), for reads the hardware prefetcher cannot predict, such as the
    rows a gather reads next. CPU only.
    """

    def codegen(context, builder, signature, args):
        byte = ir.IntType(8)
        pointer = _element_pointer(context, builder, signature.args[0], args[0], args[1], byte)
        i32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [byte.as_pointer(), i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0")
        # (address, read, keep in every cache level, data cache)
        builder.call(function, [pointer, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(array, types.intp), codegen
