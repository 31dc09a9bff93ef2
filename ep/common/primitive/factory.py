"""What every primitive's factory does alike on every device, written once.

A generic factory (one per primitive, in ep/common/primitive/<primitive>.py) resolves New's
arguments to a key, keeps one primitive per key in its PlanCache, lists its Combinations, and
lists the kernels for the PTX check. A device contributes only its kernels: the object a device
file passes in (`kernels`), with the methods the primitive's generic file names.
"""
from __future__ import annotations

import abc
from typing import Iterator

from ep.common.primitive.broadcast_dims import MAX_CALLER_DIMS
from ep.common.primitive.sample import Sample
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.validate import count as check_count
from ep.include.primitive.primitive import Factory, Primitive


class GenericFactory(Factory):
    """A primitive's factory on one device: New resolves its arguments to a key and returns the
    cached primitive_type(device_type, kernels, *key).

    Subclasses (one per primitive) define New with the interface's signature, calling _new,
    Combinations (DtypeFactory defines both for a New taking one dtype) and Samples.
    """

    primitive_type: type[Primitive]

    def __init__(self, device_type: DeviceType, kernels: object) -> None:
        self.device_type = device_type
        self.kernels = kernels
        # Resolved New arguments -> the one primitive made for them (attribute values are exact keys).
        self._primitives = PlanCache(self._make)

    def _make(self, *key) -> Primitive:
        return self.primitive_type(self.device_type, self.kernels, *key)

    def _new(self, key: tuple | None) -> Primitive | None:
        return None if key is None else self._primitives.get(*key)

    @abc.abstractmethod
    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        """Every (op or None, dtypes in New's order) this factory implements; compiles nothing."""

    @abc.abstractmethod
    def Samples(self, op, dtypes: tuple[DataType, ...]) -> Iterator[Sample]:
        """Launches of one of the Combinations (op, dtypes) on host arrays: one per shape class
        that picks its own kernel, some with a NumPy reference (ep.common.primitive.sample)."""

    def Kernels(self) -> Iterator[object]:
        """Every device kernel a launch of this factory's primitives can run, for the PTX check:
        the device's kernels.all_kernels(), or else (per-element kernels, which several primitives
        share) the `kernel` of the primitive New makes for each of the Combinations."""
        all_kernels = getattr(self.kernels, "all_kernels", None)
        if all_kernels is not None:
            return all_kernels()
        return (self.New(*(() if op is None else (op,)), *dtypes).kernel for op, dtypes in self.Combinations())


class DtypeFactory(GenericFactory):
    """A factory whose New takes one dtype: its primitive for each of `dtypes`, None for another."""

    dtypes: tuple[DataType, ...] = ALL_TYPES

    def New(self, dtype) -> Primitive | None:
        dtype = as_data_type(dtype)
        return self._new((dtype,)) if dtype in self.dtypes else None

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        for dtype in self.dtypes:
            yield None, (dtype,)


class MaxDimsFactory(GenericFactory):
    """A factory whose New takes max_num_dims (CopyNd's, Permute's): its primitive for 1 to
    MAX_CALLER_DIMS dims, None for more; the data type is a Launch argument, so every one is listed."""

    def New(self, max_num_dims: int) -> Primitive | None:
        max_num_dims = check_count(max_num_dims, "max_num_dims")
        return self._new((max_num_dims,) if 1 <= max_num_dims <= MAX_CALLER_DIMS else None)

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        for dtype in ALL_TYPES:
            yield None, (dtype,)
