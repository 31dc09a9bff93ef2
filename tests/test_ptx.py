"""Every registered CUDA kernel compiles to PTX for sm_80 and sm_90 and passes the ptxas check
(ep/cuda/ptxas.py: no spill, full occupancy, no stray float64, ...); needs NVVM and ptxas, not a GPU.

The simulator runs kernels as Python and checks no types, so this is what proves the CUDA
kernels compile. It runs in subprocesses because a process is either simulated or not, split
into shards of the whole kernel list so that test workers share the work evenly. The shards are
the `sweep` marker's one test: the README's test command leaves them out and CI runs them as its
own step (190-250 s a shard on 2 cores like CI's, run with xdist's worksteal so
that both workers take shards); the fused kernels' check stays in it.
"""

import json

import pytest
from nvvm import run_without_simulator

SHARDS = 8


@pytest.mark.ptx
@pytest.mark.sweep
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_kernel_compiles_to_ptx(shard):
    stdout = run_without_simulator(["-m", "ep.cuda.ptx", "--shard", f"{shard}/{SHARDS}", "--ptxas"], timeout=3000)
    assert " 0 failed" in stdout


# ElementwiseFused's representative expressions (ep/common/primitive/elementwise_fused.py), each a
# flat kernel moving packs (ep.cuda.pack) and a broadcast one moving elements: the shards above
# compile them too; this runs them alone (`-k fused`) and checks the flat ones are the packed ones.
FUSED = """
import json
from ep.cuda import ptx
from ep.common.primitive.elementwise_fused import REPRESENTATIVE
kernels = [kernel for _, kernel in ptx.kernels(["ElementwiseFusedFactory"])]
packed = [vars(k._fn.__globals__["bound"]).get("PACK") for k in kernels if k.name.startswith("fused_flat")]
print("fused", json.dumps([len(REPRESENTATIVE), len(kernels), sorted(packed)]))
ptx.main(["ElementwiseFusedFactory", "--ptxas"])
"""


@pytest.mark.ptx
def test_fused_kernels_move_packs_and_compile_to_ptx():
    stdout = run_without_simulator(["-c", FUSED], timeout=1200)
    line = next(line for line in stdout.splitlines() if line.startswith("fused "))
    expressions, kernels, lanes = json.loads(line.removeprefix("fused "))
    assert kernels == 2 * expressions
    assert lanes == [2, 2, 4, 4, 4, 4], line  # int32 division's and float64's 2 lanes; float32's and float16's 4 (the last: 18 arguments)
    assert " 0 failed" in stdout, stdout[-4000:]
