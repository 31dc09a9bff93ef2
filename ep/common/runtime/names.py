"""The one name lookup for ep's enums: a member from itself, its OneFlow name, its value or an alias."""
from __future__ import annotations

import difflib
import enum
import functools
from typing import Iterable, TypeVar

E = TypeVar("E", bound=enum.Enum)


class NamedEnum(enum.Enum):
    """An enum whose members print as OneFlow spells them: UnaryOp.kRelu, DataType.kFloat."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    # A member is equal only to itself: its identity hash (C) serves, where Enum's hashes its name
    # in Python, a cost every cache key holding an op or a dtype paid.
    __hash__ = object.__hash__

    @classmethod
    def aliases(cls) -> Iterable[tuple[str, NamedEnum]]:
        """(alias, member) pairs: other names lookup accepts (NumPy's, PyTorch's); none by default.

        Read once, on the first name that is no member's own, so an enum may load them lazily.
        """
        return ()


def _fold(name: str) -> str:
    # "Leaky_ReLU", "leaky_relu" and "leakyrelu" fold alike.
    return name.lower().replace("_", "")


@functools.cache
def _names(enum_type: type[enum.Enum]) -> dict[str, enum.Enum]:
    # "kLeakyRelu", "leaky_relu" and "leakyrelu" all name kLeakyRelu.
    names: dict[str, enum.Enum] = {}
    for member in enum_type:
        names[member.name] = member
        names[member.value] = member
        names.setdefault(_fold(member.value), member)
    return names


@functools.cache
def alias_table(enum_type: type[NamedEnum]) -> dict[str, enum.Enum]:
    """enum_type's aliases, folded, -> member. Raises ValueError for an alias that is
    another member's name or value, or that two members claim: an alias never shadows a name."""
    names = _names(enum_type)
    table: dict[str, enum.Enum] = {}
    for alias, member in enum_type.aliases():
        key = _fold(alias)
        other = names.get(alias) or names.get(key)
        if other is not None and other is not member:
            raise ValueError(f"alias {alias!r} of {member!r} is a name of {other!r}")
        if table.setdefault(key, member) is not member:
            raise ValueError(f"alias {alias!r} is claimed by {table[key]!r} and {member!r}")
    return table


def did_you_mean(value: object, choices: Iterable[str], n: int = 3) -> str:
    """"did you mean 'relu'?" naming the choices closest to value (difflib, ignoring case and
    underscores), best first; "" when value is not a string or no choice is close."""
    if not isinstance(value, str):
        return ""
    folded: dict[str, str] = {}
    for choice in choices:
        folded.setdefault(_fold(choice), choice)
    close = difflib.get_close_matches(_fold(value), list(folded), n=n)
    return f"did you mean {', '.join(repr(folded[c]) for c in close)}?" if close else ""


def lookup(enum_type: type[E], value: object, name: str, what: str, example: str) -> E:
    """The member of enum_type that value is or names: TypeError naming name and value for a value of
    another type, ValueError (with the closest names, aliases included) for a string that names no member.

    what says what a member is ("a unary op") and example gives one valid name.
    """
    if isinstance(value, enum_type):
        return value
    if isinstance(value, str):
        names = _names(enum_type)
        found = names.get(value)
        if found is None:
            found = names.get(_fold(value))
        if found is None:
            found = alias_table(enum_type).get(_fold(value))
        if found is not None:
            return found
        hint = did_you_mean(value, [m.value for m in enum_type] + [alias for alias, _ in enum_type.aliases()])
        if hint:
            raise ValueError(f"{name}: {value!r} is not {what}; {hint}")
        raise ValueError(f"{name}: {value!r} is not {what}; expected a {enum_type.__name__} or a name such as {example!r}")
    raise TypeError(f"{name}: {value!r} is not {what}; expected a {enum_type.__name__} or a name such as {example!r}")
