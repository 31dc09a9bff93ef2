"""Conversion: cast, whose formula is identity; the store converts to the destination dtype."""
from __future__ import annotations

from ep.common.math.ops.activation import identity
from ep.common.math.ops.record import UnaryFunctor
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.unary_op import UnaryOp

CAST = UnaryFunctor(
    UnaryOp.kCast, identity, ALL_TYPES, converts=True,
    doc="x converted to the destination dtype, as NumPy's astype where that is defined: integers wrap, "
    "anything -> bool is x != 0 (NaN -> True), float64 -> float16 rounds once; float -> integer "
    "truncates toward zero and saturates to the integer's range, NaN -> 0 (CUDA's cvt.rzi.sat), "
    "on every device and element",
)
