"""ep.ops.add_n: tf.math.add_n on the Add primitive."""
from __future__ import annotations

import inspect
from typing import Sequence

from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.dlpack import from_dlpack, is_dlpack
from ep.include.primitive.add import AddFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import call_global, contiguous, device_of, in_namespace, namespace_of, output, stream_for, unaliased
from ep.sbp.global_tensor import GlobalTensor


def add_n(arrays: Sequence[object], *, out=None, stream=None, sbp=None):
    """The elementwise sum of arrays, as tf.math.add_n: a non-empty sequence of arrays of one shape
    and one dtype (no broadcasting, no promotion: a TypeError or ValueError names the first that
    differs), summed in one pass (up to 8 at a time, then the running sum with the next 7) as the
    binary add op sums two: integers wrap, bools or, float16 adds in float32 within a pass.
    Arrays may have any strides on one device (other libraries' arrays are viewed without a copy;
    the result has arrays[0]'s kind, as every ops function's has its first array's: torch in,
    torch out); out receives the result (it may be one of arrays); stream defaults to the device's default stream. Global arrays (ep.to_global)
    give a global tensor, laid out by sbp when given.
    """
    if isinstance(arrays, (str, bytes)) or not hasattr(arrays, "__len__"):
        raise TypeError(f"arrays: {type(arrays).__name__} is not a sequence of arrays")
    if sbp is not None or any(type(a) is GlobalTensor for a in arrays):
        # same_kind takes arrays by parameter, and this one is a sequence: its items decide here.
        return call_global(add_n, _SIGNATURE, (arrays,), {"out": out, "stream": stream, "sbp": sbp})
    if not arrays:
        raise ValueError("arrays: is empty; expected at least one array")
    namespace = namespace_of(arrays[0]) if is_dlpack(arrays[0]) else None
    arrays = [from_dlpack(a, f"arrays[{i}]") if is_dlpack(a) else a for i, a in enumerate(arrays)]
    first = arrays[0]
    device = device_of(first, "arrays[0]")
    for i, a in enumerate(arrays[1:], 1):
        name = f"arrays[{i}]"
        if device_of(a, name).device_type is not device.device_type:
            raise TypeError(f"{name}: is on {device_of(a, name).device_type.value}; expected {device.device_type.value}, as arrays[0]")
    dtype = add_n_dtype(arrays)
    shape = tuple(first.shape)
    primitive = NewPrimitive(AddFactory, device, dtype)
    if primitive is None:
        raise TypeError(f"arrays: add_n does not support dtype {dtype.value}")
    stream = stream_for(device, stream)
    given = out
    if out is not None and is_dlpack(out):
        out = from_dlpack(out, "out")  # another library's out= (a torch tensor), written in place
    out = output(out, shape, dtype, device, stream)
    # Each element is read where it is written: out may be an input, any other overlap is copied.
    sources = [unaliased(contiguous(a, device, stream, name=f"arrays[{i}]"), out, device, stream, elementwise=True) for i, a in enumerate(arrays)]
    primitive.launch_trusted(stream, sources, len(sources), out, int(first.size))
    return in_namespace(out, namespace) if given is None else given


def add_n_dtype(arrays: Sequence[object]) -> DataType:
    """The DataType of add_n over arrays (anything with a shape and dtype): one shape and dtype."""
    if not arrays:
        raise ValueError("arrays: is empty; expected at least one array")
    shape, dtype = tuple(arrays[0].shape), as_data_type(arrays[0].dtype, "arrays[0]")
    for i, a in enumerate(arrays[1:], 1):
        name = f"arrays[{i}]"
        if as_data_type(a.dtype, name) is not dtype:
            raise TypeError(f"{name}: has dtype {a.dtype}; expected {dtype.value}, as arrays[0] (add_n does not promote)")
        if tuple(a.shape) != shape:
            raise ValueError(f"{name}: has shape {tuple(a.shape)}; expected {shape}, as arrays[0] (add_n does not broadcast)")
    return dtype


_SIGNATURE = inspect.signature(add_n)
