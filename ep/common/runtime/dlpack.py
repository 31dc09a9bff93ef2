"""Arrays of other libraries (PyTorch, JAX, CuPy, any DLPack producer) as ep's own arrays.

ep has no array type of its own: its arrays are NumPy's on the CPU and numba's device arrays on
CUDA. `from_dlpack` views another library's array as one of those, without a copy: a CPU array
through DLPack (`numpy.from_dlpack`), a CUDA one through its `__cuda_array_interface__`. Exporting
needs nothing of ep: NumPy arrays have `__dlpack__`, numba device arrays
`__cuda_array_interface__`, and every array library imports one or the other.

bfloat16 is the exception: neither NumPy's DLPack nor the CUDA array interface carries it, so a
PyTorch bfloat16 tensor moves as its int16 view, in and out (`bits_of`, `in_namespace`), still
without a copy.
"""
from __future__ import annotations

import sys

import numpy as np

from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import bound_handle

# DLPack's DLDeviceType codes (dlpack.h) for the memory ep's devices can read.
KDL_CPU = 1
KDL_CUDA = 2
KDL_CUDA_MANAGED = 13


def is_dlpack(obj: object) -> bool:
    """True for another library's array that exports DLPack (NumPy's own arrays are not "other")."""
    cls = type(obj)
    return hasattr(cls, "__dlpack__") and hasattr(cls, "__dlpack_device__") and not issubclass(cls, np.ndarray)


def is_foreign(obj: object) -> bool:
    """True for an array that is not ep's own (a NumPy base-class array, a numba device array),
    which ep views as its own before reading anything of it: a NumPy subclass, one with DLPack, or
    CUDA memory offered only through __cuda_array_interface__. Their attributes (a shape property)
    need not describe the memory a kernel reads."""
    cls = type(obj)
    if issubclass(cls, np.ndarray):
        return cls is not np.ndarray
    if getattr(obj, "__cuda_ndarray__", False):
        return False
    return (hasattr(cls, "__dlpack__") and hasattr(cls, "__dlpack_device__")) or hasattr(obj, "__cuda_array_interface__")


def plain_ndarray(array: np.ndarray, name: str) -> np.ndarray:
    """array as a base-class ndarray viewing the same memory.

    Subclasses change what reshape and indexing mean (np.matrix stays 2-d), or what their
    attributes say, so kernels only ever see the base class; a masked array is refused, since its
    mask would be silently lost.
    """
    if type(array) is np.ndarray:
        return array
    if isinstance(array, np.ma.MaskedArray):
        raise TypeError(f"{name}: a numpy.ma.MaskedArray was given; ep ignores masks, so pass array.filled() or array.data")
    return np.ndarray.view(array, np.ndarray)  # not array.view: a subclass may override it


def host_array(obj: object, name: str, device_type: int | None = None) -> np.ndarray:
    """A NumPy array viewing the memory of a CPU DLPack array (no copy).

    TypeError naming name for an array elsewhere or of a dtype NumPy cannot view (a bfloat16
    array of a library other than PyTorch);
    ValueError for a tensor that requires grad: ep records no gradients, and PyTorch itself
    refuses to hand such a tensor's memory out (tensor.numpy(), __dlpack__), so the caller
    detaches it, as for NumPy; likewise for PyTorch's negative bit (resolve_neg()). device_type
    is obj's DLPack device type when the caller has it (PyTorch computes it in Python, at some
    cost).
    """
    check_exportable(obj, name)
    if device_type is None:
        device_type = dlpack_device(obj, name)
    if device_type != KDL_CPU:
        raise TypeError(f"{name}: a {_describe(obj)} in {_where(device_type)}; expected an array in CPU memory")
    bits = bits_of(obj)
    if bits is not None:
        return np.from_dlpack(bits).view(_BFLOAT16)
    try:
        return np.from_dlpack(obj)
    except (BufferError, RuntimeError, TypeError, ValueError) as error:
        raise TypeError(f"{name}: NumPy cannot view this {_describe(obj)} through DLPack ({error})") from None


