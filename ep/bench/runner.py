"""`python -m ep bench`: every workload for ep's two contenders and the peers, then the report.

EP_BENCH_ONLY=U1,T-unary,C (workload ids, comma-separated) runs only those workloads.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import dataclass

import numpy as np

from ep.bench import ep_calls, peers
from ep.bench.alone import run_alone
from ep.bench.bandwidth import copy_bandwidth
from ep.bench.cold_start import cold_start
from ep.bench.compare import compare, format_rows
from ep.bench.ep_calls import Unavailable
from ep.bench.progress import Progress
from ep.bench.report import EP_IMPLS, Result, cold_start_record, table, workload_record, write_json
from ep.bench.timing import measure_interleaved
from ep.bench.workloads import Workload, workloads
from ep.common.cpu_target import full_vector_width_in_use

# Outputs of ep and the peers agree within twice the float32 accuracy bound of ep's ops.
_RTOL = _ATOL = 4e-6


@dataclass(frozen=True)
class Settings:
    """How long to measure: rounds (one sample of every contender each), the least time one sample
    takes, cold runs."""

    repeats: int
    min_sample_s: float
    cold_repeats: int


# 9 rounds: the tail (max/med) is the slowest of 9 samples.
FULL = Settings(repeats=9, min_sample_s=0.02, cold_repeats=3)
QUICK = Settings(repeats=3, min_sample_s=0.002, cold_repeats=1)


def main(args: argparse.Namespace) -> int:
    """Run the suite on args.device, print the table, write args.json and draw args.plot (a PNG)
    if given; 0 on success."""
    device, settings = args.device, QUICK if args.quick else FULL
    # The files first: a bad --compare or --json fails now, not after the run.
    try:
        old_reports = [_report(path) for path in args.compare or ()]
        if args.json:
            _check_writable(args.json)
    except ValueError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 2
    if getattr(args, "plot", None):
        from ep.bench.plot import pyplot

        pyplot()  # fails now, not after the run, without matplotlib
    if device == "cuda" and not _have_gpu():
        print("bench: --device cuda needs a GPU (the CUDA simulator's timings mean nothing)", file=sys.stderr)
        return 2
    sync = _cuda_sync if device == "cuda" else _no_sync
    only = {w for w in os.environ.get("EP_BENCH_ONLY", "").split(",") if w}
    suite = workloads(device, args.quick)
    unknown = only - {w.id for w in suite} - {"C"}
    if unknown:
        print(f"bench: EP_BENCH_ONLY names unknown workloads: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    chosen = [w for w in suite if not only or w.id in only]
    with_cold_start = not only or "C" in only
    peer_names = peers.peer_names(device, {w.kind for w in chosen})
    # Two ep contenders (ep.ops and ep.Launch or ep.fuse) and the peers, each fresh and out=.
    impl_count = sum(2 * (2 + len(peers.peer_names(device, {w.kind}))) for w in chosen)
    progress = Progress(total=1 + len(peer_names) + with_cold_start + impl_count)
    # The CPUs other work keeps busy before anything of the bench's runs.
    load_before = busy_cpus()
    alone = {}
    for peer in peer_names:
        # Before ep's pool starts here, though each runs in a process of its own anyway.
        progress.show(f"{peer} alone")
        alone[peer] = run_alone(peer, device, args.quick, [w.id for w in chosen], settings.repeats, settings.min_sample_s)
        progress.advance()
    progress.show("copy bandwidth")
    copy = copy_bandwidth(device, settings.repeats)
    progress.advance()
    records = [_run(workload, device, settings, sync, progress, copy["GBps"], alone) for workload in chosen]
    if with_cold_start:
        progress.show("C cold start")
        records.append(cold_start_record(cold_start(device, settings.cold_repeats)))
        progress.advance()
    progress.close()
    report = {
        "command": "python -m ep " + " ".join(sys.argv[1:]),
        "device": device,
        "quick": bool(args.quick),
        "machine": {
            **_machine(device), "load_before": load_before,
            "alone": {peer: found.get("threads", found) for peer, found in alone.items()},
        },
        "copy_bandwidth": copy,
        "workloads": records,
    }
    print(table(report))
    if args.json:
        write_json(report, args.json)
    if getattr(args, "plot", None):
        from ep.bench.plot import plot

        plot(report, args.plot)
    if old_reports:
        print()
        print(format_rows(compare(old_reports, [report])))
    return 0


def _report(path: str) -> dict:
    """The report `--json` wrote at path; ValueError naming --compare and path for anything else."""
    try:
        with open(path) as file:
            report = json.load(file)
    except (OSError, ValueError) as error:
        raise ValueError(f"--compare {path}: {error}") from None
    if not (isinstance(report, dict) and isinstance(report.get("workloads"), list)):
        raise ValueError(f"--compare {path}: not a report of python -m ep bench --json (no list of workloads)")
    return report


def _check_writable(path: str) -> None:
    """ValueError naming --json and path when the report could not be written there."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ValueError(f"--json {path}: cannot write a file there (a folder, or a folder that is missing or read-only)")


