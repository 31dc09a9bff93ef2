"""The pytest plugin: every test that takes `ep_device` runs once per selected ep device.

It touches nothing else: a suite's own `device` fixture or parametrization is left alone, and a
test's own `@pytest.mark.parametrize("ep_device", ...)` overrides the plugin's, as pytest's direct
parametrization overrides a fixture.
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


def parametrize_devices(metafunc, argname: str) -> None:
    """Parametrize argname by the selected ep devices, unless the test parametrizes it itself."""
    if argname in metafunc.fixturenames and not _parametrized_by_test(metafunc, argname):
        metafunc.parametrize(argname, selected_devices(metafunc.config))


def _parametrized_by_test(metafunc, argname: str) -> bool:
    """Whether a parametrize mark of the test (or its class or module) names argname."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(argnames, str):
            argnames = [name.strip() for name in argnames.split(",")]
        if argname in argnames:
            return True
    return False


def pytest_generate_tests(metafunc) -> None:
    parametrize_devices(metafunc, "ep_device")
