"""Compile every registered CUDA kernel to PTX without a GPU: `python -m ep.cuda.ptx [FACTORY ...] [--shard I/N] [--ptxas]`.

With --ptxas each PTX is also assembled and checked (ep.cuda.ptxas) as soon as it is compiled, so
the suite compiles every kernel once for both checks. Run in a process without
NUMBA_ENABLE_CUDASIM: the simulator has no compiler.
"""
from __future__ import annotations

import argparse
import sys

from ep.common.ir_copy import blocks_copied_as_one_graph
from ep.common.runtime.device import DeviceType
from ep.cuda import ptxas
from ep.include.primitive.primitive import RegisteredFactories

CAPABILITIES = ((8, 0), (9, 0))


def share_inlined_ir() -> None:
    """Make numba-cuda build each inlined scalar function's untyped IR once per process, not once per call site.

    Every kernel inlines its scalar functions (`inline="always"`) at the IR level: for each call
    numba-cuda's InlineWorker.inline_function runs the frontend and the untyped passes on the callee
    (and, through them, on every function the callee inlines), then inline_ir inlines a deep copy. That
    IR depends only on the function, so over hundreds of kernels most of it is rebuilt from the same
    bytecode. This keeps it per function, as numba-cuda itself keeps an inlined overload's IR
    (typing/templates.py, `_inline_overloads`); inline_ir never mutates the IR it is given.
    Private API of numba-cuda (InlineWorker.inline_function, run_untyped_passes, inline_ir), used
    only by this check: the PTX is the same (tests/test_ptx.py compares a kernel of every family).
    """
    from numba.cuda.core import inline_closurecall
    from numba.cuda.core.inline_closurecall import InlineWorker

    if getattr(InlineWorker.inline_function, "shares_ir", False):
        return
    untyped_ir = {}

    def inline_function(self, caller_ir, block, i, function, arg_typs=None):
        try:
            callee_ir = untyped_ir[function]
        except KeyError:
            callee_ir = untyped_ir[function] = self.run_untyped_passes(function)
        with blocks_copied_as_one_graph(inline_closurecall):
            return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars, arg_typs=arg_typs)

    inline_function.shares_ir = True
    InlineWorker.inline_function = inline_function


def kernels(factory_names: list[str] | None = None):
    """(factory name, CudaKernel) for every kernel of the registered CUDA factories, each once
    (factories may share kernels: BatchGather launches Gather's)."""
    seen = set()
    for factory_type, factory in RegisteredFactories(DeviceType.kCUDA).items():
        if factory_names and factory_type.__name__ not in factory_names:
            continue
        for kernel in factory.Kernels():
            if id(kernel) not in seen:
                seen.add(id(kernel))
                yield factory_type.__name__, kernel


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    index, count = int(index), int(count)
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"--shard: {text!r} is not I/N with 0 <= I < N")
    return index, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("factories", nargs="*", help="factory interface names (default: all)")
    parser.add_argument("--shard", type=_shard, default=(0, 1), help="compile only every N-th kernel from the I-th on")
    parser.add_argument("--ptxas", action="store_true", help="assemble each PTX with ptxas and check the code")
    args = parser.parse_args(argv)
    index, shards = args.shard
    share_inlined_ir()
    count = 0
    failures = []
    rows = []
    for position, (factory_name, kernel) in enumerate(kernels(args.factories)):
        if position % shards != index:
            continue
        for cc in CAPABILITIES:
            try:
                ptx = kernel.ptx(cc)
                if ".entry" not in ptx:
                    raise RuntimeError("no .entry in the PTX")
                if args.ptxas:
                    rows.append(ptxas.check(factory_name.removesuffix("Factory"), kernel, ptx, cc))
                count += 1
            except Exception as error:  # report every failing kernel, not just the first
                failures.append(f"{factory_name} {kernel.name} sm_{cc[0]}{cc[1]}: {type(error).__name__}: {error}")
    if rows:
        print(ptxas.tables(rows))
    failures += [f"{row.name} sm_{row.cc[0]}{row.cc[1]}: {finding}" for row in rows for finding in row.findings]
    for line in failures:
        print("FAILED", line)
    print(f"ptx: {count} compiled, {len(failures)} failed")
    return 1 if failures or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
