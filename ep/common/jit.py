"""How ep compiles: scalar functions written once for both devices, and kernel specialization."""
from __future__ import annotations

import dis
import enum
import hashlib
import linecache
import sys
import threading
import types
import weakref
from typing import Callable

import numpy as np
from numba import njit
from numba import types as numba_types
from numba.core.extending import _Intrinsic as Intrinsic

from ep.common.cpu_target import hoist_loop_constants, prefer_full_vector_width
from ep.common.runtime.caches import function_cache

# Before ep makes its first Numba function (below and in every module that imports this one): the
# CPU code generator reads its features when the first one is made, LLVM its options at each build.
CPU_FEATURES = prefer_full_vector_width()
LLVM_OPTIONS = hoist_loop_constants()


def scalar_function(fn: Callable) -> Callable:
    """Compile fn for use inside CPU and CUDA kernels.

    inline="always" makes Numba inline the body at IR level into whichever kernel calls it, so
    one definition serves @njit and numba.cuda kernels alike, and a CUDA kernel never compiles
    a separate device function (which would ask the current GPU for its compute capability).
    """
    return njit(inline="always")(fn)


@function_cache("kernels")
def linked(fn: Callable) -> Callable:
    """fn (a scalar_function, or a plain function) for CPU kernels as a function of its own,
    compiled once per argument types: each kernel calling it links that code, and LLVM inlines it
    at every call (forceinline), where a scalar_function's Numba IR is copied into each call and
    compiled again. For a function a kernel calls in many places: a reduction's step and merge, a
    fused expression's formula (logsumexp's Reduce took 56 s and 1.15 GB to compile, a fused sum
    29 s and 726 MB; the kernels run as fast)."""
    return njit(forceinline=True)(getattr(fn, "py_func", fn))


def kernel_digest(template: Callable, bindings: dict[str, object]) -> str:
    """A digest of what a specialization of template with bindings compiles; it keys Numba's disk cache.

    It covers the template's code, its bindings and, transitively, every function, constant and
    module attribute they reach, so an edit to one formula changes the digest (and so recompiles)
    only the kernels that inline it. Equal sources give equal digests in every process.
    """
    with _lock:
        digest = hashlib.sha256(_function_digest(template).encode())
        for slot in sorted(bindings):
            digest.update(f"{slot}={_value_digest(bindings[slot])};".encode())
    return digest.hexdigest()[:16]


# A digest per function, computed once: functions outlive the kernels that reach them.
_function_digests: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# Kernels are built from any thread: one walk at a time.
_lock = threading.Lock()
# Functions whose digest is being computed: reaching one again is a cycle, digested by name.
_active: list[Callable] = []
_cycles = 0
# Attributes read from ep's own modules (`m.relu`) are followed to what they hold.
_PACKAGE = __name__.partition(".")[0]
# Packages whose objects are digested by name: they change only with their version, and Numba's
# cache keys its files by the Python version and checks its own version.
_LIBRARIES = frozenset({"numba", "numpy", "llvmlite"}) | sys.stdlib_module_names


def _function_digest(fn: types.FunctionType) -> str:
    global _cycles
    specialization = getattr(fn, "kernel_digest", None)
    if specialization is not None:
        # A specialization (a kernel another calls): its digest covers its template and bindings,
        # which its code reads through `bound`, a module no walk follows.
        return f"specialization:{specialization}"
    memo = _function_digests.get(fn)
    if memo is not None:
        return memo
    if fn in _active:
        _cycles += 1
        return f"cycle:{fn.__module__}.{fn.__qualname__}"
    cycles_before = _cycles
    _active.append(fn)
    try:
        code = fn.__code__
        global_names, attribute_names = _code_names(code)
        parts = [_code_digest(code), _value_digest(fn.__defaults__), _value_digest(fn.__kwdefaults__)]
        reached = [cell.cell_contents for cell in fn.__closure__ or () if _cell_is_set(cell)]
        parts += [_value_digest(value) for value in reached]
        for name in sorted(global_names):
            if name in fn.__globals__:
                value = fn.__globals__[name]
                reached.append(value)
                parts.append(f"{name}={_value_digest(value)}")
        parts += _module_attribute_digests(reached, attribute_names)
        result = hashlib.sha256("|".join(parts).encode()).hexdigest()
    finally:
        _active.pop()
    # A digest that stopped at a cycle depends on where the walk entered it: not memoized.
    if _cycles == cycles_before:
        _function_digests[fn] = result
    return result


def _module_attribute_digests(values: list[object], names: set[str]) -> list[str]:
    """Digests of `module.name` for ep's modules among values (attribute chains followed)."""
    parts = []
    modules = [value for value in values if _is_ep_module(value)]
    seen = set()
    while modules:
        module = modules.pop()
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        for name in sorted(names):
            if name in module.__dict__:
                value = module.__dict__[name]
                parts.append(f"{module.__name__}.{name}={_value_digest(value)}")
                if _is_ep_module(value):
                    modules.append(value)
    return parts