def _run(
    workload: Workload, device: str, settings: Settings, sync, progress: Progress, copy_GBps: float, alone: dict
) -> dict:
    case = workload.build()
    host_out = np.zeros(case.out_shape, case.out_dtype)
    contenders = peers.candidates(workload, device, case.inputs, host_out)
    if device == "cuda":
        from numba import cuda

        ep_inputs = {k: cuda.to_device(v) for k, v in case.inputs.items()}
        ep_out = cuda.device_array(case.out_shape, case.out_dtype)
        fresh = lambda: cuda.device_array(case.out_shape, case.out_dtype)  # noqa: E731
    else:
        ep_inputs, ep_out = case.inputs, host_out
        fresh = lambda: np.empty(case.out_shape, case.out_dtype)  # noqa: E731
    # Peers first: the first one's output is the reference ep's outputs are checked against.
    contenders.update(ep_calls.candidates(workload, device, ep_inputs, ep_out, fresh))
    reference = None
    results, timed = {}, {}
    # Each contender runs once (compiling it) and is checked; then all are timed together.
    for key, fn in contenders.items():
        impl, with_out = key
        name = f"{impl}{' out=' if with_out else ''}"
        progress.show(f"{workload.id} {name}")
        if isinstance(fn, Unavailable):
            results[key] = Result(impl, with_out, "not available", str(fn))
            continue
        # Zeroed before each contender's first run, so none passes the check on another's output.
        if device == "cpu":
            host_out.fill(0)  # shared by every CPU contender
        else:
            ep_out.copy_to_device(host_out)  # host_out stays zero on CUDA: the peers have copies
        try:
            output = _to_host(fn(), sync)
        except Exception as error:  # ep code still being written must not stop the run
            results[key] = Result(impl, with_out, "error", f"{type(error).__name__}: {error}")
            continue
        matches = None if reference is None else _close(output, reference, workload.tolerance)
        if reference is None:
            reference = output
        samples = alone.get(impl, {}).get("timings", {}).get(workload.id, {}).get("out" if with_out else "fresh")
        results[key] = Result(impl, with_out, "ok", matches_reference=matches, alone_s=samples)
        timed[key] = fn
    progress.show(f"{workload.id}: {len(timed)} contenders interleaved")
    timings = measure_interleaved(timed, sync, repeats=settings.repeats, min_sample_s=settings.min_sample_s)
    for key, timing in timings.items():
        results[key].timing = timing
    progress.advance(len(contenders))
    # ep's contenders first, each library's fresh result before its out=.
    order = [(impl, o) for impl in EP_IMPLS for o in (False, True)]
    order += [key for key in results if key[0] not in EP_IMPLS]
    return workload_record(workload, case.bytes, [results[key] for key in order if key in results], copy_GBps)


