"""ElementwiseOp: what UnaryOp and BinaryOp share, reading their members' records in ep/common/math/ops."""
from __future__ import annotations

from ep.common.runtime.names import NamedEnum


class ElementwiseOp(NamedEnum):
    """An enum of elementwise ops, each member with one record in ep/common/math/ops.

    The records import the enums, and Numba: they are read on first use, through _records().
    """

    @classmethod
    def _records(cls) -> tuple[dict, str]:
        """The members' records by member, and the operands their signatures name ("x", "a, b")."""
        raise NotImplementedError

    @classmethod
    def aliases(cls) -> list[tuple[str, ElementwiseOp]]:
        """NumPy's and PyTorch's names of the ops ("arccos" for kAcos), from the ops' records."""
        records, _ = cls._records()
        return [(alias, op) for op, record in records.items() for alias in record.aliases]

    def describe(self) -> str:
        """What the op computes: its call with attributes and defaults, names, dtypes, from its record."""
        from ep.common.math.ops.record import describe

        records, operands = self._records()
        return describe(records[self], operands)
