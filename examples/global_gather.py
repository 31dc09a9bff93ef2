"""A global gather over MPI: `mpiexec -n 4 python examples/global_gather.py`.

The embedding table (params) is split along the gather axis, one block of rows per rank, and the
indices are broadcast: each rank gathers the rows it holds (zeros for the others), so the result
is a partial sum (OneFlow's P). Boxing it to broadcast adds the ranks' parts: every rank then holds
the whole gather.
"""
import numpy as np
from mpi4py import MPI

import ep
from ep.sbp import broadcast, split

rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
placement = ep.placement("cpu", ranks=list(range(size)))
table = np.arange(10 * 4, dtype=np.float32).reshape(10, 4)     # the logical params, for the check
lo, hi = ep.sbp.balanced_split(10, size)[rank]                 # this rank's rows (uneven is fine)
params = ep.to_global(table[lo:hi], placement, split(0))       # logical shape (10, 4)
indices = ep.to_global(np.array([9, 0, 4, 4, 7]), placement, broadcast)
rows = ep.ops.gather(params, indices, axis=0)                  # runs under params=S(0), indices=B -> P
assert rows.sbp == (ep.sbp.partial_sum,) and rows.shape == (5, 4)
whole = rows.to_global(sbp=broadcast).to_local()               # all-reduce: every rank holds the sum
assert np.array_equal(whole, table[[9, 0, 4, 4, 7]])
print(f"rank {rank}/{size}: {rows} -> {whole.sum()}")
