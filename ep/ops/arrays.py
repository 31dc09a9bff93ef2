"""Arguments for the ops layer: other libraries' arrays and global tensors in and out (same_kind),
and dims as a caller gives them. Where an array lives and how its storage is prepared for a launch:
ep.common.primitive.operands."""
from __future__ import annotations

import functools
import inspect
import sys
import types

import numpy as np

from ep.common.primitive.operands import given_out, strided_out, through_stand_ins
from ep.common.runtime.dlpack import from_dlpack, is_foreign, own, to_namespace
from ep.common.runtime.scalar import is_scalar
from ep.common.runtime.validate import integer
from ep.sbp import global_ops
from ep.sbp.global_tensor import GlobalTensor


# Types an ops function takes as they are, by class: NumPy arrays, numba device arrays, scalars,
# names, shapes. A type seen later joins once found to be neither another library's array nor a
# global tensor, while the set holds fewer than _NATIVE_LIMIT types (a caller passing ever new
# classes would otherwise grow it without end; past the limit they take the slow path).
_NATIVE = {np.ndarray, int, float, bool, str, tuple, list, type(None)}
_NATIVE_LIMIT = 256
# Native types that are not arrays: refused where an array is expected (as torch refuses a list).
_NOT_ARRAYS = {str, tuple, list}


def same_kind(*names: str):
    """Decorator: the one place that decides how an ops function's arguments are taken. Its array
    parameters names (and out=) also take other libraries' arrays and global tensors, and it adds
    the keyword sbp= (the result's SBP, for global tensors).

    An array that is not ep's own (is_foreign: a NumPy subclass, an array with __dlpack__ of
    PyTorch, JAX, CuPy, ..., CUDA memory with only __cuda_array_interface__) is viewed without a
    copy (ep.from_dlpack) before anything of it is read, and its class never taken as it is: a
    subclass as a base-class NumPy array, another CPU array as a NumPy array, a CUDA one through
    __cuda_array_interface__. The result has the
    kind of the first of names that is an array (binary's a, or b when a is a scalar): made by
    that library's from_dlpack (its asarray for CUDA memory), again without a copy; a NumPy or
    numba array there gives the result as before. The other arrays may be of any kind on the same
    device. An out= of any kind and strides receives the result and is returned as it was given. A global
    tensor among names, or sbp=, hands the call to call_global (ep.sbp.global_ops).
    """

    def decorate(function):
        signature = inspect.signature(function)
        parameters = list(signature.parameters)
        positions = tuple((name, parameters.index(name)) for name in names)
        with_sbp = _with_sbp(signature)

        @functools.wraps(function)
        def call(*args, **kwargs):
            # NumPy's common case costs one set lookup per argument; all else takes _call_slow.
            for arg in args:
                if type(arg) not in _NATIVE:
                    break
            else:
                try:
                    if not kwargs:
                        return function(*args)  # without **{}: a third of this wrapper's cost
                    for arg in kwargs.values():
                        if type(arg) not in _NATIVE:
                            break
                    else:
                        if "sbp" not in kwargs:
                            out = kwargs.get("out")
                            if out is None or (type(out) is np.ndarray and out.flags.c_contiguous):
                                return function(*args, **kwargs)
                            # A tuple's items may be another library's: _call_slow views them first.
                            if type(out) is not tuple:
                                return _into_out(function, args, kwargs) if strided_out(out) else function(*args, **kwargs)
                except AttributeError:
                    # A list where an array goes (its .dtype read): said here, at no cost to a good call.
                    _refuse_non_arrays(_arrays_given(positions, args, kwargs))
                    raise
            return _call_slow(function, with_sbp, positions, args, kwargs)

        call.__signature__ = with_sbp
        return call

    return decorate


def same_kind_sequence(function):
    """Decorator: same_kind for an ops function whose first parameter is a sequence of arrays
    (add_n, cat, stack; its signature has sbp=): each item taken as same_kind takes an array, the
    result of the first item's kind, an out= of any kind returned as given, and a global tensor
    among the items (or sbp=) handed to call_global. The function gets a non-empty list of NumPy or
    numba arrays and its other arguments as given."""
    signature = inspect.signature(function)
    name = next(iter(signature.parameters))

    @functools.wraps(function)
    def call(arrays, *args, **kwargs):
        if isinstance(arrays, (str, bytes)) or not hasattr(arrays, "__len__") or hasattr(arrays, "dtype"):
            raise TypeError(f"{name}: {type(arrays).__name__} is not a sequence of arrays (a list or tuple of them)")
        if kwargs.get("sbp") is not None or any(type(a) is GlobalTensor for a in arrays):
            return call_global(call, signature, (arrays, *args), kwargs)
        kwargs.pop("sbp", None)
        if not arrays:
            raise ValueError(f"{name}: is empty; expected at least one array")
        namespace = namespace_of(arrays[0]) if is_foreign(arrays[0]) else None
        _refuse_non_arrays({f"{name}[{i}]": a for i, a in enumerate(arrays)})
        arrays = [own(a, f"{name}[{i}]") for i, a in enumerate(arrays)]
        if kwargs.get("out") is not None:
            return _into_out(function, (arrays, *args), kwargs)
        return in_namespace(function(arrays, *args, **kwargs), namespace)

    return call


