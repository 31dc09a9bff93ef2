"""Runs "cuda" on Numba's CUDA simulator when this machine has no NVIDIA driver.

This must happen before numba is imported, so it is the first thing the suite does.
"""
import ctypes.util
import os

if "NUMBA_ENABLE_CUDASIM" not in os.environ:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0" if ctypes.util.find_library("cuda") else "1"

# This suite's tests take ep's device as `device`.
pytest_plugins = ["ep.testing.device"]


def pytest_collection_modifyitems(items):
    # The ptx tests (the PTX shards are the suite's longest): first, so that with -n 2 neither worker ends
    # the run alone on one while the other waits.
    items.sort(key=lambda item: item.get_closest_marker("ptx") is None)
