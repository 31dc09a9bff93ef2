"""Running code where numba.cuda compiles for real (NVVM; no GPU needed), outside the simulator the suite runs in."""
import os
import subprocess
import sys


def run_without_simulator(args: list[str], timeout: int) -> str:
    """stdout of `python *args` run with NUMBA_ENABLE_CUDASIM=0; fails the test if it exits non-zero."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    result = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout
