"""Boxing: a global tensor from one nd-SBP to another over MPI, one hierarchy axis at a time on that
axis's sub-communicator: S->B all-gather, P->B all-reduce, P->S reduce-scatter, S(i)->S(j)
all-to-all(v); B->S, B->P and S->P are local. Pieces may be uneven (OneFlow's balanced splitter).

Arrays go to MPI through the buffer protocol (mpi4py's uppercase methods: no pickling), in place:
the result is allocated once (by ep's allocator, which reuses released results' memory) and
received into, a part that is not contiguous described by a vector datatype (_Blocks), except
where an all-to-all's large strided parts go faster packed one after another in a scratch buffer
by a threaded CopyNd (_packs says where). A reduce-scatter packs its parts (CopyNd) since MPI
reduces only consecutive elements. A CUDA piece is staged through a host copy (no CUDA-aware MPI
path; tested on the simulator only). This module knows local pieces and a global_tensor.Group,
not GlobalTensor, so the two do not import each other.

cost() is the model the global ops choose signatures by: the bytes the ranks receive from one
another in all, counted as the collectives above move them (an all-reduce as a reduce-scatter and
an all-gather).
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ep.common.primitive.copies import copy_to_device, copy_to_host
from ep.common.runtime.allocator import empty, reusable
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType, GetDevice
from ep.common.runtime.dlpack import as_cuda_array
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.sbp.physical import balanced_split, physical_slices
from ep.sbp.sbp import Broadcast, NdSbp, PartialSum, SBP, Split, broadcast

Step = tuple[int, SBP, SBP]

# An all-to-all's strided parts of this many bytes or more may go to MPI packed in a scratch
# buffer by a threaded CopyNd rather than in place as vector datatypes (see _packs).
REARRANGE_BYTES = 4 << 20


def _splits(s: SBP) -> set[int]:
    return {s.axis} if isinstance(s, Split) else set()


def _valid(h: int, state: NdSbp, target: SBP) -> bool:
    """Whether axis h alone may go from state[h] to target: no later axis splits a dim that
    either splits (a later axis splits what the earlier ones left, so it must not reorder them)."""
    dims = _splits(state[h]) | _splits(target)
    return not any(_splits(s) & dims for s in state[h + 1:])


def _walk(state: NdSbp, target: NdSbp, order) -> list[Step] | None:
    steps = []
    for h in order:
        if state[h] != target[h]:
            if not _valid(h, state, target[h]):
                return None
            steps.append((h, state[h], target[h]))
            state = state[:h] + (target[h],) + state[h + 1:]
    return steps


def plans(sbp_in: NdSbp, sbp_out: NdSbp) -> list[list[Step]]:
    """The step lists that take sbp_in to sbp_out: each order of the axes that is valid, else the
    way through broadcast on every axis (last axis first), which always is."""
    found = [p for order in itertools.permutations(range(len(sbp_in))) if (p := _walk(sbp_in, sbp_out, order)) is not None]
    if found:
        return found
    everywhere = (broadcast,) * len(sbp_in)
    return [_walk(sbp_in, everywhere, reversed(range(len(sbp_in)))) + _walk(everywhere, sbp_out, range(len(sbp_in)))]


def _volume(box: tuple[slice, ...]) -> int:
    return math.prod(s.stop - s.start for s in box)


def _overlap(a: tuple[slice, ...], b: tuple[slice, ...]) -> int:
    return math.prod(max(0, min(x.stop, y.stop) - max(x.start, y.start)) for x, y in zip(a, b))


def _step_cost(shape, state: NdSbp, step: Step, hierarchy) -> float:
    """Elements the ranks receive in all for one step."""
    h, source, target = step
    after = state[:h] + (target,) + state[h + 1:]
    parts = hierarchy[h]
    total = 0.0
    for index in itertools.product(*(range(n) for n in hierarchy)):
        new = physical_slices(shape, after, hierarchy, index)
        if isinstance(target, PartialSum):
            continue
        if isinstance(source, PartialSum):
            # Reduce-scatter: (parts - 1) contributions to the piece; all-reduce adds an all-gather.
            total += (parts - 1) * _volume(new) * (2 / parts if isinstance(target, Broadcast) else 1)
        else:
            total += _volume(new) - _overlap(new, physical_slices(shape, state, hierarchy, index))
    return total


def plan_cost(shape, itemsize: int, sbp_in: NdSbp, steps: list[Step], hierarchy) -> float:
    """The bytes a step list moves between ranks in all."""
    total, state = 0.0, tuple(sbp_in)
    for step in steps:
        total += _step_cost(shape, state, step, hierarchy)
        state = state[: step[0]] + (step[2],) + state[step[0] + 1:]
    return total * itemsize


def cost(shape, itemsize: int, sbp_in: NdSbp, sbp_out: NdSbp, hierarchy) -> float:
    """The bytes boxing a tensor of shape from sbp_in to sbp_out moves between ranks in all (the
    cheapest plan's)."""
    if tuple(sbp_in) == tuple(sbp_out):
        return 0.0
    return min(plan_cost(shape, itemsize, sbp_in, p, hierarchy) for p in plans(sbp_in, sbp_out))


# Bytes this rank has received from others by boxing (the tests check the cost model with it).
received = [0]


def _mpi_type(dtype: np.dtype):
    """MPI's predefined datatype for dtype (a derived one would have no MPI_SUM)."""
    from mpi4py import MPI

    found = MPI._typedict.get(np.dtype(dtype).char)
    if found is None:
        raise TypeError(f"dtype: MPI has no predefined datatype for {dtype}, so no sum")
    return found


def _lead(shape, axis: int) -> int:
    """How many blocks a split along axis cuts a C-contiguous array into per part."""
    return math.prod(shape[:axis])


def _split_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    return list(balanced_split(n, parts))


def _take(x: np.ndarray, axis: int, lo: int, hi: int) -> np.ndarray:
    return x[(slice(None),) * axis + (slice(lo, hi),)]


def _empty(shape, dtype: np.dtype) -> np.ndarray:
    """A new C-contiguous host array from ep's allocator: a large one reuses the memory of a
    released one (a result or a scratch buffer) instead of faulting fresh pages in."""
    cpu = GetDevice(DeviceType.kCPU)
    return empty(tuple(shape), as_data_type(dtype), cpu, cpu.default_stream)


@functools.lru_cache(maxsize=1)
def _copy_nd():
    """A 3-d CopyNd on the CPU and the stream it runs on."""
    cpu = GetDevice(DeviceType.kCPU)
    return NewPrimitive(CopyNdFactory, cpu, 3), cpu.default_stream


def _copy_parts(whole: np.ndarray, axis: int, bounds, packed: np.ndarray, unpack: bool) -> None:
    """Between the parts [lo, hi) along axis of whole (C-contiguous) and packed, which holds those
    parts one after another, each C-contiguous: unpack copies packed into whole, else whole into
    packed. One CopyNd launch per part (threaded on the CPU), on raw bytes, so any dtype."""
    copy, stream = _copy_nd()
    lead, n, inner = _lead(whole.shape, axis), whole.shape[axis], math.prod(whole.shape[axis + 1:]) * whole.itemsize
    whole_bytes, packed_bytes = whole.reshape(-1).view(np.uint8), packed.reshape(-1).view(np.uint8)
    start = 0
    for lo, hi in bounds:
        part = (lead, hi - lo, inner)
        part_bytes = packed_bytes[start:start + math.prod(part)]
        start += part_bytes.size
        if part_bytes.size == 0:
            continue
        if unpack:
            copy.Launch(stream, DataType.kUInt8, 3, whole_bytes, (lead, n, inner), (0, lo, 0), part_bytes, part, (0, 0, 0), part)
        else:
            copy.Launch(stream, DataType.kUInt8, 3, part_bytes, part, (0, 0, 0), whole_bytes, (lead, n, inner), (0, lo, 0), part)


def _packs(shape, itemsize: int, axis: int, arrays: int) -> bool:
    """Whether an all-to-all moves the parts along axis of an array of shape packed one after
    another in a scratch buffer (_copy_parts) rather than in place as vector datatypes (_Blocks):
    when they are strided, the array holds REARRANGE_BYTES or more, and the arrays new ones this
    needs (scratch, and result) reuse released memory. MPICH packs and unpacks a vector datatype
    on one thread, CopyNd on all; but writing fresh pages from several threads at once costs more
    than it saves (BENCHMARKS.md, boxing: S(1)->S(0), 64 MiB, 2 ranks: packed 51 ms, in place 56 ms
    into reused memory; 81 ms against 69 ms into fresh memory). An all-gather always goes in
    place: packed, it was slower either way (190 ms against 146 ms; 204 ms against 174 ms)."""
    if _lead(shape, axis) == 1:
        return False
    nbytes = math.prod(shape) * itemsize
    if nbytes < REARRANGE_BYTES:
        return False
    return reusable(nbytes) >= arrays


def _pack(x: np.ndarray, axis: int, bounds) -> np.ndarray:
    """x's parts along axis, one after another (x itself when they already are)."""
    if _lead(x.shape, axis) == 1:
        return x
    packed = _empty((x.size,), x.dtype)
    _copy_parts(x, axis, bounds, packed, unpack=False)
    return packed


def _packed_spec(packed: np.ndarray, shape, axis: int, bounds) -> list:
    """For Alltoallw: the parts along axis of an array of shape, held one after another in packed,
    each a run of bytes."""
    from mpi4py import MPI

    row = math.prod(_with(shape, axis, 1)) * packed.itemsize
    counts = [(hi - lo) * row for lo, hi in bounds]
    return [packed, (counts, list(itertools.accumulate([0] + counts[:-1]))), [MPI.BYTE] * len(counts)]


def _with(shape, axis: int, n: int) -> tuple[int, ...]:
    return tuple(shape[:axis]) + (n,) + tuple(shape[axis + 1:])


def _unit(nbytes: int):
    """The widest MPI integer type whose size divides nbytes (MPI copies a vector of wide
    elements as fast as the raw collective; a byte-wise datatype is several times slower)."""
    from mpi4py import MPI

    return next(t for size, t in ((8, MPI.INT64_T), (4, MPI.INT32_T), (2, MPI.INT16_T), (1, MPI.BYTE)) if nbytes % size == 0)


class _Blocks:
    """For Alltoallw: the parts [lo, hi) along axis of a C-contiguous array of shape, each as
    (count, byte displacement, datatype) over its bytes in place, so MPI reads or writes the array
    itself (no packing copy). A contiguous part is a run of bytes; any other a vector datatype
    (lead blocks of the part's rows, a row's stride apart), freed with free()."""

    def __init__(self, shape, itemsize: int, axis: int, bounds) -> None:
        from mpi4py import MPI

        lead, n, inner = _lead(shape, axis), shape[axis], math.prod(shape[axis + 1:]) * itemsize
        self.counts, self.displs, self.types, self._derived = [], [], [], []
        for lo, hi in bounds:
            self.displs.append(lo * inner)
            if lead == 1 or hi == lo or inner == 0:
                self.counts.append(lead * (hi - lo) * inner)
                self.types.append(MPI.BYTE)
                continue
            unit = _unit(inner)
            size = unit.Get_size()
            t = unit.Create_vector(lead, (hi - lo) * inner // size, n * inner // size).Commit()
            self._derived.append(t)
            self.counts.append(1)
            self.types.append(t)

    def spec(self, x: np.ndarray) -> list:
        return [x, (self.counts, self.displs), self.types]

    def free(self) -> None:
        for t in self._derived:
            t.Free()


def _whole(x: np.ndarray, parts: int) -> list:
    """For Alltoallw: all of x (contiguous bytes) to each of parts ranks."""
    from mpi4py import MPI

    return [x, ([x.nbytes] * parts, [0] * parts), [MPI.BYTE] * parts]


def all_gather(x: np.ndarray, axis: int, whole, comm) -> np.ndarray:
    """S(axis) -> B: the pieces along axis gathered into whole's shape, received in place (strided
    parts: _Blocks). An Alltoallw, not an Allgatherv: MPICH's Allgatherv of 64 MiB took 6x (2
    ranks) to 37x (4 ranks, oversubscribed) as long as this on a loaded 2-core machine; it steps
    round a ring, where Alltoallw posts every transfer at once."""
    parts = comm.Get_size()
    out = _empty(whole, x.dtype)
    blocks = _Blocks(whole, x.itemsize, axis, _split_bounds(whole[axis], parts))
    try:
        comm.Alltoallw(_whole(x, parts), blocks.spec(out))
    finally:
        blocks.free()
    received[0] += out.nbytes - x.nbytes
    return out


def _summed_wider(x: np.ndarray) -> bool:
    """Whether MPI sums x's pieces in float32: bfloat16's (MPI has no bfloat16; the sum rounds once)."""
    return x.dtype == DataType.kBFloat16.dtype


def all_reduce(x: np.ndarray, comm) -> np.ndarray:
    """P -> B: the sum of the pieces on every rank (Allreduce)."""
    from mpi4py import MPI

    if _summed_wider(x):
        return all_reduce(x.astype(np.float32), comm).astype(x.dtype)
    out, mpi_type = _empty(x.shape, x.dtype), _mpi_type(x.dtype)
    comm.Allreduce([x, mpi_type], [out, mpi_type], op=MPI.SUM)
    parts = comm.Get_size()
    received[0] += 2 * (parts - 1) * x.nbytes // parts
    return out


def all_gather_parts(parts: list[np.ndarray] | None, shape: tuple[int, ...], dtypes: list[np.dtype], comm) -> list:
    """Every rank's parts (host arrays of shape, one per dtype; None from a rank without any), in
    comm's order: one all-gather of their bytes and a flag (collective on comm). What a reduction
    or scan over a split dim finishes from, where MPI has no reduction of its rule."""
    sizes = [math.prod(shape) * np.dtype(d).itemsize for d in dtypes]
    mine = np.zeros(sum(sizes) + 1, np.uint8)
    if parts is not None:
        mine[:-1] = np.concatenate([np.ascontiguousarray(p, d).view(np.uint8).ravel() for p, d in zip(parts, dtypes)])
        mine[-1] = 1
    every = np.empty((comm.Get_size(), mine.size), np.uint8)
    comm.Allgather(mine, every)
    starts = np.cumsum([0] + sizes)
    return [[row[a:a + n].view(d).reshape(shape) for a, n, d in zip(starts, sizes, dtypes)] if row[-1] else None for row in every]


def reduce_scatter(x: np.ndarray, axis: int, comm) -> np.ndarray:
    """P -> S(axis): each rank's part of the sum (Reduce_scatter, uneven counts). MPI reduces
    consecutive blocks only, so a split after a leading axis packs the parts first (one copy)."""
    from mpi4py import MPI

    if _summed_wider(x):
        return reduce_scatter(x.astype(np.float32), axis, comm).astype(x.dtype)
    parts, rank = comm.Get_size(), comm.Get_rank()
    bounds = _split_bounds(x.shape[axis], parts)
    counts = [math.prod(_with(x.shape, axis, hi - lo)) for lo, hi in bounds]
    lo, hi = bounds[rank]
    out = _empty(_with(x.shape, axis, hi - lo), x.dtype)
    mpi_type = _mpi_type(x.dtype)
    comm.Reduce_scatter([_pack(x, axis, bounds), mpi_type], [out, mpi_type], counts, op=MPI.SUM)
    received[0] += (parts - 1) * out.nbytes
    return out


def all_to_all(x: np.ndarray, source: int, target: int, whole, comm) -> np.ndarray:
    """S(source) -> S(target): rank r sends each rank its part along target of its own piece and
    receives each rank's part along source of its new piece, both in place (Alltoallw)."""
    parts, rank = comm.Get_size(), comm.Get_rank()
    to_bounds, from_bounds = _split_bounds(whole[target], parts), _split_bounds(whole[source], parts)
    lo, hi = to_bounds[rank]
    shape = _with(whole, target, hi - lo)
    unpack = _packs(shape, x.itemsize, source, arrays=2)
    out = _empty(shape, x.dtype)
    derived = []
    if _packs(x.shape, x.itemsize, target, arrays=1):
        send = _packed_spec(_pack(x, target, to_bounds), x.shape, target, to_bounds)
    else:
        derived.append(_Blocks(x.shape, x.itemsize, target, to_bounds))
        send = derived[-1].spec(x)
    if unpack:
        packed = _empty((out.size,), x.dtype)
        recv = _packed_spec(packed, out.shape, source, from_bounds)
    else:
        derived.append(_Blocks(out.shape, x.itemsize, source, from_bounds))
        recv = derived[-1].spec(out)
    try:
        comm.Alltoallw(send, recv)
    finally:
        for blocks in derived:
            blocks.free()
    if unpack:
        _copy_parts(out, source, from_bounds, packed, unpack=True)
    lo, hi = from_bounds[rank]
    received[0] += out.nbytes - math.prod(_with(out.shape, source, hi - lo)) * x.itemsize
    return out


def _step(x: np.ndarray, source: SBP, target: SBP, whole, index: int, comm) -> np.ndarray:
    """One hierarchy axis from source to target; whole: the shape the axis's group holds together."""
    if isinstance(source, Split):
        if isinstance(target, Broadcast):
            return all_gather(x, source.axis, whole, comm)
        if isinstance(target, Split):
            return all_to_all(x, source.axis, target.axis, whole, comm)
        lo, _ = _split_bounds(whole[source.axis], comm.Get_size())[index]
        out = _nothing(whole, x.dtype)
        _take(out, source.axis, lo, lo + x.shape[source.axis])[...] = x
        return out
    if isinstance(source, PartialSum):
        if isinstance(target, Broadcast):
            return all_reduce(x, comm)
        return reduce_scatter(x, target.axis, comm)
    if isinstance(target, Split):
        lo, hi = _split_bounds(whole[target.axis], comm.Get_size())[index]
        return np.asarray(_take(x, target.axis, lo, hi), order="C")
    # B -> P: the first rank keeps the tensor, the others hold nothing to add.
    return x if index == 0 else _nothing(x.shape, x.dtype)


def _nothing(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A partial sum's pieces that add nothing: zeros, -0.0 for floats (x + -0.0 is x for every x,
    -0.0 too; x + 0.0 would make it +0.0)."""
    return np.full(shape, -0.0 if np.dtype(dtype).kind == "f" else 0, dtype)


def to_host(x) -> np.ndarray:
    """x as a C-contiguous NumPy array (a CUDA array is copied to the host)."""
    if isinstance(x, np.ndarray):
        return np.asarray(x, order="C")
    x = as_cuda_array(x, "x")
    return copy_to_host(x) if x.is_c_contiguous() else x.copy_to_host()  # numba gathers a strided view


def to_device(x: np.ndarray, device_type: DeviceType):
    """A host array on a device of device_type (itself on the cpu)."""
    if device_type is DeviceType.kCPU:
        return x
    return copy_to_device(np.asarray(x, order="C"), "cuda")


@function_cache("plans")
def _route(shape: tuple[int, ...], itemsize: int, sbp_in: NdSbp, sbp_out: NdSbp, hierarchy, index) -> tuple:
    """The cheapest plan's steps that move data, each as (hierarchy axis, source, target, the shape
    that axis's group holds together), for the rank at index: cached, since a program boxes the
    same shapes again and again and planning costs more than a small collective."""
    steps = min(plans(sbp_in, sbp_out), key=lambda p: plan_cost(shape, itemsize, sbp_in, p, hierarchy))
    route, state = [], sbp_in
    for h, source, target in steps:
        if hierarchy[h] > 1:
            # (One part holds the whole of an axis of size 1 under every SBP: nothing moves.)
            whole = tuple(s.stop - s.start for s in physical_slices(shape, state[:h] + (broadcast,) + state[h + 1:], hierarchy, index))
            route.append((h, source, target, whole))
        state = state[:h] + (target,) + state[h + 1:]
    return tuple(route)


def box(local, group, shape: tuple[int, ...], sbp_in: NdSbp, sbp_out: NdSbp):
    """This rank's piece under sbp_out of the logical tensor of shape whose piece under sbp_in is
    local, over the placement's communicators group (global_tensor.Group; collective). A CUDA
    piece goes through a host copy, and its result comes back to the device."""
    placement = group.placement
    route = _route(tuple(shape), np.dtype(local.dtype).itemsize, tuple(sbp_in), tuple(sbp_out), tuple(placement.hierarchy), tuple(group.index))
    x = to_host(local)
    for h, source, target, whole in route:
        x = _step(x, source, target, whole, group.index[h], group.axes[h])
    return to_device(x, placement.device_type)
