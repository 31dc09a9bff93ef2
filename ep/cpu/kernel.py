"""CpuKernel: a kernel template specialized and compiled with @njit, one build for every size;
SpanKernel: a serial span run in chunks by the one parallel driver."""
from __future__ import annotations

import functools
from typing import Callable

import numba
import numpy as np
from numba import njit, prange
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from ep.common.jit import specialize, template
from ep.cpu.compiler import KernelCompiler
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
    a prange: the tasks a parallel kernel calls, and the span entries that hand a launch's
    arguments to the one span driver.

    No build has a cfunc wrapper (nothing calls them as C functions), and by_address builds are
    tasks, called only through their address (task()), so they have no CPython wrapper either:
    each wrapper is a few percent of a small build's compile time.
    """

    def __init__(self, template: Callable, name: str, *, by_address: bool = False, **bindings: object) -> None:
        self._template = template
        self._name = name
        self._bindings = bindings
        self._options = {
            "cache": True,
            "pipeline_class": KernelCompiler,
            "no_cfunc_wrapper": True,
            "no_cpython_wrapper": by_address,
        }

    @functools.cached_property
    def parallel(self) -> Callable:
        fn = specialize(self._template, self._name + "_parallel", **self._bindings)
        return njit(parallel=True, **self._options)(fn)

    @functools.cached_property
    def serial(self) -> Callable:
        fn = specialize(self._template, self._name + "_serial", **self._bindings)
        return njit(**self._options)(fn)

    @functools.lru_cache(maxsize=None)
    def task(self, *arg_types: numba.types.Type, parallel: bool = False) -> int:
        """The address of the serial (or parallel) build compiled for arg_types, which a kernel
        calls with call_task."""
        compiled = (self.parallel if parallel else self.serial).get_compile_result(numba.types.none(*arg_types))
        return compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name)

    @functools.lru_cache(maxsize=None)
    def entry(self, *arg_types: numba.types.Type, parallel: bool = True) -> Callable:
        """The parallel (or serial) build compiled for arg_types: its entry point, which a launch
        calls without Numba's type dispatch, and so only with arguments of exactly those types."""
        build = self.parallel if parallel else self.serial
        build.compile(arg_types)
        return build.overloads[arg_types].entry_point

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
        _call(context, builder, signature.args[1], llvm_args)
        return context.get_dummy_value()

    return numba.types.none(address, args), codegen


def _call(context, builder, args_type, llvm_args):
    # The call through the address, an error status propagated.
    arg_types = tuple(args_type)
    function_type = context.call_conv.get_function_type(numba.types.none, arg_types)
    pointer = builder.inttoptr(llvm_args[0], function_type.as_pointer())
    values = cgutils.unpack_tuple(builder, llvm_args[1])
    status, _ = context.call_conv.call_function(builder, pointer, numba.types.none, arg_types, values)
    with cgutils.if_unlikely(builder, status.is_error):
        context.call_conv.return_status_propagate(builder, status)


def buffer_type(array) -> numba.types.Array:
    """Numba's type of array (a flat buffer, as storage() returns it), as numba.typeof gives it but
    in a few attribute reads for a 1-d C-contiguous NumPy array (numba.typeof takes microseconds)."""
    if type(array) is np.ndarray and array.ndim == 1 and (flags := array.flags).c_contiguous:
        return _flat_type(array.dtype, flags.writeable)
    return numba.typeof(array)


@functools.cache
def _flat_type(dtype: np.dtype, writeable: bool) -> numba.types.Array:
    return numba.types.Array(numba.from_dtype(dtype), 1, "C", readonly=not writeable)


@template()
def _drive(task, address, count, chunk, parallel):
    # The spans [start, stop) of items [0, count) of the arguments at address, chunk items each:
    # in a prange, or one after another on the calling thread. np.int64: prange's index is
    # unsigned, and the span takes signed positions.
    chunks = (count + chunk - 1) // chunk
    if parallel:
        for c in prange(chunks):
            start = np.int64(c) * chunk
            stop = start + chunk
            # Not min(): Numba compiles its overload anew in each kernel (time a first launch waits).
            call_task(task, (address, start, stop if stop < count else count))
    else:
        for c in range(chunks):
            start = np.int64(c) * chunk
            stop = start + chunk
            call_task(task, (address, start, stop if stop < count else count))


