"""Opt-in pytest plugin: a `device` fixture that is ep's `ep_device`.

Load it from a suite's root conftest with `pytest_plugins = ["ep.testing.device"]`.
"""
from __future__ import annotations

import pytest


@pytest.fixture
def device(ep_device: str) -> str:
    """The ep device tag ("cpu" or "cuda") this test runs on."""
    return ep_device
