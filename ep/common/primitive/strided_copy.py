"""Planning a copy from a broadcast or strided source into a C-contiguous destination, in raw units.

Expand and the device copy behind ops.contiguous share their kernels. A plan describes
the destination as `num_runs` runs of `run` units; run r reads its units from
`map_offset(r, run_strides, src_strides) + j * inner_stride` (j < run), where inner_stride is
1 for a contiguous run, 0 for a broadcast element and anything else for a strided gather. Units
are the widest of 16 (CUDA), 8, 4, 2 or 1 bytes that divides the contiguous run, every source
stride and the addresses of the buffers given (CUDA needs aligned units; the CPU's Expand gives
none), so the kernel never depends on the dtype.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ep.common.primitive.broadcast import simplify_broadcast_dims
from ep.common.runtime.buffer import check_count, storage
from ep.common.primitive.byte_units import as_units, move_unit
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.primitive.strided_storage import raw_units, strided_source

# The most dims a kernel indexes outside its inner run; more only when simplification cannot merge.
MAX_NUM_DIMS = 8


@dataclass(frozen=True)
class CopyPlan:
    """dst dims in units (the last is the inner run) and the source's strides in units."""

    unit: int
    dims: tuple[int, ...]
    src_strides: tuple[int, ...]

    @property
    def ndim(self) -> int:
        """How many dims the kernel indexes outside the inner run (at least 1)."""
        return max(len(self.dims) - 1, 1)

    @property
    def run(self) -> int:
        return self.dims[-1]

    @property
    def inner_stride(self) -> int:
        return self.src_strides[-1]

    @property
    def run_strides(self) -> tuple[int, ...]:
        """Strides, in runs, of the dims outside the inner run."""
        return contiguous_strides(self.dims[:-1] or (1,))

    @property
    def outer_src_strides(self) -> tuple[int, ...]:
        return self.src_strides[:-1] or (0,)

    @property
    def count(self) -> int:
        """Destination units."""
        return math.prod(self.dims)

    @property
    def src_extent(self) -> int:
        """Source units from the first element read to the last, inclusive."""
        return 1 + sum((d - 1) * s for d, s in zip(self.dims, self.src_strides))


def check_dims(dims: object, name: str) -> tuple[int, ...]:
    """dims as a tuple of non-negative ints; TypeError or ValueError naming the entry otherwise."""
    if type(dims) is tuple:
        # Shapes are tuples of non-negative ints: check them without a call per dim.
        for d in dims:
            if type(d) is not int or d < 0:
                break
        else:
            return dims
    if isinstance(dims, (str, bytes)) or not hasattr(dims, "__iter__"):
        raise TypeError(f"{name}: {dims!r} is not a sequence of ints")
    return tuple(check_count(d, f"{name}[{i}]") for i, d in enumerate(dims))


