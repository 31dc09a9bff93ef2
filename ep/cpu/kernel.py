"""CpuKernel: a kernel template specialized and compiled with @njit, serial for small work."""
from __future__ import annotations

import functools
import hashlib
from typing import Callable

from numba import njit

from ep.common.jit import specialize
from ep.cpu.threading_layer import choose_threading_layer

# Before any parallel kernel runs: the threading layer is fixed at the first parallel launch.
THREADING_LAYER = choose_threading_layer()

# Below this many elements a launch runs on the calling thread: waking the thread pool costs
# more than the loop.
PARALLEL_THRESHOLD = 1 << 15


# Only explicit prange loops become parallel: the templates write their loops themselves, so
# Numba's passes that turn array expressions, comprehensions and reductions over arrays into
# parallel loops, and fuse such loops, find nothing to gain and cost seconds of compilation.
_PARALLEL_OPTIONS = {
    **dict.fromkeys(("comprehension", "reduction", "inplace_binop", "setitem", "numpy", "stencil", "fusion"), False),
    "prange": True,
}
# The options are part of a parallel build's name, which keys Numba's disk cache (its index
# does not record options): a build made with other options is not loaded.
_PARALLEL_NAME = "_parallel_" + hashlib.sha256(repr(sorted(_PARALLEL_OPTIONS.items())).encode()).hexdigest()[:6]


class CpuKernel:
    """template specialized with bindings; compiled (and cached on disk) on first call."""

    def __init__(self, template: Callable, name: str, **bindings: object) -> None:
        self._template = template
        self._name = name
        self._bindings = bindings

    @functools.cached_property
    def parallel(self) -> Callable:
        fn = specialize(self._template, self._name + _PARALLEL_NAME, **self._bindings)
        # A copy of the options: Numba consumes the dict.
        return njit(parallel=dict(_PARALLEL_OPTIONS), cache=True)(fn)

    @functools.cached_property
    def serial(self) -> Callable:
        fn = specialize(self._template, self._name + "_serial", **self._bindings)
        return njit(cache=True)(fn)

    def launch(self, stream, work: int, *args: object):
        """Run on args in the calling thread (a cpu stream runs launches at once); work (elements
        touched) picks the serial or the parallel build. Returns what the kernel returns."""
        return (self.serial if work < PARALLEL_THRESHOLD else self.parallel)(*args)
