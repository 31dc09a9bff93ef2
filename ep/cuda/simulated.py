"""Numba's CUDA simulator's two gaps, filled once: a warp shuffle reduction (it has no shuffles),
the stand-in the kernels that reduce across lanes (Softmax's rows, Reduce's warps) call there; and
integers typed between scalar functions (`typed_bindings`)."""
from __future__ import annotations

import threading
from types import FunctionType
from typing import Callable, Iterable

import numpy as np
from numba import typeof
from numba.core import types
from numba.core.dispatcher import Dispatcher



def lanes_reduce(value: object, combine: Callable, lanes: Callable[[int, int], Iterable[int]]) -> object:
    """value of each thread of the block posted in a table of the block, and after a barrier the
    values of lanes(thread, block size) combined in order. Called by every thread of the block
    alike, as a shuffle is; a second barrier keeps the table until every thread has read it."""
    thread = threading.current_thread()
    block = thread._manager
    size = int(np.prod(block._block_dim))
    table = block.__dict__.setdefault("ep_lane_values", [None] * size)
    table[thread.thread_id] = value
    thread.syncthreads()
    lane = iter(lanes(thread.thread_id, size))
    if isinstance(combine, Dispatcher):
        combine = _Typed(combine)
    result = table[next(lane)]
    for k in lane:
        result = combine(result, table[k])
    thread.syncthreads()
    return result


def typed_function(function: Callable) -> Callable:
    """function (Python, which the simulator runs) calling the compiled functions among its globals
    as typed_bindings' bindings are called: their uint64 results as NumPy uint64 scalars."""
    globals_ = {name: _Typed(value) if isinstance(value, Dispatcher) else value for name, value in function.__globals__.items()}
    return FunctionType(function.__code__, globals_, function.__name__, function.__defaults__, function.__closure__)


def typed_bindings(bound: object) -> None:
    """Wrap the compiled scalar functions among a simulated kernel's bindings (the attributes of
    bound) so that their uint64 results come back as NumPy uint64 scalars.

    The simulator runs a kernel's body as Python, calling its scalar functions compiled for the CPU;
    Numba boxes integer results as Python ints, which the next call types as int64: a uint64 state
    would then compute in int64, and 2**64 - 1 raise OverflowError (on a GPU values stay typed).
    """
    for name, value in list(vars(bound).items()):
        if isinstance(value, Dispatcher):
            setattr(bound, name, _Typed(value))
        elif isinstance(value, FunctionType) and any(isinstance(v, Dispatcher) for v in value.__globals__.values()):
            setattr(bound, name, typed_function(value))  # a Python stand-in calling compiled functions


class _Typed:
    """dispatcher, called from Python with its uint64 results typed; passed to a compiled
    function, it is dispatcher itself (its Numba type)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self._numba_type_ = types.Dispatcher(dispatcher)
        self._overloads = 0
        self._uint64 = False

    def __call__(self, *args: object) -> object:
        result = self.dispatcher(*args)
        # Only a uint64 result can be mistyped (a Python int below 2**63 is typed int64; narrower
        # unsigned values fit int64 and are widened on the GPU too), and typing a call's arguments
        # costs more than the call: the index arithmetic (fast_divmod's uint32) stays in Python ints.
        overloads = self.dispatcher.overloads
        if len(overloads) != self._overloads:
            self._overloads = len(overloads)
            self._uint64 = any(_has_uint64(c.signature.return_type) for c in overloads.values())
        if not self._uint64:
            return result
        compiled = overloads.get(tuple(typeof(arg) for arg in args))
        return result if compiled is None else _typed(result, compiled.signature.return_type)


def _has_uint64(numba_type: types.Type) -> bool:
    if isinstance(numba_type, types.BaseTuple):
        return any(_has_uint64(item) for item in numba_type)
    return numba_type == types.uint64


def _typed(value: object, numba_type: types.Type) -> object:
    """value, as Numba boxed it, as a NumPy uint64 where numba_type is uint64."""
    if isinstance(numba_type, types.BaseTuple):
        return tuple(_typed(item, item_type) for item, item_type in zip(value, numba_type))
    if numba_type == types.uint64:
        return np.uint64(value)
    return value
