"""ParallelFor, OneFlow's CpuStream::ParallelFor: a serial span run over items [0, count) in
chunks on the threading layer or, below PARALLEL_THRESHOLD, on the calling thread. Every CPU
primitive runs its kernels with it.

A span is a kernel template `span(start, stop, args)`: a serial loop over items [start, stop) of a
launch whose arguments are the tuple args. How it gets there is private to this module: the span
is compiled on its own (one build per op and argument types), wrapped to read args from an
address; one parallel driver, compiled once per process, calls it by address on each chunk; and a
serial entry per argument types stores the launch's arguments in its frame and hands their
address to the driver. So no primitive compiles a parfor of its own (the parallel passes were most
of a small kernel's compile time), and the driver never links and recompiles a span. Launches call
the entry without Numba's type dispatch (a third of a tiny launch), so args must have exactly
the declared types: arrays 1-d and C-contiguous, of exactly their dtype (as checked storage is).
A span of one item per element of an output (ParallelFor's aligned=) gets chunks that start on its
64-byte boundaries, after a head span up to the first.

A span indexes its rows by unsigned offsets (`dst[np.uint64(base) + j]`), never by a slice per row:
each slice counts a reference to its array, an atomic on a line that every thread writes, which
Numba leaves in where the span branches (a pad of 512 rows took 3.5x its serial time on two
threads; an add along a broadcast middle dim 10x). Unsigned indices also let LLVM drop Numba's
wraparound checks and vectorize.
"""
from __future__ import annotations

import os
from typing import Callable

import numba
import numpy as np
from numba import prange
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from ep.common.jit import bound, scalar_function, specialize, template
from ep.common.runtime.caches import function_cache
from ep.common.runtime.once import cached_property
from ep.cpu.kernel import CpuKernel

# Below this much work (elements touched) a launch runs on the calling thread: waking the thread
# pool costs more than the loop.
PARALLEL_THRESHOLD = 1 << 15
# The boundary aligned= starts chunks on: a cache line, which a vector store must not straddle.
LINE_BYTES = 64
# Bytes a parallel chunk moves at least, where a primitive sets a grain: every chunk's start costs
# (divisions, and atomic reference counts of the arrays it slices, which the threads' cores pass
# back and forth), so a 1 MiB gather in 256 chunks took 4x its time in 16.
TASK_BYTES = 1 << 16

# The threads of Numba's pool, fixed when the process starts (NUMBA_NUM_THREADS), which a parallel
# launch splits its items among; 0 in a child forked after an OpenMP pool started: GNU OpenMP's
# pool does not survive fork() (Numba kills a child that launches on it), so the child's launches
# run on the calling thread, as PyTorch's do. TBB's pool survives.
_threads = numba.config.NUMBA_NUM_THREADS


def _after_fork_in_child() -> None:
    global _threads
    try:
        layer = numba.threading_layer()  # raises until the first parallel launch starts the pool
    except ValueError:
        return
    if layer == "omp":
        _threads = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


def input_array(dtype: np.dtype, ndim: int = 1) -> numba.types.Array:
    """The type of a launch's input storage of dtype: read-only and of any alignment, so one type
    serves every such array (neither changes the code LLVM makes of a span)."""
    return numba.types.Array(numba.from_dtype(dtype), ndim, "C", readonly=True, aligned=False)


def output_array(dtype: np.dtype) -> numba.types.Array:
    """The type of a launch's output storage of dtype (writable; of any alignment)."""
    return numba.types.Array(numba.from_dtype(dtype), 1, "C", aligned=False)


class ParallelFor:
    """span (a template `span(start, stop, args)` with bindings) over items of a launch whose args
    have arg_types; compiled on first use and cached on disk."""

    def __init__(
        self, span: Callable, name: str, arg_types: tuple[numba.types.Type, ...], *, aligned: int | None = None, **bindings: object
    ) -> None:
        """aligned: the position in args of the array whose item i the span writes at index i, if
        any: the launch's chunks then start where that array is 64-byte aligned, after a head
        span up to the first such item (NumPy's arrays are 16-byte aligned, and 64-byte vector
        stores across two cache lines run slower: a 1 MiB relu into such an array took 12% longer)."""
        self.args_type = numba.types.Tuple(arg_types)
        self.aligned = aligned
        body = scalar_function(specialize(span, name + "_body", **bindings))
        self.span = CpuKernel(_span_at, name, by_address=True, span=body, ARGS=self.args_type)

    @cached_property
    def _entry(self) -> tuple[Callable, int, int]:
        """(the entry's compiled entry point, the driver's address, the span's address)."""
        enter = _ENTER if self.aligned is None else _aligned_enter(self.aligned)
        entry = enter.entry(_INDEX, _INDEX, self.args_type, _INDEX, _INDEX, _INDEX, _INDEX, parallel=False)
        driver = _DRIVER.task(_INDEX, _INDEX, _INDEX, _INDEX, _INDEX, numba.boolean, parallel=True)
        return entry, driver, self.span.task(_INDEX, _INDEX, _INDEX)

    def compile(self) -> None:
        """Build the span and its entry now, not at the first launch."""
        self._entry  # the cached property builds them

    @cached_property
    def run(self) -> Callable[..., None]:
        """run(args, count, work, grain=0): the span over items [0, count) of args, in chunks of
        grain items (default: one chunk per thread), in parallel when work (elements touched)
        reaches PARALLEL_THRESHOLD, else on the calling thread (in one chunk unless grain is given).
        A function of its own, not a method: a launcher binds it (a method call was a tenth of a
        tiny launch)."""
        entry, driver, span = self._entry

        def run(args: tuple, count: int, work: int, grain: int = 0) -> None:
            entry(driver, span, args, count, work, grain, _threads)

        return run

    @cached_property
    def launch(self) -> Callable[..., None]:
        """launch(stream, count, *args), CudaKernel.launch's form, for a span of one item per element:
        the span over items [0, count) of args (a cpu stream runs it at once)."""
        entry, driver, span = self._entry

        def launch(stream: object, count: int, *args: object) -> None:
            entry(driver, span, args, count, count, 0, _threads)

        return launch


