"""Which Numba threading layer runs ep's parallel CPU kernels: TBB, the one that is both fork-safe
and safe under concurrent launches from many threads.

Numba's default on Linux is GNU OpenMP, whose worker threads kill a child forked after a parallel
launch ("fork() called from a process already using GNU OpenMP"): multiprocessing and data-loader
workers hit that. TBB comes from the `tbb` wheel, a dependency of ep where wheels exist; Numba's
tbbpool finds libtbb by soname only, so it is loaded first from where the wheel put it. A choice
made with NUMBA_THREADING_LAYER is left alone, and without TBB Numba's default stays.
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


def choose_threading_layer() -> str:
    """Select TBB for Numba's parallel kernels when it loads; the layer chosen ("tbb", or "default")."""
    if "NUMBA_THREADING_LAYER" in os.environ:
        return config.THREADING_LAYER
    path = _libtbb()
    if path is None:
        return config.THREADING_LAYER
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return config.THREADING_LAYER
    config.THREADING_LAYER = "tbb"
    return "tbb"
