"""cached_property as Python 3.12 has it: computed on first use and kept in the instance.

Python 3.11's functools.cached_property holds one lock per property, for every instance of the
class, while it computes: a fork in another thread during a long computation (a kernel's first
compile) left that lock held in the child forever, and the child's first launch of any new kernel
hung. Here two threads may both compute a value; the first one stored is the one both get.
"""
from __future__ import annotations

from typing import Any, Callable


class cached_property:  # noqa: N801 (functools' name, for functools' behaviour)
    """A property computed once per instance (see the module docstring); a non-data descriptor,
    so once stored, the instance's own attribute is found first."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return instance.__dict__.setdefault(self.name, self.function(instance))
