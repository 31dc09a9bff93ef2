"""Which Numba threading layer runs ep's parallel CPU kernels: OpenMP where it loads, else TBB.

Both are safe under concurrent launches from many threads. OpenMP's pool wakes for a launch in about
a microsecond, where Numba's TBB layer builds a task arena per launch (about five): on a 1 MiB relu
that is a quarter of the time (BENCHMARKS.md). GNU OpenMP's pool does not survive fork() (Numba
kills a child that launches on it), so ParallelFor runs a forked child's launches on the calling
thread, as PyTorch does. TBB, the fallback where no libgomp is installed, comes from the `tbb` wheel,
a dependency of ep where wheels exist; Numba's tbbpool finds libtbb by soname only, so it is loaded
first from where the wheel put it. A choice made with NUMBA_THREADING_LAYER (or its priority) is
left alone.
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import os

from numba import config


def _libtbb() -> str | None:
    """The path of the tbb wheel's libtbb.so.12, if that wheel is installed."""
    try:
        files = importlib.metadata.distribution("tbb").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "libtbb.so.12":
            return str(file.locate())
    return None


def choose_threading_layer() -> None:
    """Numba's first choice OpenMP, then TBB (made loadable), then its workqueue; Numba takes the first
    that loads at the first parallel launch (numba.threading_layer() names it)."""
    path = _libtbb()
    if path is not None:
        try:
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass
    if "NUMBA_THREADING_LAYER" in os.environ or "NUMBA_THREADING_LAYER_PRIORITY" in os.environ:
        return
    config.THREADING_LAYER = "default"
    config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]
