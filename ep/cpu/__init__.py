"""The CPU device: Numba @njit(parallel=True) kernels."""
