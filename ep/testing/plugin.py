"""The pytest plugin: every test that takes `ep_device` runs once per selected ep device.

It touches nothing else: a suite's own `device` fixture or parametrization is left alone.
"""
from __future__ import annotations

import pytest

from ep.common.runtime.device import available_device_types, cuda_installed


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--ep-device",
        action="store",
        default=None,
        choices=("cpu", "cuda"),
        help="run ep_device-parametrized tests on this ep device only",
    )


def selected_devices(config) -> list:
    """The ep devices a run covers: --ep-device, else every available device; an unavailable
    choice is skipped with the reason."""
    available = [device_type.value for device_type in available_device_types()]
    chosen = config.getoption("--ep-device")
    if chosen is None:
        return available
    if chosen in available:
        return [chosen]
    why = "no CUDA device here (NUMBA_ENABLE_CUDASIM=1 runs the simulator)" if cuda_installed() else "numba-cuda is not installed (ep[cuda])"
    return [pytest.param(chosen, marks=pytest.mark.skip(reason=f"--ep-device {chosen}: {why}"))]


def pytest_generate_tests(metafunc) -> None:
    if "ep_device" in metafunc.fixturenames:
        metafunc.parametrize("ep_device", selected_devices(metafunc.config))
