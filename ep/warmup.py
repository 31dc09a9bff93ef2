"""`python -m ep warmup`: compile chosen kernels into Numba's disk cache before the first launch.

Each chosen registry combination (primitive, device, op, dtypes) is launched as its factory's
samples launch it (ep.common.primitive.sample): on tiny arrays, once per shape class that picks
its own kernel (a binary op's elementwise, scalar, row, column and general paths; gather's element
and row spans; softmax's rows of one block and longer ones), so warmup compiles what real launches
need, with their argument types. Numba's compile events tell a combination that compiled from one
that came from the cache. ElementwiseFused compiles its sample's x + y: a caller's own expressions
compile on their first launch.
Nor are the spans only large launches run (streaming stores from 8 MiB, an element gather's
out-of-range fallback, Reduce's merge of a cut reduction's slices, Scan's passes over a cut run): their first such launch
compiles them.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from typing import Callable, Iterable, Iterator

from ep.include.primitive.primitive import registry_rows
from ep.testing import samples


def _combinations(factory) -> dict[tuple, tuple]:
    """factory's Combinations by registry_rows' spelling: (op name or None, dtype values) -> (op, dtypes)."""
    return {
        (None if op is None else op.name, tuple(dtype.value for dtype in dtypes)): (op, dtypes) for op, dtypes in factory.Combinations()
    }


def chosen_rows(
    devices: Iterable[str], ops: Iterable[str] | None = None, dtypes: Iterable[str] | None = None,
    primitives: Iterable[str] | None = None,
) -> list[dict]:
    """registry_rows on devices whose op is one of ops (as `ep list --op` matches one), whose first
    dtype (the data's; a unary or binary op's source) is one of dtypes and whose primitive is one
    of primitives; None chooses every one."""
    chosen: dict[tuple, dict] = {}
    for device in devices:
        for primitive in primitives or [None]:
            for op in ops or [None]:
                for row in registry_rows(device, primitive, op):
                    if dtypes is None or row["dtypes"][0] in dtypes:
                        chosen[row["device"], row["primitive"], row["op"], tuple(row["dtypes"])] = row
    return list(chosen.values())


@contextlib.contextmanager
def _compilations() -> Iterator[Callable[[], int]]:
    """Inside: a function giving how many functions Numba compiled so far for the CPU (a load
    from the disk cache is none). numba-cuda's kernels report no such event."""
    import numba.core.event

    with numba.core.event.install_recorder("numba:compile") as recorder:
        yield lambda: sum(event.is_start for _, event in recorder.buffer)


def _progress(rows: list[dict]) -> Iterator[dict]:
    """rows, with tqdm's bar when tqdm is installed, else a counter line on stderr."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        yield from tqdm(rows, desc="warmup", unit="combination", file=sys.stderr)
        return
    for position, row in enumerate(rows, 1):
        print(f"\rwarmup {position}/{len(rows)} {_label(row):70.70s}", end="", file=sys.stderr, flush=True)
        yield row
    if rows:
        print(file=sys.stderr)


def _label(row: dict) -> str:
    op = f" {row['op']}" if row["op"] else ""
    return f"{row['device']} {row['primitive']}{op} {','.join(row['dtypes'])}"


def cache_location() -> str:
    """Where Numba's disk cache is: NUMBA_CACHE_DIR, or its default beside ep's modules."""
    directory = os.environ.get("NUMBA_CACHE_DIR")
    return f"NUMBA_CACHE_DIR={directory}" if directory else "__pycache__ beside ep's modules (NUMBA_CACHE_DIR unset)"


def warm(rows: list[dict]) -> int:
    """Launch each row's combination once on tiny arrays, printing progress and a summary; 0 when
    every launch ran, 1 when one failed (each failure is printed)."""
    factories = {device: samples.registered(device) for device in {row["device"] for row in rows}}
    combinations = functools.cache(_combinations)
    compiled, functions, cached, on_cuda, failures = 0, 0, 0, 0, []
    start = time.perf_counter()
    with _compilations() as compilations:
        for row in _progress(rows):
            before = compilations()
            try:
                factory_type, factory = factories[row["device"]][row["primitive"]]
                op, dtypes = combinations(factory)[row["op"], tuple(row["dtypes"])]
                for sample in factory.Samples(op, dtypes):
                    samples.launch(factory_type, row["device"], sample)
            except Exception as error:  # report every failing combination, then fail
                failures.append(f"FAILED {_label(row)}: {type(error).__name__}: {error}")
                continue
            new = compilations() - before
            if row["device"] == "cuda":
                on_cuda += 1
            elif new:
                compiled, functions = compiled + 1, functions + new
            else:
                cached += 1
    seconds = time.perf_counter() - start
    for line in failures:
        print(line)
    cuda = f"{on_cuda} launched on cuda (compiled or loaded: numba-cuda does not say), " if on_cuda else ""
    print(
        f"warmup: {len(rows)} combinations in {seconds:.1f} s: {compiled} compiled ({functions} functions), "
        f"{cached} cached (on disk, or by an earlier combination), {cuda}{len(failures)} failed; cache: {cache_location()}"
    )
    return 1 if failures or not rows else 0
