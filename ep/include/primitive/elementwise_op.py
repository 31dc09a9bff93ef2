"""ElementwiseOp: the base of UnaryOp and BinaryOp."""
from __future__ import annotations

from ep.common.runtime.names import NamedEnum


class ElementwiseOp(NamedEnum):
    """An enum of elementwise ops, each member with one record in ep/common/math/ops (which imports
    the enums: they import nothing of the records)."""
