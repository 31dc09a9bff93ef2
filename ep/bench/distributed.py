"""`mpiexec -n N python -m ep bench --distributed`: each boxing conversion of a global tensor
against the raw mpi4py collective on the same buffers (the pieces boxing starts from, receive
buffers allocated once). A sample is the slowest rank's time between barriers; the table (rank 0)
gives the median of the samples and boxing's time over raw MPI's."""
from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Callable

import numpy as np

MIB = 1 << 20


def _time(comm, fn: Callable[[], object], repeats: int) -> float:
    """Median over repeats of the slowest rank's seconds for fn (after one warm-up call)."""
    from mpi4py import MPI

    fn()
    samples = []
    for _ in range(repeats):
        comm.Barrier()
        start = time.perf_counter()
        fn()
        samples.append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    return statistics.median(samples)


def _cases(comm, nbytes: int):
    """(conversion, boxing call, raw collective) on a float32 tensor of about nbytes, 2-d."""
    from mpi4py import MPI

    import ep
    from ep.sbp import balanced_split, broadcast as B, partial_sum as P, split as S
    from ep.sbp.boxing import box

    size, rank = comm.Get_size(), comm.Get_rank()
    cols = 1024
    rows = max(size, nbytes // (4 * cols))
    shape = (rows, cols)
    placement = ep.placement("cpu", list(range(size)))
    bounds = balanced_split(rows, size)
    lo, hi = bounds[rank]
    col_lo, col_hi = balanced_split(cols, size)[rank]
    rng = np.random.default_rng(rank)
    row_piece = rng.standard_normal((hi - lo, cols), dtype=np.float32)
    col_piece = rng.standard_normal((rows, col_hi - col_lo), dtype=np.float32)
    full = rng.standard_normal(shape, dtype=np.float32)
    row_counts = [(b - a) * cols for a, b in bounds]
    whole = np.empty(shape, np.float32)
    mine = np.empty((hi - lo, cols), np.float32)

    s0 = ep.to_global(row_piece, placement, S(0))
    s1 = ep.to_global(col_piece, placement, S(1))
    p = ep.to_global(full, placement, P)
    b = ep.to_global(full, placement, B)
    # S(1) -> S(0): rank r sends each rank its rows of r's columns, packed (a raw Alltoallv of
    # equal-sized blocks: the bytes boxing moves, without its packing).
    a2a_counts = [(bb - a) * (col_hi - col_lo) for a, bb in bounds]
    a2a_send = np.empty(rows * (col_hi - col_lo), np.float32)
    a2a_recv = np.empty((hi - lo) * cols, np.float32)
    recv_counts = [(hi - lo) * (c1 - c0) for c0, c1 in balanced_split(cols, size)]
    return shape, [
        ("S(0)->B all_gather", lambda: box(s0, (B,)), lambda: comm.Allgatherv(row_piece, [whole, row_counts, MPI.FLOAT])),
        ("P->B all_reduce", lambda: box(p, (B,)), lambda: comm.Allreduce(full, whole, op=MPI.SUM)),
        ("P->S(0) reduce_scatter", lambda: box(p, (S(0),)), lambda: comm.Reduce_scatter(full, mine, row_counts, op=MPI.SUM)),
        ("S(1)->S(0) all_to_all", lambda: box(s1, (S(0),)),
         lambda: comm.Alltoallv([a2a_send, (a2a_counts, None), MPI.FLOAT], [a2a_recv, (recv_counts, None), MPI.FLOAT])),
        ("B->S(0) local slice", lambda: box(b, (S(0),)), lambda: np.copyto(mine, full[lo:hi])),
    ]


def main(args: argparse.Namespace) -> int:
    """Prints the table on rank 0."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    sizes = [MIB] if args.quick else [64 * MIB, 256 * MIB]
    repeats = 3 if args.quick else 10
    lines = []
    for nbytes in sizes:
        shape, cases = _cases(comm, nbytes)
        for name, boxed, raw in cases:
            t_box, t_raw = _time(comm, boxed, repeats), _time(comm, raw, repeats)
            lines.append((name, f"{math.prod(shape) * 4 / MIB:.0f}", f"{t_box * 1e3:.2f}", f"{t_raw * 1e3:.2f}", f"{t_box / t_raw:.2f}"))
    if comm.Get_rank() == 0:
        header = ("conversion", "MiB", "boxing ms", "raw MPI ms", "boxing/raw")
        widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)]
        print(f"{comm.Get_size()} ranks, float32, median of {repeats} (slowest rank per sample)")
        for line in [header, tuple("-" * w for w in widths), *lines]:
            print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())
    return 0
