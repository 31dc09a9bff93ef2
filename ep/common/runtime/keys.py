"""exact_key: the one rule by which caches tell apart values that compare equal.

Python's dicts (and so lru_cache) take -0.0 for 0.0, 1 for 1.0 and True, and a NaN for another,
yet a kernel given one computes something else than given the other (softplus with beta -0.0
gives -inf where 0.0 gives +inf). Every cache whose key can hold a caller's value keys it by
exact_key(value).
"""
from __future__ import annotations

import dataclasses
import enum
import operator
import struct
from typing import Callable, Hashable

import numpy as np

_DOUBLE = struct.Struct("d")


def exact_key(value: object) -> Hashable:
    """A key equal for two values only when they have one type and the same bits.

    A float (Python's or NumPy's) is keyed by its type and bit pattern, so -0.0 differs from 0.0
    and NaNs by their payloads; a tuple element by element; anything else by its type and value,
    so 1, 1.0, True and np.int64(1) are four keys; a dataclass (an expression's node) by its type
    and its fields' keys. A value whose parts are all ints, names, enums, dtypes, None or tuples
    of those (shapes, most arguments) is its own key. An object equal only to itself (a Device)
    is keyed by its identity; another library's integer (__index__) by its value at the call.
    TypeError for any other object, which may change in place (a torch tensor of sizes).
    """
    kind = type(value)
    if kind in _SAME:
        return value
    if kind is tuple:
        # Most keys (New's and Launch's arguments) are tuples of names, enums, dtypes, None and
        # shapes: such a tuple is its own key, found without building another.
        for item in value:
            if type(item) in _SAME:
                continue
            if type(item) is tuple:
                for part in item:
                    if type(part) not in _SAME:
                        break
                else:
                    continue
            # A bool (keepdim) inline: its key is its rule's, without the call.
            return tuple([item if type(item) in _SAME else (bool, item) if type(item) is bool else exact_key(item) for item in value])
        return value
    rule = _RULES.get(kind)
    if rule is None:
        rule = _RULES.setdefault(kind, _rule(kind))
        if rule is _itself:
            _SAME.add(kind)
            _NAMED.add(kind)
    return rule(value)


def is_named(key: Hashable) -> bool:
    """key (an exact key) is a tuple of names only: strings, None, and values equal only to
    values of their own type and equal bits (enums, dtypes, devices, types). No number, and no
    other type's value, equals any of them, so such a tuple finds its entry as given."""
    return type(key) is tuple and all(type(item) in _NAMED for item in key)


def _rule(kind: type) -> Callable[[object], Hashable]:
    """How exact_key keys a value of kind (kept per type: a program meets a few types)."""
    if issubclass(kind, np.dtype) or (issubclass(kind, enum.Enum) and not issubclass(kind, (int, float, str))):
        return _itself  # == already means the same type and value
    if dataclasses.is_dataclass(kind):
        return _graph_key
    if issubclass(kind, float):  # np.float64 too
        return lambda value: (kind, _DOUBLE.pack(value))
    if issubclass(kind, np.inexact):
        return lambda value: (kind, value.tobytes())
    if issubclass(kind, complex):
        return lambda value: (kind, _DOUBLE.pack(value.real), _DOUBLE.pack(value.imag))
    if issubclass(kind, tuple):
        return lambda value: (kind, tuple(map(exact_key, value)))
    if issubclass(kind, (int, str, bytes, np.integer, np.bool_)):
        return lambda value: (kind, value)
    if issubclass(kind, type):
        return _itself
    if hasattr(kind, "__index__"):
        # Another library's integer (a 0-d torch tensor) may change in place: keyed by its value now.
        return lambda value: (kind, operator.index(value))
    if kind.__hash__ is None:
        return lambda value: (kind, value)  # a list: no cache's lookup takes it (TypeError)
    if kind.__eq__ is object.__eq__ and not hasattr(kind, "__iter__"):
        return _itself  # objects equal only to themselves (a Device)
    return _unkeyable


def _graph_key(root: object) -> Hashable:
    """A dataclass (an expression's node) and the dataclasses in its fields, as one flat key: each
    structurally distinct node once, in post-order, its dataclass fields by their entry's number.
    Linear in the distinct nodes, where a recursive key (and its hash) walks a value used twice
    twice: exponential in the depth of a graph with shared subexpressions."""
    numbers: dict[int, int] = {}  # id(node) -> its entry's number
    entries: dict[tuple, int] = {}  # entry -> number: equal subexpressions share one
    stack = [root]
    # Nodes whose children are being keyed: everything above one on the stack descends from it,
    # so a child among them closes a cycle (found at once, not after the stack's bound).
    open_: set[int] = set()
    while stack:
        node = stack[-1]
        if id(node) in numbers:
            stack.pop()
            continue
        values = [getattr(node, field.name) for field in dataclasses.fields(node)]
        missing = [v for v in values if dataclasses.is_dataclass(type(v)) and id(v) not in numbers]
        if missing:
            if any(id(v) in open_ for v in missing) or id(node) in open_:
                raise TypeError(f"a {type(root).__name__} contains itself: no cache can key it")
            if len(stack) > _MAX_GRAPH_STACK:
                raise TypeError(f"a {type(root).__name__} nests too deep to key")
            open_.add(id(node))
            stack.extend(missing)
            continue
        stack.pop()
        open_.discard(id(node))
        entry = (type(node), *((_CHILD, numbers[id(v)]) if dataclasses.is_dataclass(type(v)) else exact_key(v) for v in values))
        numbers[id(node)] = entries.setdefault(entry, len(entries))
    return (_GRAPH, tuple(entries), numbers[id(root)])


# Markers no caller's value holds: a graph key, and a child's number in an entry.
_GRAPH, _CHILD = object(), object()
# Pending nodes a graph key holds at most: past it a graph is cyclic or absurdly deep.
_MAX_GRAPH_STACK = 1 << 20


def _itself(value: object) -> Hashable:
    return value


def _unkeyable(value: object) -> Hashable:
    # Anything else may change in place (a torch tensor of sizes) and would find the entry made
    # of its old value: a cache makes its entry anew on every call (PlanCache takes the TypeError).
    raise TypeError(f"a {type(value).__name__} is no value a cache can key")


_RULES: dict[type, Callable[[object], Hashable]] = {}
# The types whose values are their own keys: == already means the same type and value, or (int)
# every other type's value is keyed as a tuple, which no int equals. Joined by the enums and dtypes met.
_SAME = {int, str, bytes, type(None)}
# The types of is_named's names: str, None, and the types found to be keyed by themselves.
_NAMED = {str, type(None)}
