"""Opt-in pytest plugin: ep's devices under the argument name `device`.

Load it from a suite's root conftest with `pytest_plugins = ["ep.testing.device"]`. `device` is a
direct parametrization, as `ep_device` is, not a fixture: hypothesis's @given tests take it
without the function-scoped-fixture health check. A test's own parametrization of `device`
overrides it.
"""
from __future__ import annotations

from ep.testing.plugin import parametrize_devices


def pytest_generate_tests(metafunc) -> None:
    parametrize_devices(metafunc, "device")