def check_broadcast_dims(small: object, large: object, names: tuple[str, str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(small, large) as int tuples if small broadcasts to large (aligned from the right, each dim equal or 1)."""
    small, large = check_dims(small, names[0]), check_dims(large, names[1])
    if len(small) > len(large):
        raise ValueError(f"{names[0]}: has {len(small)} dims, more than the {len(large)} of {names[1]}")
    lead = len(large) - len(small)
    for i, s in enumerate(small):
        d = large[lead + i]
        if s != d and s != 1:
            raise ValueError(f"{names[0]}[{i}] = {s} does not broadcast to {names[1]}[{lead + i}] = {d}; expected {d} or 1")
    return small, large


def _plan(unit: int, dims: Sequence[int], src_strides: Sequence[int], name: str) -> CopyPlan:
    plan = CopyPlan(unit, tuple(dims) or (1,), tuple(src_strides) or (1,))
    if plan.ndim > MAX_NUM_DIMS:
        raise ValueError(f"{name}: needs {plan.ndim + 1} dims after simplification; at most {MAX_NUM_DIMS + 1} are supported")
    return plan


def expand_plan(src_dims: Sequence[int], dst_dims: Sequence[int], itemsize: int, buffers: Sequence, widest: int) -> CopyPlan:
    """The plan for broadcasting C-contiguous src of src_dims to C-contiguous dst of dst_dims.

    The unit is the widest (at most widest bytes) dividing the contiguous run and the address of
    every array in buffers (none where unaligned moves are fine). The element's bytes become an
    innermost dim, so SimplifyBroadcastDims merges them into the contiguous inner run; once that
    run is counted in units a run of one unit is a size-1 dim, and simplifying again drops it,
    leaving a broadcast dim as the inner run (a fill).
    """
    src_bytes, dst_bytes = simplify_broadcast_dims(tuple(src_dims) + (itemsize,), tuple(dst_dims) + (itemsize,))
    src_bytes, dst_bytes = src_bytes or (1,), dst_bytes or (1,)
    contiguous_run = src_bytes[-1] == dst_bytes[-1]
    unit = move_unit(dst_bytes[-1] if contiguous_run else 1, tuple(buffers), widest)
    if contiguous_run:
        src_bytes = src_bytes[:-1] + (src_bytes[-1] // unit,)
        dst_bytes = dst_bytes[:-1] + (dst_bytes[-1] // unit,)
    src_units, dst_units = simplify_broadcast_dims(src_bytes, dst_bytes)
    return _plan(unit, dst_units, broadcast_strides(src_units, dst_units), "dst_dims")


def _merge_strided(dims: Sequence[int], strides: Sequence[int]) -> tuple[list[int], list[int]]:
    # Arbitrary strides are outside SimplifyBroadcastDims' model: dims of size 1 go, and a dim
    # merges into its outer neighbour when the two step through memory as one dim would.
    out_dims: list[int] = []
    out_strides: list[int] = []
    for d, s in zip(dims, strides):
        if d == 1:
            continue
        if out_dims and out_strides[-1] == s * d:
            out_dims[-1] *= d
            out_strides[-1] = s
        else:
            out_dims.append(d)
            out_strides.append(s)
    return out_dims, out_strides


def strided_plan(dims: Sequence[int], byte_strides: Sequence[int], itemsize: int, src, dst, widest: int) -> CopyPlan:
    """The plan for copying a view with non-negative byte strides into C-contiguous dst."""
    dims, strides = _merge_strided(tuple(dims) + (itemsize,), tuple(byte_strides) + (1,))
    if not dims or strides[-1] != 1:  # one-byte elements whose innermost dim is not contiguous
        dims, strides = dims + [1], strides + [1]
    run_bytes = math.gcd(dims[-1], *strides[:-1])
    unit = move_unit(run_bytes, (src, dst), widest)
    dims[-1] //= unit
    dims, strides = _merge_strided(dims, [s // unit for s in strides[:-1]] + [1])
    return _plan(unit, dims, strides, "src")


def prepare_expand(device_type: DeviceType, dtype: DataType, src_dims, src, dst_dims, dst, widest: int):
    """(plan, src units, dst units) for Expand.Launch after checking every argument; None when dst is empty.

    widest is the device's widest move unit in bytes.
    """
    src_dims, dst_dims = check_broadcast_dims(src_dims, dst_dims, ("src_dims", "dst_dims"))
    src_count, dst_count = math.prod(src_dims), math.prod(dst_dims)
    src = storage(src, "src", device_type, dtype, src_count)
    dst = storage(dst, "dst", device_type, dtype, dst_count, writable=True)
    if dst_count == 0:
        return None
    plan = expand_plan(src_dims, dst_dims, dtype.itemsize, (src, dst), widest)
    return plan, as_units(src, src_count, plan.unit), as_units(dst, dst_count, plan.unit)


def prepare_strided(device_type: DeviceType, dtype: DataType, src, dst, widest: int):
    """(plan, src units, dst units) for Expand.LaunchStrided after checking every argument; None when src is empty."""
    src = strided_source(src, "src", device_type, dtype)
    count = src.size
    dst = storage(dst, "dst", device_type, dtype, count, writable=True)
    if count == 0:
        return None
    plan = strided_plan(src.shape, src.strides, dtype.itemsize, src, dst, widest)
    return plan, raw_units(src, plan.unit, plan.src_extent, device_type), as_units(dst, count, plan.unit)
