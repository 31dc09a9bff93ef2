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


# The families compared: the start of their builds' names.
_FAMILIES = (
    "unary_gelu_float32_float32",
    "binary_",
    "gather_element_span",
    "gather_row_span",
    "gather_entry",
    "strided_copy_task",
    "expand_grad_float32",
    "unsorted_segment_task_float32",
)


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
    # One build of each family's serial kernels: a test worker may hold hundreds.
    builds = {}
    for kernel in gc.get_objects():
        # type(), not isinstance(): gc also lists weak proxies, which raise once their object is gone.
        if type(kernel) is CpuKernel and "serial" in vars(kernel) and kernel.serial.signatures:
            name = kernel.serial.py_func.__qualname__
            family = next((prefix for prefix in _FAMILIES if name.startswith(prefix)), None)
            if family is not None:
                builds.setdefault(family, kernel.serial)
    assert sorted(builds) == sorted(_FAMILIES)
    for family, dispatcher in builds.items():
        assert dispatcher._compiler.pipeline_class is KernelCompiler
        signature = dispatcher.signatures[0]
        plain = _instructions(dispatcher, signature)
        assert plain == _instructions(dispatcher, signature, pipeline_class=KernelCompiler), family
