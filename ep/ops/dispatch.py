"""Global tensors through ep.ops: every ops function, given ep.sbp global tensors (all on one
placement), returns a global tensor, running the op of the same name in ep.sbp.global_ops (which
picks the SBP signature, boxes, and runs the local primitive on this rank's piece); sbp= asks
for the result's SBP. This is the one place ep.ops tells a global tensor from an array: by its
class, checked before anything else, so an array call pays one type test per argument.
"""
from __future__ import annotations

import functools
from typing import Callable, TypeVar

from ep.sbp.global_tensor import GlobalTensor

F = TypeVar("F", bound=Callable)


def _global_call(name: str, args: tuple, kwargs: dict):
    """The ops function name on global tensors: ep.sbp.global_ops' function of that name, which
    makes a new global tensor (no out=) on the device's default stream and always checks indices."""
    from ep.sbp import global_ops

    kwargs = dict(kwargs)
    for key in ("out", "stream"):
        value = kwargs.pop(key, None)
        if value is not None:
            raise TypeError(f"{key}: {name} of global tensors makes a new global tensor on the default stream; got {key}={value!r}, expected None")
    if kwargs.pop("check_bounds", True) is not True:
        raise ValueError(f"check_bounds: {name} of global tensors always checks its indices; got check_bounds=False")
    return getattr(global_ops, name)(*args, **kwargs)


def accepts_global(fn: F) -> F:
    """fn (an ep.ops function) that hands a call with any global tensor argument to ep.sbp.global_ops
    (where an argument that is not a global tensor is a TypeError naming it)."""
    name = fn.__name__

    @functools.wraps(fn)
    def op(*args, **kwargs):
        for x in args:
            if type(x) is GlobalTensor:
                return _global_call(name, args, kwargs)
        if kwargs:
            for x in kwargs.values():
                if type(x) is GlobalTensor:
                    return _global_call(name, args, kwargs)
            if "sbp" in kwargs:
                raise TypeError(f"sbp: {name} takes sbp= only with global tensors (ep.to_global); no argument is one")
        return fn(*args, **kwargs)

    return op  # type: ignore[return-value]
