"""Global tensors over MPI: each rank of a placement holds its piece of one logical tensor, laid out
by an nd-SBP (OneFlow's global view). mpi4py loads on the first global tensor, not with ep.

A placement spans every rank of its communicator (MPI.COMM_WORLD unless comm= says otherwise), in
any order: the rank at hierarchy position index is placement.rank(index).
"""
from __future__ import annotations

import contextvars
import functools
import hashlib
import inspect
import math
from typing import Callable, TypeVar

import numpy as np

from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.dlpack import host_array, is_dlpack
from ep.sbp.boxing import box, to_host
from ep.sbp.physical import Index, physical_shape
from ep.sbp.placement import Placement
from ep.sbp.sbp import NdSbp, PartialSum, Split, broadcast, nd_sbp


class Group:
    """The communicators of a placement: comm (rank = flat hierarchy position), the rank's index in
    the hierarchy, and one sub-communicator per hierarchy axis (the ranks that differ only there)."""

    __slots__ = ("placement", "world", "comm", "index", "axes", "_over")

    def __init__(self, placement: Placement, world) -> None:
        index = next(i for i in placement.indices() if placement.rank(i) == world.Get_rank())
        self.placement, self.world, self.index = placement, world, index
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
        self._over = {}

    def over(self, axes: tuple[int, ...]):
        """The communicator of the ranks that differ only on the hierarchy axes axes, ordered by
        their index there (the first axis slowest, as nd splits nest): axes[h] for one axis;
        collective on comm on first use, cached."""
        if len(axes) == 1:
            return self.axes[axes[0]]
        found = self._over.get(axes)
        if found is None:
            hierarchy = self.placement.hierarchy
            others = tuple(0 if h in axes else i for h, i in enumerate(self.index))
            key = np.ravel_multi_index(tuple(self.index[h] for h in axes), tuple(hierarchy[h] for h in axes))
            found = self._over[axes] = self.comm.Split(int(np.ravel_multi_index(others, hierarchy)), int(key))
        return found


_GROUPS: dict = {}


def group(placement: Placement, world) -> Group:
    """The cached Group of placement on the communicator world (collective on its first use)."""
    key = (placement, world.py2f())
    found = _GROUPS.get(key)
    # MPI hands a freed communicator's handle to the next one: the cached Group's world is then null.
    if found is None or found.world != world:
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


# Agreement: every collective entry (to_global, GlobalTensor.to_global and .numpy, every global op)
# first gathers a description of its arguments from every rank, so that ranks calling it
# differently all raise one clear error instead of exchanging mismatched buffers (or waiting).

_AGREED = contextvars.ContextVar("ep.sbp.agreed", default=False)
_Result = TypeVar("_Result")


