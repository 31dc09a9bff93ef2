"""Running code where numba.cuda compiles for real (NVVM; no GPU needed), outside the simulator the suite runs in."""
import functools
import os
import shutil
import subprocess
import sys


def run_without_simulator(args: list[str], timeout: int) -> str:
    """stdout of `python *args` run with NUMBA_ENABLE_CUDASIM=0; fails the test if it exits non-zero."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    result = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result.stdout


@functools.cache
def missing_ptx_tools() -> str | None:
    """Why CUDA kernels cannot be compiled to PTX and assembled here, or None: NVVM and ptxas come
    with the sweep extra."""
    try:
        from cuda.bindings import nvvm

        nvvm.version()
    except Exception as error:  # no cuda-bindings, or no libnvvm for it to load
        return f"needs NVVM ({type(error).__name__}); pip install -e '.[sweep]'"
    from ep.cuda.ptxas import ptxas_path

    if shutil.which(ptxas_path()) is None:
        return "needs ptxas; pip install -e '.[sweep]'"
    return None
