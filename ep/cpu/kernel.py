"""CpuKernel: a kernel template specialized and compiled with @njit (cached on disk), and the
process-wide setting every parallel launch shares: the threading layer (the LLVM target options are
ep.common.jit's)."""
from __future__ import annotations

import functools
from typing import Callable

import numba
from numba import njit

from ep.common.jit import specialize
from ep.common.runtime.once import cached_property
from ep.cpu.threading_layer import choose_threading_layer

# Before any parallel kernel runs: the threading layer is fixed at the first parallel launch.
choose_threading_layer()


class CpuKernel:
    """template specialized with bindings; compiled (and cached on disk) on first use.

    `serial` and `parallel` (a template with a prange: ParallelFor's driver alone) are its builds;
    `task` is a build's address, which compiled code calls (ep.cpu.parallel_for), `entry` a build's
    entry point, which a launch calls without Numba's type dispatch. No build has a cfunc wrapper
    (nothing calls them as C functions), and by_address builds, called only through their address,
    have no CPython wrapper either: each wrapper is a few percent of a small build's compile time.
    """

    def __init__(self, template: Callable, name: str, *, by_address: bool = False, **bindings: object) -> None:
        self._template = template
        self._name = name
        self._bindings = bindings
        self._options = {
            "cache": True,
            "no_cfunc_wrapper": True,
            "no_cpython_wrapper": by_address,
        }

    @cached_property
    def parallel(self) -> Callable:
        fn = specialize(self._template, self._name + "_parallel", **self._bindings)
        return njit(parallel=True, **self._options)(fn)

    @cached_property
    def serial(self) -> Callable:
        fn = specialize(self._template, self._name + "_serial", **self._bindings)
        return njit(**self._options)(fn)

    @functools.lru_cache(maxsize=None)
    def task(self, *arg_types: numba.types.Type, parallel: bool = False) -> int:
        """The address of the serial (or parallel) build compiled for arg_types."""
        compiled = (self.parallel if parallel else self.serial).get_compile_result(numba.types.none(*arg_types))
        return compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)

    @functools.lru_cache(maxsize=None)
    def entry(self, *arg_types: numba.types.Type, parallel: bool = True) -> Callable:
        """The parallel (or serial) build compiled for arg_types: its entry point, which a launch
        calls without Numba's type dispatch, and so only with arguments of exactly those types."""
        build = self.parallel if parallel else self.serial
        build.compile(arg_types)
        return build.overloads[arg_types].entry_point
