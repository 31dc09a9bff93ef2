"""Add on every device: New's resolution, Launch's checks, and what a device supplies.

Each element is summed with the binary add op's formula (BinaryOp.kAdd's record: integers wrap,
bools or, float16 adds in float32 and rounds once at the store), so add_n and binary add agree.
A kernel takes up to MAX_ARITY sources in one pass; a larger arity sums its first MAX_ARITY into
dst, then dst and the next MAX_ARITY - 1 into dst, and so on. When dst is one of the sources a later
pass reads, the running sum goes to the stream's scratch instead, and to dst only in the last pass.
"""
from __future__ import annotations

import abc
from typing import Iterator

from ep.common.math.binary_functor import BINARY_FUNCTORS, binary_attrs
from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.launch import Count, Declared, Ins, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.overlap import overlaps
from ep.include.primitive.add import Add, AddFactory
from ep.include.primitive.binary_op import BinaryOp

# Sources one kernel reads in its pass.
MAX_ARITY = 8
ADD_TYPES = BINARY_FUNCTORS[BinaryOp.kAdd].dtypes


class AddKernels(abc.ABC):
    """What a device supplies: the kernel summing `arity` sources of dtype, launched as
    kernel.launch(stream, count, srcs (a tuple of MAX_ARITY flat buffers, the unused ones any of
    them), dst, count, attr0, attr1)."""

    @abc.abstractmethod
    def kernel(self, dtype: DataType, arity: int):
        """The kernel of 1 <= arity <= MAX_ARITY sources, compiled on its first launch."""

    def all_kernels(self) -> Iterator[object]:
        for dtype in ADD_TYPES:
            for arity in range(1, MAX_ARITY + 1):
                yield self.kernel(dtype, arity)


class AddImpl(Declared, Add):
    # The kernel reads each source's element where it writes dst's: dst may be a source, not a
    # shifted view of one (its writes would reach elements not read yet).
    launch = declare(Ins("srcs", number="arity"), Count("arity"), Out("dst", reads_first=("srcs",)), Count("count"), plan=("arity",))

    def __init__(self, device_type: DeviceType, kernels: AddKernels, dtype: DataType) -> None:
        self.device_type, self.dtype = device_type, dtype
        self._kernels = kernels
        self._attrs = binary_attrs(BinaryOp.kAdd, dtype, None, None)

    def plan(self, arity: int) -> int:
        if arity < 1:
            raise ValueError("arity: 0; expected at least one source")
        return arity

    def run(self, stream, arity: int, srcs: list, dst, count: int) -> None:
        if not count:
            return
        first, rest = srcs[:MAX_ARITY], srcs[MAX_ARITY:]
        # The running sum, which each later pass reads as its first source: dst, unless a later
        # pass reads dst as a source (the sum would have overwritten it by then).
        acc = stream.temporary(count, self.dtype.storage_dtype) if any(overlaps(b, dst) for b in rest) else dst
        self._pass(stream, first, acc, count)  # acc is dst when nothing follows
        while rest:
            step, rest = [acc] + rest[: MAX_ARITY - 1], rest[MAX_ARITY - 1 :]
            self._pass(stream, step, acc if rest else dst, count)

    def _pass(self, stream, sources: list, out, count: int) -> None:
        padded = tuple(sources) + (sources[0],) * (MAX_ARITY - len(sources))
        attr0, attr1 = self._attrs  # not *self._attrs: a star call costs a fifth of a tiny launch
        self._kernels.kernel(self.dtype, len(sources)).launch(stream, count, padded, out, count, attr0, attr1)


class AddFactoryImpl(DtypeFactory, AddFactory):
    primitive_type = AddImpl
    dtypes = ADD_TYPES

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        for arity in (2, 3):
            srcs = [values(4, dtypes[0]) for _ in range(arity)]
            expected = srcs[0]
            for src in srcs[1:]:
                expected = expected + src
            yield Sample(dtypes, {"srcs": srcs, "arity": arity, "dst": zeros(4, dtypes[0]), "count": 4}, {"dst": expected})
