"""Placements: a device type and the ranks holding a global tensor, as a 1-d or 2-d hierarchy."""
from __future__ import annotations

import itertools
import math

from ep.common.runtime.device import as_device_type
from ep.common.runtime.validate import count


class Placement:
    """OneFlow's placement: device_type, ranks (nested tuples, one level per hierarchy axis) and
    hierarchy (the shape of ranks). Equal placements compare equal and hash alike."""

    __slots__ = ("device_type", "ranks", "hierarchy")

    def __init__(self, device: object, ranks: object) -> None:
        device_type = as_device_type(device)
        if isinstance(ranks, (str, bytes)) or not isinstance(ranks, (list, tuple)) or not ranks:
            raise TypeError(f"ranks: {ranks!r} is not a non-empty list of ranks or of equal-length lists of ranks")
        if all(isinstance(row, (list, tuple)) for row in ranks):
            if len({len(row) for row in ranks}) != 1 or not ranks[0]:
                raise ValueError(f"ranks: rows {ranks!r} differ in length or are empty; expected equal-length lists")
            rows = tuple(tuple(count(r, f"ranks[{i}][{j}]") for j, r in enumerate(row)) for i, row in enumerate(ranks))
            flat, hierarchy = [r for row in rows for r in row], (len(rows), len(rows[0]))
            checked: tuple = rows
        else:
            checked = tuple(count(r, f"ranks[{i}]") for i, r in enumerate(ranks))
            flat, hierarchy = list(checked), (len(checked),)
        if len(set(flat)) != len(flat):
            raise ValueError(f"ranks: {ranks!r} names a rank twice; expected distinct ranks")
        object.__setattr__(self, "device_type", device_type)
        object.__setattr__(self, "ranks", checked)
        object.__setattr__(self, "hierarchy", hierarchy)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Placement is immutable")

    def __reduce__(self) -> tuple:
        return Placement, (self.device_type, self.ranks)  # pickle's and copy's way past __setattr__

    @property
    def size(self) -> int:
        """How many ranks the placement holds."""
        return math.prod(self.hierarchy)

    def indices(self) -> list[tuple[int, ...]]:
        """Every position in the hierarchy, in rank order (row-major)."""
        return list(itertools.product(*(range(n) for n in self.hierarchy)))

    def rank(self, index: tuple[int, ...]) -> int:
        """The rank at a position in the hierarchy."""
        ranks = self.ranks
        for i in index:
            ranks = ranks[i]
        return ranks

    def __eq__(self, other: object) -> bool:
        return type(other) is Placement and (other.device_type, other.ranks) == (self.device_type, self.ranks)

    def __hash__(self) -> int:
        return hash((self.device_type, self.ranks))

    def __repr__(self) -> str:
        ranks = [list(row) for row in self.ranks] if len(self.hierarchy) == 2 else list(self.ranks)
        return f"placement(type={self.device_type.value!r}, ranks={ranks})"


def placement(device: object, ranks: object) -> Placement:
    """A Placement on device ("cpu" or "cuda") over ranks: a list (a 1-d hierarchy) or a list of
    equal-length lists (2-d, as OneFlow's placement("cuda", ranks=[[0, 1], [2, 3]]))."""
    return Placement(device, ranks)

