"""`python -m ep bench --quick --json`: it runs, and the JSON has the report's structure.

Timings are never asserted here: only that every figure the table shows is in the JSON.
"""
import json
import os
import subprocess
import sys

import pytest

WORKLOADS = ["G1", "U1", "T-unary"]  # in the suite's order
IMPLS = ["ep.ops", "ep.Launch", "numpy", "torch"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "bench.json"
    env = dict(os.environ, EP_BENCH_ONLY=",".join(WORKLOADS + ["C"]))
    result = subprocess.run(
        [sys.executable, "-m", "ep", "bench", "--quick", "--json", str(path)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(path.read_text()), result.stdout, result.stderr


def test_report_header(report):
    data, _, _ = report
    assert data["device"] == "cpu" and data["quick"] is True
    assert data["command"].startswith("python -m ep bench")
    assert {"cpu", "logical_cpus", "numba_threads", "numpy", "numba", "torch"} <= set(data["machine"])
    copy = data["copy_bandwidth"]
    assert copy["GBps"] > 0 and copy["GBps"] == max(copy["memcpy_GBps"], copy["threaded_GBps"])


def test_every_workload_has_every_contender(report):
    data, _, _ = report
    records = {r["id"]: r for r in data["workloads"]}
    assert list(records) == WORKLOADS + ["C"]
    for workload in WORKLOADS:
        record = records[workload]
        assert {"title", "kind", "bytes", "memory_bound", "tiny", "best_peer"} <= set(record)
        assert [r["impl"] for r in record["results"]] == IMPLS
        for row in record["results"]:
            assert row["status"] in ("ok", "not available", "error")
            if row["status"] != "ok":
                assert row["reason"]
                continue
            assert row["median_s"] > 0 and row["min_s"] <= row["median_s"] and row["repeats"] >= 1
            assert row["ratio_to_best_peer"] > 0
            if record["tiny"]:
                assert row["GBps"] is None and row["pct_copy"] is None
            else:
                assert row["GBps"] > 0 and row["pct_copy"] > 0
            if row["impl"].startswith("ep.") and row["matches_reference"] is not None:
                assert row["matches_reference"], f"{workload} {row['impl']} output differs from the peers'"


def test_unary_relu_runs_on_both_ep_contenders(report):
    data, _, _ = report
    u1 = next(r for r in data["workloads"] if r["id"] == "U1")
    assert [r["status"] for r in u1["results"][:2]] == ["ok", "ok"]


def test_cold_start(report):
    data, _, _ = report
    cold = next(r for r in data["workloads"] if r["id"] == "C")
    ops = ["unary", "binary", "gather", "expand"]
    expected = ["import ep"] + [f"{op} first call, {cache} cache" for cache in ("cold", "warm") for op in ops]
    assert [r["impl"] for r in cold["results"]] == expected
    assert all(r["median_s"] > 0 for r in cold["results"])


def test_table_and_progress(report):
    _, stdout, stderr = report
    assert "| U1 " in stdout and "% copy" in stdout and "vs fastest peer" in stdout
    assert "] " in stderr and "U1 ep.ops" in stderr


def test_compare_divides_new_by_old_per_contender(report, tmp_path):
    from ep.bench.compare import compare

    data, _, _ = report
    slower = json.loads(json.dumps(data))
    for record in slower["workloads"]:
        for row in record["results"]:
            if "median_s" in row:
                row["median_s"] *= 2
    rows = compare([data], [slower])
    assert rows and all(abs(ratio - 2) < 1e-12 and spread == 0 for *_, ratio, spread in rows)
    assert {impl for _, impl, *_ in rows} <= {"ep.ops", "ep.Launch"}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    result = subprocess.run(
        [sys.executable, "-m", "ep.bench.compare", "--old", str(old), "--new", str(old)], capture_output=True, text=True
    )
    assert result.returncode == 0 and "| 1.00x |" in result.stdout