@template("span", "ARGS")
def _span_at(address, start, stop):
    # The span on the arguments the entry stored at address.
    bound.span(start, stop, load_from(address, bound.ARGS))


@template()
def _drive(span, address, first, count, chunk, parallel):
    # The spans [start, stop) of items [first, count), chunk items each: in a prange, or one after
    # another on the calling thread. np.int64: prange's index is unsigned, and spans take signed
    # positions.
    chunks = (count - first + chunk - 1) // chunk
    if parallel:
        for c in prange(chunks):
            start = first + np.int64(c) * chunk
            stop = start + chunk
            # Not min(): Numba compiles its overload anew in each kernel (time a first launch waits).
            _call(span, (address, start, stop if stop < count else count))
    else:
        for c in range(chunks):
            start = first + np.int64(c) * chunk
            stop = start + chunk
            _call(span, (address, start, stop if stop < count else count))


@scalar_function
def _schedule(driver, span, address, count, work, grain, threads, head, quantum):
    # Items [0, head) on the calling thread, then [head, count) in chunks of a multiple of quantum
    # items: in parallel when work reaches PARALLEL_THRESHOLD. Chosen here, compiled: in Python it
    # was a tenth of a tiny launch.
    if head > 0:
        _call(span, (address, np.int64(0), head))
    parallel = work >= PARALLEL_THRESHOLD and threads > 0
    if grain > 0:
        chunk = grain
    elif parallel:
        # One contiguous chunk per pool thread: Numba's static schedule gives each running thread a
        # contiguous block of the chunks (more chunks measured no faster). The pool's size, not
        # numba.get_num_threads(): that call took 0.7 us of every launch, and with fewer threads
        # set the schedule still shares the chunks out evenly.
        chunk = ((count - head + threads - 1) // threads + quantum - 1) // quantum * quantum
    else:
        chunk = count - head
    if count > head:
        _call(driver, (span, address, head, count, chunk, parallel))


@template()
def _enter(driver, span, args, count, work, grain, threads):
    # The launch's arguments in this frame, their address to the driver: a serial build per
    # argument types, a few calls, where a parallel loop over them would cost a parfor's compile.
    if count > 0:
        _schedule(driver, span, address_of(args), count, work, grain, threads, np.int64(0), np.int64(1))


@template("ALIGNED")
def _enter_aligned(driver, span, args, count, work, grain, threads):
    # _enter, with chunks of whole LINE_BYTES-item blocks from the first line-aligned item of
    # args[ALIGNED]: every chunk starts on a line (for items of any size).
    if count > 0:
        head = line_head(args[bound.ALIGNED], 0, count)
        _schedule(driver, span, address_of(args), count, work, grain, threads, head, np.int64(LINE_BYTES))


@function_cache("kernels")
def _aligned_enter(position: int) -> CpuKernel:
    """The entry of spans aligned to args[position]."""
    return CpuKernel(_enter_aligned, f"span_entry_aligned_{position}", ALIGNED=position)


@intrinsic
def _call(typingctx, address, args):
    """Call the compiled function at address (CpuKernel.task, compiled for exactly the types of the
    tuple args) on args. Called by name instead, Numba would link its code into the caller and into
    its parallel loop, and optimize and compile it again in each."""

    def codegen(context, builder, signature, llvm_args):
        arg_types = tuple(signature.args[1])
        function_type = context.call_conv.get_function_type(numba.types.none, arg_types)
        pointer = builder.inttoptr(llvm_args[0], function_type.as_pointer())
        values = cgutils.unpack_tuple(builder, llvm_args[1])
        status, _ = context.call_conv.call_function(builder, pointer, numba.types.none, arg_types, values)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return context.get_dummy_value()

    return numba.types.none(address, args), codegen


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


@scalar_function
def line_head(array, start, count):
    """How many of array's items [start, start + count) come before its first one on a cache
    line (all count if none does): an aligned= launch's first chunk ends there."""
    head = ((-(array.ctypes.data + start * array.itemsize)) & (LINE_BYTES - 1)) // array.itemsize
    return head if head < count else count


# The one parallel build, reached by every span through an entry with its arguments' address, so
# the parfor passes' cost is paid once per process.
_DRIVER = CpuKernel(_drive, "span_driver", by_address=True)
_ENTER = CpuKernel(_enter, "span_entry")
_INDEX = numba.int64