def dlpack_device(obj: object, name: str) -> int:
    """obj's DLPack device type; TypeError naming name where its library cannot say one (a
    PyTorch tensor on the meta device, which has no memory)."""
    try:
        return obj.__dlpack_device__()[0]
    except Exception as error:
        raise TypeError(f"{name}: a {_describe(obj)} whose memory DLPack cannot describe ({type(error).__name__}: {error})") from None


def from_dlpack(obj: object, name: str = "x", writable: bool = False):
    """obj's memory as ep's array, without a copy: a NumPy array for a CPU array (DLPack), a numba
    device array for a CUDA one (its __cuda_array_interface__). NumPy arrays and numba device
    arrays are returned as they are, a NumPy subclass's as a base-class view (plain_ndarray).
    ValueError naming name when writable (an out=) and the CUDA array interface marks the memory
    read-only."""
    if isinstance(obj, np.ndarray):
        return plain_ndarray(obj, name)
    if getattr(obj, "__cuda_ndarray__", False):
        return obj
    if is_dlpack(obj):
        device_type = dlpack_device(obj, name)
        if device_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
            return host_array(obj, name, device_type)
        check_exportable(obj, name)
        if not hasattr(obj, "__cuda_array_interface__"):
            raise TypeError(
                f"{name}: a {_describe(obj)} in CUDA memory without __cuda_array_interface__; ep views CUDA "
                "memory through that interface (PyTorch and CuPy have it)"
            )
    elif not hasattr(obj, "__cuda_array_interface__"):
        raise TypeError(f"{name}: {type(obj).__name__} is not an array; expected one with __dlpack__ or __cuda_array_interface__")
    return as_cuda_array(obj, name, writable=writable)


def own(obj: object, name: str, writable: bool = False):
    """obj viewed as ep's own array (from_dlpack) where it is not (is_foreign); anything else (an
    ep array, a scalar, None) as given. writable: an out=, as from_dlpack's."""
    return from_dlpack(obj, name, writable) if is_foreign(obj) else obj


def check_exportable(obj: object, name: str) -> None:
    """The refusals a PyTorch user meets (requires grad, the negative bit), said in ep's terms
    before DLPack or __cuda_array_interface__ says them in its own."""
    if getattr(obj, "requires_grad", False) is True:
        raise ValueError(f"{name}: the tensor requires grad and ep records no gradients; pass {name}.detach() (it shares the memory)")
    is_neg = getattr(obj, "is_neg", None)
    if callable(is_neg) and is_neg():
        # PyTorch's lazy negation (c.conj().imag): a bit on the tensor, not its memory, which DLPack
        # and __cuda_array_interface__ hand out unsigned. Refused as tensor.numpy() refuses it: an
        # input resolved here would be a hidden copy, and an out= could not be written through it.
        raise ValueError(
            f"{name}: the tensor has PyTorch's negative bit set (its memory holds the negated values); "
            f"pass {name}.resolve_neg()"
        )


_BFLOAT16 = DataType.kBFloat16.dtype


