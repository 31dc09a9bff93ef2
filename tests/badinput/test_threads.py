"""One primitive launched from 8 threads at once: every thread gets its own correct result."""
import sys
import threading

import pytest

from ep.testing.samples import assert_result
from launch_specs import SPECS, launch

THREADS = 8


@pytest.fixture
def threads_switch_often():
    # Python's default 5 ms between GIL hand-overs would let each thread run all its launches alone.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.parametrize("name", SPECS)
def test_concurrent_launches_of_one_primitive(device, name, threads_switch_often):
    if device != "cpu":
        pytest.skip("Numba's CUDA simulator runs one kernel at a time (its threads share one block state)")
    spec = SPECS[name]
    primitive = spec.primitive(device)
    calls = [spec.build(device, (2,) * spec.arity, seed) for seed in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    errors = []

    def run(call):
        barrier.wait()
        try:
            for _ in range(3):
                launch(primitive, call)
        except Exception as error:  # reported below, with the thread's call
            errors.append(repr(error))

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for call in calls:
        for param, guarded in call.outputs.items():
            guarded.check_guards()
            assert_result(guarded.value(), call.expected[param], call.rtol, param)
