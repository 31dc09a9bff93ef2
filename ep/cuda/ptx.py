"""Compile every registered CUDA kernel to PTX without a GPU: `python -m ep.cuda.ptx [FACTORY ...]`.

Run in a process without NUMBA_ENABLE_CUDASIM: the simulator has no compiler.
"""
from __future__ import annotations

import argparse
import sys

from ep.common.runtime.device import DeviceType
from ep.include.primitive.primitive import RegisteredFactories

CAPABILITIES = ((8, 0), (9, 0))


def kernels(factory_names: list[str] | None = None):
    """(factory name, CudaKernel) for every kernel of the registered CUDA factories."""
    for factory_type, factory in RegisteredFactories(DeviceType.kCUDA).items():
        if factory_names and factory_type.__name__ not in factory_names:
            continue
        for kernel in factory.Kernels():
            yield factory_type.__name__, kernel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("factories", nargs="*", help="factory interface names (default: all)")
    args = parser.parse_args(argv)
    count = 0
    failures = []
    for factory_name, kernel in kernels(args.factories):
        for cc in CAPABILITIES:
            try:
                ptx = kernel.ptx(cc)
                if ".entry" not in ptx:
                    raise RuntimeError("no .entry in the PTX")
                count += 1
            except Exception as error:  # report every failing kernel, not just the first
                failures.append(f"{factory_name} {kernel.name} sm_{cc[0]}{cc[1]}: {type(error).__name__}: {error}")
    for line in failures:
        print("FAILED", line)
    print(f"ptx: {count} compiled, {len(failures)} failed")
    return 1 if failures or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
