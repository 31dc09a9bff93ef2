"""How ep compiles: scalar functions written once for both devices, and kernel specialization."""
from __future__ import annotations

import dis
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


# What a template calls its slots: `bound.formula(...)`, `bound.WIDE`. Outside a specialization
# it has no attributes, so an unspecialized template fails to compile, naming the slot.
bound = types.ModuleType("bound", "The slots of a kernel template, filled by specialize().")


def template(*slots: str) -> Callable[[Callable], Callable]:
    """Declare fn a kernel template whose body reads these slots as `bound.<slot>`.

    The declaration is checked against the body when the template is built: every slot it reads
    is declared, and every declared slot is read.
    """

    def declare(fn: Callable) -> Callable:
        used = used_slots(fn)
        if used != set(slots):
            raise TypeError(
                f"{fn.__qualname__}: declares slots {sorted(slots)} but its body reads {sorted(used)} as bound.<slot>"
            )
        fn.slots = frozenset(slots)
        return fn

    return declare


def used_slots(fn: Callable) -> set[str]:
    """The names fn's body reads as `bound.<name>`."""
    used = set()
    previous = None
    for instruction in dis.get_instructions(fn):
        if previous is not None and previous.argval == "bound" and previous.opname == "LOAD_GLOBAL":
            if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                used.add(instruction.argval)
        previous = instruction
    return used


def specialize(template: Callable, name: str, **bindings: object) -> Callable:
    """A copy of template whose slots are bound to the given values.

    The copy is what Numba compiles: each specialization is its own function (as a C++ template
    instance is), and its unique qualname keys Numba's on-disk cache. bindings must fill exactly
    the slots the template declared with @template.
    """
    slots = getattr(template, "slots", None)
    namespace = dict(template.__globals__)
    if slots is None:
        # TRANSITION: templates not yet declared with @template bind free globals.
        namespace.update(bindings)
    else:
        if set(bindings) != slots:
            raise TypeError(f"{template.__qualname__}: bindings {sorted(bindings)} do not fill its slots {sorted(slots)}")
        filled = types.ModuleType(f"bound_{name}")
        filled.__dict__.update(bindings)
        namespace["bound"] = filled
    qualname = f"{name}_{source_hash()}"
    fn = types.FunctionType(template.__code__, namespace, qualname, template.__defaults__, template.__closure__)
    fn.__qualname__ = qualname
    fn.__module__ = template.__module__
    return fn
