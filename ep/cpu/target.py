"""The LLVM target options of ep's CPU kernels: full-width vectors on CPUs with AVX-512.

LLVM tunes its Intel AVX-512 server models (skylake-avx512 up to sapphirerapids) with
"prefer-256-bit": loops vectorize with ymm registers, 8 float32 lanes, where PyTorch's AVX-512
(SLEEF) kernels use zmm, 16 lanes. Clearing that tuning feature lets LLVM pick 512-bit vectors,
which doubles the lanes of the compute-bound kernels (the float32 transcendentals).
"""
from __future__ import annotations

from numba import config
from numba.core.codegen import get_host_cpu_features


def prefer_full_vector_width() -> str | None:
    """Numba's CPU feature string with "-prefer-256-bit" on a CPU with AVX-512F; the string set, or
    None where nothing changed (no AVX-512, or NUMBA_CPU_FEATURES given).

    Numba reads it when its CPU code generator starts, at the first compilation in the process, so
    this runs when ep.cpu.kernel is imported, before any ep kernel compiles; Numba's on-disk cache
    keys compiled code by the feature string, so a cached kernel never crosses settings.
    """
    if config.CPU_FEATURES is not None:
        return None
    features = get_host_cpu_features()
    if "+avx512f" not in features.split(","):
        return None
    config.CPU_FEATURES = features + ",-prefer-256-bit"
    return config.CPU_FEATURES
