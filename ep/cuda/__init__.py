"""The CUDA device: numba.cuda kernels."""
