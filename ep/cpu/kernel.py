"""CpuKernel: a kernel template specialized and compiled with @njit, one build for every size."""
from __future__ import annotations

import functools
from typing import Callable

import numba
import numpy as np
from numba import njit
from numba.core import cgutils
from numba.extending import intrinsic

from ep.common.jit import specialize
from ep.cpu.target import hoist_loop_constants, prefer_full_vector_width
from ep.cpu.threading_layer import choose_threading_layer

# Before any parallel kernel runs: the threading layer is fixed at the first parallel launch.
THREADING_LAYER = choose_threading_layer()
# Likewise before the first compilation: the LLVM target options.
CPU_FEATURES = prefer_full_vector_width()
LLVM_OPTIONS = hoist_loop_constants()

# Below this many elements a launch runs on the calling thread: waking the thread pool costs
# more than the loop.
PARALLEL_THRESHOLD = 1 << 15


class CpuKernel:
    """template specialized with bindings; compiled (and cached on disk) on first call.

    `parallel` is the build for templates with a prange: one for every size, the template's last
    argument saying whether to run the prange or, below PARALLEL_THRESHOLD, the same loop on the
    calling thread (so a small first launch warms every size). `serial` builds templates without
    a prange, such as the tasks a parallel kernel calls.
    """

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

    @functools.lru_cache(maxsize=None)
    def task(self, *arg_types: numba.types.Type, returns: numba.types.Type = numba.types.none) -> int:
        """The address of the serial build compiled for arg_types and returning returns, which a
        kernel calls with call_task (call_function when it returns a value)."""
        compiled = self.serial.get_compile_result(returns(*arg_types))
        return compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)

    def launch(self, stream, work: int, *args: object):
        """Run the parallel build on args and whether work (elements touched) reaches
        PARALLEL_THRESHOLD, from the calling thread (a cpu stream runs launches at once).
        Returns what the kernel returns."""
        return self.parallel(*args, work >= PARALLEL_THRESHOLD)



@intrinsic
def call_task(typingctx, address, args):
    """Call the compiled function at address (CpuKernel.task, compiled for exactly the types of
    the tuple args) on args. Called by name instead, Numba would link the task's code into the
    kernel and into its parallel loop, and optimize and compile it again in each (seconds of a
    first launch); through an address it is compiled once, and the kernel knows only its types."""

    def codegen(context, builder, signature, llvm_args):
        _call(context, builder, numba.types.none, signature.args[1], llvm_args)
        return context.get_dummy_value()

    return numba.types.none(address, args), codegen


@intrinsic
def call_function(typingctx, address, args, returns):
    """call_task of a function returning a number of type returns (a number class, such as np.int64;
    CpuKernel.task(..., returns=the type)); returns its value."""
    restype = returns.instance_type

    def codegen(context, builder, signature, llvm_args):
        return _call(context, builder, restype, signature.args[1], llvm_args)

    return restype(address, args, returns), codegen


def _call(context, builder, restype, args_type, llvm_args):
    # The call through the address, an error status propagated; the function's value.
    arg_types = tuple(args_type)
    function_type = context.call_conv.get_function_type(restype, arg_types)
    pointer = builder.inttoptr(llvm_args[0], function_type.as_pointer())
    values = cgutils.unpack_tuple(builder, llvm_args[1])
    status, value = context.call_conv.call_function(builder, pointer, restype, arg_types, values)
    with cgutils.if_unlikely(builder, status.is_error):
        context.call_conv.return_status_propagate(builder, status)
    return value


def buffer_type(array) -> numba.types.Array:
    """Numba's type of array (a flat buffer, as storage() returns it), as numba.typeof gives it but
    in a few attribute reads for a 1-d C-contiguous NumPy array (numba.typeof takes microseconds)."""
    if type(array) is np.ndarray and array.ndim == 1 and (flags := array.flags).c_contiguous:
        return _flat_type(array.dtype, flags.writeable)
    return numba.typeof(array)


@functools.cache
def _flat_type(dtype: np.dtype, writeable: bool) -> numba.types.Array:
    return numba.types.Array(numba.from_dtype(dtype), 1, "C", readonly=not writeable)
