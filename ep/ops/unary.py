"""ep.ops.unary: an ElementwiseUnary over an array of any shape and strides."""
from __future__ import annotations

import numpy as np

from ep.common.math.aliases import refuse_alias
from ep.common.math.ops.record import document_ops
from ep.common.math.unary_functor import UNARY_FUNCTORS, unary_attrs, unary_keyword_attrs, unary_result_dtype, unary_source
from ep.common.primitive.operands import CPU, check_out, contiguous, device_of, stream_for, unaliased
from ep.common.runtime.allocator import empty
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.plan_cache import PlanCache
from ep.include.primitive.cast import CastFactory
from ep.include.primitive.elementwise_unary import ElementwiseUnaryFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.unary_op import UnaryOp, as_unary_op
from ep.ops.arrays import same_kind


def _primitive(op, device_type, x_dtype, attr0, attr1, dtype):
    """(primitive, result DataType, the dtype x is cast to first or None): a NumPy or PyTorch alias
    computes in its library's dtype."""
    name = op
    try:
        op = as_unary_op(op)
    except ValueError as error:
        import ep.ops

        if isinstance(name, str) and callable(getattr(ep.ops, name.lower(), None)):
            raise ValueError(f"{error}; ep.ops.{name.lower()} computes {name!r}") from None
        raise
    x_dtype = as_data_type(x_dtype, "x")
    op, src_dtype = unary_source(name, op, x_dtype)
    if src_dtype is None:
        raise refuse_alias(name, x_dtype, "x")
    dst_dtype = unary_result_dtype(op, src_dtype, dtype)
    if op is UnaryOp.kCast:
        # OneFlow's Cast primitive: the cast record's rules; it takes no attributes (this raises for one).
        unary_attrs(op, src_dtype, attr0, attr1)
        primitive = NewPrimitive(CastFactory, device_type, src_dtype, dst_dtype)
    else:
        primitive = NewPrimitive(ElementwiseUnaryFactory, device_type, op, src_dtype, dst_dtype, attr0, attr1)
    return primitive, dst_dtype, None if src_dtype is x_dtype else src_dtype


# Keyed by the caller's own arguments: a repeated call skips every normalization. Names and small
# attributes: looked up as given (by_name).
_PRIMITIVES = PlanCache(_primitive, by_name=True)
# unary's rule on metadata, (primitive, result DataType, cast), also a global call's (elementwise_rules).
unary_rule = _PRIMITIVES.get


@same_kind("x")
def unary(op, x, attr0=None, attr1=None, *, dtype=None, out=None, stream=None, **attrs):
    """op applied to every element of x; a new array of x's shape, or out.

    op is a UnaryOp or a name: its own ("leaky_relu"), OneFlow's ("kLeakyRelu") or NumPy's and
    PyTorch's ("arccos", "neg", "expit"), which compute what that library computes (arccos of int32
    gives float64). attr0 and attr1 are the op's attributes in order; each may
    instead be given by its keyword, PyTorch's parameter name (negative_slope=0.2), not both. An
    attribute left out takes PyTorch's default. dtype is kCast's destination; out receives the result
    (x's shape, the result dtype, x's device); stream defaults to the device's default stream. A
    global x (ep.to_global) gives a global tensor, laid out by sbp when given.

    The ops, as calls with their attributes' defaults [OneFlow name; aliases; source dtypes]:
    """
    if attrs:
        attr0, attr1 = unary_keyword_attrs(op, attrs, attr0, attr1)
    device = CPU if type(x) is np.ndarray else device_of(x, "x")
    primitive, dst_dtype, cast = _PRIMITIVES.get(op, device, x.dtype, attr0, attr1, dtype)
    stream = device.default_stream if stream is None else stream_for(device, stream)
    if cast is not None:
        x = unary("cast", x, dtype=cast, stream=stream)
    shape = x.shape
    # After the shape: a copy of a 0-d array may be 1-d. plain(x) inline, the common case in one
    # test: less its byte order, which _PRIMITIVES refused unless native.
    if not (type(x) is np.ndarray and (flags := x.flags).c_contiguous and flags.aligned):
        x = contiguous(x, device, stream)
    if out is None:
        out = empty(shape, dst_dtype, device, stream)
    elif (
        device is CPU and type(out) is np.ndarray and out.dtype is dst_dtype.dtype and out.shape == shape
        and (flags := out.flags).c_contiguous and flags.aligned and flags.writeable
    ):
        # plain(out), writable, of the result's dtype (the canonical one: native byte order) and shape.
        # Two arrays that own their memory cannot overlap: only views need the overlap test.
        if out is not x and (x.base is not None or out.base is not None):
            x = unaliased(x, out, device, stream, elementwise=True)
    else:
        check_out(out, "out", tuple(shape), dst_dtype, device)
        x = unaliased(x, out, device, stream, elementwise=True)
    primitive.launch_trusted(stream, x, out, x.size)
    return out


document_ops(unary, UNARY_FUNCTORS.values(), "x")
