"""ep.ops.add_n: tf.math.add_n on the Add primitive."""
from __future__ import annotations

from typing import Sequence

from ep.common.primitive.operands import contiguous, one_device, output, stream_for, unaliased
from ep.common.runtime.data_type import DataType, as_data_type
from ep.include.primitive.add import AddFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind_sequence


@same_kind_sequence
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
    device = one_device(arrays, "arrays")
    dtype = add_n_dtype(arrays)
    shape = tuple(arrays[0].shape)
    primitive = NewPrimitive(AddFactory, device, dtype)
    if primitive is None:
        raise TypeError(f"arrays: add_n does not support dtype {dtype.value}")
    stream = stream_for(device, stream)
    out = output(out, shape, dtype, device, stream)
    # Each element is read where it is written: out may be an input, any other overlap is copied.
    sources = [unaliased(contiguous(a, device, stream, name=f"arrays[{i}]"), out, device, stream, elementwise=True) for i, a in enumerate(arrays)]
    primitive.launch_trusted(stream, sources, len(sources), out, int(arrays[0].size))
    return out


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

