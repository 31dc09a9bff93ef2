"""How ep compiles: scalar functions written once for both devices, and kernel specialization."""
from __future__ import annotations

import functools
import hashlib
import pathlib
import types
from typing import Callable

from numba import njit


def scalar_function(fn: Callable) -> Callable:
    """Compile fn for use inside CPU and CUDA kernels.

    inline="always" makes Numba inline the body at IR level into whichever kernel calls it, so
    one definition serves @njit and numba.cuda kernels alike, and a CUDA kernel never compiles
    a separate device function (which would ask the current GPU for its compute capability).
    """
    return njit(inline="always")(fn)


@functools.cache
def source_hash() -> str:
    """A digest of ep's kernel sources; part of every kernel name so Numba's disk cache never goes stale."""
    root = pathlib.Path(__file__).resolve().parent.parent
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        if "ops" in path.relative_to(root).parts[:1]:
            continue
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def specialize(template: Callable, name: str, **bindings: object) -> Callable:
    """A copy of template whose global names in bindings are bound to the given values.

    The copy is what Numba compiles: each specialization is its own function (as a C++ template
    instance is), and its unique qualname keys Numba's on-disk cache.
    """
    namespace = dict(template.__globals__)
    namespace.update(bindings)
    qualname = f"{name}_{source_hash()}"
    fn = types.FunctionType(template.__code__, namespace, qualname, template.__defaults__, template.__closure__)
    fn.__qualname__ = qualname
    fn.__module__ = template.__module__
    return fn
