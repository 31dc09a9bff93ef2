"""CpuKernel: a kernel template specialized and compiled with @njit, serial for small work."""
from __future__ import annotations

import functools
from typing import Callable

from numba import njit

from ep.common.jit import specialize
from ep.cpu.threading_layer import choose_threading_layer

# Before any parallel kernel runs: the threading layer is fixed at the first parallel launch.
THREADING_LAYER = choose_threading_layer()

# Below this many elements a launch runs on the calling thread: waking the thread pool costs
# more than the loop.
PARALLEL_THRESHOLD = 1 << 15


class CpuKernel:
    """template specialized with bindings; compiled (and cached on disk) on first call."""

    def __init__(self, template: Callable, name: str, **bindings: object) -> None:
        self._template = template
        self._name = name
        self._bindings = bindings

    @functools.cached_property
    def parallel(self) -> Callable:
        fn = specialize(self._template, self._name + "_parallel", **self._bindings)
        return njit(parallel=True, cache=True)(fn)

    @functools.cached_property
    def serial(self) -> Callable:
        fn = specialize(self._template, self._name + "_serial", **self._bindings)
        return njit(cache=True)(fn)

    def launch(self, stream, work: int, *args: object):
        """Run on args in the calling thread (a cpu stream runs launches at once); work (elements
        touched) picks the serial or the parallel build. Returns what the kernel returns."""
        return (self.serial if work < PARALLEL_THRESHOLD else self.parallel)(*args)
