"""ep's pytest plugin in a downstream project that installs ep (non-editable) beside its own fixtures."""
import ctypes.util
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

DOWNSTREAM = {
    "test_own_parametrize.py": """
        import pytest

        @pytest.mark.parametrize("device", ["mine_a", "mine_b"])
        def test_own(device):
            assert device.startswith("mine_")
    """,
    "fixture/conftest.py": """
        import pytest

        @pytest.fixture
        def device():
            return "my own device"
    """,
    "fixture/test_own_fixture.py": """
        def test_own(device):
            assert device == "my own device"
    """,
    "test_own_ep_device.py": """
        import pytest

        @pytest.mark.parametrize("ep_device", ["mine"])
        def test_own(ep_device):
            assert ep_device == "mine"

        @pytest.mark.parametrize("size, ep_device", [(1, "mine_a"), (2, "mine_b")])
        def test_own_among_others(size, ep_device):
            assert ep_device.startswith("mine_")

        @pytest.mark.parametrize(argnames=["ep_device"], argvalues=[["mine"]])
        class TestOwn:
            def test_in_class(self, ep_device):
                assert ep_device == "mine"
    """,
    "opt_in/test_own_device.py": """
        import pytest

        @pytest.mark.parametrize("device", ["mine"])
        def test_own(device):
            assert device == "mine"

        def test_plugins(device):
            assert device in ("cpu", "cuda")
    """,
    "test_ep_device.py": """
        import numpy as np
        import ep
        from ep.testing import to_device, to_numpy

        def test_relu(ep_device):
            x = np.array([-1.0, 2.0], np.float32)
            assert to_numpy(ep.ops.unary("relu", to_device(x, ep_device))).tolist() == [0.0, 2.0]
    """,
}


def _install_downstream(root):
    site = root / "site"
    # A copy of the package's sources: a build/ left in the checkout by an earlier build would
    # otherwise be installed instead of the sources as they are.
    source = root / "source"
    shutil.copytree(ROOT / "ep", source / "ep", ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(source)],
        capture_output=True, text=True,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    project = root / "project"
    for name, text in DOWNSTREAM.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(project), str(site)


@pytest.fixture(scope="module")
def downstream(once_per_run):
    # One install for the whole test run, whichever workers run these tests.
    project, site = once_per_run("downstream", _install_downstream)
    return pathlib.Path(project), pathlib.Path(site)


def _pytest(downstream, *args, cuda_sim="1"):
    project, site = downstream
    env = dict(os.environ, PYTHONPATH=str(site), NUMBA_ENABLE_CUDASIM=cuda_sim)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )
    return result


def test_downstream_uses_the_installed_copy(downstream):
    project, site = downstream
    result = subprocess.run(
        [sys.executable, "-c", "import ep; print(ep.__file__)"], cwd=project, env=dict(os.environ, PYTHONPATH=str(site)),
        capture_output=True, text=True,
    )
    assert result.stdout.startswith(str(site))


def test_own_device_fixture_and_parametrize_are_left_alone(downstream):
    result = _pytest(downstream, "test_own_parametrize.py", "fixture")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "3 passed" in result.stdout


def test_own_ep_device_parametrize_overrides_the_plugin(downstream):
    # pytest's rule: a test's direct parametrization overrides a fixture of the same name.
    result = _pytest(downstream, "test_own_ep_device.py")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "4 passed" in result.stdout


def test_own_device_parametrize_overrides_the_opt_in_plugin(downstream):
    result = _pytest(downstream, "-p", "ep.testing.device", "opt_in")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "3 passed" in result.stdout  # its own, then cpu and the simulator


def test_ep_device_runs_on_every_available_device(downstream):
    result = _pytest(downstream, "test_ep_device.py")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "2 passed" in result.stdout  # cpu and the simulator


@pytest.mark.skipif(bool(ctypes.util.find_library("cuda")), reason="a CUDA driver is installed here")
def test_ep_device_cuda_without_a_gpu_skips_with_a_reason(downstream):
    result = _pytest(downstream, "test_ep_device.py", "--ep-device", "cuda", cuda_sim="0")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 skipped" in result.stdout and "--ep-device cuda: no CUDA device here" in result.stdout
