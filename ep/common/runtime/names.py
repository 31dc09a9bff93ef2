"""The one name lookup for ep's enums: a member from itself, its OneFlow name or its value."""
from __future__ import annotations

import difflib
import enum
import functools
from typing import TypeVar

E = TypeVar("E", bound=enum.Enum)


class NamedEnum(enum.Enum):
    """An enum whose members print as OneFlow spells them: UnaryOp.kRelu, DataType.kFloat."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


@functools.cache
def _names(enum_type: type[enum.Enum]) -> dict[str, enum.Enum]:
    # "kLeakyRelu", "leaky_relu" and "leakyrelu" all name kLeakyRelu.
    names: dict[str, enum.Enum] = {}
    for member in enum_type:
        names[member.name] = member
        names[member.value] = member
        names.setdefault(member.value.replace("_", ""), member)
    return names


def lookup(enum_type: type[E], value: object, name: str, what: str, example: str) -> E:
    """The member of enum_type that value is or names: TypeError naming name and value for a value of
    another type, ValueError (with the closest names) for a string that names no member.

    what says what a member is ("a unary op") and example gives one valid name.
    """
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str):
        names = _names(enum_type)
        found = names.get(value)
        if found is None:
            found = names.get(value.lower().replace("_", ""))
        if found is not None:
            return found
        close = difflib.get_close_matches(value, [m.value for m in enum_type], n=3)
        if close:
            raise ValueError(f"{name}: {value!r} is not {what}; did you mean {', '.join(map(repr, close))}?")
        raise ValueError(f"{name}: {value!r} is not {what}; expected a {enum_type.__name__} or a name such as {example!r}")
    raise TypeError(f"{name}: {value!r} is not {what}; expected a {enum_type.__name__} or a name such as {example!r}")
