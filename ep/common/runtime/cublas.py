"""cuBLAS through NVIDIA's nvmath-python (the cuda extra): its bindings where they can run, and why
not elsewhere. CUDA float matmul is unsupported where they cannot (ep/cuda/primitive/matmul.py)."""
from __future__ import annotations

import functools


@functools.cache
def _probe() -> tuple[object, str | None]:
    """(nvmath's cuBLAS bindings, None), or (None, why they cannot run here)."""
    from numba import config

    if config.ENABLE_CUDASIM:
        return None, "cuBLAS cannot run on Numba's CUDA simulator (no GPU): CUDA float matmul runs only on a GPU"
    try:
        from nvmath.bindings import cublas
    except ImportError:
        return None, "CUDA float matmul is cuBLAS's, through nvmath-python, which is not installed (pip install 'ep[cuda]')"
    return cublas, None


def cublas_bindings():
    """nvmath's cuBLAS bindings, or None: on Numba's CUDA simulator (no GPU) or without nvmath-python."""
    return _probe()[0]


def cublas_missing() -> str | None:
    """Why cuBLAS cannot run here, or None where it can."""
    return _probe()[1]
