"""Good launches of every primitive on edge layouts: zero sizes, read-only, subclass, 2-d and
misaligned inputs, misaligned outputs. Results match NumPy, inputs stay unchanged and nothing is
written outside the output; a misaligned cuda buffer is refused by name."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from ep.testing import to_numpy
from ep.testing.samples import assert_result
from guards import FAST, Guarded, digest, expect_error, misaligned_copy
from launch_specs import FAMILIES, SPECS, launch


class Tagged(np.ndarray):
    """A subclass that changes nothing: a primitive sees its memory."""


def _variant(label: str, host: np.ndarray, device: str):
    if label == "misaligned":
        return misaligned_copy(host, device)
    if device != "cpu" or label == "plain":
        return misaligned_copy(host, device, 0)
    if label == "read-only":
        host = host.copy()
        host.flags.writeable = False
        return host
    if label == "matrix":
        return np.matrix(host.reshape(1, -1))
    if label == "subclass":
        return host.copy().view(Tagged)
    return host.reshape(-1, 1).copy()  # "2-d"


INPUT_LAYOUTS = ["plain", "read-only", "matrix", "subclass", "2-d", "misaligned"]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("name", SPECS)
@FAST
@given(data=st.data())
def test_edge_layouts_give_numpy_results_and_write_only_the_output(device, name, data):
    spec = SPECS[name]
    sizes = data.draw(spec.sizes, label="sizes")
    call = spec.build(device, sizes, sum(sizes))
    misaligned = []
    for param, kind in spec.kinds.items():
        if kind == "in":
            label = data.draw(st.sampled_from(INPUT_LAYOUTS), label=param)
            host = to_numpy(call.args[param])
            call.args[param] = _variant(label, host, device)
            if label == "misaligned" and host.size and host.dtype.itemsize > 1:  # a byte is never misaligned
                misaligned.append(param)
        elif kind == "out" and data.draw(st.booleans(), label=f"{param} misaligned"):
            old = call.outputs[param]
            call.outputs[param] = Guarded(device, old.dtype, old.n, misaligned=True)
            call.args[param] = call.outputs[param].middle
            if old.n and old.dtype.itemsize > 1:
                misaligned.append(param)
    inputs = {key: digest(arg) for key, arg in call.args.items() if key not in call.outputs}
    primitive = spec.primitive(device)
    if device != "cpu" and misaligned:
        # A GPU faults on misaligned elements: refused before any launch.
        expect_error(lambda: launch(primitive, call), ValueError, tuple(misaligned))
        for guarded in call.outputs.values():
            guarded.check_unchanged()
    else:
        launch(primitive, call)
        for param, guarded in call.outputs.items():
            guarded.check_guards()
            assert_result(guarded.value(), call.expected[param], call.rtol, param)
    assert {key: digest(arg) for key, arg in call.args.items() if key not in call.outputs} == inputs


def test_every_spec_gets_its_bad_arguments_in_one_family():
    # A Spec in no family would get no bad-argument tests, silently.
    names = [name for members in FAMILIES.values() for name in members]
    assert sorted(names) == sorted(SPECS)
