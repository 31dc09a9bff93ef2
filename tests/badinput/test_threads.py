"""One primitive launched from 8 threads at once: every thread gets its own correct result."""
import threading

import numpy as np
import pytest

from launch_specs import SPECS, launch

THREADS = 8


@pytest.mark.parametrize("name", SPECS)
def test_concurrent_launches_of_one_primitive(device, name):
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
            np.testing.assert_array_equal(guarded.value(), call.expected[param])
