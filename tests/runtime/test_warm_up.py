"""A first call at one size compiles what every size of the same dtypes needs: on the CPU one build
serves launches below and above PARALLEL_THRESHOLD, so a small warm-up leaves nothing to compile."""
import json
import os
import subprocess
import sys

import pytest

from ep.cpu.parallel_for import PARALLEL_THRESHOLD

# Each case runs a small call, then records what Numba compiles during a large one of the same
# dtypes and op, in a fresh process with an empty cache; results are checked against NumPy.
SCRIPT = """
import json
import numpy as np
from numba.core import event
import ep, ep.ops

rng = np.random.default_rng(0)
small = rng.standard_normal((4, 4)).astype(np.float32)
large = rng.standard_normal(({n}, {n})).astype(np.float32)
cases = {{
    "unary": (lambda x: ep.ops.unary("relu", x), lambda x: np.maximum(x, 0)),
    "binary": (lambda x: ep.ops.binary("add", x, x), lambda x: x + x),
    "binary row": (lambda x: ep.ops.binary("mul", x, x[0]), lambda x: x * x[0]),
    "expand": (lambda x: ep.ops.expand(x[:1], x.shape), lambda x: np.broadcast_to(x[:1], x.shape)),
    "expand_grad": (lambda x: ep.ops.expand_grad(x, (1, x.shape[1])), lambda x: x.sum(0, keepdims=True)),
    "sum": (lambda x: ep.ops.sum(x, 0), lambda x: x.sum(0)),
    "cumsum": (lambda x: ep.ops.cumsum(x.reshape(-1), 0), lambda x: np.cumsum(x.reshape(-1), dtype=np.float64)),
}}
report = {{}}
for name, (call, expected) in cases.items():
    call(small)
    with event.install_recorder("numba:compile") as recorder:
        result = call(large)
    np.testing.assert_allclose(result, expected(large), rtol=1e-5, atol=1e-4)
    report[name] = [e.data["dispatcher"].py_func.__qualname__ for _, e in recorder.buffer if e.is_start]
print(json.dumps(report))
"""


def test_a_small_first_call_compiles_every_size(device, tmp_path):
    if device != "cpu":
        pytest.skip("the CPU builds' serial and parallel paths")
    n = 2 * int(PARALLEL_THRESHOLD**0.5) + 1
    assert n * n >= PARALLEL_THRESHOLD
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(n=n)], env=env, capture_output=True, text=True, timeout=1200
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    compiled = json.loads(result.stdout.strip().splitlines()[-1])
    assert compiled == {name: [] for name in compiled} and len(compiled) == 7
