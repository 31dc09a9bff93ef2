"""Every Spec'd primitive's Launch with an output placed over one of its inputs of the same dtype, in
one buffer: exactly the input's elements (allowed where the declaration says the kernel reads each
element first, refused elsewhere), partly over it (refused, naming both, nothing written), or beside
it (NumPy's answer). Nothing outside the output is ever written."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from ep.common.primitive.launch import Declaration
from ep.testing import to_device, to_numpy
from ep.testing.samples import assert_result
from guards import FAST, expect_error
from launch_specs import SPECS, launch


def _rules(primitive) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Each output's reads_first and holds: the inputs it may be exactly, and those it may hold
    anywhere."""
    declaration = getattr(type(primitive), "launch", None)
    assert isinstance(declaration, Declaration), type(primitive)
    outs = [b for b in declaration.buffers if hasattr(b, "reads_first")]
    return {o.name: o.reads_first for o in outs}, {o.name: o.holds for o in outs}


# Specs with an input buffer (Fill writes a scalar) and a declared launch: CopyNd's own rule is on
# the boxes it copies, not its buffers (tests/primitive/test_copy_nd.py); OneHot's out never has
# its indices' dtype in its sample (tests/primitive/test_overlap_rows.py places one over the other).
WITH_INPUTS = [name for name, spec in SPECS.items() if "in" in spec.kinds.values() and name not in ("CopyNd", "OneHot")]


@pytest.mark.parametrize("name", WITH_INPUTS)
@FAST
@given(data=st.data())
def test_an_output_over_an_input_is_its_elements_refused_or_apart(device, name, data):
    spec = SPECS[name]
    sizes = data.draw(spec.sizes, label="sizes")
    call = spec.build(device, sizes, sum(sizes))
    primitive = spec.primitive(device)
    reads_first, holds = _rules(primitive)
    hosts = {p: to_numpy(call.args[p]).ravel() for p, kind in spec.kinds.items() if kind == "in"}
    pairs = [
        (out, src) for out, guarded in call.outputs.items() for src, host in hosts.items()
        if host.dtype == guarded.dtype and host.size and guarded.n
    ]
    assume(pairs)
    out, src = data.draw(st.sampled_from(pairs), label="output, input")
    host, n = hosts[src], call.outputs[out].n
    exact_allowed = src in reads_first.get(out, ()) and host.size == n
    # Where the output starts relative to the input: 0 with the same size is exactly its elements.
    shift = data.draw(st.integers(-n - 2, host.size + 2), label="shift")
    same = shift == 0 and host.size == n
    overlapping = -n < shift < host.size
    base = np.arange(host.size + 2 * n + 8).astype(host.dtype)  # values no kernel writes there
    start = n + 4
    base[start : start + host.size] = host
    buffer = to_device(base, device)
    call.args[src] = buffer[start : start + host.size]
    call.args[out] = buffer[start + shift : start + shift + n]
    if overlapping and not (same and exact_allowed) and src not in holds.get(out, ()):
        expect_error(lambda: launch(primitive, call), ValueError, (src, out))
        np.testing.assert_array_equal(to_numpy(buffer), base)
        return
    launch(primitive, call)
    expected = base.copy()
    expected[start + shift : start + shift + n] = call.expected[out].ravel()
    assert_result(to_numpy(buffer), expected, call.rtol, out)


def test_every_spec_has_an_output_and_input_of_one_dtype():
    # A Spec whose outputs share no dtype with its inputs would draw no case above, silently.
    missing = []
    for name in WITH_INPUTS:
        spec = SPECS[name]
        call = spec.build("cpu", (2,) * spec.arity, 0)
        ins = {to_numpy(call.args[p]).dtype for p, kind in spec.kinds.items() if kind == "in"}
        if not any(guarded.dtype in ins for guarded in call.outputs.values()):
            missing.append(name)
    assert not missing, missing
