"""The LLVM options of ep's CPU kernels: full-width vectors on CPUs with AVX-512, and loop
constants kept out of a prange's loop. ep.common.jit applies them when it is imported, before ep
creates its first Numba function: Numba's CPU code generator reads the features once, when it
starts, and ep's first function (a math record's) starts it.

LLVM tunes its Intel AVX-512 server models (skylake-avx512 up to sapphirerapids) with
"prefer-256-bit": loops vectorize with ymm registers, 8 float32 lanes, where PyTorch's AVX-512
(SLEEF) kernels use zmm, 16 lanes. Clearing that tuning feature lets LLVM pick 512-bit vectors,
which doubles the lanes of the compute-bound kernels (the float32 transcendentals).
"""
from __future__ import annotations

import llvmlite.binding as llvm
from numba import config
from numba.core.codegen import get_host_cpu_features
from numba.core.registry import cpu_target


def prefer_full_vector_width() -> str | None:
    """Numba's CPU feature string with "-prefer-256-bit" on a CPU with AVX-512F; the string set, or
    None where nothing changed (no AVX-512, or NUMBA_CPU_FEATURES given).

    Numba reads it when its CPU code generator starts (at the first @njit function made in the
    process), so ep.common.jit runs this on import; where the process made a Numba function before
    it imported ep, the generator keeps the host's tuning. Numba's on-disk cache keys compiled code
    by the generator's feature string, so a cached kernel never crosses settings.
    """
    if config.CPU_FEATURES is not None:
        return None
    features = get_host_cpu_features()
    if "+avx512f" not in features.split(","):
        return None
    config.CPU_FEATURES = features + ",-prefer-256-bit"
    return config.CPU_FEATURES


def full_vector_width_in_use() -> bool:
    """Whether Numba's CPU code generator compiles with ep's 512-bit setting (it does not where it
    started before ep was imported, or on a CPU without AVX-512)."""
    return "-prefer-256-bit" in cpu_target.target_context.codegen().magic_tuple()[2].split(",")


# MachineLICM's switch: when on (LLVM's default) it hoists nothing out of an inner loop that might
# not run.
_AVOID_SPECULATION = "-avoid-speculation=false"


def hoist_loop_constants() -> str:
    """Let LLVM hoist loop-invariant machine instructions out of an inner loop that may not run;
    returns the option set.

    Numba compiles a prange into a gufunc whose loop over its chunk runs inside a loop over chunks,
    and vectorizes it into an inner loop that runs only for 8 or more elements. LLVM's default
    would have to speculate to hoist out of it, so it left the load of every vector constant inside:
    a float32 transcendental reloaded 14 to 23 constants per 8 elements (sigmoid 58 instructions in
    the parallel loop, 40 in the same loop on the calling thread). Hoisting only ever executes
    side-effect-free instructions, such as those loads, once more than needed. A process-wide LLVM
    option, read whenever a function is compiled: set before the first ep kernel compiles.
    """
    llvm.set_option("", _AVOID_SPECULATION)
    return _AVOID_SPECULATION
