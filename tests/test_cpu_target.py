"""ep.common.cpu_target: 512-bit vectors where the CPU has AVX-512, nothing changed elsewhere; loop constants out of a prange's loop.

This machine may lack AVX-512, so the end-to-end check compiles (never runs) a kernel for
skylake-avx512 and reads the machine code.
"""
import os
import platform
import subprocess
import sys

import pytest
from numba import config

from ep.common import cpu_target as target

AVX512_HOST = "+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+popcnt,+lzcnt,+movbe,+sse4.2,+avx512f,+avx512dq,+avx512bw,+avx512vl,+avx512cd"


@pytest.fixture
def no_features(monkeypatch):
    monkeypatch.setattr(config, "CPU_FEATURES", None)


def test_avx512_host_gets_full_width(monkeypatch, no_features):
    monkeypatch.setattr(target, "get_host_cpu_features", lambda: AVX512_HOST)
    assert target.prefer_full_vector_width() == AVX512_HOST + ",-prefer-256-bit"
    assert config.CPU_FEATURES == AVX512_HOST + ",-prefer-256-bit"


def test_avx2_host_is_left_alone(monkeypatch, no_features):
    monkeypatch.setattr(target, "get_host_cpu_features", lambda: "+avx,+avx2,+fma,-avx512f")
    assert target.prefer_full_vector_width() is None and config.CPU_FEATURES is None


def test_a_users_features_are_left_alone(monkeypatch):
    monkeypatch.setattr(config, "CPU_FEATURES", "+avx2")
    monkeypatch.setattr(target, "get_host_cpu_features", lambda: AVX512_HOST)
    assert target.prefer_full_vector_width() is None and config.CPU_FEATURES == "+avx2"


COMPILE_SCRIPT = """
import sys
import numba.core.codegen
import numpy as np
from numba import types
sys.path.insert(0, {tests!r})
# The host ep sees: a CPU with AVX-512 (ep reads the features when it is imported).
numba.core.codegen.get_host_cpu_features = lambda: {features!r}
import ep
from test_cpu_target import _innermost_vector_loop
# An alias lookup first: it loads the op records, whose Numba functions start Numba's code
# generator (before any CPU kernel module is imported): it must start with ep's features.
ep.UnaryOp.aliases()
primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", ep.UnaryOp.kExp, np.float32, np.float32)
kernel = primitive._kernel.span.serial
# The span takes its launch's arguments by address, and its item range.
kernel.compile((types.int64, types.int64, types.int64))
loop = _innermost_vector_loop("\\n".join(kernel.inspect_asm().values()))
print("zmm" if all("ymm" not in line for line in loop) and any("zmm" in line for line in loop) else "ymm")
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 machine code")
def test_exp_kernel_for_an_avx512_cpu_uses_zmm(tmp_path):
    # Compiled (never run) for skylake-avx512 in a fresh process and cache: the vector loop works
    # on 16 float32 lanes (with the CPU's own tuning it takes 8, in ymm registers).
    env = dict(os.environ, NUMBA_CPU_NAME="skylake-avx512", NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CPU_FEATURES", None)
    script = COMPILE_SCRIPT.format(tests=os.path.dirname(__file__), features=AVX512_HOST)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.split()[-1] == "zmm"


def _innermost_vector_loop(asm: str) -> list[str]:
    """The shortest loop (a backward jump to a label) whose instructions are mostly on vector registers."""
    lines = [line.strip() for line in asm.splitlines()]
    labels = {line[:-1]: i for i, line in enumerate(lines) if line.endswith(":") and " " not in line}
    loops = []
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("j") and labels.get(parts[1], i) < i:
            body = [b for b in lines[labels[parts[1]] + 1 : i + 1] if b and not b.startswith((".", "#")) and not b.endswith(":")]
            if sum(("ymm" in b) or ("zmm" in b) for b in body) > len(body) // 2:
                loops.append(body)
    return min(loops, key=len)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 machine code")
def test_prange_loop_keeps_its_constants_out_of_the_loop():
    import numpy as np
    from numba import njit, prange

    from ep.common.math import fast_math
    from ep.common.jit import LLVM_OPTIONS  # importing it (as every ep kernel does) set the option

    assert LLVM_OPTIONS == "-avoid-speculation=false"

    @njit(parallel=True)
    def kernel(src, dst):
        for i in prange(src.size):
            dst[i] = fast_math.sigmoid(src[i])

    x = np.linspace(-5, 5, 64, dtype=np.float32)
    kernel(x, np.empty_like(x))
    asm = kernel.inspect_asm(kernel.signatures[0])
    # The prange's body is compiled into the gufunc; its vector loop must not reload the formula's
    # constants every iteration (without the option: 15 broadcasts of 8 elements each).
    loop = _innermost_vector_loop(asm[asm.index("\n__gufunc__"):])
    reloads = [line for line in loop if "broadcast" in line or ".LCPI" in line]
    assert not reloads, reloads


SPAN_LOOP_SCRIPT = """
import sys
from numba import njit, types
import numpy as np
sys.path.insert(0, {tests!r})
from test_cpu_target import _innermost_vector_loop
import ep

primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", ep.UnaryOp.kSigmoid, np.float32, np.float32)
# The span takes its launch's arguments by address, and its item range. Compiled here with the
# span's own options, uncached: Numba shows no machine code of a build it loaded from the disk cache.
span_kernel = primitive._kernel.span
signature = (types.int64, types.int64, types.int64)
span = njit(signature, **{{**span_kernel._options, "cache": False}})(span_kernel.serial.py_func)
loop = _innermost_vector_loop(span.inspect_asm(signature))
print(sum("broadcast" in line or ".LCPI" in line or "(%rsp)" in line for line in loop))
"""

# The targets the loop is compiled for, whatever this machine's CPU, and how many of the float32
# sigmoid's constants its vector loop may load per iteration: none with AVX-512's 32 vector
# registers; with AVX2's 16 the formula's constants outnumber the registers, and LLVM rematerializes
# two as broadcasts and keeps one on the stack (seen on Zen 3), where an unhoisted loop reloads
# all 14 to 23.
TARGETS = {
    "skylake-avx512": (AVX512_HOST, 0),
    "znver3": ("+avx,+avx2,+fma,+f16c,+bmi,+bmi2,+popcnt,+lzcnt,+movbe,+sse4.2", 3),
}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 machine code")
@pytest.mark.parametrize("cpu", sorted(TARGETS))
def test_unary_span_loop_keeps_its_constants_out_of_the_loop(cpu, tmp_path):
    # Compiled (never run) for the named CPU in a fresh process and cache: the same on every host.
    features, most = TARGETS[cpu]
    env = dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES=features, NUMBA_CACHE_DIR=str(tmp_path))
    script = SPAN_LOOP_SCRIPT.format(tests=os.path.dirname(__file__))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert int(result.stdout.split()[-1]) <= most
