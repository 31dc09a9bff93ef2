"""Global tensors through ep.ops: every ops function, given ep.sbp global tensors (all on one
placement) or sbp=, hands the call here, and global_call runs the op of the same name in
ep.sbp.global_ops (which picks the SBP signature, boxes, and runs the local primitive on this
rank's piece) and returns a global tensor.

The decision is arrays.same_kind's, on its slow path: a GlobalTensor is never among the types its
fast path takes as they are, and sbp= always leaves that path, so NumPy calls pay nothing more
and the ops functions themselves never see a global tensor or sbp=. (Callgrind, 20,000 NumPy calls
each, instructions per call before -> after moving the test here: binary 36,302 -> 36,262, unary
34,716 -> 34,110, gather 42,568 -> 41,669.)
"""
from __future__ import annotations

from ep.sbp import global_ops
from ep.sbp.global_tensor import GlobalTensor

__all__ = ["GlobalTensor", "global_call"]


def global_call(name: str, tensors: dict[str, object], args: tuple, kwargs: dict):
    """The ep.ops function name on global tensors (tensors: its tensor arguments by name; args and
    kwargs: the call's): ep.sbp.global_ops' function of that name, which makes a new global tensor
    (no out=) on the device's default stream, always checks indices, and names any argument in
    tensors that is not a global tensor."""
    if not any(type(t) is GlobalTensor for t in tensors.values()):
        raise TypeError(f"sbp: {name} takes sbp= only with global tensors (ep.to_global); got sbp={kwargs['sbp']!r} and none")
    kwargs = dict(kwargs)
    for key in ("out", "stream"):
        value = kwargs.pop(key, None)
        if value is not None:
            raise TypeError(f"{key}: {name} of global tensors makes a new global tensor on the default stream; got {key}={value!r}, expected None")
    if kwargs.pop("check_bounds", None) not in (True, None):
        raise ValueError(f"check_bounds: {name} of global tensors always checks its indices; got check_bounds=False")
    if kwargs.pop("offset", None) is not None:
        raise ValueError(f"offset: {name} of global tensors takes each rank's offset from the SBP; expected offset=None")
    return getattr(global_ops, name)(*args, **kwargs)
