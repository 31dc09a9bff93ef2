"""The compile cache is keyed per kernel by what it compiles: an edit recompiles only the kernels that use it.

kernel_digest (ep/common/jit.py) is part of each kernel's name, which keys Numba's on-disk cache.
"""
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import types

from numba import njit

import ep
from ep.common.jit import kernel_digest, specialize

SOURCES = """
import math

from numba.extending import intrinsic

from ep.common.jit import bound, scalar_function, template


@scalar_function
def helper(x):
    return x + 1


@scalar_function
def formula(x):
    return helper(x) * 2


def of_x(fn):
    @scalar_function
    def made(x):
        return fn(x)

    return made


@scalar_function
def via_module(x):
    return helpers.twice(x)


@intrinsic
def add(typingctx, a, b):
    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1])

    return a(a, b), codegen


@scalar_function
def adds(x):
    return add(x, 3.0)


@template("formula")
def kernel(dst):
    dst[0] = bound.formula(dst[0])
"""


def _module(source: str, name: str = "digest_case") -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def _digests(source: str = SOURCES, helpers: str = "def twice(x):\n    return 2 * x\n") -> dict[str, str]:
    case = _module(source)
    # An ep module read as `helpers.twice`: its attribute is followed, not just its name.
    case.helpers = _module(helpers, "ep._digest_case_helpers")
    formulas = {
        "formula": case.formula,
        "exp": case.of_x(math.exp),
        "log": case.of_x(math.log),
        "of_helper": case.of_x(case.helper),
        "via_module": case.via_module,
        "adds": case.adds,
    }
    return {name: kernel_digest(case.kernel, {"formula": formula}) for name, formula in formulas.items()}


def test_digest_follows_what_the_kernel_inlines():
    digests = _digests()
    assert len(set(digests.values())) == len(digests)
    assert _digests() == digests
    # Moving code or editing comments changes no digest.
    assert _digests("\n\n# a comment\n" + SOURCES) == digests
    edited = _digests(SOURCES.replace("return x + 1", "return x + 2"))
    assert {name for name in digests if edited[name] != digests[name]} == {"formula", "of_helper"}
    edited = _digests(helpers="def twice(x):\n    return x + x\n")
    assert {name for name in digests if edited[name] != digests[name]} == {"via_module"}
    edited = _digests(SOURCES.replace("builder.fadd", "builder.fsub"))
    assert {name for name in digests if edited[name] != digests[name]} == {"adds"}


def test_digest_covers_plain_bindings():
    case = _module(SOURCES)
    first = kernel_digest(case.kernel, {"formula": case.formula})
    assert kernel_digest(case.kernel, {"formula": 1.5}) != kernel_digest(case.kernel, {"formula": 2.5})
    assert kernel_digest(case.kernel, {"formula": (1, "a")}) != kernel_digest(case.kernel, {"formula": (1, "b")})
    assert kernel_digest(case.kernel, {"formula": case.formula}) == first


def test_digest_follows_a_kernel_called_from_another():
    # A kernel that calls another (a compiled specialization bound to a slot, as the CPU gather's
    # copy and segment sum's task are) links the callee's code: its digest must change with what
    # the callee compiles, though the callee reads its own bindings through `bound`.
    case = _module(SOURCES)

    def caller_digest(formula):
        callee = njit(specialize(case.kernel, "callee", formula=formula))
        return kernel_digest(case.kernel, {"formula": callee})

    assert caller_digest(case.formula) == caller_digest(case.formula)
    assert caller_digest(case.formula) != caller_digest(case.adds)


_KERNEL_NAMES = """
from ep.cuda.ptx import kernels
print("\\n".join(kernel._fn.__qualname__ for _, kernel in kernels()))
"""


def test_digests_are_equal_across_processes():
    """Every registered kernel's name, digest included, in two processes with different string hashing."""
    names = [
        subprocess.run(
            [sys.executable, "-c", _KERNEL_NAMES],
            env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for seed in ("1", "2")
    ]
    assert names[0] == names[1]
    assert len(set(names[0])) == len(names[0]) > 100


# Runs relu float32, relu float64 and abs float32 on cpu, printing the results and Numba's cache log.
_RUN = """
import json
import numpy as np
import ep

assert ep.__file__.startswith({root!r}), ep.__file__
x = np.array([-2.0, -0.5, 0.0, 3.0])
results = {{}}
for op, dtype in ((ep.UnaryOp.kRelu, np.float32), (ep.UnaryOp.kRelu, np.float64), (ep.UnaryOp.kAbs, np.float32)):
    src = x.astype(dtype)
    dst = np.zeros_like(src)
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", op, src.dtype, dst.dtype, None, None)
    stream = ep.GetDevice("cpu").CreateStream()
    primitive.Launch(stream, src, dst, src.size)
    stream.Sync()
    results[f"{{op.value}}_{{np.dtype(dtype).name}}"] = dst.tolist()
print("RESULTS", json.dumps(results))
"""


def _run(root: pathlib.Path, cache: pathlib.Path) -> tuple[dict, set[str], set[str]]:
    """(results, kernels compiled and saved, kernels loaded from the cache) of one new process."""
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "NUMBA_CACHE_DIR": str(cache),
        "NUMBA_DEBUG_CACHE": "1",
        "NUMBA_ENABLE_CUDASIM": "1",
    }
    out = subprocess.run(
        [sys.executable, "-c", _RUN.format(root=str(root))], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout
    results = json.loads(out.split("RESULTS ", 1)[1])

    def kernels(event: str) -> set[str]:
        # "[cache] data saved to '.../elementwise_unary._unary-16.unary_relu_float32_float32_serial_<digest>...nbc'"
        return set(re.findall(rf"\[cache\] data {event} .*?\.(unary_\w+?)_serial_[0-9a-f]+", out))

    return results, kernels("saved to"), kernels("loaded from")


def test_an_edit_recompiles_only_the_kernels_using_it(tmp_path):
    root, cache = tmp_path / "src", tmp_path / "cache"
    shutil.copytree(pathlib.Path(ep.__file__).parent, root / "ep", ignore=shutil.ignore_patterns("__pycache__"))
    all_kernels = {"unary_relu_float32_float32", "unary_relu_float64_float64", "unary_abs_float32_float32"}

    results, saved, loaded = _run(root, cache)
    assert (saved, loaded) == (all_kernels, set())
    assert results == {"relu_float32": [0, 0, 0, 3], "relu_float64": [0, 0, 0, 3], "abs_float32": [2, 0.5, 0, 3]}

    results, saved, loaded = _run(root, cache)
    assert (saved, loaded) == (set(), all_kernels)

    # relu now gives 7 for x < 0: what runs must be the edited formula, not a cached one.
    activation = root / "ep" / "common" / "math" / "ops" / "activation.py"
    source = activation.read_text()
    relu = "    return x if not x < 0 else as_type(0, x)\n"
    assert source.count(relu) == 1
    activation.write_text(source.replace(relu, relu.replace("as_type(0, x)", "as_type(7, x)")))

    results, saved, loaded = _run(root, cache)
    assert saved == {"unary_relu_float32_float32", "unary_relu_float64_float64"}
    assert loaded == {"unary_abs_float32_float32"}
    assert results == {"relu_float32": [7, 7, 0, 3], "relu_float64": [7, 7, 0, 3], "abs_float32": [2, 0.5, 0, 3]}
