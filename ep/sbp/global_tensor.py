"""Global tensors over MPI: each rank of a placement holds its piece of one logical tensor, laid out
by an nd-SBP (OneFlow's global view). mpi4py loads on the first global tensor, not with ep.

A placement spans every rank of its communicator (MPI.COMM_WORLD unless comm= says otherwise), in
any order: the rank at hierarchy position index is placement.rank(index).
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.runtime.device import DeviceType
from ep.sbp.boxing import box, to_host
from ep.sbp.physical import Index, physical_shape
from ep.sbp.placement import Placement
from ep.sbp.sbp import NdSbp, PartialSum, Split, broadcast, nd_sbp


class Group:
    """The communicators of a placement: comm (rank = flat hierarchy position), the rank's index in
    the hierarchy, and one sub-communicator per hierarchy axis (the ranks that differ only there)."""

    __slots__ = ("placement", "comm", "index", "axes")

    def __init__(self, placement: Placement, world) -> None:
        index = next(i for i in placement.indices() if placement.rank(i) == world.Get_rank())
        self.placement, self.index = placement, index
        self.comm = world.Split(0, placement.indices().index(index))
        if len(placement.hierarchy) == 1:
            self.axes = (self.comm,)
        else:
            # Ranks sharing every other index form axis h's group, ordered by their index on h.
            hierarchy = placement.hierarchy
            self.axes = tuple(
                self.comm.Split(int(np.ravel_multi_index(index[:h] + (0,) + index[h + 1:], hierarchy)), index[h])
                for h in range(len(hierarchy))
            )


_GROUPS: dict = {}


def group(placement: Placement, world) -> Group:
    """The cached Group of placement on the communicator world (collective on its first use)."""
    key = (placement, world.py2f())
    found = _GROUPS.get(key)
    if found is None:
        found = _GROUPS[key] = Group(placement, world)
    return found


def world_comm(comm=None):
    """comm, or MPI.COMM_WORLD (importing mpi4py)."""
    if comm is not None:
        return comm
    from mpi4py import MPI

    return MPI.COMM_WORLD


def device_name(placement: Placement) -> str:
    return "cpu" if placement.device_type is DeviceType.kCPU else "cuda"


class GlobalTensor:
    """This rank's piece (to_local()) of a logical tensor of shape shape laid out by sbp (one SBP
    per hierarchy axis) over placement. Make one with to_global."""

    __slots__ = ("_local", "_group", "sbp", "shape", "dtype")

    def __init__(self, local, group_: Group, sbp: NdSbp, shape: tuple[int, ...]) -> None:
        self._local, self._group, self.sbp, self.shape = local, group_, sbp, shape
        self.dtype = np.dtype(local.dtype)

    @property
    def placement(self) -> Placement:
        return self._group.placement

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def index(self) -> Index:
        """This rank's position in the placement's hierarchy."""
        return self._group.index

    def to_local(self):
        """This rank's piece (on the placement's device)."""
        return self._local

    def to_global(self, placement: Placement | None = None, sbp=None) -> GlobalTensor:
        """The same logical tensor under sbp (boxing: collective); placement must be this one's."""
        if placement is not None and placement != self.placement:
            raise ValueError(f"placement: {placement!r} differs from the tensor's {self.placement!r}; ep boxes within one placement")
        if sbp is None:
            return self
        sbp = nd_sbp(sbp, len(self.placement.hierarchy))
        for s in sbp:
            if isinstance(s, Split) and s.axis >= self.ndim:
                raise ValueError(f"sbp: {s!r} splits axis {s.axis} of a tensor of rank {self.ndim}")
            if isinstance(s, PartialSum) and self.dtype.kind == "b":
                raise TypeError(f"sbp: {s!r} of a bool tensor is no sum")
        if sbp == self.sbp:
            return self
        return GlobalTensor(box(self._local, self._group, self.shape, self.sbp, sbp), self._group, sbp, self.shape)

    def numpy(self) -> np.ndarray:
        """The whole logical array, on every rank (collective)."""
        local = self.to_global(sbp=(broadcast,) * len(self.placement.hierarchy))._local
        return local.copy() if isinstance(local, np.ndarray) else to_host(local)

    def __repr__(self) -> str:
        sbp = ", ".join(map(repr, self.sbp))
        return f"GlobalTensor(shape={self.shape}, dtype={self.dtype}, sbp=({sbp},), {self.placement!r})"


