"""ep.cpu.compiler: sharing inlined functions' untyped IR changes how long a kernel takes to
compile, not the code: the spans and tasks of every CPU family built with Numba's own pipeline
and with ep's give the same machine code."""
import gc
import re

import numpy as np
from numba import njit

import ep
import ep.ops
from ep.cpu.compiler import KernelCompiler
from ep.cpu.kernel import CpuKernel


def _instructions(dispatcher, signature, **options) -> list[str]:
    # A fresh, uncached dispatcher of the same function: its instructions and labels, directives
    # left out and symbols renamed (their names carry per-process ids).
    fresh = njit(signature, cache=False, **options)(dispatcher.py_func)
    lines = fresh.inspect_asm(signature).splitlines()
    return [re.sub(r"_ZN\w+", "NAME", line) for line in lines if not line.lstrip().startswith(".")]


def test_shared_inlined_ir_gives_the_same_machine_code():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 30)).astype(np.float32)
    # A launch of each family: its serial builds (spans and tasks) compile, with ep's pipeline.
    ep.ops.unary("gelu", x)
    ep.ops.binary("pow", x, x[:1])
    ep.ops.gather(x, rng.integers(0, 40, 7))
    ep.ops.gather(x[:, 0].copy(), rng.integers(0, 40, 7))
    ep.ops.repeat(x, (2, 1))
    ep.ops.expand_grad(x, (1, 30))
    ep.ops.gather_grad(x[:7], rng.integers(0, 40, 7), (40, 30), axis=0)
    builds = {id(k.serial): k.serial for k in gc.get_objects() if isinstance(k, CpuKernel) and "serial" in vars(k)}
    names = set()
    for dispatcher in builds.values():
        assert dispatcher.targetoptions.get("pipeline_class", KernelCompiler) is KernelCompiler
        for signature in dispatcher.signatures:
            plain = _instructions(dispatcher, signature)
            assert plain == _instructions(dispatcher, signature, pipeline_class=KernelCompiler), dispatcher.py_func.__qualname__
            names.add(dispatcher.py_func.__qualname__.rsplit("_", 2)[0])
    assert {"gather_element_span", "gather_row_span", "gather_index_pass", "strided_copy_task"} <= names, names
    assert any(name.startswith("unary_gelu") for name in names) and any("pow" in name for name in names), names
