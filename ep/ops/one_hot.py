"""ep.ops.one_hot: torch.nn.functional.one_hot with TensorFlow's on and off values, on the OneHot
primitive."""
from __future__ import annotations

import math

import numpy as np

from ep.common.primitive.copies import copy_to_host
from ep.common.primitive.operands import contiguous, device_of, output, stream_for, unaliased
from ep.common.runtime.data_type import INDEX_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import integer
from ep.include.primitive.one_hot import OneHotFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind
from ep.ops.gather import _launch as launch_naming_indices

_INDEX_DTYPES = {dtype.dtype for dtype in INDEX_TYPES}


def one_hot_classes(indices, num_classes: object, device) -> int:
    """num_classes, or for -1 the largest index plus one (read on the host: a CUDA array is copied
    there, which waits for it); ValueError naming num_classes for any other negative value."""
    num_classes = integer(num_classes, "num_classes")
    if num_classes >= 0:
        return num_classes
    if num_classes != -1:
        raise ValueError(f"num_classes: {num_classes} is negative; expected -1 (the largest index plus one) or >= 0")
    if math.prod(indices.shape) == 0:
        raise ValueError("num_classes: -1 cannot be inferred from empty indices; pass num_classes")
    host = indices if device.device_type is DeviceType.kCPU else copy_to_host(indices)
    # Not below 0: a negative index is then out of range [0, 0), an IndexError naming it.
    return max(int(host.max()) + 1, 0)


def one_hot_dtype(indices_dtype, dtype) -> DataType:
    """The result's DataType (dtype), after checking the indices' dtype is an index type."""
    if np.dtype(indices_dtype) not in _INDEX_DTYPES:
        raise TypeError(f"indices: dtype {np.dtype(indices_dtype)} is not an index type; expected int32 or int64")
    return as_data_type(dtype, "dtype")


@same_kind("indices")
def one_hot(indices, num_classes=-1, *, dtype=np.int64, on_value=1, off_value=0, out=None, stream=None):
    """torch.nn.functional.one_hot(indices, num_classes), with tf.one_hot's on_value and off_value.

    The result has shape indices.shape + (num_classes,) and dtype (int64 by default, as PyTorch's):
    out[..., j] is on_value where indices[...] == j, else off_value (each converted to dtype as
    np.full converts its value: an int out of range is an OverflowError, NaN to an integer a
    ValueError). indices are int32 or int64 of any shape and strides; num_classes=-1 takes the
    largest index plus one (on CUDA that reads the indices on the host), as PyTorch does, so one
    large index makes a large result (2**31 - 1 gives 16 GiB a row of int64): pass num_classes
    where the indices are not known; a result beyond the machine's memory is a MemoryError. An index outside
    [0, num_classes) is an IndexError naming its position in indices and its value (nothing is
    written; on CUDA it is raised by the stream's next Sync(), and its row holds off_value).
    out receives the result (that shape and dtype, on indices' device); stream defaults to the
    device's default stream. Global indices give a global tensor (num_classes must be given).
    """
    device = device_of(indices, "indices")
    dtype = one_hot_dtype(indices.dtype, dtype)
    stream = stream_for(device, stream)
    shape = tuple(indices.shape)
    indices = contiguous(indices, device, stream, name="indices")
    classes = one_hot_classes(indices, num_classes, device)
    result = shape + (classes,)
    out = output(out, result, dtype, device, stream, "num_classes")
    indices = unaliased(indices, out, device, stream)
    primitive = NewPrimitive(OneHotFactory, device, indices.dtype, dtype, check_bounds=True)
    launch_naming_indices(primitive, shape, stream, indices, out, on_value, off_value, math.prod(shape), 0, classes)
    return out