def bits_of(obj: object):
    """A PyTorch bfloat16 tensor's int16 view (the same memory), which DLPack and the CUDA array
    interface carry; None for anything else."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor) or obj.dtype != torch.bfloat16:
        return None
    return obj.view(torch.int16)


def to_namespace(result, namespace):
    """result, an array ep made, as an array of namespace's library without a copy: through
    DLPack (from_dlpack) on the CPU, the CUDA array interface (asarray) on a GPU; a bfloat16
    result goes to PyTorch as its int16 view, viewed back."""
    bfloat16 = result.dtype == _BFLOAT16 and namespace is sys.modules.get("torch")
    if bfloat16:
        result = result.view(np.int16)
    if isinstance(result, np.ndarray):
        converted = namespace.from_dlpack(result)
    elif not hasattr(namespace, "asarray"):
        return result
    else:
        converted = namespace.asarray(result)  # numba's device arrays offer __cuda_array_interface__, not DLPack
    return converted.view(namespace.bfloat16) if bfloat16 else converted


def _describe(obj: object) -> str:
    return f"{type(obj).__module__.partition('.')[0]}.{type(obj).__name__}"


def _where(device_type: int) -> str:
    return {KDL_CUDA: "CUDA memory", KDL_CUDA_MANAGED: "CUDA managed memory"}.get(device_type, f"DLPack device type {device_type}")


def as_cuda_array(obj, name: str = "array", stream=None, writable: bool = False):
    """A numba device array viewing a CUDA buffer (numba's and the simulator's arrays pass through).

    The host never waits for the stream obj was produced on (its CAI v3 "stream", or the stream a
    numba array is bound to): given the ep CudaStream a launch will read obj on, that stream waits
    for it on the device (an event); without one, nothing is ordered.

    TypeError naming name when obj's __cuda_array_interface__ describes no array numba can view,
    or when the simulator is given anything but its own arrays (it has no device memory to view);
    ValueError when writable and the interface marks the memory read-only (numba's arrays, which
    have no such mark, are writable).
    """
    if getattr(obj, "__cuda_ndarray__", False):
        if stream is not None:
            bound = obj.stream
            if bound is not stream.native and not isinstance(bound, int):  # 0: bound to no stream
                stream.wait_for(bound_handle(bound))
        return obj
    # A PyTorch CUDA tensor handed straight to a Launch: the same refusals as through ep.ops.
    check_exportable(obj, name)
    bits = bits_of(obj)
    if bits is not None:
        return as_cuda_array(bits, name, stream, writable).view(_BFLOAT16)
    try:
        # Read once: a property could describe other memory, or drop its read-only mark, on a second read.
        interface = obj.__cuda_array_interface__
        read_only = _read_only(interface)
    except Exception as error:
        raise TypeError(f"{name}: its __cuda_array_interface__ is not a valid array ({type(error).__name__}: {error})") from None
    if writable and read_only:
        raise ValueError(f"{name}: the array is read-only (its __cuda_array_interface__ says so)")
    from numba import config, cuda

    if config.ENABLE_CUDASIM:
        raise TypeError(f"{name}: {type(obj).__name__} is not an array of the CUDA simulator; expected one from numba.cuda")
    try:
        # sync=False: numba would otherwise block the host on the producer's stream (cuStreamSynchronize).
        array = cuda.from_cuda_array_interface(interface, owner=obj, sync=False)
    except Exception as error:  # numba raises KeyError, TypeError, ValueError, ... for a malformed interface
        raise TypeError(f"{name}: its __cuda_array_interface__ is not a valid array ({type(error).__name__}: {error})") from None
    if stream is not None:
        stream.wait_for(producer_stream(interface, name))
    return array


def _read_only(interface: dict) -> bool:
    """Whether a CAI dict marks its memory read-only; TypeError unless its data is a (pointer,
    read_only) pair (numba reads any sequence's first item, and would ignore a mark elsewhere)."""
    data = interface["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"data is {data!r}; expected a (pointer, read_only) pair")
    return bool(data[1])


def producer_stream(interface: dict, name: str = "array") -> int | None:
    """The CUstream handle a CAI v3 consumer must order after: its "stream" key, None when absent
    or None (no ordering needed). ValueError naming name for 0, which v3 forbids as ambiguous."""
    handle = interface.get("stream")
    if handle is None:
        return None
    if type(handle) is not int or handle < 0:
        raise ValueError(f"{name}: __cuda_array_interface__ has stream {handle!r}; expected None or a CUstream handle (int > 0)")
    if handle == 0:
        raise ValueError(f"{name}: __cuda_array_interface__ has stream 0, which CAI v3 forbids; expected None, 1, 2 or a stream handle")
    return handle
