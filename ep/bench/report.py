"""The report: derived figures (GB/s, % of copy bandwidth, ratio to the fastest peer), the table,
and the JSON file, which holds the same numbers."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from ep.bench.timing import Timing, half_iqr, relative_spread
from ep.bench.workloads import Workload

EP_IMPLS = ("ep.ops", "ep.Launch", "ep.fuse")


@dataclass
class Result:
    """One contender (impl, with a fresh result or out=) on one workload: a timing, or why there is
    none; alone: a peer's samples in a process of its own (ep.bench.alone)."""

    impl: str
    out: bool
    status: str  # "ok", "not available" or "error"
    reason: str | None = None
    timing: Timing | None = None
    matches_reference: bool | None = None
    alone_s: list[float] | None = None


def workload_record(workload: Workload, nbytes: int, results: list[Result], copy_GBps: float) -> dict:
    """The JSON record of one workload, with every derived figure filled in.

    The ratio to the fastest peer (the peer of least median among those of the same kind: fresh
    result or out=) is the median over rounds of the contender's sample over that peer's sample
    of the same round, +- half the interquartile range of those ratios (in ratio units): the
    contenders were interleaved, so a round's ratio cancels the drift that moves both samples.
    """
    best = {}
    for with_out in (False, True):
        peers = [r for r in results if r.impl not in EP_IMPLS and r.out == with_out and r.timing is not None]
        best[with_out] = min(peers, key=lambda r: r.timing.median_s, default=None)
    rows = []
    for r in results:
        row = {"impl": r.impl, "out": r.out, "status": r.status, "reason": r.reason}
        row["matches_reference"] = r.matches_reference
        peer = best[r.out]
        if r.timing is not None:
            seconds = r.timing.median_s
            rate = None if workload.tiny else nbytes / seconds / 1e9
            ratios = None if peer is None else [a / b for a, b in zip(r.timing.samples_s, peer.timing.samples_s)]
            row.update(
                median_s=seconds,
                min_s=r.timing.min_s,
                spread=r.timing.spread,
                slowest_over_median=r.timing.slowest_over_median,
                samples_s=list(r.timing.samples_s),
                repeats=r.timing.repeats,
                calls_per_sample=r.timing.number,
                GBps=rate,
                pct_copy=None if rate is None else 100 * rate / copy_GBps,
                ratio_to_best_peer=None if ratios is None else statistics.median(ratios),
                ratio_spread=None if ratios is None else half_iqr(ratios),
            )
        if r.alone_s:
            alone = r.alone_s
            row.update(alone_s=alone, alone_median_s=statistics.median(alone), alone_spread=relative_spread(alone))
        rows.append(row)
    return {
        "id": workload.id,
        "title": workload.title,
        "kind": workload.kind,
        "bytes": nbytes,
        "memory_bound": workload.memory_bound,
        "tiny": workload.tiny,
        "best_peer": {("out" if k else "fresh"): None if v is None else v.impl for k, v in best.items()},
        "results": rows,
    }


def cold_start_record(cold: dict) -> dict:
    """C as a workload record, so the table shows it beside the others: `import ep`, then each
    op's first call with a cold cache (it compiles) and a warm one (it loads from disk)."""
    rows = [{"impl": "import ep", "status": "ok", "median_s": cold["import_s"]}]
    for cache in ("cold", "warm"):
        for op, seconds in cold[f"{cache}_s"].items():
            rows.append({"impl": f"{op} first call, {cache} cache", "status": "ok", "median_s": seconds})
            rows.append({"impl": f"{op} first call, {cache} cache, CPU time", "status": "ok", "median_s": cold[f"{cache}_cpu_s"][op]})
    calls = "; ".join(cold["calls"].values())
    return {"id": "C", "title": f"cold start, each in a fresh process; first calls: {calls}", "kind": "cold_start", "results": rows}


def _time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} us"


def _timed(row: dict | None, key: str = "median_s", spread: str = "spread") -> str:
    if row is None or key not in row:
        return "-" if row is None or row["status"] == "ok" else row["status"]
    return f"{_time(row[key])} +-{100 * row.get(spread, 0):.0f}%"


# A ratio whose spread (half the IQR of its rounds' ratios) is more than this part of it is noise:
# the table prints no ratio for it.
NOISY_RATIO = 0.25
# A machine of which this part of the CPUs was busy before the run, or whose timings' median spread
# exceeds NOISY_SPREAD, is busy: the table opens with a warning.
BUSY_LOAD = 0.5
NOISY_SPREAD = 0.2


def _ratio(row: dict | None) -> str:
    if row is None or row.get("ratio_to_best_peer") is None:
        return "-"
    ratio, spread = row["ratio_to_best_peer"], row["ratio_spread"]
    if spread > NOISY_RATIO * ratio:
        return f"noisy (+-{spread:.2f})"
    return f"{ratio:.2f}x +-{spread:.2f}"


def busy_warning(report: dict) -> str | None:
    """The warning the table opens with when the machine was busy or its timings noisy, else None."""
    machine = report["machine"]
    load, cpus = machine.get("load_before"), machine["logical_cpus"]
    spreads = [r["spread"] for w in report["workloads"] if w["kind"] != "cold_start" for r in w["results"] if "spread" in r]
    spread = statistics.median(spreads) if spreads else 0.0
    reasons = []
    if load is not None and load > BUSY_LOAD * cpus:
        reasons.append(f"{load:.1f} of {cpus} CPUs busy before the run")
    if spread > NOISY_SPREAD:
        reasons.append(f"median spread of the timings {100 * spread:.0f}%")
    if not reasons:
        return None
    return f"WARNING: the machine is busy ({'; '.join(reasons)}): the figures below are not trustworthy; run again on a quiet machine"


