"""`python -m ep.bench.after`: does one library's thread pool slow the next call of another?

One call of each of ep, NumPy and PyTorch (a mul of 262,144 float32 into out=) is timed right
after one call of each (no pause), all pairs interleaved; the median and 90th percentile per pair.
Set OMP_WAIT_POLICY or GOMP_SPINCOUNT in the environment to see PyTorch's workers' spinning change.
"""
from __future__ import annotations

import statistics
import sys
import time
from typing import Callable

import numpy as np


def calls(count: int) -> dict[str, Callable[[], object]]:
    """{library: a mul of count float32 into an out= of its own}, each run once."""
    import torch

    import ep
    import ep.ops

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(count, dtype=np.float32), rng.standard_normal(count, dtype=np.float32)
    outs = [np.empty_like(a) for _ in range(3)]
    ta, tb, tout = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(outs[2])
    found = {
        "ep": lambda: ep.ops.binary(ep.BinaryOp.kMul, a, b, out=outs[0]),
        "numpy": lambda: np.multiply(a, b, out=outs[1]),
        "torch": lambda: torch.mul(ta, tb, out=tout),
    }
    for fn in found.values():
        fn()
    return found


def after(fns: dict[str, Callable[[], object]], rounds: int) -> dict[tuple[str, str], list[float]]:
    """{(previous, timed): seconds of each call of timed made right after one of previous}."""
    pairs = [(p, c) for c in fns for p in fns]
    seconds: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
    for r in range(rounds):
        shift = r % len(pairs)
        for previous, timed in pairs[shift:] + pairs[:shift]:
            fns[previous]()
            start = time.perf_counter()
            fns[timed]()
            seconds[previous, timed].append(time.perf_counter() - start)
    return seconds


def main(argv: list[str] | None = None) -> int:
    """`python -m ep.bench.after [ROUNDS]`: a line per pair, the timed call's median and 90th
    percentile in us."""
    args = sys.argv[1:] if argv is None else argv
    rounds = int(args[0]) if args else 300
    for (previous, timed), values in after(calls(1 << 18), rounds).items():
        values.sort()
        p90 = values[int(0.9 * len(values))]
        print(f"{timed:6s} right after {previous:6s}: median {statistics.median(values) * 1e6:8.0f} us, p90 {p90 * 1e6:8.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
