"""Every registered CUDA kernel compiles to PTX for sm_80 and sm_90; needs NVVM, not a GPU.

The simulator runs kernels as Python and checks no types, so this is what proves the CUDA
kernels compile. It runs in a subprocess because a process is either simulated or not.
"""
import os
import subprocess
import sys

import pytest

from ep.common.runtime.device import DeviceType
from ep.include.primitive.primitive import RegisteredFactories

FACTORIES = sorted(f.__name__ for f in RegisteredFactories(DeviceType.kCUDA))


@pytest.mark.ptx
@pytest.mark.parametrize("factory", FACTORIES)
def test_every_kernel_compiles_to_ptx(factory):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    result = subprocess.run(
        [sys.executable, "-m", "ep.cuda.ptx", factory], env=env, capture_output=True, text=True, timeout=3000
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " 0 failed" in result.stdout
