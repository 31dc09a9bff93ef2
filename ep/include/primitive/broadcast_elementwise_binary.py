"""BroadcastElementwiseBinary: dst = op(src0, src1) with NumPy broadcasting of the two operands."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.include.primitive.primitive import Factory, Primitive

__all__ = ["MAX_NUM_DIMS", "BroadcastElementwiseBinary", "BroadcastElementwiseBinaryFactory"]

class BroadcastElementwiseBinary(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src0_dims: Sequence[int], src0, src1_dims: Sequence[int], src1, dst) -> None:
        """Write op(src0, src1), broadcast to the shape of both dims, to the C-contiguous dst.

        src0 and src1 are flat C-contiguous storage of their dims, or a Python or NumPy scalar with
        dims () (the scalar path: the value is converted to the primitive's src dtype).
        """


class BroadcastElementwiseBinaryFactory(Factory):
    @abc.abstractmethod
    def New(
        self, op, src_dtype, dst_dtype, max_num_dims: int = MAX_NUM_DIMS, attr0=None, attr1=None
    ) -> BroadcastElementwiseBinary | None:
        """A BroadcastElementwiseBinary for op from src_dtype to dst_dtype for operands of at most
        max_num_dims dims, or None if unsupported (including max_num_dims above MAX_NUM_DIMS)."""