@template()
def _enter(driver, task, args, count, chunk, parallel):
    # The launch's arguments in this frame, their address to the driver: a serial build per
    # argument types, a few calls, where a parallel loop over them would cost a parfor's compile.
    call_task(driver, (task, address_of(args), count, chunk, parallel))


# The one parallel build: every span reaches it through an entry (_enter, or a family's own) with
# its arguments' address, so the parfor passes' cost (most of a small kernel's compile) is paid
# once per process.
_DRIVER = CpuKernel(_drive, "span_driver", by_address=True)
_ENTER = CpuKernel(_enter, "span_entry")
_POSITION = numba.int64


def span_driver() -> int:
    """The address of the one parallel driver, which an entry calls with (a span's task, its
    arguments' address, item count, items per chunk, parallel)."""
    return _DRIVER.task(_POSITION, _POSITION, _POSITION, _POSITION, numba.boolean, parallel=True)


@intrinsic
def address_of(typingctx, value):
    """The address of a copy of value in the calling function's stack frame, valid until it returns."""

    def codegen(context, builder, signature, args):
        slot = cgutils.alloca_once_value(builder, args[0])
        return builder.ptrtoint(slot, context.get_value_type(numba.int64))

    return numba.int64(value), codegen


@intrinsic
def load_from(typingctx, address, value_type):
    """The value of type value_type (a type as a value) at address, as address_of stored it."""
    loaded = value_type.instance_type

    def codegen(context, builder, signature, args):
        pointer = builder.inttoptr(args[0], context.get_value_type(loaded).as_pointer())
        # A reference of its own: Numba releases the value at the end of its life in the caller.
        return impl_ret_borrowed(context, builder, loaded, builder.load(pointer))

    return loaded(address, value_type), codegen


def input_array(dtype: np.dtype, ndim: int = 1) -> numba.types.Array:
    """The type of a launch's input storage of dtype: read-only and of any alignment, so one type
    serves every such array (neither changes the code LLVM makes of a span)."""
    return numba.types.Array(numba.from_dtype(dtype), ndim, "C", readonly=True, aligned=False)


def output_array(dtype: np.dtype) -> numba.types.Array:
    """The type of a launch's output storage of dtype (writable; of any alignment)."""
    return numba.types.Array(numba.from_dtype(dtype), 1, "C", aligned=False)


class SpanKernel:
    """template(address, start, stop), a serial loop over items [start, stop) of a launch whose
    arguments, of arg_types, it reads with load_from(address, bound.ARGS); compiled on its own, one
    build per op and types. Launches run it through the one parallel driver, handed the
    arguments' address by a serial entry compiled for their types.

    The entry point is called without Numba's type dispatch: args must match arg_types (arrays
    C-contiguous, of exactly their dtype and dimensions; any flags), as launches' checked storage
    does.
    """

    def __init__(self, template: Callable, name: str, arg_types: tuple[numba.types.Type, ...], **bindings: object) -> None:
        self.args_type = numba.types.Tuple(arg_types)
        self.span = CpuKernel(template, name, by_address=True, ARGS=self.args_type, **bindings)

    @functools.cached_property
    def task(self) -> int:
        """The address of the span's build, which the driver calls with (arguments' address, start, stop)."""
        return self.span.task(_POSITION, _POSITION, _POSITION)

    @functools.cached_property
    def compiled(self) -> tuple[Callable, int, int]:
        """The entry's compiled entry point, the driver's address and the span's task."""
        entry = _ENTER.entry(numba.int64, numba.int64, self.args_type, _POSITION, _POSITION, numba.boolean, parallel=False)
        return entry, span_driver(), self.task

    def run(self, args: tuple, count: int, work: int) -> None:
        """The span over items [0, count) of args, in parallel when work (elements touched) reaches
        PARALLEL_THRESHOLD."""
        entry, driver, task = self.compiled
        if work >= PARALLEL_THRESHOLD:
            # One contiguous chunk per thread: Numba's schedule would give each thread a
            # contiguous block of the chunks anyway (more chunks measured no faster).
            entry(driver, task, args, count, -(-count // numba.get_num_threads()), True)
        else:
            entry(driver, task, args, count, count, False)