def _to_host(output, sync) -> np.ndarray:
    sync()
    if isinstance(output, tuple):  # a fused expression's outputs (W2's two)
        return np.stack([_to_host(o, sync) for o in output])
    if hasattr(output, "copy_to_host"):  # numba device array
        return output.copy_to_host()
    if hasattr(output, "detach"):  # torch tensor
        return output.detach().cpu().numpy()
    if hasattr(output, "get") and not isinstance(output, np.ndarray):  # cupy array
        return output.get()
    return np.array(output)


def _close(output: np.ndarray, reference: np.ndarray, tolerance: float | None = None) -> bool:
    if output.shape != reference.shape:
        return False
    if np.issubdtype(reference.dtype, np.floating):
        a, b = output.astype(np.float64), reference.astype(np.float64)
        rtol, atol = (_RTOL, _ATOL) if tolerance is None else (tolerance, tolerance)
        return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(output, reference))


def _no_sync() -> None:
    """CPU contenders finish before they return."""


def _cuda_sync() -> None:
    from numba import cuda

    cuda.synchronize()


def _have_gpu() -> bool:
    from numba import config, cuda

    return not config.ENABLE_CUDASIM and cuda.is_available()


def busy_cpus(seconds: float = 0.5) -> float:
    """How many CPUs were busy over the next `seconds` (Linux's /proc/stat: what runs now, not the
    last minute's load average, which a bench run just before would fill); elsewhere the load
    average."""
    def times() -> list[int]:
        with open("/proc/stat") as f:
            return [int(v) for v in f.readline().split()[1:]]

    try:
        before = times()
        time.sleep(seconds)
        after = times()
    except OSError:
        return os.getloadavg()[0]
    delta = [b - a for a, b in zip(before, after)]
    idle = delta[3] + (delta[4] if len(delta) > 4 else 0)  # idle and iowait
    return (os.cpu_count() or 1) * (1 - idle / max(sum(delta), 1))


def _machine(device: str) -> dict:
    """The run's setting; called after the workloads, when Numba's threading layer has started."""
    import numba

    info = {
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "vector_isa": vector_isa(_cpu_flags()),
        "logical_cpus": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "threading_layer": _threading_layer(),
        "ep_512_bit_vectors": full_vector_width_in_use(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
    }
    try:
        torch = peers.torch_module()
        parallel = torch.__config__.parallel_info()
        backend = next((line.split(":", 1)[1].strip() for line in parallel.splitlines() if "backend" in line), None)
        info.update(
            torch=torch.__version__,
            torch_threads=torch.get_num_threads(),
            torch_parallel=backend,
            torch_cpu_capability=torch.backends.cpu.get_cpu_capability(),
        )
    except Unavailable:
        info["torch"] = None
    if device == "cuda":
        from numba import cuda

        name = cuda.get_current_device().name
        info["device_name"] = name.decode() if isinstance(name, bytes) else name
    else:
        info["device_name"] = info["cpu"]
    return info


def vector_isa(flags: set[str]) -> str:
    """The widest x86 vector ISA in /proc/cpuinfo's flags ("AVX-512", "AVX2", "AVX", "SSE"), with
    FMA and F16C when present; "other" elsewhere (e.g. an Arm CPU)."""
    for name, flag in (("AVX-512", "avx512f"), ("AVX2", "avx2"), ("AVX", "avx"), ("SSE", "sse2")):
        if flag in flags:
            extras = [extra.upper() for extra in ("fma", "f16c") if extra in flags]
            if "avx512_fp16" in flags:
                extras.append("AVX512-FP16")
            return " + ".join([name, *extras])
    return "other"


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _threading_layer() -> str | None:
    """The Numba threading layer in use, or None before any parallel launch."""
    import numba

    try:
        return numba.threading_layer()
    except ValueError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
