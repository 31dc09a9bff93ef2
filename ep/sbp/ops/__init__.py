"""Each ep.ops function's SBP rules (an OpRule in its module's RULES): gather.py, expand.py, elementwise.py."""
from __future__ import annotations

import sys

from ep.common.runtime.validate import dims
from ep.sbp.sbp import SBP
from ep.sbp.signature import Signature


def signature(out: SBP, **inputs: SBP) -> Signature:
    """A Signature of an op with one output, "out"."""
    return Signature(inputs, {"out": out})


def box_shape(box: tuple[slice, ...]) -> tuple[int, ...]:
    """The shape of a box physical_slices gives."""
    return tuple(s.stop - s.start for s in box)


def shape(value: object, name: str) -> tuple[int, ...]:
    """A logical shape argument, checked (non-negative integer sizes, any rank)."""
    return dims(value, name, sys.maxsize)