def _cells(record: dict, impl: str, fresh: dict | None, out: dict | None) -> tuple[str, ...]:
    """One row of the table: impl's fresh-result and out= figures side by side."""
    timed = out if out is not None and "median_s" in out else fresh
    gbps = None if timed is None else timed.get("GBps")
    pct = None if timed is None else timed.get("pct_copy")
    notes = [
        f"{'out=' if row['out'] else 'fresh'} {row['status']}: {row['reason']}"
        for row in (fresh, out)
        if row is not None and row["status"] == "error"
    ]
    if any(row is not None and row.get("matches_reference") is False for row in (fresh, out)):
        notes.append("OUTPUT DIFFERS FROM THE PEERS'")
    tail = None if out is None else out.get("slowest_over_median")
    return (
        record["id"],
        impl,
        _timed(fresh),
        _timed(out),
        _timed(fresh, "alone_median_s", "alone_spread") if impl not in EP_IMPLS else "",
        _timed(out, "alone_median_s", "alone_spread") if impl not in EP_IMPLS else "",
        "-" if gbps is None else f"{gbps:.1f}",
        "-" if pct is None else f"{pct:.0f}%",
        _ratio(fresh),
        _ratio(out),
        "-" if tail is None else f"{tail:.2f}",
        "; ".join(notes)[:80],
    )


def table_rows(record: dict) -> list[tuple[str, ...]]:
    """A workload's rows of the table: one per impl, its fresh and out= contenders side by side."""
    rows: dict[str, dict[bool, dict]] = {}
    for row in record["results"]:
        rows.setdefault(row["impl"], {})[row.get("out", True)] = row
    return [_cells(record, impl, by_out.get(False), by_out.get(True)) for impl, by_out in rows.items()]


def machine_lines(machine: dict) -> list[str]:
    """What the timings depend on: CPU, vector ISA, threads and threading layers, versions."""
    torch = machine.get("torch")
    lines = [
        f"cpu: {machine['cpu']}, vector ISA {machine.get('vector_isa', '?')}, {machine['logical_cpus']} logical CPUs; "
        f"ep kernels vectorized {'512' if machine.get('ep_512_bit_vectors') else 'up to 256'} bits wide",
        f"numba {machine['numba']}: {machine['numba_threads']} threads, threading layer "
        f"{machine.get('threading_layer') or 'not started'}; numpy {machine['numpy']}; python {machine['python']}",
    ]
    for peer, threads in machine.get("alone", {}).items():
        lines.append(f"{peer} alone: " + ", ".join(f"{k} {v}" for k, v in threads.items()))
    if torch:
        lines.append(
            f"torch {torch}: {machine.get('torch_threads')} threads, {machine.get('torch_parallel', '?')}, "
            f"{machine.get('torch_cpu_capability', '?')} kernels"
        )
    return lines


HEADER = (
    "id", "impl", "fresh", "out=", "alone: fresh", "alone: out=", "GB/s", "% copy",
    "vs peers: fresh", "vs peers: out=", "max/med", "note",
)


def table(report: dict) -> str:
    """The report as a text table (Markdown-compatible), preceded by the run's setting."""
    copy = report["copy_bandwidth"]
    warning = busy_warning(report)
    lines = [
        *([warning, ""] if warning else []),
        f"device: {report['device']} ({report['machine']['device_name']}), quick: {report['quick']}",
        *machine_lines(report["machine"]),
        f"copy bandwidth: {copy['GBps']:.1f} GB/s (bytes read + written; "
        + ", ".join(f"{k.removesuffix('_GBps')} {v:.1f}" for k, v in copy.items() if k.endswith("_GBps"))
        + ")",
        "fresh: a new result each call; out=: into a preallocated output. Contenders interleaved in each "
        "round (a pause for the threads to go quiet before each sample); alone: each peer in a process of "
        "its own, in a plain loop. Median of the samples +- half the interquartile range over the median; "
        f"vs peers: the median per-round ratio to the fastest peer of the same column (lower is better; 'noisy' "
        f"where its spread exceeds {100 * NOISY_RATIO:.0f}% of it); GB/s and % copy of "
        "out= (else fresh); max/med: out='s slowest sample over its median",
        "",
    ]
    timed = [r for r in report["workloads"] if r["kind"] != "cold_start"]
    lines += _markdown([HEADER] + [row for record in timed for row in table_rows(record)])
    for record in report["workloads"]:
        if record["kind"] == "cold_start":
            # Each call's wall time and, on the same line, its CPU time.
            times: dict[str, list[str]] = {}
            for r in record["results"]:
                name = r["impl"].removesuffix(", CPU time")
                times.setdefault(name, ["", ""])[name != r["impl"]] = _time(r["median_s"])
            lines += ["", *_markdown([(record["id"], "wall", "CPU")] + [(name, *t) for name, t in times.items()])]
    titles = [f"{r['id']}: {r['title']}" for r in report["workloads"]]
    return "\n".join(lines + ["", *titles])


def _markdown(cells: list[tuple[str, ...]]) -> list[str]:
    """cells (the first row the header) as the lines of a Markdown table."""
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    return lines[:1] + ["|" + "|".join("-" * (w + 2) for w in widths) + "|"] + lines[1:]


def write_json(report: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
