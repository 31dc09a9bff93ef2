"""Compile every registered CUDA kernel to PTX without a GPU: `python -m ep.cuda.ptx [FACTORY ...] [--shard I/N] [--ptxas]`.

With --ptxas each PTX is also assembled and checked (ep.cuda.ptxas) as soon as it is compiled, so
the suite compiles every kernel once for both checks. Run in a process without
NUMBA_ENABLE_CUDASIM: the simulator has no compiler.
"""
from __future__ import annotations

import argparse
import sys

from ep.common.runtime.device import DeviceType
from ep.cuda import ptxas
from ep.include.primitive.primitive import RegisteredFactories

CAPABILITIES = ((8, 0), (9, 0))


def kernels(factory_names: list[str] | None = None):
    """(factory name, CudaKernel) for every kernel of the registered CUDA factories, each once
    (factories may share kernels: BatchGather launches Gather's)."""
    # Keyed by id, holding the kernel: a kernel a factory makes afresh would otherwise die and its
    # id pass to a different one, which would then be skipped.
    seen = {}
    for factory_type, factory in RegisteredFactories(DeviceType.kCUDA).items():
        if factory_names and factory_type.__name__ not in factory_names:
            continue
        for kernel in factory.Kernels():
            if id(kernel) not in seen:
                seen[id(kernel)] = kernel
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
