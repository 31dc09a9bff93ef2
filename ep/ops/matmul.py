"""ep.ops.matmul: np.matmul / torch.matmul on the BroadcastMatmul primitive."""
from __future__ import annotations

import math

import numpy as np

from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.primitive.matmul import INTEGER_MATMUL_TYPES, MATMUL_TYPES
from ep.common.primitive.operands import check_out, contiguous, device_of, output, stream_for, unaliased
from ep.common.runtime.buffer import span
from ep.common.runtime.cublas import cublas_missing
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.dlpack import as_cuda_array
from ep.common.runtime.scalar import is_scalar, result_dtype
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.include.primitive.broadcast_matmul import BroadcastMatmulFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind
from ep.ops.expand import expand
from ep.ops.unary import unary

_TYPES = MATMUL_TYPES + INTEGER_MATMUL_TYPES


def matmul_shape(a_shape: tuple[int, ...], b_shape: tuple[int, ...], names: tuple[str, str] = ("a", "b")) -> tuple[int, ...]:
    """np.matmul's result shape: a 1-d a is a row (1, k) and a 1-d b a column (k, 1), their added
    dim removed from the result; batch dims broadcast. ValueError naming a and b (names) with their shapes."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    a, b = names
    for name, shape in ((a, a_shape), (b, b_shape)):
        if not shape:
            raise ValueError(f"{name}: is 0-d (shape ()); matmul needs at least 1 dim (multiply scalars with ep.ops.binary)")
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    if a2[-1] != b2[-2]:
        raise ValueError(
            f"{a}, {b}: shapes {a_shape} and {b_shape} do not multiply: {a} has {a2[-1]} columns, {b} has {b2[-2]} rows"
        )
    try:
        batch = broadcast_shape(a2[:-2], b2[:-2])
    except ValueError:
        raise ValueError(f"{a}, {b}: shapes {a_shape} and {b_shape} do not broadcast: batch dims {a2[:-2]} and {b2[:-2]}") from None
    return batch + (a2[-2:-1] if len(a_shape) > 1 else ()) + (b2[-1:] if len(b_shape) > 1 else ())


def matmul_dtype(a, b) -> DataType:
    """The DataType a and b (arrays, or anything with a dtype) multiply in: their promotion, a
    float or an integer (bool, which torch refuses, is a TypeError)."""
    dtype = as_data_type(result_dtype(a, b), "a, b")
    if dtype not in _TYPES:
        raise TypeError(
            f"a, b: dtypes {np.dtype(a.dtype)} and {np.dtype(b.dtype)} multiply in {dtype.value}; "
            "expected float16, float32, float64 or an integer dtype (cast them first)"
        )
    return dtype


@same_kind("a", "b")
def matmul(a, b, *, out=None, stream=None):
    """The matrix product of a and b: np.matmul's and torch.matmul's semantics.

    A 1-d a is a row vector and a 1-d b a column vector, that dim removed from the result; the
    last two dims are the matrices and the dims before them broadcast (NumPy's rules). The dtype
    is a's and b's promotion: float16 (computed in float32), float32 or float64 on the BLAS, or an
    integer dtype, summed exactly and wrapping as NumPy and PyTorch do (ep's kernels); bool is a
    TypeError. A shape mismatch is a ValueError naming a and b with
    their shapes. Arrays may be of any strides: a transposed matrix (its last two dims' transpose
    C-contiguous) goes to the BLAS as a transpose, and a broadcast batch dim (stride 0) as a
    broadcast, neither copied; other layouts are copied first. out receives the result (the result
    shape, the dtype, that device; it may overlap a or b); stream defaults to the device's
    default stream. Global tensors give a global tensor.
    """
    return _matmul(a, b, None, out, stream, 1, 0)


def _matmul(a, b, c, out, stream, alpha, beta, names=("a", "b", "c")):
    """alpha * a @ b + beta * c, c (None where beta is 0) broadcast to the product's shape and
    promoted with a and b; names: the caller's names of a, b and c, for errors."""
    for name, x in zip(names, (a, b)):
        if is_scalar(x):
            raise ValueError(f"{name}: {x!r} is a scalar; matmul needs arrays of at least 1 dim (multiply scalars with ep.ops.binary)")
    device = device_of(a, names[0])
    for name, x in zip(names[1:], (b, c)):
        if x is not None and device_of(x, name).device_type is not device.device_type:
            raise TypeError(f"{name}: is on {device_of(x, name).device_type.value}, {names[0]} on {device.device_type.value}; expected one device")
    dtype = matmul_dtype(a, b)
    if c is not None:
        dtype = as_data_type(result_dtype(np.empty(0, dtype.dtype), c), ", ".join(names))
    shape = matmul_shape(a.shape, b.shape, names[:2])
    for name, value in (("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name}: {value!r} is not a real number")
        if not dtype.is_floating and isinstance(value, (float, np.floating)):
            raise TypeError(f"{name}: {value!r} is a float; integer matrices take an integer {name} (torch's rule)")
    if NewPrimitive(BroadcastMatmulFactory, device, dtype, False, False, MAX_NUM_DIMS) is None:
        # Only CUDA's float matmul can be missing (dtypes were checked above): said before any cast or copy.
        raise TypeError(f"a, b: no matmul of {dtype.value} runs on {device.device_type.value} here: {cublas_missing()}")
    stream = stream_for(device, stream)
    if out is not None:
        check_out(out, "out", shape, dtype, device)
    operands = []
    for name, x in zip(names, (a, b)):
        if as_data_type(x.dtype, name) is not dtype:
            x = unary("cast", x, dtype=dtype, stream=stream)
        if out is not None:
            x = unaliased(x, out, device, stream)  # the BLAS reads while it writes (and c is written first)
        operands.append(x)
    (sa, a_dims, trans_a), (sb, b_dims, trans_b) = (
        _as_stored(x, name, dtype, device, stream) for name, x in zip(("a", "b"), operands)
    )
    c_dims = broadcast_shape(a_dims[:-2], b_dims[:-2], ("a", "b")) + _matrix(a_dims, trans_a)[:1] + _matrix(b_dims, trans_b)[1:]
    if math.prod(c_dims) != math.prod(shape):
        # A batch dim broadcast (stride 0) in both a and b: the product is repeated there, which
        # BroadcastMatmul's c cannot say, so both are taken as copies of their full shapes.
        (sa, a_dims, trans_a), (sb, b_dims, trans_b) = (
            _as_stored(contiguous(x, device, stream, copy=True), name, dtype, device, stream) for name, x in zip(("a", "b"), operands)
        )
        c_dims = broadcast_shape(a_dims[:-2], b_dims[:-2], ("a", "b")) + (a_dims[-2], b_dims[-1])
    # Batch dims merged as NumPy merges them (dims of 1, neighbours broadcast alike): each operand's
    # storage is C-contiguous over its dims, so merged dims address the same elements.
    a_batch, b_batch = simplify_broadcast_dims(a_dims[:-2], b_dims[:-2])
    a_dims, b_dims = a_batch + a_dims[-2:], b_batch + b_dims[-2:]
    c_dims = broadcast_shape(a_batch, b_batch) + c_dims[-2:]
    for name, dims in (("a", a_dims), ("b", b_dims)):
        if len(dims) > MAX_NUM_DIMS:
            raise ValueError(f"{name}: has {len(dims)} dims; expected at most {MAX_NUM_DIMS}")
    out = output(out, shape, dtype, device, stream)
    primitive = NewPrimitive(BroadcastMatmulFactory, device, dtype, trans_a, trans_b, MAX_NUM_DIMS)
    # Where beta is 0, c is not read (BLAS's rule): a NaN in it does not reach the result, as in torch.
    if beta != 0:
        try:
            c = c if as_data_type(c.dtype, names[2]) is dtype else unary("cast", c, dtype=dtype, stream=stream)
            out = expand(c, shape, out=out, stream=stream)
        except ValueError as error:
            raise ValueError(f"{names[2]}: shape {tuple(c.shape)} does not broadcast to the product's {shape}") from error
    primitive.Launch(stream, alpha, len(a_dims), a_dims, sa, len(b_dims), b_dims, sb, beta, len(c_dims), c_dims, out)
    return out


@same_kind("input", "mat1", "mat2")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None, stream=None):  # noqa: A002 - torch's names
    """beta * input + alpha * mat1 @ mat2, as torch.addmm: mat1 (n, m) and mat2 (m, p) matrices,
    input broadcast to (n, p), one Matmul accumulating into input's copy (where beta is 0, input is
    not read: its NaNs do not reach the result). dtypes promote as NumPy's; integer matrices take
    integer alpha and beta."""
    for name, x in (("mat1", mat1), ("mat2", mat2)):
        if len(tuple(x.shape)) != 2:
            raise ValueError(f"{name}: has shape {tuple(x.shape)}; expected a matrix (2 dims)")
    return _matmul(mat1, mat2, input, out, stream, alpha, beta, ("mat1", "mat2", "input"))


@same_kind("input", "weight", "bias")
def linear(input, weight, bias=None, *, out=None, stream=None):  # noqa: A002 - torch's names
    """input @ weight.T + bias, as torch.nn.functional.linear: input (*, in), weight (out, in) or
    (in,), bias (out,) or a scalar-shaped array or None; weight's transpose goes to the BLAS
    without a copy, and bias is added by the same Matmul."""
    if len(tuple(weight.shape)) not in (1, 2):
        raise ValueError(f"weight: has shape {tuple(weight.shape)}; expected (out_features, in_features) or (in_features,)")
    transposed = weight.T if len(tuple(weight.shape)) == 2 else weight
    return _matmul(input, transposed, bias, out, stream, 1, 0 if bias is None else 1, ("input", "weight", "bias"))


def _as_stored(x, name: str, dtype: DataType, device, stream) -> tuple[object, tuple[int, ...], bool]:
    """(storage, its dims, transposed) of operand name: x's own memory when its layout is
    C-contiguous or its last two dims' transpose is, a broadcast batch dim (stride 0) becoming a
    dim of 1; a C-contiguous copy otherwise. A 1-d a is the row (1, k), a 1-d b the column (k, 1)."""
    array = x if device.device_type is DeviceType.kCPU else as_cuda_array(x, name)
    shape, strides = tuple(array.shape), tuple(array.strides)
    if len(shape) == 1:  # the added dim has size 1: its stride is never used
        shape, strides = ((1,) + shape, (0,) + strides) if name == "a" else (shape + (1,), strides + (0,))
    if array.size:
        dims = tuple(1 if s == 0 and i < len(shape) - 2 else n for i, (n, s) in enumerate(zip(shape, strides)))
        swapped, swapped_strides = dims[:-2] + dims[:-3:-1], strides[:-2] + strides[:-3:-1]
        for candidate, order, transposed in ((dims, strides, False), (swapped, swapped_strides, True)):
            if _c_contiguous(candidate, order, dtype.itemsize):
                return span(array, dtype, math.prod(candidate), device.device_type), candidate, transposed
    return contiguous(x, device, stream, name=name), shape, False


def _matrix(dims: tuple[int, ...], transposed: bool) -> tuple[int, int]:
    """op(x)'s (rows, cols) from x's stored dims."""
    return dims[:-3:-1] if transposed else dims[-2:]


def _c_contiguous(dims: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    """Whether dims laid out with strides (bytes) is C-contiguous, ignoring dims of 1."""
    step = itemsize
    for n, s in zip(reversed(dims), reversed(strides)):
        if n != 1:
            if s != step:
                return False
            step *= n
    return True

