"""Every registered CUDA kernel compiles to PTX for sm_80 and sm_90 and passes the ptxas check
(ep/cuda/ptxas.py: no spill, full occupancy, no stray float64, ...); needs NVVM and ptxas, not a GPU.

The simulator runs kernels as Python and checks no types, so this is what proves the CUDA
kernels compile. It runs in subprocesses because a process is either simulated or not, split
into shards of the whole kernel list so that test workers share the work evenly.
"""
import os
import subprocess
import sys

import pytest

SHARDS = 8


@pytest.mark.ptx
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_kernel_compiles_to_ptx(shard):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    result = subprocess.run(
        [sys.executable, "-m", "ep.cuda.ptx", "--shard", f"{shard}/{SHARDS}", "--ptxas"], env=env, capture_output=True, text=True, timeout=3000
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " 0 failed" in result.stdout
