"""Running a primitive's samples (ep.common.primitive.sample) on a device: warmup launches them,
`ep check` and the tests compare their outputs with the NumPy references."""
from __future__ import annotations

import numpy as np

from ep.common.primitive.sample import Sample
from ep.include.primitive.primitive import Factory, GetFactory, NewPrimitive, RegisteredFactories
from ep.testing.arrays import to_device, to_numpy


def on_device(sample: Sample, device: str) -> dict[str, object]:
    """sample's Launch arguments with its buffers copied to device (a list of them, each)."""
    def move(name: str, value: object) -> object:
        if name in sample.host:
            return value.copy()
        if isinstance(value, np.ndarray):
            return to_device(value, device)
        if isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
            return [to_device(v, device) for v in value]
        return value

    return {name: move(name, value) for name, value in sample.args.items()}


def launch(factory_type: type[Factory], device: str, sample: Sample, stream=None) -> dict[str, object] | None:
    """Launch sample on device (on stream, or the device's default one, synchronized after); its
    arguments as launched, or None when NewPrimitive has no primitive for it here."""
    from ep.common.runtime.device import GetDevice

    primitive = NewPrimitive(factory_type, device, *sample.new, **sample.new_kwargs)
    if primitive is None:
        return None
    stream = stream if stream is not None else GetDevice(device).default_stream
    args = on_device(sample, device)
    primitive.Launch(stream, *args.values())
    stream.Sync()
    return args


def check(factory_type: type[Factory], device: str, sample: Sample) -> bool:
    """Launch sample and assert each output equals its reference (within sample.rtol of the
    largest reference value); False when the device has no primitive for it."""
    args = launch(factory_type, device, sample)
    if args is None:
        return False
    for name, expected in (sample.expected or {}).items():
        outputs = args[name] if isinstance(expected, list) else [args[name]]
        for got, want in zip(outputs, expected if isinstance(expected, list) else [expected]):
            assert_result(to_numpy(got), want, sample.rtol, name)
    return True


def assert_result(got: np.ndarray, expected: np.ndarray, rtol: float = 0.0, name: str = "") -> None:
    """got is expected: bit for bit (rtol 0), or within rtol of expected's largest magnitude."""
    if rtol:
        scale = float(np.max(np.abs(expected.astype(np.float64)), initial=0))
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=rtol * scale, err_msg=name)
    else:
        assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), f"{name}: {got!r}; expected {expected!r}"


def reference_samples(factory_type: type[Factory], devices: tuple[str, ...]) -> tuple[str, list[Sample]]:
    """The samples with a NumPy reference of factory_type's first combination (float32 ones first)
    that has them and a primitive on each of devices, with the combination as `ep list` shows it;
    LookupError when there is none."""
    from ep.common.runtime.data_type import DataType

    factories = [GetFactory(factory_type, device) for device in devices]
    float32_first = sorted(factories[0].Combinations(), key=lambda combination: sum(d is not DataType.kFloat for d in combination[1]))
    for op, dtypes in float32_first:
        chosen = [sample for sample in factories[0].Samples(op, dtypes) if sample.expected is not None]
        if chosen and all(NewPrimitive(factory_type, device, *chosen[0].new, **chosen[0].new_kwargs) is not None for device in devices):
            return " ".join([*([op.name] if op is not None else []), ",".join(dtype.value for dtype in dtypes)]), chosen
    raise LookupError(f"none of {factory_type.__name__}'s combinations with a reference sample has a primitive on {', '.join(devices)}")


def registered(device: str) -> dict[str, tuple[type[Factory], Factory]]:
    """Every factory registered for device, by its primitive's name (registry_rows' "primitive")."""
    return {factory_type.__name__.removesuffix("Factory"): (factory_type, factory) for factory_type, factory in RegisteredFactories(device).items()}
