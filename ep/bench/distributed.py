"""`mpiexec -n N python -m ep bench --distributed`: each boxing conversion of a global tensor
against the raw mpi4py code that produces the same result (this rank's piece under the new SBP,
in the result's layout, checked equal before timing) from the same input buffers, and then global
gather, expand and binary through ep.ops (record these on 1, 2 and 4 ranks).

The raw contenders are the ways an MPI programmer would write the conversion, each into a new
result (np.empty per call, as boxing returns a new tensor): the collective straight into the
result, with the derived datatypes its layout needs where its parts are strided (for S(1)->B an
Allgather of a resized vector type when the columns split evenly, and an Alltoallw of one vector
type per part; for S(1)->S(0) an Alltoallw of vector types), an all-gather also as an Alltoallw
(MPICH's Allgatherv is several times slower on this machine), and, where the parts are strided,
the contiguous collective into a scratch buffer (allocated once) followed by a NumPy copy into
the layout. The table gives the fastest of them ("raw MPI" and which way it was), and "boxing/raw"
is the target's ratio; "raw, reused result" is that way into one result allocated once (no page
faults: a floor; boxing's results come from ep's allocator, which reuses released results'
memory); for strided layouts "contiguous receive" is the collective alone, the same bytes
received one part after another: not the result's layout, so no contender, only a floor.

A sample is the slowest rank's time between barriers; within a round every call of a conversion
runs once, in a rotating order (the machine's load drifts); the table (rank 0) gives medians and
boxing's median over the fastest raw median.
"""
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
    """The logical shape of a float32 tensor of about nbytes, 2-d, and per conversion: (name,
    boxing call, {raw way: call(result)}, contiguous receive call(result) or None, this rank's
    result shape); a raw call writes the result into the array it is given and returns it."""
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
    mine = (hi - lo, cols)

    s0 = ep.to_global(row_piece, placement, S(0))
    s1 = ep.to_global(col_piece, placement, S(1))
    p = ep.to_global(full, placement, P)
    b = ep.to_global(full, placement, B)

    def counted(parts):
        counts = [n * 4 for n in parts]
        return counts, [sum(counts[:i]) for i in range(len(counts))]

    # S(0) -> B: the rows of every rank, contiguous in the result.
    row_counts = [(r1 - r0) * cols for r0, r1 in bounds]

    def all_gatherv(out):
        comm.Allgatherv(row_piece, [out, row_counts, MPI.FLOAT])
        return out

    def all_to_all_rows(out):
        comm.Alltoallw([row_piece, ([row_piece.nbytes] * size, [0] * size), [MPI.BYTE] * size], [out, counted(row_counts), [MPI.BYTE] * size])
        return out

    # S(1) -> B: rank j's columns are a strided part of every row of the result.
    col_counts = [rows * (c1 - c0) for c0, c1 in col_bounds]
    col_types = [MPI.FLOAT.Create_vector(rows, c1 - c0, cols).Commit() for c0, c1 in col_bounds]
    col_displs = [c0 * 4 for c0, _ in col_bounds]
    even = len({c1 - c0 for c0, c1 in col_bounds}) == 1
    col_width = col_hi - col_lo
    resized = MPI.FLOAT.Create_vector(rows, col_width, cols).Create_resized(0, col_width * 4).Commit()
    gathered = np.empty(rows * cols, np.float32)
    to_all = [col_piece, ([col_piece.nbytes] * size, [0] * size), [MPI.BYTE] * size]

    def all_gather_resized(out):
        comm.Allgather(col_piece, [out, 1, resized])
        return out

    def all_gather_vectors(out):
        comm.Alltoallw(to_all, [out, ([1] * size, col_displs), col_types])
        return out

    def all_gather_contiguous(out):
        comm.Alltoallw(to_all, [out.reshape(-1), counted(col_counts), [MPI.BYTE] * size])
        return out

    def all_gather_and_copy(out):
        comm.Alltoallw(to_all, [gathered, counted(col_counts), [MPI.BYTE] * size])
        return _into_columns(out, gathered, col_bounds)

    def all_reduce(out):
        comm.Allreduce(full, out, op=MPI.SUM)
        return out

    def reduce_scatter(out):
        comm.Reduce_scatter(full, out, row_counts, op=MPI.SUM)
        return out

    # S(1) -> S(0): rank j's rows of its columns (contiguous in its piece) become the strided part
    # of columns j of this rank's rows.
    send_counts = [(r1 - r0) * col_width for r0, r1 in bounds]
    send = [col_piece, counted(send_counts), [MPI.BYTE] * size]
    recv_counts = [(hi - lo) * (c1 - c0) for c0, c1 in col_bounds]
    recv_types = [MPI.FLOAT.Create_vector(hi - lo, c1 - c0, cols).Commit() for c0, c1 in col_bounds]
    exchanged = np.empty((hi - lo) * cols, np.float32)

    def all_to_all_vector(out):
        comm.Alltoallw(send, [out, ([1] * size, col_displs), recv_types])
        return out

    def all_to_all_contiguous(out):
        comm.Alltoallw(send, [out.reshape(-1), counted(recv_counts), [MPI.BYTE] * size])
        return out

    def all_to_all_and_copy(out):
        comm.Alltoallw(send, [exchanged, counted(recv_counts), [MPI.BYTE] * size])
        return _into_columns(out, exchanged, col_bounds)

    def local_copy(out):
        np.copyto(out, full[lo:hi])
        return out

    return shape, [
        ("S(0)->B all_gather", lambda: s0.to_global(sbp=B), {"Allgatherv": all_gatherv, "Alltoallw": all_to_all_rows}, None, shape),
        ("S(1)->B all_gather", lambda: s1.to_global(sbp=B),
         {"Alltoallw of vectors": all_gather_vectors, "Alltoallw + copy": all_gather_and_copy,
          **({"Allgather of a resized vector": all_gather_resized} if even else {})}, all_gather_contiguous, shape),
        ("P->B all_reduce", lambda: p.to_global(sbp=B), {"Allreduce": all_reduce}, None, shape),
        ("P->S(0) reduce_scatter", lambda: p.to_global(sbp=S(0)), {"Reduce_scatter": reduce_scatter}, None, mine),
        ("S(1)->S(0) all_to_all", lambda: s1.to_global(sbp=S(0)),
         {"Alltoallw of vectors": all_to_all_vector, "Alltoallw + copy": all_to_all_and_copy}, all_to_all_contiguous, mine),
        ("B->S(0) local slice", lambda: b.to_global(sbp=S(0)), {"copy": local_copy, "view": lambda out: full[lo:hi]}, None, mine),
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


def _line(comm, case, logical_mib: float, repeats: int) -> tuple[str, ...]:
    """One table line: boxing, each raw way into a new result and into one reused result, and the
    contiguous receive, all timed in the same rounds."""
    name, boxing, raws, contiguous, shape = case
    want = boxing().to_local()
    for way, raw in raws.items():
        if not np.allclose(raw(np.empty(shape, np.float32)), want, rtol=1e-6, atol=0):
            raise AssertionError(f"{name}: the raw way {way!r} gives another result than boxing")
    reused = np.empty(shape, np.float32)
    fns = [boxing]
    for raw in raws.values():
        fns += [lambda raw=raw: raw(np.empty(shape, np.float32)), lambda raw=raw: raw(reused)]
    if contiguous is not None:
        fns.append(lambda: contiguous(np.empty(shape, np.float32)))
    times = _time(comm, fns, repeats)
    new = {way: times[1 + 2 * i] for i, way in enumerate(raws)}
    way = min(new, key=new.get)
    t_box, t_raw, t_reused = times[0], new[way], times[2 + 2 * list(raws).index(way)]
    t_contiguous = f"{times[-1] * 1e3:.2f}" if contiguous is not None else "-"
    return (
        name, f"{logical_mib:.0f}", f"{t_box * 1e3:.2f}", f"{t_raw * 1e3:.2f}", way, f"{t_box / t_raw:.2f}",
        f"{t_reused * 1e3:.2f}", f"{t_box / t_reused:.2f}", t_contiguous,
    )


def _table(header: tuple[str, ...], lines: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines)]
    for line in [header, tuple("-" * w for w in widths), *lines]:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())


