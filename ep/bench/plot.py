"""The report drawn: per workload, each library's time per call (fresh result and out=) and the
share of the copy bandwidth it reaches. Needs matplotlib (`pip install -e .[plot]`).

`python -m ep.bench.plot REPORT.json FILE.png` draws a report written by `python -m ep bench --json`.
"""
from __future__ import annotations

import json
import sys

_COLORS = {"ep.ops": "tab:blue", "ep.Launch": "tab:cyan", "numpy": "tab:orange", "torch": "tab:red", "cupy": "tab:green"}


def pyplot():
    """matplotlib.pyplot on the Agg backend; SystemExit saying how to install it if missing."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("bench --plot needs matplotlib: pip install -e '.[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(report: dict, path: str) -> None:
    """Draw report (as written by `python -m ep bench --json`) into path (PNG)."""
    plt = pyplot()
    records = [r for r in report["workloads"] if r["kind"] != "cold_start"][::-1]  # the first on top
    impls = list(dict.fromkeys(row["impl"] for r in records for row in r["results"]))
    figure, (times, shares) = plt.subplots(
        1, 2, sharey=True, figsize=(10, 1.5 + 0.24 * len(records)), gridspec_kw={"width_ratios": [3, 2]}
    )
    step = 0.8 / max(1, len(impls))
    for k, impl in enumerate(impls):
        offset = (k - (len(impls) - 1) / 2) * step
        for with_out, marker in ((False, "o"), (True, "s")):
            ys, seconds, pct = [], [], []
            for y, record in enumerate(records):
                row = next((r for r in record["results"] if r["impl"] == impl and r.get("out", True) == with_out), None)
                if row is not None and "median_s" in row:
                    ys.append(y + offset)
                    seconds.append(row["median_s"])
                    pct.append(row.get("pct_copy"))
            color = _COLORS.get(impl, "gray")
            # Filled: out=; hollow: a fresh result.
            style = dict(marker=marker, s=22, edgecolors=color, facecolors=color if with_out else "none", linewidths=1.2)
            label = f"{impl}{' out=' if with_out else ' fresh'}"
            times.scatter(seconds, ys, label=label, **style)
            kept = [(p, y) for p, y in zip(pct, ys) if p is not None]
            if kept:
                shares.scatter([p for p, _ in kept], [y for _, y in kept], **style)
    times.set_xscale("log")
    times.set_xlabel("time per call (median, log scale)")
    times.xaxis.set_major_formatter(plt.FuncFormatter(_seconds_label))
    shares.set_xlabel("% of the copy bandwidth (bytes read + written)")
    shares.axvline(100, color="gray", linewidth=0.8, linestyle="--")
    times.set_yticks(range(len(records)), [r["id"] for r in records], fontsize=8)
    for axis in (times, shares):
        axis.grid(axis="x", alpha=0.3)
        for y in range(len(records)):
            axis.axhline(y + 0.5, color="lightgray", linewidth=0.5)
        axis.set_ylim(-0.5, len(records) - 0.5)
    machine = report["machine"]
    copy = report["copy_bandwidth"]["GBps"]
    figure.suptitle(f"{machine['device_name']}: copy bandwidth {copy:.1f} GB/s", fontsize=10)
    times.legend(fontsize=7, ncol=4, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=72)
    plt.close(figure)


def _seconds_label(seconds: float, _position=None) -> str:
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if seconds >= scale:
            return f"{seconds / scale:g} {unit}"
    return f"{seconds:g}"


def main(argv: list[str] | None = None) -> int:
    """`python -m ep.bench.plot REPORT.json FILE.png`."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m ep.bench.plot REPORT.json FILE.png", file=sys.stderr)
        return 2
    with open(args[0]) as f:
        plot(json.load(f), args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
