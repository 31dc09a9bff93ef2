"""`mpiexec -n N python -m ep bench --distributed`: each boxing conversion of a global tensor
against the raw mpi4py collective on the same input buffers, moving the same bytes, and then
global gather, expand and binary through ep.ops (record these on 1, 2 and 4 ranks). Boxing returns a new tensor, so it allocates its result on every call; the "raw,
new" column allocates the raw call's result the same way (np.empty per call: the fair comparison),
"raw, reused" receives into one buffer allocated once (the floor: no page faults). A sample is the
slowest rank's time between barriers; the three calls alternate, in a rotating order, within each
round; the table (rank 0) gives medians and boxing's median over the raw medians. Where the result's
parts are not contiguous (S(1)->B, S(1)->S(0)), raw MPI receives the same bytes one part after
another, not in the result's layout: the floor, which boxing's strided datatypes cannot quite reach."""
from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Callable

import numpy as np

MIB = 1 << 20
# The full run: tensor sizes in MiB and rounds per timing.
SIZES_MIB = (64, 256)
REPEATS = 11


def _sample(comm, fn: Callable[[], object]) -> float:
    """The slowest rank's seconds for one call of fn, started together."""
    from mpi4py import MPI

    comm.Barrier()
    start = time.perf_counter()
    fn()
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)


