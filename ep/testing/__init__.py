"""Helpers for suites that test code built on ep: device copies of NumPy arrays, and a pytest plugin.

The plugin (ep.testing.plugin, loaded by pytest through the `pytest11` entry point `ep`) gives an
`ep_device` argument over the available devices and the `--ep-device` option; a suite that wants
the name `device` for it opts in with `pytest_plugins = ["ep.testing.device"]` in its root conftest.
Nothing here imports pytest until pytest loads the plugin, so `python -m ep check` needs no pytest.
"""
from ep.testing.arrays import to_device, to_numpy, transposed

__all__ = ["to_device", "to_numpy", "transposed"]
