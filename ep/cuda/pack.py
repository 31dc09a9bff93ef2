"""Packs: the consecutive elements an elementwise kernel moves per thread with one vector access.

A launch's first work items are full packs of PACK elements where its buffers are aligned to their
packs (one 64- or 128-bit load or store per buffer: intrinsics.load_pack, store_pack); the elements
after them (the tail, or all of them where a buffer is not aligned) are work items of one element.
The host decides from the buffers' addresses and passes the number of packs (`packs`, see
`pack_count`) to the kernel.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from numba import config, cuda

from ep.common.jit import scalar_function
from ep.common.math.intrinsics import load_pack, move16, opaque, store_pack

# The widest access a thread makes: one 128-bit load or store.
PACK_BYTES = 16


def pack_lanes(*dtypes: np.dtype, pack_bytes: int = PACK_BYTES) -> int:
    """Elements per pack: as many as the widest of dtypes fits in pack_bytes (at least one)."""
    return max(1, pack_bytes // max(np.dtype(dtype).itemsize for dtype in dtypes))


def op_lanes(narrow_packs: dict, op, src_dtype, dst_dtype) -> int:
    """Elements per pack of op's kernel from src_dtype to dst_dtype (DataTypes): PACK_BYTES of the
    wider storage dtype, or the bytes narrow_packs gives (op, src_dtype), where 16 would spill."""
    pack_bytes = narrow_packs.get((op, src_dtype), PACK_BYTES)
    return pack_lanes(src_dtype.storage_dtype, dst_dtype.storage_dtype, pack_bytes=pack_bytes)


def pack_bytes(lanes: int, dtype: np.dtype) -> int:
    """The bytes of a pack of lanes elements of dtype: a buffer's address must be a multiple of
    them for its packs to move as one access."""
    return lanes * np.dtype(dtype).itemsize


def _move16_simulated(dst, dst_word, src, src_word):
    dst[dst_word] = src[src_word]
    dst[dst_word + 1] = src[src_word + 1]


def move16_function() -> Callable:
    """intrinsics.move16, or on the simulator (which runs kernels as Python, where an LLVM
    intrinsic cannot run) two word moves."""
    return _move16_simulated if config.ENABLE_CUDASIM else move16


@functools.cache
def pack_functions(lanes: int) -> tuple[Callable, Callable, Callable, Callable]:
    """(pack_array(dtype): a thread's lanes, load(lanes_array, src, s, full, stride),
    store(dst, d, lanes_array, full), opaque) for packs of lanes elements. The first three are
    scalar functions holding lanes as the constant that cuda.local.array and intrinsics.load_pack
    and store_pack require (a template's bound slots are not constants to Numba's typing); a kernel
    steps its grid-stride loop through intrinsics.opaque, as NVPTX would unroll it four times."""
    if config.ENABLE_CUDASIM:
        # The simulator runs kernels as Python, where none of them compiles.
        def simulated_array(dtype):
            return np.empty(lanes, dtype)

        def simulated_load(lanes_array, src, s, full, stride):
            for k in range(lanes if full else 1):
                lanes_array[k] = src[s + k * stride]

        def simulated_store(dst, d, lanes_array, full):
            used = lanes if full else 1
            dst[d : d + used] = lanes_array[:used]

        def simulated_opaque(i):
            return i

        return simulated_array, simulated_load, simulated_store, simulated_opaque

    @scalar_function
    def pack_array(dtype):
        return cuda.local.array(lanes, dtype, alignment=PACK_BYTES)

    @scalar_function
    def load(lanes_array, src, s, full, stride):
        load_pack(lanes_array, src, s, full, stride, lanes)

    @scalar_function
    def store(dst, d, lanes_array, full):
        store_pack(dst, d, lanes_array, full, lanes)

    return pack_array, load, store, opaque


def pack_bindings(lanes: int, src_dtype: np.dtype, dst_dtype: np.dtype) -> dict[str, object]:
    """The pack slots of an elementwise template: PACK (lanes), the storage types of its lanes
    (SRC, DST), pack_array, load_pack, store_pack and opaque (pack_functions)."""
    pack_array, load, store, opaque_index = pack_functions(lanes)
    return {
        "PACK": lanes,
        "SRC": np.dtype(src_dtype).type,
        "DST": np.dtype(dst_dtype).type,
        "pack_array": pack_array,
        "load_pack": load,
        "store_pack": store,
        "opaque": opaque_index,
    }


def pack_count(lanes: int, count: int, misaligned: int) -> tuple[int, int]:
    """(packs, work items) of a launch over count elements: count // lanes full packs unless
    misaligned (nonzero: some buffer's address is not a multiple of its pack's bytes, which the
    caller computes from addresses it has at hand, as this is part of every Launch's host work),
    then one work item per element left."""
    if misaligned:
        return 0, count
    packs = count // lanes
    return packs, count - packs * (lanes - 1)
