"""Running code where numba.cuda compiles for real (NVVM; no GPU needed), outside the simulator the suite runs in."""
import functools
import os
import subprocess
import sys


def run_without_simulator(args: list[str], timeout: int) -> str:
    """stdout of `python *args` run with NUMBA_ENABLE_CUDASIM=0; fails the test if it exits non-zero."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    result = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout


_PROBE = """
from numba import cuda, float32
from ep.cuda.ptxas import assemble


def kernel(x):
    x[0] = 1


ptx, _ = cuda.compile_ptx(kernel, (float32[::1],), cc=(8, 0))
assemble(ptx, (8, 0))
"""


@functools.cache
def missing_ptx_tools() -> str | None:
    """Why CUDA kernels cannot be compiled to PTX and assembled here, or None: a tiny kernel is, in
    a process outside the simulator. NVVM and ptxas come with the sweep extra."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    result = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    if result.returncode == 0:
        return None
    last = (result.stderr.strip().splitlines() or ["no output"])[-1]
    return f"cannot compile PTX here ({last[:200]}); pip install -e '.[sweep]'"
