"""ReduceFused on every device: New's resolution (an ElementwiseFused expression's, Reduce's
dtypes), Launch's checks (its arguments by position, as ElementwiseFused's), Reduce's plan, and
Reduce's kernels reading the expression's arguments instead of an array (FusedSource)."""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ep.common.primitive.elementwise_fused import resolve_fused
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.fused_formula import GROUP, node_dtype
from ep.common.primitive.reduce import FusedSource, ReduceKernels, ReducePlan, dst_dtypes, prepared, reduce_plan
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import STREAM_TYPES, DeviceType, check_stream
from ep.common.runtime.names import lookup
from ep.common.runtime.overlap import refuse_overlap
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.scalar import scalar_value
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.elementwise_fused import Binary, Input
from ep.include.primitive.reduce import ReduceOp
from ep.include.primitive.reduce_fused import ReduceFused, ReduceFusedFactory


class ReduceFusedImpl(ReduceFused):
    def __init__(self, device_type: DeviceType, kernels: ReduceKernels, op: ReduceOp, source: FusedSource, dst_dtype: DataType) -> None:
        self.device_type, self.op, self.source, self.dst_dtype = device_type, op, source, dst_dtype
        self.src_dtype = node_dtype(source.outputs[0])
        self._stream_type = STREAM_TYPES[device_type]
        self._plans: PlanCache[tuple[ReducePlan, Callable | None]] = PlanCache(
            lambda *key: prepared(kernels, op, self.src_dtype, dst_dtype, reduce_plan(op, *key), source)
        )
        scalars = source.scalars
        self._arguments = tuple((i in scalars, dtype, f"args[{i}]") for i, dtype in enumerate(source.dtypes))

    def Launch(self, stream, args, src_dims, dst_dims, dst, correction=1) -> None:
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        if not isinstance(args, (tuple, list)) or len(args) != len(self._arguments):
            got = f"{len(args)} entries" if isinstance(args, (tuple, list)) else repr(type(args).__name__)
            raise TypeError(f"args: expected a tuple or list of {len(self._arguments)} entries; got {got}")
        plan, run = self._plans.get(src_dims, dst_dims, correction)
        device = self.device_type
        src = tuple(
            scalar_value(arg, name, dtype) if scalar else storage(arg, name, device, dtype, plan.src_count, stream=stream)
            for arg, (scalar, dtype, name) in zip(args, self._arguments)
        )
        dst = storage(dst, "dst", device, self.dst_dtype, plan.dst_count, writable=True, stream=stream)
        # A kernel writes an output once its whole reduction is read: dst shares no memory with an argument.
        for (scalar, _, name), value in zip(self._arguments, src):
            if not scalar:
                refuse_overlap(value, plan.src_count, dst, plan.dst_count, name, "dst", False)
        if run is not None:
            run(stream, src, dst)


class ReduceFusedFactoryImpl(GenericFactory, ReduceFusedFactory):
    primitive_type = ReduceFusedImpl

    def New(self, op, expression, dst_dtype, *dtypes) -> ReduceFused | None:
        op = lookup(ReduceOp, op, "op", "a reduce op", "sum")
        dst = as_data_type(dst_dtype, "dst_dtype")
        if isinstance(expression, tuple):
            raise TypeError(f"expression: a tuple of {len(expression)} nodes; a ReduceFused reduces one expression")
        if len(dtypes) > GROUP:
            raise ValueError(f"dtypes: {len(dtypes)} arguments; a ReduceFused takes at most {GROUP}")
        resolved = resolve_fused(expression, dtypes)
        if resolved is None or dst not in dst_dtypes(op, node_dtype(resolved[0][0])):
            return None
        return self._new((op, FusedSource(*resolved), dst))

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        # Open-keyed: any expression, reduced as Reduce reduces its dtype; listed once per op and dtypes.
        for op in ReduceOp:
            for src in ALL_TYPES:
                for dst in dst_dtypes(op, src):
                    yield op, (src, dst)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        """op over x + y of the dtype, along rows, across columns and whole (the expressions are
        the caller's: this one stands for them)."""
        src, dst = dtypes
        x, y = values(6, src, (2, 3)), values(6, src, (2, 3))[:, ::-1].copy()
        expression = Binary(BinaryOp.kAdd, Input(0), Input(1))
        for dst_dims in ((2, 1), (1, 3), (1, 1)):
            axis = tuple(d for d, n in enumerate(dst_dims) if n == 1)
            args = {"args": [x, y], "src_dims": (2, 3), "dst_dims": dst_dims, "dst": zeros(int(np.prod(dst_dims)), dst)}
            expected = {"dst": np.add(x, y).sum(axis, dtype=dst.dtype).ravel()} if op is ReduceOp.kSum else None
            yield Sample((op, expression, dst, src, src), args, expected)

    def Kernels(self) -> Iterator[object]:
        """Both stages of every op over x * y of float32 and of float16, for the PTX check."""
        for op, (src, dst) in self.Combinations():
            if src in (DataType.kFloat, DataType.kFloat16):
                source = FusedSource(*resolve_fused(Binary(BinaryOp.kMul, Input(0), Input(1)), (src, src)))
                for states in (False, True):
                    yield self.kernels.kernel(op, src, dst, states, source)
