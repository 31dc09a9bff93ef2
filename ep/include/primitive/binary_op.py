"""BinaryOp: the BroadcastElementwiseBinary ops, with OneFlow's names."""
from __future__ import annotations

import enum


class BinaryOp(enum.Enum):
    # math
    kAdd = "add"
    kSub = "sub"
    kMul = "mul"
    kDiv = "div"
    kMax = "max"
    kMin = "min"
    kPow = "pow"
    kFmod = "fmod"
    kFloorDiv = "floor_div"
    kTruncDiv = "trunc_div"
    kFloorMod = "floor_mod"
    # comparison
    kEqual = "equal"
    kNotEqual = "not_equal"
    kLessThan = "less_than"
    kLessEqual = "less_equal"
    kGreaterThan = "greater_than"
    kGreaterEqual = "greater_equal"
    kIsClose = "is_close"
    kIsCloseEqualNan = "is_close_equal_nan"
    # logical and bitwise
    kLogicalAnd = "logical_and"
    kLogicalOr = "logical_or"
    kLogicalXor = "logical_xor"
    kBitwiseAnd = "bitwise_and"
    kBitwiseOr = "bitwise_or"
    kBitwiseXor = "bitwise_xor"

    def __repr__(self) -> str:
        return f"BinaryOp.{self.name}"


def as_binary_op(op: object, name: str = "op") -> BinaryOp:
    """A BinaryOp from a BinaryOp or its name ("add", "less_than", "kLessThan")."""
    if isinstance(op, BinaryOp):
        return op
    if isinstance(op, str):
        for member in BinaryOp:
            if op in (member.value, member.name) or op.replace("_", "") == member.value.replace("_", ""):
                return member
    raise ValueError(f"{name}: {op!r} is not a binary op; expected a BinaryOp or a name such as 'add'")
