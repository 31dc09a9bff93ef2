"""Cases that would crash the process if a check slipped: run in one subprocess by test_crash_cases.

main() prints one JSON object: per case, the error it raised (or none) and whether the outputs
and inputs stayed unchanged.
"""
from __future__ import annotations

import json

import numpy as np

from guards import digest
from launch_specs import INT64_MAX, INT64_MIN, SPECS, launch


class _BadInterface:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def _cases(device: str):
    """(label, spec name, the parameter changed, the launch's arguments changed) of every case."""
    for name, spec in SPECS.items():
        counts = [p for p, kind in spec.kinds.items() if kind == "count"]
        for param in counts:
            for value in (1 << 62, INT64_MAX):
                yield f"{param}={value}", name, {param: value}
        if len(counts) >= 2:
            # Sizes that each fit int64 but whose product does not.
            yield "sizes whose product overflows", name, {p: 1 << 40 for p in counts}
        for param, kind in spec.kinds.items():
            if kind == "offset":
                for value in (INT64_MIN, INT64_MAX, INT64_MAX - 1):
                    yield f"{param}={value}", name, {param: value}
            if kind == "dims":
                yield f"{param} of 2**62", name, {param: "huge"}
            if kind in ("in", "out") and device != "cpu":
                for label, interface in (
                    ("a null pointer", {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3, "strides": None}),
                    ("no data", {"shape": (4,), "typestr": "<f4", "version": 3}),
                    ("not a dict", 17),
                ):
                    yield f"{param}: __cuda_array_interface__ with {label}", name, {param: _BadInterface(interface)}


def run(device: str) -> list[dict]:
    results = []
    for label, name, changes in _cases(device):
        spec = SPECS[name]
        call = spec.build(device, (2,) * spec.arity, 0)
        for param, value in changes.items():
            call.args[param] = (1 << 62,) + tuple(call.args[param])[1:] if value == "huge" else value
        inputs = {key: digest(arg) for key, arg in call.args.items() if key not in call.outputs}
        error = None
        try:
            launch(spec.primitive(device), call)
        except Exception as caught:  # every error is reported; the test judges it
            error = [type(caught).__name__, str(caught)]
        unchanged = all(np.array_equal(g.bytes(), g.before) for g in call.outputs.values())
        same_inputs = {key: digest(arg) for key, arg in call.args.items() if key not in call.outputs} == inputs
        results.append(
            {"device": device, "case": label, "primitive": name, "params": list(call.args), "changed": list(changes),
             "error": error, "outputs_unchanged": unchanged, "inputs_unchanged": same_inputs,
             "guards_ok": all(_guards_ok(g) for g in call.outputs.values())}
        )
    return results


def _guards_ok(guarded) -> bool:
    try:
        guarded.check_guards()
    except AssertionError:
        return False
    return True


def main(devices) -> None:
    print(json.dumps({"results": [r for device in devices for r in run(device)]}))
