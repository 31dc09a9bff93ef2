"""Numba's inliner copying a function's IR as one graph (used by ep's CPU compiler and PTX check).

inline_ir (numba.core and numba.cuda.core inline_closurecall) copies the callee's IR twice, block by
block, each with a deepcopy of its own: every block then copies the whole scope, with every
variable of the function, although all blocks share it. That is most of the inlining's cost
(copy_ir: about a tenth of a kernel's frontend). Copying the blocks of one IR with one memo makes
one copy of what they share, as a deepcopy of the whole IR would: the same IR, of the same shape as
the one copied. Private API of Numba: the `copy` module attribute copy_ir calls deepcopy through,
swapped only for one inline_ir, under Numba's compiler lock.
"""
from __future__ import annotations

import contextlib
import copy
import types
from typing import Iterator


class _GraphCopy:
    """Stands in for the copy module: deepcopy of a block shares one memo with the other blocks
    of its scope (an IR's blocks share one scope; the two copies of inline_ir have two scopes)."""

    def __init__(self) -> None:
        self._memos: dict[int, dict] = {}

    def deepcopy(self, block, memo=None):
        return copy.deepcopy(block, self._memos.setdefault(id(block.scope), {}))

    def __getattr__(self, name: str):
        return getattr(copy, name)


@contextlib.contextmanager
def blocks_copied_as_one_graph(module: types.ModuleType) -> Iterator[None]:
    """Within the block, module's copy_ir (an inline_closurecall module) copies an IR as one graph."""
    module.copy = _GraphCopy()
    try:
        yield
    finally:
        module.copy = copy
