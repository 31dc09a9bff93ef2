"""The primitive interfaces, their op enums, and NewPrimitive: every module of this package is one
interface (or its enums), and what it defines is exported here, so a new interface is one file."""
import enum
import inspect
import importlib
import pkgutil

from ep.include.primitive.primitive import (
    REGISTER_PRIMITIVE_FACTORY,
    Factory,
    GetFactory,
    NewPrimitive,
    Primitive,
    RegisteredFactories,
)


def _public(module) -> dict[str, object]:
    """What module defines for callers: its primitives, factories, enums and exceptions."""
    kinds = (Primitive, Factory, enum.Enum, Exception)
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and isinstance(value, type) and value.__module__ == module.__name__ and issubclass(value, kinds)
    }


_EXPORTS: dict[str, object] = {}
for _module in pkgutil.iter_modules(__path__):
    _EXPORTS.update(_public(importlib.import_module(f"{__name__}.{_module.name}")))
globals().update(_EXPORTS)

# The interfaces a kernel author names (ep exports these): every factory, the op enums.
FACTORIES = {name: value for name, value in _EXPORTS.items() if issubclass(value, Factory) and value is not Factory}


def _document(factory: type[Factory]) -> None:
    """factory's help() shows New and the Launch of the primitive it makes (same name, no Factory)."""
    primitive = _EXPORTS.get(factory.__name__.removesuffix("Factory"))
    parts = [factory.__doc__ or f"Makes {primitive.__name__ if primitive else 'primitives'}."]
    for cls, method in ((factory, "New"), (primitive, "Launch")):
        function = getattr(cls, method, None) if cls is not None else None
        if function is not None:
            signature = inspect.signature(function)
            # Annotations are strings here (postponed): shown as written, without quotes.
            shown = str(signature.replace(parameters=list(signature.parameters.values())[1:])).replace("'", "")
            parts.append(f"{cls.__name__}.{method}{shown}: {inspect.getdoc(function) or ''}".rstrip(": "))
    factory.__doc__ = "\n\n".join(parts)


for _factory in FACTORIES.values():
    _document(_factory)
ENUMS = {name: value for name, value in _EXPORTS.items() if issubclass(value, enum.Enum) and len(value)}

__all__ = ["REGISTER_PRIMITIVE_FACTORY", "GetFactory", "NewPrimitive", "RegisteredFactories", *sorted(_EXPORTS)]