def main(args: argparse.Namespace) -> int:
    """Prints the tables on rank 0."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    sizes = [MIB] if args.quick else [n * MIB for n in SIZES_MIB]
    repeats = 3 if args.quick else REPEATS
    lines = []
    for nbytes in sizes:
        shape, cases = _cases(comm, nbytes)
        lines += [_line(comm, case, math.prod(shape) * 4 / MIB, repeats) for case in cases]
    op_lines = [(name, f"{_time(comm, [call], repeats)[0] * 1e3:.2f}") for name, call in _global_ops(comm, 64 if args.quick else 1)]
    if comm.Get_rank() == 0:
        print(f"{comm.Get_size()} ranks, float32, median of {repeats} (slowest rank per sample, calls interleaved)")
        _table((
            "conversion", "MiB", "boxing ms", "raw MPI ms", "raw way", "boxing/raw", "raw, reused result ms",
            "boxing/reused", "contiguous receive ms (not the layout)",
        ), lines)
        print(f"\nglobal ops (ep.ops on global tensors, float32), {comm.Get_size()} ranks, median of {repeats}")
        width = max(len(name) for name, _ in op_lines)
        for name, ms in op_lines:
            print(f"{name.ljust(width)}  {ms} ms")
    return 0


def _into_columns(out: np.ndarray, packed: np.ndarray, col_bounds) -> np.ndarray:
    """out with the parts of packed (one after another, each a block of out's rows) copied into
    their column ranges: a raw way's copy into the result's layout."""
    start = 0
    for c0, c1 in col_bounds:
        n = out.shape[0] * (c1 - c0)
        out[:, c0:c1] = packed[start:start + n].reshape(out.shape[0], c1 - c0)
        start += n
    return out
