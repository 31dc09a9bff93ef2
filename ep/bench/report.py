"""The report: derived figures (GB/s, % of copy bandwidth, ratio to the fastest peer), the table,
and the JSON file, which holds the same numbers."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from ep.bench.timing import Timing, half_iqr
from ep.bench.workloads import Workload

EP_IMPLS = ("ep.ops", "ep.Launch")


@dataclass
class Result:
    """One contender on one workload: a timing, or why there is none."""

    impl: str
    status: str  # "ok", "not available" or "error"
    reason: str | None = None
    timing: Timing | None = None
    matches_reference: bool | None = None


def workload_record(workload: Workload, nbytes: int, results: list[Result], copy_GBps: float) -> dict:
    """The JSON record of one workload, with every derived figure filled in.

    The ratio to the fastest peer (the peer of least median) is the median over rounds of the
    contender's sample over that peer's sample of the same round, +- half the interquartile range of
    those ratios (in ratio units): the contenders
    were interleaved, so a round's ratio cancels the drift that moves both samples.
    """
    peers = [r for r in results if r.impl not in EP_IMPLS and r.timing is not None]
    best = min(peers, key=lambda r: r.timing.median_s, default=None)
    rows = []
    for r in results:
        row = {"impl": r.impl, "status": r.status, "reason": r.reason, "matches_reference": r.matches_reference}
        if r.timing is not None:
            seconds = r.timing.median_s
            rate = None if workload.tiny else nbytes / seconds / 1e9
            ratios = None if best is None else [a / b for a, b in zip(r.timing.samples_s, best.timing.samples_s)]
            row.update(
                median_s=seconds,
                min_s=r.timing.min_s,
                spread=r.timing.spread,
                samples_s=list(r.timing.samples_s),
                repeats=r.timing.repeats,
                calls_per_sample=r.timing.number,
                GBps=rate,
                pct_copy=None if rate is None else 100 * rate / copy_GBps,
                ratio_to_best_peer=None if ratios is None else statistics.median(ratios),
                ratio_spread=None if ratios is None else half_iqr(ratios),
            )
        rows.append(row)
    return {
        "id": workload.id,
        "title": workload.title,
        "kind": workload.kind,
        "bytes": nbytes,
        "memory_bound": workload.memory_bound,
        "tiny": workload.tiny,
        "best_peer": None if best is None else best.impl,
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


def _cells(record: dict, row: dict) -> tuple[str, ...]:
    if "median_s" not in row:
        note = f"{row['status']}: {row['reason']}"
        return (record["id"], row["impl"], row["status"], "-", "-", "-", "-", note[:70])
    gbps, pct, ratio = row.get("GBps"), row.get("pct_copy"), row.get("ratio_to_best_peer")
    note = "fastest peer" if row["impl"] == record.get("best_peer") else ""
    if row.get("matches_reference") is False:
        note = "OUTPUT DIFFERS FROM THE PEERS'"
    return (
        record["id"],
        row["impl"],
        _time(row["median_s"]),
        f"{100 * row.get('spread', 0):.0f}%",
        "-" if gbps is None else f"{gbps:.1f}",
        "-" if pct is None else f"{pct:.0f}%",
        "-" if ratio is None else f"{ratio:.2f}x +-{row.get('ratio_spread', 0):.2f}",
        note,
    )


def machine_lines(machine: dict) -> list[str]:
    """What the timings depend on: CPU, vector ISA, threads and threading layers, versions."""
    torch = machine.get("torch")
    lines = [
        f"cpu: {machine['cpu']}, vector ISA {machine.get('vector_isa', '?')}, {machine['logical_cpus']} logical CPUs; "
        f"ep kernels vectorized {'512' if machine.get('ep_512_bit_vectors') else 'up to 256'} bits wide",
        f"numba {machine['numba']}: {machine['numba_threads']} threads, threading layer "
        f"{machine.get('threading_layer') or 'not started'}; numpy {machine['numpy']}; python {machine['python']}",
    ]
    if torch:
        lines.append(
            f"torch {torch}: {machine.get('torch_threads')} threads, {machine.get('torch_parallel', '?')}, "
            f"{machine.get('torch_cpu_capability', '?')} kernels"
        )
    return lines


def table(report: dict) -> str:
    """The report as a text table (Markdown-compatible), preceded by the run's setting."""
    copy = report["copy_bandwidth"]
    header = ("id", "impl", "median", "+-", "GB/s", "% copy", "vs fastest peer", "note")
    lines = [
        f"device: {report['device']} ({report['machine']['device_name']}), quick: {report['quick']}",
        *machine_lines(report["machine"]),
        f"copy bandwidth: {copy['GBps']:.1f} GB/s (bytes read + written; "
        + ", ".join(f"{k.removesuffix('_GBps')} {v:.1f}" for k, v in copy.items() if k.endswith("_GBps"))
        + ")",
        "contenders interleaved in each round; median of the rounds, +- half the interquartile range "
        "(of the times, over their median; of the per-round ratios to the fastest peer)",
        "",
    ]
    cells = [header]
    for record in report["workloads"]:
        cells += [_cells(record, row) for row in record["results"]]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    titles = [f"{r['id']}: {r['title']}" for r in report["workloads"]]
    return "\n".join(lines + ["", *titles])


def write_json(report: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
