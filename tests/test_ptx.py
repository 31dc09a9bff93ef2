"""Every registered CUDA kernel compiles to PTX for sm_80 and sm_90 and passes the ptxas check
(ep/cuda/ptxas.py: no spill, full occupancy, no stray float64, ...); needs NVVM and ptxas, not a GPU.

The simulator runs kernels as Python and checks no types, so this is what proves the CUDA
kernels compile. It runs in subprocesses because a process is either simulated or not, split
into shards of the whole kernel list so that test workers share the work evenly.
"""

import pytest
from nvvm import run_without_simulator

SHARDS = 8


@pytest.mark.ptx
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_kernel_compiles_to_ptx(shard):
    stdout = run_without_simulator(["-m", "ep.cuda.ptx", "--shard", f"{shard}/{SHARDS}", "--ptxas"], timeout=3000)
    assert " 0 failed" in stdout
