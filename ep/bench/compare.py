"""New against old: each workload's median time in new reports over old ones, with the spread.

`python -m ep.bench.compare --old A.json C.json --new B.json D.json` reads reports written by
`python -m ep bench --json`, ideally taken alternately (old, new, old, new) so that the machine's
drift hits both sides alike; `python -m ep bench --compare OLD.json` compares a fresh run.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

from ep.bench.report import EP_IMPLS


def _rows(reports: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """(workload id, impl, with " out=" when it wrote into out) -> its timed row in each report,
    for ep's contenders."""
    found: dict[tuple[str, str], list[dict]] = {}
    for report in reports:
        for record in report["workloads"]:
            for row in record["results"]:
                if row["impl"] in EP_IMPLS and "median_s" in row:
                    impl = row["impl"] + (" out=" if row.get("out", True) else "")
                    found.setdefault((record["id"], impl), []).append(row)
    return found


def compare(old: list[dict], new: list[dict]) -> list[tuple[str, str, float, float, float, float]]:
    """(id, impl, old median, new median, new/old, spread) per contender in both.

    With several report pairs (taken old, new, old, new) the spread is half the range of the
    pairwise ratios new[i] / old[i]; with one pair, new/old times the sum of both sides' relative
    spreads (half the interquartile range of each side's samples over its median).
    """
    old_rows, new_rows = _rows(old), _rows(new)
    rows = []
    for key, before in old_rows.items():
        after = new_rows.get(key)
        if not after:
            continue
        b = statistics.median(row["median_s"] for row in before)
        a = statistics.median(row["median_s"] for row in after)
        ratios = [n["median_s"] / o["median_s"] for n, o in zip(after, before)]
        if len(ratios) > 1:
            spread = (max(ratios) - min(ratios)) / 2
        else:
            spread = a / b * (before[0].get("spread", 0.0) + after[0].get("spread", 0.0))
        rows.append((*key, b, a, a / b, spread))
    return rows


def format_rows(rows) -> str:
    lines = ["| id | impl | old median | new median | new/old | +- |", "|---|---|---|---|---|---|"]
    for id_, impl, before, after, ratio, spread in rows:
        lines.append(f"| {id_} | {impl} | {before * 1e6:.2f} us | {after * 1e6:.2f} us | {ratio:.2f}x | {spread:.2f} |")
    return "\n".join(lines)


def _load(paths: list[str]) -> list[dict]:
    reports = []
    for path in paths:
        with open(path) as f:
            reports.append(json.load(f))
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ep.bench.compare", description=__doc__.splitlines()[0])
    parser.add_argument("--old", nargs="+", required=True, metavar="JSON")
    parser.add_argument("--new", nargs="+", required=True, metavar="JSON")
    args = parser.parse_args(argv)
    print(format_rows(compare(_load(args.old), _load(args.new))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
