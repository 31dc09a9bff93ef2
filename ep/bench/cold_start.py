"""C, the cold start: `import ep` and the first call of one primitive, each in a fresh process
that finds Numba's on-disk cache already warm."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

_SCRIPT = """
import json, time
start = time.perf_counter()
import ep
imported = time.perf_counter()
import numpy as np
device = {device!r}
primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
stream = ep.GetDevice(device).CreateStream()
x = np.linspace(-1, 1, 16, dtype=np.float32)
if device == "cuda":
    from numba import cuda
    src, dst = cuda.to_device(x), cuda.device_array(16, np.float32)
else:
    src, dst = x, np.empty_like(x)
primitive.Launch(stream, src, dst, 16)
stream.Sync()
done = time.perf_counter()
print(json.dumps({{"import_s": imported - start, "first_call_s": done - imported}}))
"""

PRIMITIVE = "ElementwiseUnary kRelu float32 -> float32, 16 elements"


def _run_once(device: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(device=device)], capture_output=True, text=True, timeout=600, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def cold_start(device: str, repeats: int) -> dict:
    """Median seconds of `import ep` and of NewPrimitive + first Launch + Sync, over `repeats`
    fresh processes after one that warms the disk cache."""
    _run_once(device)
    runs = [_run_once(device) for _ in range(repeats)]
    return {
        "import_s": statistics.median(r["import_s"] for r in runs),
        "first_call_s": statistics.median(r["first_call_s"] for r in runs),
        "repeats": repeats,
        "primitive": PRIMITIVE,
    }
