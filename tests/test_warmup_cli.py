"""`python -m ep warmup`: compiles the chosen kernels into NUMBA_CACHE_DIR, and a second run finds them there."""
import os
import re
import subprocess
import sys

import pytest

SUMMARY = re.compile(r"warmup: (\d+) combinations in ([\d.]+) s: (\d+) compiled \((\d+) functions\), (\d+) cached .*, (\d+) failed; cache: NUMBA_CACHE_DIR=(\S+)")

# Real ep.ops calls whose kernels the warmup below compiles: after it they compile nothing.
CALLS = """
import numpy as np, numba.core.event as event, ep
with event.install_recorder("numba:compile") as recorder:
    x = np.random.randn(300, 200).astype(np.float32)
    ep.ops.unary("relu", x), ep.ops.unary("relu", np.ones(1 << 20, np.float32))
    ep.ops.binary("add", x, x), ep.ops.binary("add", 2.0, x), ep.ops.binary("add", x[:1], x)
    ep.ops.binary("add", x[:, :1], x), ep.ops.binary("add", x.reshape(300, 1, 200), x.reshape(1, 300, 200))
    ep.ops.gather(x, np.array([[3, -1], [7, 0]]), axis=0), ep.ops.gather(x, np.array([5], np.int32), axis=1)
print(sum(e.is_start for _, e in recorder.buffer))
"""


def _run(cache_dir, *args):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _warmup(cache_dir, *args):
    result = _run(cache_dir, "-m", "ep", "warmup", "--device", "cpu", *args)
    found = SUMMARY.search(result.stdout)
    assert found, result.stdout
    rows, seconds, compiled, functions, cached, failed, where = found.groups()
    assert where == str(cache_dir) and failed == "0"
    assert f"{rows}/{rows}" in result.stderr  # the progress: a counter line, or tqdm's bar
    return int(rows), int(compiled), int(functions), int(cached), float(seconds)


def test_warmup_compiles_once_then_finds_the_cache(tmp_path):
    # relu's float32 rows: ElementwiseUnary's and BroadcastElementwiseUnary's.
    first = _warmup(tmp_path, "--ops", "relu", "--dtypes", "float32")
    assert first[:2] == (2, 2) and first[2] > 0 and first[3] == 0
    assert any(tmp_path.rglob("*.nbc")), "nothing written to NUMBA_CACHE_DIR"
    second = _warmup(tmp_path, "--ops", "relu", "--dtypes", "float32")
    assert second[:4] == (2, 0, 0, 2)
    assert second[4] < first[4]


def test_warmup_leaves_nothing_for_real_calls_to_compile(tmp_path):
    _warmup(tmp_path, "--ops", "relu", "add", "--dtypes", "float32")
    # CopyNd: ep.ops copies a non-contiguous input (x[:, :1] below) with it.
    rows, *_ = _warmup(tmp_path, "--primitives", "Gather", "BatchGather", "CopyNd", "--dtypes", "float32")
    assert rows == 5  # Gather and BatchGather with int32 and int64 indices, CopyNd
    result = _run(tmp_path, "-c", CALLS)
    assert result.stdout.split()[-1] == "0"


# The other primitives' ops, after a warmup of their float32 rows (softmax's rows of one block and
# longer ones): nothing to compile either.
OTHER_CALLS = """
import numpy as np, numba.core.event as event, ep
with event.install_recorder("numba:compile") as recorder:
    x = np.random.randn(30, 20).astype(np.float32)
    ep.ops.softmax(x), ep.ops.softmax(np.ones((2, 9000), np.float32)), ep.ops.log_softmax(x)
    ep.ops.softmax_grad(x, x), ep.ops.log_softmax_grad(x, x)
    ep.ops.where(np.asarray(x > 0), x, x), ep.ops.full((4, 5), 1.5, dtype=np.float32), ep.ops.add_n([x, x, x])
print(sum(e.is_start for _, e in recorder.buffer))
"""


def test_warmup_of_the_other_primitives_leaves_nothing_to_compile(tmp_path):
    primitives = ["Softmax", "LogSoftmax", "SoftmaxBackward", "LogSoftmaxBackward", "Where", "Fill", "Add"]
    rows, *_ = _warmup(tmp_path, "--primitives", *primitives, "--dtypes", "float32", "bool")
    # The softmax family's float32 rows, Where's with a bool condition (13 data dtypes), Fill's and Add's bool and float32.
    assert rows == 4 + 13 + 2 + 2
    result = _run(tmp_path, "-c", OTHER_CALLS)
    assert result.stdout.split()[-1] == "0", result.stdout


def test_warmup_shows_tqdms_bar_when_tqdm_is_installed(tmp_path):
    # A stand-in tqdm module: warmup passes its rows through tqdm(...).
    (tmp_path / "tqdm.py").write_text("def tqdm(rows, **options):\n    print('TQDM', options['desc'], file=options['file'])\n    return rows\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "ep", "warmup", "--device", "cpu", "--ops", "relu", "--dtypes", "float32"], capture_output=True, text=True, env=env)
    assert result.returncode == 0 and result.stderr.strip() == "TQDM warmup", result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (("--ops", "gather"), "'gather' is not an op"),
        (("--ops", "exp", "--dtypes", "int8"), "no registered combination matches"),
    ],
)
def test_warmup_refuses_what_it_cannot_choose(tmp_path, args, message):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "ep", "warmup", "--device", "cpu", *args], capture_output=True, text=True, env=env)
    assert result.returncode == 2 and message in result.stderr
    assert not any(tmp_path.iterdir())  # nothing compiled


@pytest.mark.parametrize("command", ["check", "warmup"])
def test_a_device_not_available_here_is_one_message(tmp_path, command):
    # check printed one failure per primitive family (23) where warmup gave one error.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), NUMBA_ENABLE_CUDASIM="0")
    probe = "from ep.common.runtime.device import cuda_available; print(cuda_available())"
    if subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env).stdout.strip() != "False":
        pytest.skip("this machine runs cuda")
    result = subprocess.run([sys.executable, "-m", "ep", command, "--device", "cuda"], capture_output=True, text=True, env=env)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == f"ep {command}: --device 'cuda' is not available here; expected one of cpu"