def _logical_shape(shapes: dict[Index, tuple[int, ...]], sbp: NdSbp, hierarchy: tuple[int, ...]) -> tuple[int, ...] | None:
    """The logical shape whose balanced pieces under sbp are shapes (by position), or None."""
    first = shapes[(0,) * len(hierarchy)]
    logical = []
    for d in range(len(first)):
        splitting = {h for h, s in enumerate(sbp) if isinstance(s, Split) and s.axis == d}
        # Positions at 0 on every axis that does not split d hold, together, all of dim d.
        logical.append(sum(shape[d] for index, shape in shapes.items() if all(index[h] == 0 for h in range(len(hierarchy)) if h not in splitting)))
    logical = tuple(logical)
    if any(physical_shape(logical, sbp, hierarchy, index) != shape for index, shape in shapes.items()):
        return None
    return logical


def _key(placement: object) -> str:
    return repr(placement)


def _metadata_error(metas: list) -> Exception | None:
    """The error every rank raises for the gathered metadata, or None: the same on every rank."""
    first = metas[0]
    for rank, meta in enumerate(metas):
        if meta[0] != first[0]:
            return ValueError(f"placement: rank {rank} gave {meta[0]} and rank 0 {first[0]}; every rank must give the same placement")
        if meta[1] != first[1]:
            return ValueError(f"sbp: rank {rank} gave {meta[1]} and rank 0 {first[1]}; every rank must give the same sbp")
    for rank, meta in enumerate(metas):
        if meta[4] is not None:
            return meta[4][0](f"rank {rank}: {meta[4][1]}")
    for rank, meta in enumerate(metas):
        if meta[3] != first[3]:
            return TypeError(f"local: rank {rank} holds {meta[3]} and rank 0 {first[3]}; every piece must have one dtype")
        if len(meta[2]) != len(first[2]):
            return ValueError(f"local: rank {rank}'s piece has shape {meta[2]} and rank 0's {first[2]}; every piece must have one rank")
    return None


def to_global(local, placement: Placement, sbp, *, comm=None) -> GlobalTensor:
    """A global tensor from this rank's piece local (a NumPy array, or a CUDA array on a "cuda"
    placement) laid out by sbp over placement; the logical shape comes from every rank's piece
    (collective: every rank of comm calls it; a bad argument raises the same error on every rank).
    Split pieces must have OneFlow's balanced sizes (ep.sbp.balanced_split)."""
    world = world_comm(comm)
    try:
        if not isinstance(placement, Placement):
            raise TypeError(f"placement: {placement!r} is not a Placement; make one with ep.placement(device, ranks)")
        sbp = nd_sbp(sbp, len(placement.hierarchy))
        ranks = sorted(placement.rank(i) for i in placement.indices())
        if ranks != list(range(world.Get_size())):
            raise ValueError(f"placement: ranks {ranks} are not the {world.Get_size()} ranks of the communicator; a placement spans all of them")
        expected = "cpu" if placement.device_type is DeviceType.kCPU else "cuda"
        is_numpy = isinstance(local, np.ndarray)
        if expected == "cpu" and not is_numpy or expected == "cuda" and (is_numpy or not hasattr(local, "shape")):
            raise TypeError(f"local: {type(local).__name__} is not an array on {expected}, the placement's device")
        for s in sbp:
            if isinstance(s, Split) and s.axis >= len(local.shape):
                raise ValueError(f"sbp: {s!r} splits axis {s.axis} of a piece of rank {len(local.shape)}")
            if isinstance(s, PartialSum) and np.dtype(local.dtype).kind == "b":
                raise TypeError(f"sbp: {s!r} of a bool tensor is no sum")
        meta = (_key(placement), repr(sbp), tuple(local.shape), str(np.dtype(local.dtype)), None)
    except (TypeError, ValueError) as e:
        meta = (_key(placement), repr(sbp), (), "", (type(e), str(e)))
    # Plain metadata (pickled: a few bytes) from every rank, so every rank raises the same error.
    metas = world.allgather(meta)
    failure = _metadata_error(metas)
    if failure is not None:
        raise failure
    group_ = group(placement, world)
    shapes = {i: metas[placement.rank(i)][2] for i in placement.indices()}
    logical = _logical_shape(shapes, sbp, placement.hierarchy)
    if logical is None:
        pieces = ", ".join(f"rank {placement.rank(i)}: {s}" for i, s in shapes.items())
        raise ValueError(f"local: the pieces ({pieces}) are not the balanced pieces of any logical shape under sbp {sbp!r}")
    return GlobalTensor(local, group_, sbp, logical)


def is_global(x: object) -> bool:
    """Whether x is a GlobalTensor."""
    return type(x) is GlobalTensor