def _is_ep_module(value: object) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__.partition(".")[0] == _PACKAGE


def _cell_is_set(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a cell not yet assigned
        return False
    return True


def _code_names(code: types.CodeType) -> tuple[set[str], set[str]]:
    """The global names code and its nested code objects read, and the attribute names they read."""
    global_names, attribute_names = set(), set()
    for instruction in dis.get_instructions(code):
        if instruction.opname == "LOAD_GLOBAL":
            global_names.add(instruction.argval)
        elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            attribute_names.add(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            nested_globals, nested_attributes = _code_names(const)
            global_names |= nested_globals
            attribute_names |= nested_attributes
    return global_names, attribute_names


def _code_digest(code: types.CodeType) -> str:
    # Positions (file, line numbers) are left out: moving a function does not recompile it.
    parts = [
        code.co_code.hex(),
        repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)),
        repr((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags)),
    ]
    parts += [_code_digest(c) if isinstance(c, types.CodeType) else _value_digest(c) for c in code.co_consts]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


_PLAIN = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype, numba_types.Type, enum.Enum)


def _value_digest(value: object) -> str:
    """A digest of what a kernel compiles from value: a function's code, a constant's value."""
    if isinstance(value, types.FunctionType) and not _is_library(value):
        return "function:" + _function_digest(value)
    py_func = getattr(value, "py_func", None)
    if isinstance(py_func, types.FunctionType) and not _is_library(py_func):
        # A Numba dispatcher (@njit, @scalar_function) compiles its py_func with its options.
        options = sorted((key, repr(option)) for key, option in getattr(value, "targetoptions", {}).items())
        return f"dispatcher:{options}:{_function_digest(py_func)}"
    if isinstance(value, Intrinsic):  # its typing and codegen come from its defining function
        return "intrinsic:" + _function_digest(value._defn)
    if isinstance(value, _PLAIN):
        return f"{type(value).__qualname__}:{value!r}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}:({','.join(_value_digest(item) for item in value)})"
    if isinstance(value, (set, frozenset)):  # set order varies with string hashing: sorted
        return f"{type(value).__name__}:({','.join(sorted(_value_digest(item) for item in value))})"
    if isinstance(value, dict):
        return f"dict:({','.join(sorted(_value_digest(item) for item in value.items()))})"
    if isinstance(value, np.ndarray):
        return f"ndarray:{value.dtype.str}:{value.shape}:{hashlib.sha256(value.tobytes()).hexdigest()}"
    if isinstance(value, types.ModuleType):  # its attributes are digested where they are read
        return "module:" + value.__name__
    if isinstance(value, type) or _is_library(value):
        # Classes and the libraries' own objects (numba.prange, cuda.grid, math.exp): named, not read.
        return f"object:{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__qualname__)}"
    raise TypeError(f"kernel_digest: cannot digest {value!r} ({type(value).__qualname__}) reached from a kernel")


def _is_library(value: object) -> bool:
    module = getattr(value, "__module__", None) or type(value).__module__
    return module.partition(".")[0] in _LIBRARIES


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
    instance is). Its qualname, name plus kernel_digest, keys Numba's on-disk cache: a cached
    kernel is reused until something it compiles changes. bindings must fill exactly the slots
    the template declared with @template (none for a function without the declaration, which
    may read no slot).
    """
    slots = getattr(template, "slots", None)
    if slots is None:
        # A function that reads no slot is a template of none: @template() is optional for it.
        if used_slots(template):
            raise TypeError(f"{template.__qualname__}: is not a kernel template; declare its slots with @template")
        slots = frozenset()
    if set(bindings) != slots:
        raise TypeError(f"{template.__qualname__}: bindings {sorted(bindings)} do not fill its slots {sorted(slots)}")
    filled = types.ModuleType(f"bound_{name}")
    filled.__dict__.update(bindings)
    namespace = dict(template.__globals__, bound=filled)
    digest = kernel_digest(template, bindings)
    qualname = f"{name}_{digest}"
    fn = types.FunctionType(template.__code__, namespace, qualname, template.__defaults__, template.__closure__)
    fn.__qualname__ = qualname
    fn.__module__ = template.__module__
    fn.kernel_digest = digest
    return fn


_GENERATED = "<ep generated "


def is_generated(fn: Callable) -> bool:
    """Whether fn's code was made by define (it has no source file)."""
    return fn.__code__.co_filename.startswith(_GENERATED)


def define(source: str, name: str, globals_: dict[str, object]) -> Callable:
    """The function name defined by source with globals_ (a generated kernel, formula or launch);
    its source is registered with linecache (as dataclasses does), so tracebacks and Numba's error
    messages can show it."""
    filename = f"{_GENERATED}{abs(hash(source)):x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # __name__ makes the function's __module__ ep's: kernel_digest then reads its code and globals
    # (a function of no module it would take for a library's, digested by name alone).
    namespace = dict(globals_, __name__=__name__)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]
