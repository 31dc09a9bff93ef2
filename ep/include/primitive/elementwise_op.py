"""ElementwiseOp: the base of UnaryOp and BinaryOp."""
from __future__ import annotations

from ep.common.runtime.names import NamedEnum


class ElementwiseOp(NamedEnum):
    """An enum of elementwise ops, each member with one record in ep/common/math/ops (which imports
    the enums: they import nothing of the records)."""

    @classmethod
    def aliases(cls) -> tuple[tuple[str, ElementwiseOp], ...]:
        """NumPy's and PyTorch's names of the ops, which the name lookup also takes ("arccos" for
        UnaryOp.kAcos, "maximum" for BinaryOp.kMax): each enum's _alias_names, as members."""
        return tuple((alias, cls[name]) for alias, name in cls._alias_names)