def _time(comm, fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """The median seconds of each of fns over repeats rounds (after one warm-up call each); within
    a round the calls rotate so none always runs first (the machine's load drifts)."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(repeats):
        for k in range(len(fns)):
            i = (r + k) % len(fns)
            samples[i].append(_sample(comm, fns[i]))
    return [statistics.median(s) for s in samples]


def _cases(comm, nbytes: int):
    """(conversion, boxing call, raw collective into a new result, the same into a reused one) on
    a float32 tensor of about nbytes, 2-d."""
    from mpi4py import MPI

    import ep
    from ep.sbp import balanced_split, broadcast as B, partial_sum as P, split as S

    size, rank = comm.Get_size(), comm.Get_rank()
    cols = 1024
    rows = max(size, nbytes // (4 * cols))
    shape = (rows, cols)
    placement = ep.placement("cpu", list(range(size)))
    bounds = balanced_split(rows, size)
    lo, hi = bounds[rank]
    col_bounds = balanced_split(cols, size)
    col_lo, col_hi = col_bounds[rank]
    rng = np.random.default_rng(rank)
    row_piece = rng.standard_normal((hi - lo, cols), dtype=np.float32)
    col_piece = rng.standard_normal((rows, col_hi - col_lo), dtype=np.float32)
    full = rng.standard_normal(shape, dtype=np.float32)
    row_counts = [(b - a) * cols for a, b in bounds]
    reused_whole = np.empty(shape, np.float32)
    reused_mine = np.empty((hi - lo, cols), np.float32)

    s0 = ep.to_global(row_piece, placement, S(0))
    s1 = ep.to_global(col_piece, placement, S(1))
    p = ep.to_global(full, placement, P)
    b = ep.to_global(full, placement, B)

    def all_gather(out):
        comm.Allgatherv(row_piece, [out, row_counts, MPI.FLOAT])
        return out

    # S(1) -> B: each rank's columns; raw MPI receives them one block after another.
    col_counts = [rows * (c1 - c0) for c0, c1 in col_bounds]

    def all_gather_columns(out):
        comm.Allgatherv(col_piece, [out, col_counts, MPI.FLOAT])
        return out

    def all_reduce(out):
        comm.Allreduce(full, out, op=MPI.SUM)
        return out

    def reduce_scatter(out):
        comm.Reduce_scatter(full, out, row_counts, op=MPI.SUM)
        return out

    # S(1) -> S(0): each rank sends rank j the rows j keeps of its columns (contiguous in its piece)
    # and receives its rows of every rank's columns; raw MPI receives them one block after another
    # (the bytes boxing moves, but not the layout: the floor for boxing's in-place strided parts).
    send_counts = [(b_ - a) * (col_hi - col_lo) for a, b_ in bounds]
    send_displs = [a * (col_hi - col_lo) for a, _ in bounds]
    recv_counts = [(hi - lo) * (c1 - c0) for c0, c1 in col_bounds]
    recv_displs = [(hi - lo) * c0 for c0, _ in col_bounds]

    def all_to_all(out):
        comm.Alltoallv([col_piece, (send_counts, send_displs), MPI.FLOAT], [out, (recv_counts, recv_displs), MPI.FLOAT])
        return out

    def local_slice(out):
        np.copyto(out, full[lo:hi])
        return out

    def new_whole():
        return np.empty(shape, np.float32)

    def new_mine():
        return np.empty((hi - lo, cols), np.float32)

    return shape, [
        ("S(0)->B all_gather", lambda: s0.to_global(sbp=B), lambda: all_gather(new_whole()), lambda: all_gather(reused_whole)),
        ("S(1)->B all_gather", lambda: s1.to_global(sbp=B), lambda: all_gather_columns(new_whole()), lambda: all_gather_columns(reused_whole)),
        ("P->B all_reduce", lambda: p.to_global(sbp=B), lambda: all_reduce(new_whole()), lambda: all_reduce(reused_whole)),
        ("P->S(0) reduce_scatter", lambda: p.to_global(sbp=S(0)), lambda: reduce_scatter(new_mine()), lambda: reduce_scatter(reused_mine)),
        ("S(1)->S(0) all_to_all", lambda: s1.to_global(sbp=S(0)), lambda: all_to_all(new_mine()), lambda: all_to_all(reused_mine)),
        ("B->S(0) local slice", lambda: b.to_global(sbp=S(0)), lambda: local_slice(new_mine()), lambda: local_slice(reused_mine)),
    ]


def _global_ops(comm, scale: int):
    """(name, call) for global gather, expand and binary under their natural signatures (no
    boxing): params split along the gather axis with broadcast indices (a partial sum), x and a
    split along dim 0; scale: the logical sizes' divisor (1 for the full run)."""
    import ep
    from ep.sbp import balanced_split, broadcast as B, split as S

    size, rank = comm.Get_size(), comm.Get_rank()
    placement = ep.placement("cpu", list(range(size)))
    rng = np.random.default_rng(0)

    def split0(shape, dtype=np.float32):
        lo, hi = balanced_split(shape[0], size)[rank]
        return ep.to_global(rng.standard_normal((hi - lo,) + shape[1:]).astype(dtype), placement, S(0))

    rows = 65536 // scale
    params = split0((rows, 256))
    indices = ep.to_global(rng.integers(0, rows, rows), placement, B)
    x = split0((2048 // scale, 1, 256))
    a = split0((8192 // scale, 1024))
    b = ep.to_global(rng.standard_normal(1024).astype(np.float32), placement, B)
    return [
        (f"gather {params.shape} S(0) by {indices.shape} B -> P", lambda: ep.ops.gather(params, indices)),
        (f"expand {x.shape} S(0) -> {(x.shape[0], 64, 256)}", lambda: ep.ops.expand(x, (x.shape[0], 64, 256))),
        (f"binary add {a.shape} S(0) + {b.shape} B", lambda: ep.ops.binary("add", a, b)),
    ]


def main(args: argparse.Namespace) -> int:
    """Prints the table on rank 0."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    sizes = [MIB] if args.quick else [n * MIB for n in SIZES_MIB]
    repeats = 3 if args.quick else REPEATS
    lines = []
    for nbytes in sizes:
        shape, cases = _cases(comm, nbytes)
        for name, *fns in cases:
            t_box, t_new, t_reused = _time(comm, fns, repeats)
            lines.append((
                name, f"{math.prod(shape) * 4 / MIB:.0f}", f"{t_box * 1e3:.2f}", f"{t_new * 1e3:.2f}",
                f"{t_reused * 1e3:.2f}", f"{t_box / t_new:.2f}", f"{t_box / t_reused:.2f}",
            ))
    op_lines = [(name, f"{_time(comm, [call], repeats)[0] * 1e3:.2f}") for name, call in _global_ops(comm, 64 if args.quick else 1)]
    if comm.Get_rank() == 0:
        header = ("conversion", "MiB", "boxing ms", "raw MPI, new ms", "raw MPI, reused ms", "boxing/new", "boxing/reused")
        widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)]
        print(f"{comm.Get_size()} ranks, float32, median of {repeats} (slowest rank per sample, calls interleaved)")
        for line in [header, tuple("-" * w for w in widths), *lines]:
            print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())
        print(f"\nglobal ops (ep.ops on global tensors, float32), {comm.Get_size()} ranks, median of {repeats}")
        width = max(len(name) for name, _ in op_lines)
        for name, ms in op_lines:
            print(f"{name.ljust(width)}  {ms} ms")
    return 0
