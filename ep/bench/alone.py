"""Each peer alone: its workloads timed in a plain loop (as timeit does: no pause between
samples) in a process of its own, where neither ep's thread pool nor the other peer ever ran:
what a user of that library alone sees. The bench runs `python -m ep.bench.alone PEER ...` once
per peer and reads the JSON it prints.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from ep.bench import peers
from ep.bench.ep_calls import Unavailable
from ep.bench.timing import Timing, measure


def run_alone(peer: str, device: str, quick: bool, ids: list[str], repeats: int, min_sample_s: float) -> dict:
    """{"threads": ..., "timings": {workload id: {"out"|"fresh": [seconds per call of each sample]}}}
    of peer in a fresh process; {"error": why} when it failed."""
    command = [sys.executable, "-m", "ep.bench.alone", peer, device, str(int(quick)), ",".join(ids)]
    command += [str(repeats), str(min_sample_s)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        return {"error": (result.stderr or result.stdout).strip().splitlines()[-1:]}
    return json.loads(result.stdout.splitlines()[-1])


def _threads(peer: str) -> dict:
    """The process's OS threads now, whether Numba's pool started (it must not have), and the
    peer's own thread count."""
    import numba

    found = {"os_threads": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None}
    try:
        found["numba_pool"] = numba.threading_layer()
    except ValueError:  # no parallel launch in this process
        found["numba_pool"] = "not started"
    if peer == "torch":
        try:
            found["torch_threads"] = peers.torch_module().get_num_threads()
        except Unavailable as reason:
            found["torch_threads"] = str(reason)
    return found


def _main(peer: str, device: str, quick: str, ids: str, repeats: str, min_sample_s: str) -> None:
    from ep.bench.workloads import workloads

    chosen = set(ids.split(","))
    sync = lambda: None  # noqa: E731
    if device == "cuda":
        from numba import cuda

        sync = cuda.synchronize  # the primary context, which CuPy and PyTorch use too
    timings: dict[str, dict[str, list[float]]] = {}
    for workload in workloads(device, bool(int(quick))):
        if workload.id not in chosen:
            continue
        case = workload.build()
        out = np.zeros(case.out_shape, case.out_dtype)
        calls = peers.candidates(workload, device, case.inputs, out, names=(peer,))
        for (_, with_out), fn in calls.items():
            if isinstance(fn, Unavailable):
                continue
            fn()
            timing: Timing = measure(fn, sync, repeats=int(repeats), min_sample_s=float(min_sample_s), pause=False)
            timings.setdefault(workload.id, {})["out" if with_out else "fresh"] = list(timing.samples_s)
    print(json.dumps({"threads": _threads(peer), "timings": timings}))


if __name__ == "__main__":
    _main(*sys.argv[1:])
