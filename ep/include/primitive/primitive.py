"""Primitive, Factory, the factory registry and NewPrimitive (OneFlow's ep/include/primitive/primitive.h)."""
from __future__ import annotations

import abc
import importlib
import importlib.util
import pkgutil
import threading
from typing import Iterator, TypeVar

from ep.common.runtime.device import DeviceType, GetDevice, as_device_type, cuda_installed
from ep.common.runtime.plan_cache import PlanCache


class Primitive(abc.ABC):
    """An operation on storage, created by a Factory for one device and one set of arguments."""


class Factory(abc.ABC):
    """Creates primitives of one kind for one device."""

    @abc.abstractmethod
    def New(self, *args, **kwargs) -> Primitive | None:
        """A primitive for these arguments, or None when this device has no implementation of them."""

    @abc.abstractmethod
    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        """Every (op or None, dtypes in New's order) this factory implements; compiles nothing."""


FactoryT = TypeVar("FactoryT", bound=Factory)

# The packages whose modules register each device's factories; imported on first use, as OneFlow's static
# registrations run when its library loads, so that `import ep` stays light.
_BACKENDS = {DeviceType.kCPU: "ep.cpu.primitive", DeviceType.kCUDA: "ep.cuda.primitive"}
_REGISTRY: dict[tuple[DeviceType, type[Factory]], Factory] = {}
_LOADED: set[DeviceType] = set()
# Held while a backend registers: a thread that asks for a factory meanwhile waits, instead of
# seeing a device marked loaded before its factories are in the registry.
_LOADING = threading.RLock()


def REGISTER_PRIMITIVE_FACTORY(device_type: DeviceType, factory_type: type[Factory], impl: Factory | type[Factory]) -> None:
    """Register impl (a Factory, or a Factory class to instantiate) as device_type's implementation of factory_type."""
    factory = impl() if isinstance(impl, type) else impl
    if not isinstance(factory, factory_type):
        raise TypeError(f"impl: {type(factory).__name__} does not implement {factory_type.__name__}")
    _REGISTRY[(device_type, factory_type)] = factory


def _load(device_type: DeviceType, factory_type: type[Factory] | None = None) -> None:
    """Registers device_type's factories: first the backend module named as factory_type's interface
    module (ep/cpu/primitive/gather.py for ep/include/primitive/gather.py), if it registers it, else
    every module of the backend (a first NewPrimitive then imports one module, not two dozen: a
    fifth of a warm first call)."""
    if device_type in _LOADED or (device_type, factory_type) in _REGISTRY:
        return
    with _LOADING:
        if device_type in _LOADED or (device_type, factory_type) in _REGISTRY:
            return
        # Without numba-cuda (the `ep[cuda]` extra) the CUDA device simply has no factories.
        if device_type is DeviceType.kCPU or cuda_installed():
            backend = _BACKENDS[device_type]
            if factory_type is not None:
                name = f"{backend}.{factory_type.__module__.rpartition('.')[2]}"
                if importlib.util.find_spec(name) is not None:
                    importlib.import_module(name)
                    if (device_type, factory_type) in _REGISTRY:
                        return
            package = importlib.import_module(backend)
            # Every module of the backend registers its primitive: a new one needs no list edited.
            for module in pkgutil.iter_modules(package.__path__):
                importlib.import_module(f"{backend}.{module.name}")
        _LOADED.add(device_type)


def GetFactory(factory_type: type[FactoryT], device: object) -> FactoryT | None:
    """The registered factory of factory_type for device, or None."""
    device_type = as_device_type(device)
    if isinstance(device, str) and ":" in device:
        GetDevice(device)  # an explicit index must name a device of this machine
    _load(device_type, factory_type)
    return _REGISTRY.get((device_type, factory_type))


def NewPrimitive(factory_type: type[Factory], device: object, *args, **kwargs) -> Primitive | None:
    """A primitive of kind factory_type for device, or None when the device does not implement these arguments.

    factory_type is a Factory interface (ElementwiseUnaryFactory, GatherFactory, ...); device is a
    DeviceType, a Device or a tag ("cpu", "cuda", "cuda:0"); args and kwargs are that factory's New
    arguments (see its New), for example
    `NewPrimitive(ElementwiseUnaryFactory, "cpu", UnaryOp.kRelu, DataType.kFloat, DataType.kFloat)`.
    Primitives are cached per set of arguments (a repeated call is one lookup); nothing compiles
    until the first Launch.
    """
    if kwargs:
        return _PRIMITIVES.get(factory_type, device, _KEYWORDS, args, tuple(kwargs.items()))
    return _PRIMITIVES.get(factory_type, device, *args)


# Marks a key whose New arguments include keywords: (factory, device, _KEYWORDS, args, items).
_KEYWORDS = object()


def _new_primitive(factory_type: type[Factory], device: object, *arguments) -> Primitive | None:
    if not (isinstance(factory_type, type) and issubclass(factory_type, Factory)):
        raise TypeError(f"factory_type: {factory_type!r} is not a Factory interface such as ElementwiseUnaryFactory")
    args, kwargs = (arguments[1], dict(arguments[2])) if arguments and arguments[0] is _KEYWORDS else (arguments, {})
    factory = GetFactory(factory_type, device)
    return None if factory is None else factory.New(*args, **kwargs)


# By the caller's own arguments (exact keys, a flat tuple: most are their own key): kernel code
# and ep.ops may call NewPrimitive at every launch without a cache of their own.
_PRIMITIVES = PlanCache(_new_primitive)


def RegisteredFactories(device: object) -> dict[type[Factory], Factory]:
    """Every factory registered for a device, by interface."""
    device_type = as_device_type(device)
    _load(device_type)
    return {ft: f for (dt, ft), f in _REGISTRY.items() if dt is device_type}


def registry_rows(device: str | None = None, primitive: str | None = None, op: str | None = None) -> list[dict]:
    """One row per registered (primitive, device, op, dtypes) combination; compiles nothing.

    op matches an op's OneFlow name or value ("kRelu" or "relu").
    """
    rows = []
    for device_type in DeviceType:
        if device not in (None, device_type.value):
            continue
        for factory_type, factory in RegisteredFactories(device_type).items():
            name = factory_type.__name__.removesuffix("Factory")
            if primitive not in (None, name):
                continue
            for each_op, dtypes in factory.Combinations():
                if op is not None and (each_op is None or op not in (each_op.name, each_op.value)):
                    continue
                rows.append(
                    {
                        "primitive": name,
                        "device": device_type.value,
                        "op": None if each_op is None else each_op.name,
                        "dtypes": [dtype.value for dtype in dtypes],
                    }
                )
    return rows
