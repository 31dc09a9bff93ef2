"""cuBLAS through NVIDIA's nvmath-python (the cuda extra): its bindings where they can run, and why
not elsewhere. CUDA float matmul is unsupported where they cannot (ep/cuda/primitive/matmul.py)."""
from __future__ import annotations

import functools


@functools.cache
def cublas_bindings():
    """nvmath's cuBLAS bindings, or None: on Numba's CUDA simulator (no GPU) or without nvmath-python."""
    from numba import config

    if config.ENABLE_CUDASIM:
        return None
    try:
        from nvmath.bindings import cublas
    except ImportError:
        return None
    return cublas


def cublas_missing() -> str | None:
    """Why cuBLAS cannot run here, or None where it can."""
    from numba import config

    if config.ENABLE_CUDASIM:
        return "cuBLAS cannot run on Numba's CUDA simulator (no GPU): CUDA float matmul runs only on a GPU"
    if cublas_bindings() is None:
        return "CUDA float matmul is cuBLAS's, through nvmath-python, which is not installed (pip install 'ep[cuda]')"
    return None
