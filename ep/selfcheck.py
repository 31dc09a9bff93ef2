"""`python -m ep check`: every registered primitive's samples that carry a NumPy reference, for one
of its combinations, launched on every available device (ep.common.primitive.sample)."""
from __future__ import annotations

import time


class Skipped(Exception):
    """Raised by a check with nothing of ep's to run on that device (said so, not counted as ok)."""


def check_primitive(device: str, factory_type: type) -> str:
    """Launch the samples with a reference of factory_type's first combination (float32 ones
    first) that has them and a primitive on device, asserting each output; the combination checked."""
    from ep.testing import samples

    try:
        combination, chosen = samples.reference_samples(factory_type, (device,))
    except LookupError as reason:
        raise Skipped(str(reason)) from None
    for sample in chosen:
        samples.check(factory_type, device, sample)
    return combination


def run_self_check(device: str | None = None) -> int:
    """Check every registered primitive on every available device (or one); 0 when all pass."""
    from ep.common.runtime.device import available_device_types, cuda_installed
    from ep.testing.samples import registered

    devices = [device] if device else [d.value for d in available_device_types()]
    if device is None and "cuda" not in devices:
        if cuda_installed():
            print("check cuda skipped: no CUDA device here (NUMBA_ENABLE_CUDASIM=1 runs it on the simulator)")
        else:
            print("check cuda skipped: numba-cuda is not installed (pip install 'ep[cuda]' adds it)")
    passed = failed = skipped = 0
    for tag in devices:
        for name, (factory_type, _) in sorted(registered(tag).items()):
            start = time.perf_counter()
            try:
                checked = check_primitive(tag, factory_type)
                status = f"ok ({checked}, {time.perf_counter() - start:.2f} s)"
                passed += 1
            except Skipped as reason:
                status = f"skipped ({reason})"
                skipped += 1
            except Exception as error:  # report every failing primitive, then fail
                status = f"FAILED: {type(error).__name__}: {error} ({time.perf_counter() - start:.2f} s)"
                failed += 1
            print(f"check {tag:4s} {name:28s} {status}")
    print(f"self-check: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
