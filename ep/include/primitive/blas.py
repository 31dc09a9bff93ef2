"""BlasTransposeType: whether a matrix operand is read as stored (N) or transposed (T), as
OneFlow's ep/include/primitive/blas.h."""
from __future__ import annotations

from ep.common.runtime.names import NamedEnum


class BlasTransposeType(NamedEnum):
    """op(x) = x (N) or x's transpose (T); the matrix is stored row-major either way."""

    N = "N"
    T = "T"


def as_transpose(value: object, name: str) -> BlasTransposeType:
    """A BlasTransposeType from itself, its name ("N", "T") or a bool (True: T); TypeError naming
    name otherwise."""
    if isinstance(value, BlasTransposeType):
        return value
    if type(value) is bool:
        return BlasTransposeType.T if value else BlasTransposeType.N
    if isinstance(value, str) and value in ("N", "T"):
        return BlasTransposeType(value)
    raise TypeError(f"{name}: {value!r} is not a transpose type; expected BlasTransposeType.N or .T, 'N', 'T', False or True")
