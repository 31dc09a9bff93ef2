"""Launches that could crash the process if a check slipped (sizes near int64's limits, products that
overflow, offsets at its extremes, malformed __cuda_array_interface__), all in one subprocess."""
import functools
import os


from guards import names_argument, run_batch

HERE = os.path.dirname(os.path.abspath(__file__))
ERRORS = {"TypeError", "ValueError", "IndexError", "IndexOutOfRange"}


@functools.cache
def _batch(devices: tuple[str, ...]) -> list[dict]:
    # Its modules and the tests' shared ones (dtype_lists) on the batch's path.
    paths = [HERE, os.path.dirname(HERE)]
    code = f"import sys; sys.path[:0] = {paths!r}; import crash_batch; crash_batch.main({devices!r})"
    return run_batch(code)["results"]


def test_every_crash_case_raises_a_named_error_and_writes_nothing(request):
    from ep.testing.plugin import selected_devices

    devices = tuple(d for d in selected_devices(request.config) if isinstance(d, str))
    results = _batch(devices)
    assert results
    problems = []
    for r in results:
        where = f"{r['device']} {r['primitive']} {r['case']}"
        if not r["inputs_unchanged"] or not r["guards_ok"]:
            problems.append(f"{where}: wrote outside its output or changed an input")
        if r["error"] is None:
            # Offsets at int64's extremes are legal: the launch selects no row and must not write outside.
            if not r["case"].startswith("offset="):
                problems.append(f"{where}: no error")
            continue
        kind, message = r["error"]
        if kind not in ERRORS:
            problems.append(f"{where}: {kind}: {message}")
        elif not any(names_argument(message, p) for p in r["params"]):
            problems.append(f"{where}: {message!r} names no argument")
        elif not r["outputs_unchanged"] and not (kind == "IndexOutOfRange" and r["device"] == "cuda"):
            # CUDA does not wait for the bounds check: Sync raises a bad index after the launch ran.
            problems.append(f"{where}: raised after writing")
    assert not problems, "\n".join(problems)
