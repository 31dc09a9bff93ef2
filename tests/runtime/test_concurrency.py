"""Threads and fork: first use of ep from many threads at once, a child forked after a parallel launch,
and reductions from threads and a forked child (the CPU's thread pool).

Each case runs in a fresh interpreter, since they concern what a process does first.
"""
import subprocess
import sys
import textwrap

import pytest


def _run(code: str, **env) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600, env={**os.environ, **env}
    )


def test_first_use_from_many_threads_at_once():
    result = _run("""
        import threading
        import numpy as np
        import ep

        barrier = threading.Barrier(8)
        found, errors = [], []

        def first_use(i):
            barrier.wait()
            try:
                relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", ep.UnaryOp.kRelu, np.float32, np.float32)
                found.append(relu)
                x = np.arange(-8, 8, dtype=np.float32) * (i + 1)
                assert np.array_equal(ep.ops.unary("relu", x), np.maximum(x, 0))
            except Exception as error:
                errors.append(repr(error))

        threads = [threading.Thread(target=first_use, args=(i,)) for i in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert not errors, errors
        assert len(found) == 8 and all(p is found[0] for p in found), found
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
@pytest.mark.parametrize("layer", ["ep's choice", "tbb"])
def test_a_child_forked_after_a_parallel_launch_works(layer):
    env = {} if layer == "ep's choice" else {"NUMBA_THREADING_LAYER": layer}
    result = _run("""
        import os
        import numba
        import numpy as np
        import ep

        x = np.linspace(-1, 1, 1 << 20, dtype=np.float32)
        ep.ops.unary("relu", x)  # a parallel launch: the thread pool is up
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(ep.ops.unary("relu", x), np.maximum(x, 0))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(numba.threading_layer(), os.waitstatus_to_exitcode(status))
    """, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    # OpenMP where libgomp is installed (the child then runs its launches on its calling thread), else TBB.
    chosen, status = result.stdout.split()
    assert chosen in (("omp", "tbb") if layer == "ep's choice" else (layer,)) and status == "0", result.stdout + result.stderr


def test_concurrent_parallel_launches_from_threads():
    result = _run("""
        import threading
        import numpy as np
        import ep

        x = np.linspace(-1, 1, 1 << 20, dtype=np.float32)
        expected = np.maximum(x, 0)
        wrong = []

        def launch():
            for _ in range(10):
                if not np.array_equal(ep.ops.unary("relu", x), expected):
                    wrong.append(1)

        threads = [threading.Thread(target=launch) for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print("ok" if not wrong else "wrong")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stdout + result.stderr


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
def test_reductions_from_threads_and_in_a_forked_child():
    # Reductions cut into slices (a state per slice, then a merge launch), fused ones included:
    # each launch's states are its own, so threads and a child forked after them agree with NumPy.
    result = _run("""
        import os
        import threading
        import numpy as np
        import ep

        rng = np.random.default_rng(0)
        x = rng.standard_normal(1 << 20).astype(np.float32)
        m = rng.standard_normal((256, 1024))
        dot = ep.fuse(lambda a, b: ep.ops.sum(a * b, dim=-1))
        total, peak, var, dots = np.sum(x, dtype=np.float64), np.argmax(x), np.var(m, axis=0, ddof=1), np.sum(m * m, axis=-1)
        wrong = []

        def launch(i):
            for _ in range(20):
                if abs(float(ep.ops.sum(x)) - total) > 1e-2 or int(ep.ops.argmax(x)) != peak:
                    wrong.append(i)
                if not (np.allclose(ep.ops.var(m, 0), var) and np.allclose(dot(m, m), dots)):
                    wrong.append(i)

        threads = [threading.Thread(target=launch, args=(i,)) for i in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        pid = os.fork()
        if pid == 0:
            os._exit(0 if abs(float(ep.ops.sum(x)) - total) < 1e-2 and np.allclose(dot(m, m), dots) else 3)
        _, status = os.waitpid(pid, 0)
        print("ok" if not wrong else f"wrong in threads {sorted(set(wrong))}", os.waitstatus_to_exitcode(status))
    """)
    assert result.returncode == 0 and result.stdout.split() == ["ok", "0"], result.stdout + result.stderr
