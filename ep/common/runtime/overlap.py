"""Whether an input shares memory with an output: NumPy arrays exactly, CUDA arrays by pointer ranges."""
from __future__ import annotations

import numpy as np

from ep.common.runtime.buffer import address

_ndarray = np.ndarray


def overlaps(x, out, elementwise: bool = False) -> bool:
    """True when x and out share memory, so that writing out could change x before it is read.

    With elementwise, x addressing exactly out's elements (the same first byte, shape, strides and
    itemsize) does not count: an elementwise kernel reads each element where it writes it.
    """
    if x is out:
        return not elementwise
    if type(out) is _ndarray:
        if type(x) is _ndarray and x.base is None and out.base is None:
            return False  # two arrays that own their memory
        # From memory ranges, whoever owns the memory: a view another library made (torch.from_numpy,
        # np.from_dlpack, as_strided, ctypes) of an ndarray's memory overlaps it all the same.
        return _host_overlap(x, out, elementwise)
    # Pointer ranges serve every other array (a CPU subclass too, by its __array_interface__).
    return _device_overlap(x, out, elementwise)


def owner(x) -> np.ndarray | None:
    """The NumPy array that owns x's memory (x, or the base NumPy keeps for a view), or None when
    that is not known (another library's memory, a device array)."""
    if type(x) is not _ndarray:
        return None
    base = x.base
    if base is None:
        return x
    return base if type(base) is _ndarray and base.base is None else None


def refuse_overlap(x, x_size: int, out, out_size: int, x_name: str, out_name: str, elementwise: bool) -> None:
    """ValueError naming both when the first x_size elements of flat storage x share memory with
    the first out_size of out; with elementwise, x exactly out's elements is allowed (a kernel that
    reads each element before writing it). A declared launch calls it unless owner() tells two
    NumPy arrays apart."""
    if not x_size or not out_size or (elementwise and x is out and x_size == out_size):
        return
    if type(x) is _ndarray and type(out) is _ndarray and not np.may_share_memory(x, out):
        return  # the whole storages' bounds are apart
    if not _storage_overlap(x, x_size, out, out_size, elementwise):
        return
    if elementwise:
        raise ValueError(f"{x_name}, {out_name}: share memory without being the same elements; expected {out_name} to be {x_name} or separate memory")
    raise ValueError(f"{x_name}, {out_name}: share memory; expected separate memory")


def refuse_straddle(x, x_size: int, out, out_size: int, x_name: str, out_name: str) -> None:
    """ValueError naming both when the first x_size elements of flat storage x share memory with
    the first out_size of out other than as whole elements of out: an input the output may hold
    (TensorFill's src, one of dst's elements, which only ever takes its own value)."""
    if not x_size or not out_size:
        return
    if type(x) is _ndarray and type(out) is _ndarray and not np.may_share_memory(x, out):
        return
    if not _storage_overlap(x, x_size, out, out_size, False):
        return
    itemsize = out.dtype.itemsize
    if x.dtype.itemsize != itemsize or (address(x) - address(out)) % itemsize:
        raise ValueError(f"{x_name}, {out_name}: share memory across {out_name}'s elements; expected {x_name} to be whole elements of {out_name} or separate memory")


def _storage_overlap(x, x_size: int, out, out_size: int, elementwise: bool) -> bool:
    """overlaps() for the first elements of two flat storages, from their addresses (on a GPU,
    slicing numba arrays and reading their __cuda_array_interface__ cost more than the rest of a
    Launch)."""
    start, x_bytes = address(x), x_size * x.dtype.itemsize
    out_start, out_bytes = address(out), out_size * out.dtype.itemsize
    if elementwise and start == out_start and x_bytes == out_bytes and x.dtype.itemsize == out.dtype.itemsize:
        return False  # exactly out's elements
    return _meet((start, start + x_bytes), (out_start, out_start + out_bytes))


# np.shares_memory's work bound: past it the answer is "maybe", and the input is copied.
_MAX_OVERLAP_WORK = 1 << 12


def _host_overlap(x: np.ndarray, out: np.ndarray, elementwise: bool) -> bool:
    # may_share_memory compares bounds only; the exact test runs only when they intersect.
    if not np.may_share_memory(x, out):
        return False
    if elementwise and _same_elements(x.__array_interface__, out.__array_interface__):
        return False
    try:
        return np.shares_memory(x, out, max_work=_MAX_OVERLAP_WORK)
    except np.exceptions.TooHardError:
        return True


def _device_overlap(x, out, elementwise: bool) -> bool:
    # From pointer ranges: whether two strided views of one allocation interleave without touching
    # is not worked out, they are copied.
    a, b = array_interface(x), array_interface(out)
    if elementwise and _same_elements(a, b):
        return False
    return _meet(byte_range(a), byte_range(b))


def _meet(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two byte ranges [first, last + 1) share a byte."""
    return a[0] < b[1] and b[0] < a[1]


def array_interface(x) -> dict:
    """x's __cuda_array_interface__ with x's true strides (on the CUDA simulator, its host array's
    __array_interface__). A numba device array's interface says strides None, C-contiguous, for a
    broadcast array (numba-cuda 0.30's is_contiguous skips stride-0 dims): its own strides are read."""
    interface = getattr(x, "__cuda_array_interface__", None)
    if interface is None:
        return np.asarray(x).__array_interface__
    if getattr(x, "__cuda_ndarray__", False):
        return dict(interface, strides=tuple(x.strides))
    return interface


def _strides(interface: dict) -> tuple[int, ...]:
    strides = interface.get("strides")
    if strides is None:
        # None means C-contiguous.
        step, strides = np.dtype(interface["typestr"]).itemsize, []
        for n in reversed(interface["shape"]):
            strides.append(step)
            step *= n
        strides.reverse()
    return tuple(strides)


def _same_elements(a: dict, b: dict) -> bool:
    """Whether two array interfaces address the same elements in the same order."""
    return (
        a["data"][0] == b["data"][0]
        and tuple(a["shape"]) == tuple(b["shape"])
        and np.dtype(a["typestr"]).itemsize == np.dtype(b["typestr"]).itemsize
        and _strides(a) == _strides(b)
    )


def byte_range(interface: dict) -> tuple[int, int]:
    """[first, last + 1) of the bytes an array interface addresses (empty for an empty array)."""
    start, shape = interface["data"][0], interface["shape"]
    if 0 in shape:
        return start, start
    low = high = start
    for n, s in zip(shape, _strides(interface)):
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high + np.dtype(interface["typestr"]).itemsize
