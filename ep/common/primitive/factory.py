"""What every primitive's factory does alike on every device, written once.

A generic factory (one per primitive, in ep/common/primitive/<primitive>.py) resolves New's
arguments to a key, keeps one primitive per key in a bounded cache, lists its Combinations, and
derives the kernels for the PTX check from them. A device contributes only its kernels: the
object a device file passes in (`kernels`), with the methods the primitive's generic file names.
"""
from __future__ import annotations

import abc
import collections
import threading
from typing import Callable, Hashable, Iterator

from ep.common.runtime.device import DeviceType
from ep.common.runtime.keys import exact_key
from ep.include.primitive.primitive import Factory, Primitive

# Primitives kept per factory; attribute values are part of a key, so the count is unbounded
# without a limit. An evicted primitive is made again on its next New.
MAX_CACHED_PRIMITIVES = 4096


class PrimitiveCache:
    """A bounded, thread-safe map from resolved New arguments to the one primitive made for them.

    Keyed by exact_key: attributes that compare equal but differ (-0.0 and 0.0) get their own.
    """

    def __init__(self, make: Callable[..., Primitive], maxsize: int = MAX_CACHED_PRIMITIVES) -> None:
        self._make = make
        self._maxsize = maxsize
        self._entries: collections.OrderedDict[Hashable, Primitive] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Primitive:
        """The primitive for key, made by make(*key) on first use."""
        exact = exact_key(key)
        try:
            return self._entries[exact]
        except KeyError:
            pass
        primitive = self._make(*key)
        with self._lock:
            found = self._entries.setdefault(exact, primitive)
            if len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)
        return found


class GenericFactory(Factory):
    """A primitive's factory on one device: New resolves its arguments with resolve() and returns
    the cached primitive_type(device_type, kernels, *key).

    Subclasses (one per primitive) define New with the interface's signature, calling _new, and
    Combinations; kernel_keys() says which device kernels the PTX check compiles.
    """

    primitive_type: type[Primitive]

    def __init__(self, device_type: DeviceType, kernels: object) -> None:
        self.device_type = device_type
        self.kernels = kernels
        self._primitives = PrimitiveCache(self._make)

    def _make(self, *key) -> Primitive:
        return self.primitive_type(self.device_type, self.kernels, *key)

    def _new(self, key: tuple | None) -> Primitive | None:
        return None if key is None else self._primitives.get(key)

    @abc.abstractmethod
    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        """Every (op or None, dtypes in New's order) this factory implements; compiles nothing."""

    def Kernels(self) -> Iterator[object]:
        """Every device kernel a launch of this factory's primitives can run, for the PTX check."""
        return self.kernels.all_kernels()