def _with_sbp(signature: inspect.Signature) -> inspect.Signature:
    """signature with a keyword-only sbp=None before any **kwargs (same_kind takes sbp=)."""
    parameters = list(signature.parameters.values())
    at = len(parameters) - (parameters and parameters[-1].kind is inspect.Parameter.VAR_KEYWORD)
    parameters.insert(at, inspect.Parameter("sbp", inspect.Parameter.KEYWORD_ONLY, default=None))
    return signature.replace(parameters=parameters)


def _call_slow(function, signature: inspect.Signature, positions: tuple[tuple[str, int], ...], args: tuple, kwargs: dict):
    """same_kind's path for anything but NumPy's common case: global tensors and sbp=, then other
    libraries' arrays. signature: the call's (with sbp=)."""
    for value in (*args, *kwargs.values()):
        record = getattr(type(value), "__ep_trace__", None)
        if record is not None:
            # A traced value (ep.fuse): the call becomes a node of the fused expression, or is refused.
            return record(value, function.__name__, signature, args, kwargs)
    tensors = _arrays_given(positions, args, kwargs)
    _refuse_non_arrays(tensors)
    if any(type(t) is GlobalTensor for t in tensors.values()) or kwargs.get("sbp") is not None:
        return call_global(function, signature, args, kwargs)
    kwargs.pop("sbp", None)
    for value in (*args, *kwargs.values()):
        cls = type(value)
        if len(_NATIVE) < _NATIVE_LIMIT and cls is not GlobalTensor and not is_foreign(value):
            _NATIVE.add(cls)
    args = list(args)
    namespace = None
    seen_array = False
    for name, position in positions:
        if name not in tensors:
            continue
        value = tensors[name]
        if is_foreign(value):
            if not seen_array:
                namespace = namespace_of(value)
            if position < len(args):
                args[position] = from_dlpack(value, name)
            else:
                kwargs[name] = from_dlpack(value, name)
        seen_array = seen_array or not (value is None or is_scalar(value))
    if kwargs.get("out") is not None:
        return _into_out(function, args, kwargs)
    return in_namespace(function(*args, **kwargs), namespace)


def _into_out(function, args, kwargs: dict):
    """function's call with an out= of any kind and layout: out as given, written in place (a
    tuple of outs, cummax's, as function's result kind). Where out is not C-contiguous, function
    writes stand-ins, copied into out after (through_stand_ins): NumPy's and PyTorch's out= of any strides."""
    given = kwargs["out"]
    out = given_out(given)
    if strided_out(out):
        result = through_stand_ins(lambda written: function(*args, **{**kwargs, "out": written}), out, kwargs.get("stream"))
    else:
        result = function(*args, **{**kwargs, "out": out})
        if out is given:
            return result
    return result._make(given) if isinstance(result, tuple) else given


def _arrays_given(positions: tuple[tuple[str, int], ...], args: tuple, kwargs: dict) -> dict:
    """The arguments given for the array parameters (name, position), by name."""
    return {
        name: args[position] if position < len(args) else kwargs[name]
        for name, position in positions if position < len(args) or name in kwargs
    }


def _refuse_non_arrays(arrays: dict) -> None:
    """TypeError naming the first list, tuple or str given where an array goes (as torch refuses one)."""
    for name, value in arrays.items():
        if type(value) in _NOT_ARRAYS:
            raise TypeError(f"{name}: {type(value).__name__} is not an array; expected an array (np.asarray({name}) makes one)") from None


def in_namespace(result, namespace: types.ModuleType | None):
    """result (a NumPy or numba array ep made) as an array of namespace's library, without a copy;
    as it is where namespace is None; a named tuple of them (cummax's) item by item."""
    if namespace is None:
        return result
    if isinstance(result, tuple):
        return result._make(to_namespace(r, namespace) for r in result)
    return to_namespace(result, namespace)


def call_global(function, signature: inspect.Signature, args: tuple, kwargs: dict):
    """The ops function's call on global tensors or with sbp=: ep.sbp.global_ops.call, the one
    global path (its op declared beside it, in ep/ops/<family>_rules.py)."""
    return global_ops.call(function, signature, args, kwargs)


def namespace_of(array) -> types.ModuleType | None:
    """The array-API namespace of array's library: its __array_namespace__, else the top-level
    module with a from_dlpack of its class or a base class (torch for a torch.Tensor subclass), or
    None for an object of no such library and for a NumPy subclass (its result stays a NumPy or
    numba array)."""
    if isinstance(array, np.ndarray):
        return None
    get = getattr(array, "__array_namespace__", None)
    if get is not None:
        return get()
    for cls in type(array).__mro__:
        module = sys.modules.get(cls.__module__.partition(".")[0])
        if module is not None and hasattr(module, "from_dlpack"):
            return module
    return None


def one_dim(dim: object, ndim: int, name: str = "dim") -> int:
    """dim (negative ones counted from the end) as 0 <= dim < ndim; IndexError naming name otherwise."""
    value = integer(dim, name)
    if not -ndim <= value < ndim:
        raise IndexError(f"{name}: {value} is out of range for {ndim} dims; expected {-ndim} <= {name} < {ndim}")
    return value % ndim
