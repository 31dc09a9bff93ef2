"""pytest plugin for suites that test code built on ep: a `device` fixture over the available devices.

Registered as the `pytest11` entry point `ep`. It imports nothing beyond ep and NumPy, so
`python -m ep check` can use its helpers without pytest installed. `--ep-device cpu` (or cuda) limits the run to one device.
"""
from __future__ import annotations


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--ep-device",
        action="store",
        default=None,
        choices=("cpu", "cuda"),
        help="run device-parametrized tests on this ep device only",
    )


def selected_devices(config) -> list[str]:
    """The device tags a run covers: --ep-device, else every available device."""
    from ep.common.runtime.device import available_device_types

    chosen = config.getoption("--ep-device")
    if chosen is not None:
        return [chosen]
    return [device_type.value for device_type in available_device_types()]


def pytest_generate_tests(metafunc) -> None:
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", selected_devices(metafunc.config))


def to_device(array, device):
    """A copy of the NumPy array on device ("cpu" or "cuda")."""
    import numpy as np

    from ep.common.runtime.device import DeviceType, as_device_type

    array = np.ascontiguousarray(array)
    if as_device_type(device) is DeviceType.kCPU:
        return array.copy()
    from numba import cuda

    return cuda.to_device(array)


def to_numpy(array):
    """A NumPy copy of a cpu or cuda array."""
    import numpy as np

    if isinstance(array, np.ndarray):
        return array.copy()
    from ep.common.runtime.buffer import as_cuda_array

    return as_cuda_array(array).copy_to_host()
