"""Running a primitive's samples (ep.common.primitive.sample) on a device: warmup launches them,
`ep check` and the tests compare their outputs with the NumPy references."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.primitive.sample import Sample
from ep.include.primitive.primitive import Factory, GetFactory, NewPrimitive, RegisteredFactories
from ep.testing.arrays import to_device, to_numpy


def samples(factory_type: type[Factory], device: str, op, dtypes: tuple) -> Iterator[Sample]:
    """The samples of device's factory_type for one of its Combinations."""
    return GetFactory(factory_type, device).Samples(op, dtypes)


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
            got = to_numpy(got)
            if sample.rtol:
                scale = float(np.max(np.abs(want.astype(np.float64)), initial=0))
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=sample.rtol, atol=sample.rtol * scale, err_msg=name)
            else:
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), f"{name}: {got!r}; expected {want!r}"
    return True


def registered(device: str) -> dict[str, tuple[type[Factory], Factory]]:
    """Every factory registered for device, by its primitive's name (registry_rows' "primitive")."""
    return {factory_type.__name__.removesuffix("Factory"): (factory_type, factory) for factory_type, factory in RegisteredFactories(device).items()}
