"""C, the cold start: `import ep`, and the first call of unary, binary, gather and expand, each in
a fresh process: with a cold cache (an empty Numba cache directory, so the kernels compile) and
with a warm one (filled by an earlier process, so they load from disk); in wall time and in the
process's CPU time (compiling is CPU work, which other load on the machine does not inflate).
"expand after a small one" is a large expand's first call after a tiny expand in the same
process: what a warm-up at one size leaves to compile for another."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

_SCRIPT = """
import json, time
start = time.perf_counter()
import ep
import ep.ops
imported = time.perf_counter()
import numpy as np
device, op = {device!r}, {op!r}
rng = np.random.default_rng(0)
x = rng.standard_normal((1000, 1000)).astype(np.float32)
args = {{
    "unary": lambda: (ep.ops.unary, ("relu", x)),
    "binary": lambda: (ep.ops.binary, ("add", x, x)),
    "gather": lambda: (ep.ops.gather, (x, rng.integers(0, 1000, 100))),
    "expand": lambda: (ep.ops.expand, (x[:1], (1000, 1000))),
    "expand after a small one": lambda: (ep.ops.expand, (x[:1], (1000, 1000))),
}}
fn, inputs = args[op]()
if op == "expand after a small one":
    ep.ops.expand(x[:1, :4], (4, 4))
if device == "cuda":
    from numba import cuda
    inputs = tuple(cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in inputs)
ready, ready_cpu = time.perf_counter(), time.process_time()
fn(*inputs)
if device == "cuda":
    cuda.synchronize()
done, done_cpu = time.perf_counter(), time.process_time()
print(json.dumps({{"import_s": imported - start, "first_call_s": done - ready, "first_call_cpu_s": done_cpu - ready_cpu}}))
"""

#: The ops whose first call is measured, and what it is.
CALLS = {
    "unary": "unary relu of float32 [1000, 1000]",
    "binary": "binary add of two float32 [1000, 1000]",
    "gather": "gather of 100 int64 indices from float32 [1000, 1000] along axis 0",
    "expand": "expand of float32 [1, 1000] to [1000, 1000]",
    "expand after a small one": "the same expand after one of float32 [1, 4] to [4, 4] in the process",
}


def _run_once(device: str, op: str, cache_dir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(device=device, op=op)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        env=env,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def cold_start(device: str, repeats: int) -> dict:
    """Median seconds, over `repeats` fresh processes each, of `import ep` and of each op's first
    call in wall time (cold_s, warm_s) and CPU time (cold_cpu_s, warm_cpu_s): "cold" with an empty
    Numba cache directory per process, "warm" with the one that the op's first cold process filled."""
    imports = []
    result = {"cold_s": {}, "warm_s": {}, "cold_cpu_s": {}, "warm_cpu_s": {}}

    def record(cache: str, op: str, runs: list[dict]) -> None:
        imports.extend(r["import_s"] for r in runs)
        result[f"{cache}_s"][op] = statistics.median(r["first_call_s"] for r in runs)
        result[f"{cache}_cpu_s"][op] = statistics.median(r["first_call_cpu_s"] for r in runs)

    for op in CALLS:
        cache_dirs = [tempfile.mkdtemp(prefix="ep-cold-") for _ in range(repeats)]
        try:
            record("cold", op, [_run_once(device, op, cache_dir) for cache_dir in cache_dirs])
            record("warm", op, [_run_once(device, op, cache_dirs[0]) for _ in range(repeats)])
        finally:
            for cache_dir in cache_dirs:
                shutil.rmtree(cache_dir, ignore_errors=True)
    return {"import_s": statistics.median(imports), **result, "repeats": repeats, "calls": CALLS}
