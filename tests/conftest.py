"""Runs "cuda" on Numba's CUDA simulator when this machine has no NVIDIA driver.

This must happen before numba is imported, so it is the first thing the suite does.
"""
import ctypes.util
import fcntl
import json
import os
import pathlib
from typing import Callable

import compile_once
import pytest
import simulator
from nvvm import missing_ptx_tools

if "NUMBA_ENABLE_CUDASIM" not in os.environ:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0" if ctypes.util.find_library("cuda") else "1"


if os.environ["NUMBA_ENABLE_CUDASIM"] == "1":
    simulator.lock_shared_arrays()
    simulator.block_without_polling()

# This suite's tests take ep's device as `device`.
pytest_plugins = ["ep.testing.device"]


def pytest_collection_modifyitems(items):
    # The ptx tests (the PTX shards are the suite's longest): first, so that with -n 2 neither worker ends
    # the run alone on one while the other waits.
    items.sort(key=lambda item: item.get_closest_marker("ptx") is None)
    ptx = [item for item in items if item.get_closest_marker("ptx")]
    missing = missing_ptx_tools() if ptx else None
    if missing is not None:
        # CI's sweep step sets EP_REQUIRE_PTX: there a missing tool fails the run instead.
        if os.environ.get("EP_REQUIRE_PTX"):
            raise pytest.UsageError(f"EP_REQUIRE_PTX is set and the ptx tests cannot run: {missing}")
        for item in ptx:
            item.add_marker(pytest.mark.skip(reason=missing))


def _run_directory(tmp_path_factory) -> pathlib.Path:
    """The test run's base temporary directory, the same for every xdist worker."""
    base = tmp_path_factory.getbasetemp()
    # Each xdist worker's base directory is a directory of the run's one base directory.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def compile_locks(tmp_path_factory) -> None:
    """Every process of the run (xdist workers, the MPI ranks tests start) compiles each disk-cached
    kernel once between them (compile_once.py)."""
    directory = str(_run_directory(tmp_path_factory) / "compile-locks")
    compile_once.compile_each_signature_once(directory)
    os.environ[compile_once.ENVIRONMENT] = directory


@pytest.fixture(scope="session")
def once_per_run(tmp_path_factory) -> Callable:
    """once_per_run(name, make): make(directory)'s result (JSON), computed by the first test worker
    that asks and read from disk by the others. An expensive module-scoped fixture (test_bench's
    benchmark run, test_plugin's install) otherwise runs once in every xdist worker that runs one of
    its tests."""
    root = _run_directory(tmp_path_factory)

    def once(name: str, make: Callable) -> object:
        directory = root / f"once-{name}"
        result = directory / "result.json"
        directory.mkdir(exist_ok=True)
        with open(directory / "lock", "w") as lock:
            # The other workers wait here until the first has written the result (or failed: then
            # the next one tries, and fails alike).
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not result.exists():
                work = directory / "work"
                work.mkdir(exist_ok=True)
                result.write_text(json.dumps(make(work)))
        return json.loads(result.read_text())

    return once
