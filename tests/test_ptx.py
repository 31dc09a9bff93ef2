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


# The first kernel of each family compiled with numba-cuda as it is, then with the inlined IR shared
# (a kernel inlines its repeated scalar functions, and those an earlier family inlined, from the shared
# IR): the same PTX, up to the mangled names and the shared arrays' names (numbered per process).
SAME_PTX = """
import re
from numba import cuda
from ep.cuda import ptx

def compile_ptx(sample):
    return [
        re.sub(r"_ZN\\w+|_cudapy_smem_\\d+", "NAME", cuda.compile_ptx(k._fn, k.argtypes, cc=(8, 0), launch_bounds=k.launch_bounds)[0])
        for k in sample
    ]

families = {}
for family, kernel in ptx.kernels():
    families.setdefault(family, []).append(kernel)
sample = [kernels[0] for kernels in families.values()]
plain = compile_ptx(sample)
ptx.share_inlined_ir()
shared = compile_ptx(sample)
print(len(sample), "kernels,", sum(a != b for a, b in zip(plain, shared)), "differ:",
      [k.name for k, a, b in zip(sample, plain, shared) if a != b])
"""


@pytest.mark.ptx
def test_shared_inlined_ir_gives_the_same_ptx():
    stdout = run_without_simulator(["-c", SAME_PTX], timeout=1200)
    assert " 0 differ" in stdout and not stdout.startswith("0 ")
