"""PyTorch's OpInfo sample inputs through ep.ops (tests/ops/opinfo.py), on each device, against
torch: no wrong value, shape or dtype but the documented differences, and no exception but a clear
TypeError or ValueError. The first two samples of each OpInfo and dtype run in the suite; all of
them in CI's sweep step (marker sweep)."""
import pytest

pytest.importorskip("expecttest")  # torch's OpInfo database needs it (the test extra has it)

import numpy as np  # noqa: E402

from ep.testing import to_device, to_numpy  # noqa: E402
from opinfo import DTYPES, Tally, mapped_opinfos, run_opinfo  # noqa: E402

MAPPED = mapped_opinfos()


def _on(device: str, call):
    """call with its array arguments on device and its result back on the host."""
    if device == "cpu":
        return call

    def run(x, *args, **kwargs):
        # to_device makes a 0-d array 1-d, (1,): reshaped back, the op sees torch's 0-d tensor.
        moved = [(to_device(a, device).reshape(a.shape) if a.ndim == 0 else to_device(a, device)) if isinstance(a, np.ndarray) else a for a in (x, *args)]
        return to_numpy(call(*moved, **kwargs))

    return run


def _check(device, opinfo, call, samples):
    tally = Tally()
    for dtype in DTYPES:
        if dtype in opinfo.supported_dtypes("cpu"):
            run_opinfo(opinfo, _on(device, call), dtype, tally, samples)
    assert not tally.failures, "\n".join(tally.failures)


@pytest.mark.parametrize("opinfo, call", MAPPED, ids=[f"{o.name}.{o.variant_test_name}" for o, _ in MAPPED])
def test_samples_agree_with_torch(device, opinfo, call):
    _check(device, opinfo, call, 2)


@pytest.mark.sweep
@pytest.mark.parametrize("opinfo, call", MAPPED, ids=[f"{o.name}.{o.variant_test_name}" for o, _ in MAPPED])
def test_every_sample_agrees_with_torch(opinfo, call):
    _check("cpu", opinfo, call, None)