def describe(value: object) -> str:
    """value as ranks compare it: a global tensor by shape, dtype, SBP and placement, an array by
    type, shape and dtype (and a 0-d or 1-d host array by its values: an attribute such as dims=
    may be one),
    a sequence item by item, anything else by repr (by type where that repr is an address)."""
    if type(value) is GlobalTensor:
        sbp = ", ".join(map(repr, value.sbp))
        return f"a global tensor of shape {value.shape} and dtype {value.dtype} laid out by ({sbp},) on {value.placement!r}"
    if isinstance(value, (list, tuple)):
        items = [describe(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in value.items()) + "}"
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(value, (np.generic, type)):
        kind = f"a {type(value).__module__.partition('.')[0]}.{type(value).__name__} of shape {tuple(shape)} and dtype {dtype}"
        values = _host_values(value)
        return kind if values is None else f"{kind} holding {values}"
    if type(value).__repr__ is object.__repr__:
        return f"a {type(value).__qualname__}"
    return repr(value)


def _host_values(array: object) -> str | None:
    """A 0-d or 1-d host array's values as ranks compare them (a digest past 64 elements); None for
    device arrays and arrays of more dims (no attribute is one)."""
    try:
        host = array if isinstance(array, np.ndarray) else host_array(array, "value") if is_dlpack(array) else None
    except TypeError:  # a CUDA array, or one DLPack does not export
        return None
    if host is None or host.ndim > 1:
        return None
    host = np.asarray(host, order="C")
    return repr(host.tolist()) if host.size <= 64 else "bytes " + hashlib.sha256(host.tobytes()).hexdigest()[:16]


def _builtin(error: BaseException) -> type:
    """error's nearest builtin class (IndexError for ep's IndexOutOfRange): one every rank can
    build from a message."""
    return next(k for k in type(error).__mro__ if k.__module__ == "builtins")


def agree(comm, call: str, arguments: dict[str, object] | None, error: BaseException | None = None, local: object = None) -> list:
    """Collective on comm (one allgather): every rank's local, once every rank gave call the same
    arguments (by describe) and none had an error. Otherwise every rank raises the same error: the
    first error of a rank whose arguments are None (a call Python refused), else a ValueError
    naming the first argument a rank gave unlike rank 0, else the first rank's error."""
    described = None if arguments is None else {name: describe(value) for name, value in arguments.items()}
    failure = None if error is None else (_builtin(error), str(error))
    gathered = comm.allgather((described, failure, local))
    for rank, (theirs, failure, _) in enumerate(gathered):
        if theirs is None:
            raise failure[0](f"rank {rank}: {failure[1]}")
    first = gathered[0][0]
    for rank, (theirs, _, _) in enumerate(gathered):
        # The keys both gave: a global op's plan adds its own where it succeeded (an error there is raised below).
        for name in (k for k in first if k in theirs):
            if theirs[name] != first[name]:
                raise ValueError(
                    f"{name}: rank {rank} gave {theirs[name]} and rank 0 {first[name]}; "
                    f"every rank must give the same {name} to {call}"
                )
    for rank, (_, failure, _) in enumerate(gathered):
        if failure is not None:
            raise failure[0](f"rank {rank}: {failure[1]}")
    return [entry[2] for entry in gathered]


def run_agreed(call: str, signature: inspect.Signature, args: tuple, kwargs: dict, run: Callable[[], _Result]) -> _Result:
    """run(), once every rank agreed on the call's arguments (bound to signature; agree, on the
    communicator of the first global tensor among them, else MPI.COMM_WORLD). Collective entries
    run calls are not checked again."""
    if _AGREED.get():
        return run()
    try:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments, error = bound.arguments, None
    except TypeError as e:  # Python's own refusal (a missing or extra argument), shared so that no rank waits
        arguments, error = None, e
    values = (*args, *kwargs.values()) if arguments is None else arguments.values()
    world = next((v._group.world for v in values if type(v) is GlobalTensor), None)
    agree(world_comm(world), call, arguments, error)
    token = _AGREED.set(True)
    try:
        return run()
    finally:
        _AGREED.reset(token)


def collective(call: str):
    """Decorator: a collective entry named call, run once every rank agreed on its arguments (run_agreed)."""

    def decorate(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def entry(*args, **kwargs):
            return run_agreed(call, signature, args, kwargs, lambda: function(*args, **kwargs))

        return entry

    return decorate


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

    @collective("GlobalTensor.to_global")
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

    @collective("GlobalTensor.numpy")
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
        # Object, string and structured dtypes have no kernels, and their bytes (PyObject pointers)
        # mean nothing on another rank.
        as_data_type(local.dtype, "local")
        for s in sbp:
            if isinstance(s, Split) and s.axis >= len(local.shape):
                raise ValueError(f"sbp: {s!r} splits axis {s.axis} of a piece of rank {len(local.shape)}")
            if isinstance(s, PartialSum) and np.dtype(local.dtype).kind == "b":
                raise TypeError(f"sbp: {s!r} of a bool tensor is no sum")
        piece, error = (tuple(local.shape), str(np.dtype(local.dtype))), None
    except Exception as e:  # shared, so that no rank waits in agree
        piece, error = None, e
    # Plain metadata (pickled: a few bytes) from every rank, so every rank raises the same error.
    pieces = agree(world, "ep.to_global", {"placement": placement, "sbp": sbp}, error, piece)
    first = pieces[0]
    for rank, (shape, dtype) in enumerate(pieces):
        if dtype != first[1]:
            raise TypeError(f"local: rank {rank} holds {dtype} and rank 0 {first[1]}; every piece must have one dtype")
        if len(shape) != len(first[0]):
            raise ValueError(f"local: rank {rank}'s piece has shape {shape} and rank 0's {first[0]}; every piece must have one rank")
    group_ = group(placement, world)
    shapes = {i: pieces[placement.rank(i)][0] for i in placement.indices()}
    logical = _logical_shape(shapes, sbp, placement.hierarchy)
    if logical is None:
        listed = ", ".join(f"rank {placement.rank(i)}: {s}" for i, s in shapes.items())
        raise ValueError(f"local: the pieces ({listed}) are not the balanced pieces of any logical shape under sbp {sbp!r}")
    return GlobalTensor(local, group_, sbp, logical)


def is_global(x: object) -> bool:
    """Whether x is a GlobalTensor."""
    return type(x) is GlobalTensor
