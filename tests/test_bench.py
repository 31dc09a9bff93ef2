"""`python -m ep bench --quick --json`: it runs, and the JSON has the report's structure.

Timings are never asserted here: only that every figure the table shows is in the JSON.
"""
import collections
import json
import os
import statistics
import subprocess
import sys

import pytest

from ep.bench import timing
from ep.bench.runner import vector_isa
from ep.bench.timing import half_iqr, measure_interleaved, relative_spread, round_orders, settle

WORKLOADS = ["relu-16", "relu-1MiB"]  # in the suite's order
# Each library with a fresh result, then with out=.
IMPLS = [(impl, out) for impl in ("ep.ops", "ep.Launch", "numpy", "torch") for out in (False, True)]


def _run_bench(directory):
    path = directory / "bench.json"
    env = dict(os.environ, EP_BENCH_ONLY=",".join(WORKLOADS + ["C"]))
    result = subprocess.run(
        [sys.executable, "-m", "ep", "bench", "--quick", "--json", str(path)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(path.read_text()), result.stdout, result.stderr


@pytest.fixture(scope="module")
def report(once_per_run):
    # One benchmark run for the whole test run, whichever workers run these tests.
    return tuple(once_per_run("bench", _run_bench))


def test_report_header(report):
    data, _, _ = report
    assert data["device"] == "cpu" and data["quick"] is True
    assert data["command"].startswith("python -m ep bench")
    machine = data["machine"]
    assert {"cpu", "vector_isa", "logical_cpus", "numba_threads", "threading_layer", "numpy", "numba", "torch"} <= set(machine)
    # The workloads ran parallel kernels, so the threading layer has started.
    assert machine["threading_layer"] in ("tbb", "omp", "workqueue")
    if machine["torch"]:
        assert machine["torch_threads"] >= 1 and machine["torch_cpu_capability"]
    copy = data["copy_bandwidth"]
    assert copy["GBps"] > 0 and copy["GBps"] == max(copy["memcpy_GBps"], copy["threaded_GBps"])
    # Each peer alone ran in a process of its own, whose threads are reported.
    assert machine["alone"]["numpy"]["os_threads"] >= 1
    assert all(threads["numba_pool"] == "not started" for threads in machine["alone"].values())
    if machine["torch"]:
        assert machine["alone"]["torch"]["torch_threads"] == machine["torch_threads"]


def test_every_workload_has_every_contender(report):
    data, _, _ = report
    records = {r["id"]: r for r in data["workloads"]}
    assert list(records) == WORKLOADS + ["C"]
    for workload in WORKLOADS:
        record = records[workload]
        assert {"title", "kind", "bytes", "memory_bound", "tiny", "best_peer"} <= set(record)
        assert [(r["impl"], r["out"]) for r in record["results"]] == IMPLS
        for row in record["results"]:
            assert row["status"] in ("ok", "not available", "error")
            if row["status"] != "ok":
                assert row["reason"]
                continue
            assert row["median_s"] > 0 and row["min_s"] <= row["median_s"] and row["repeats"] >= 1
            assert row["slowest_over_median"] == pytest.approx(max(row["samples_s"]) / row["median_s"])
            if not row["impl"].startswith("ep."):
                assert row["alone_median_s"] == statistics.median(row["alone_s"])
            assert len(row["samples_s"]) == row["repeats"] and row["median_s"] == statistics.median(row["samples_s"])
            assert row["spread"] >= 0 and row["ratio_to_best_peer"] > 0 and row["ratio_spread"] >= 0
            # Per round: the contender's sample over the same column's fastest peer's sample.
            column = "out" if row["out"] else "fresh"
            best = next(r for r in record["results"] if (r["impl"], r["out"]) == (record["best_peer"][column], row["out"]))
            ratios = [a / b for a, b in zip(row["samples_s"], best["samples_s"])]
            assert row["ratio_to_best_peer"] == pytest.approx(statistics.median(ratios))
            assert row["ratio_spread"] == pytest.approx(half_iqr(ratios))
            if row is best:
                assert row["ratio_to_best_peer"] == 1 and row["ratio_spread"] == 0
            if record["tiny"]:
                assert row["GBps"] is None and row["pct_copy"] is None
            else:
                assert row["GBps"] > 0 and row["pct_copy"] > 0
            if row["impl"].startswith("ep.") and row["matches_reference"] is not None:
                assert row["matches_reference"], f"{workload} {row['impl']} output differs from the peers'"


def test_unary_relu_runs_on_both_ep_contenders(report):
    data, _, _ = report
    u1 = next(r for r in data["workloads"] if r["id"] == "relu-1MiB")
    assert [r["status"] for r in u1["results"][:4]] == ["ok"] * 4


def test_cold_start(report):
    data, _, _ = report
    cold = next(r for r in data["workloads"] if r["id"] == "C")
    ops = ["unary", "binary", "gather", "expand", "expand after a small one"]
    expected = ["import ep"] + [
        f"{op} first call, {cache} cache{clock}" for cache in ("cold", "warm") for op in ops for clock in ("", ", CPU time")
    ]
    assert [r["impl"] for r in cold["results"]] == expected
    assert all(r["median_s"] > 0 for r in cold["results"])


def test_table_and_progress(report):
    _, stdout, stderr = report
    assert "| relu-1MiB " in stdout and "% copy" in stdout and "vs peers: out=" in stdout and "alone: fresh" in stdout
    assert "vector ISA" in stdout and "threading layer" in stdout and "interleaved" in stdout
    assert "] " in stderr and "relu-1MiB ep.ops out=" in stderr and "torch alone" in stderr


def test_compare_divides_new_by_old_per_contender(report, tmp_path):
    from ep.bench.compare import compare

    data, _, _ = report
    slower = json.loads(json.dumps(data))
    for record in slower["workloads"]:
        for row in record["results"]:
            if "median_s" in row:
                row["median_s"] *= 2
    rows = compare([data], [slower])
    assert rows and all(abs(ratio - 2) < 1e-12 for *_, ratio, _ in rows)
    assert {impl for _, impl, *_ in rows} == {"ep.ops", "ep.Launch", "ep.ops out=", "ep.Launch out="}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    result = subprocess.run(
        [sys.executable, "-m", "ep.bench.compare", "--old", str(old), "--new", str(old)], capture_output=True, text=True
    )
    assert result.returncode == 0 and "| 1.00x |" in result.stdout


def test_compare_spread_from_pairs_or_from_the_samples(report):
    from ep.bench.compare import compare

    data, _, _ = report
    rows = {(r[0], r[1]): r for r in compare([data], [data])}
    u1 = next(r for r in data["workloads"] if r["id"] == "relu-1MiB")
    launch = next(r for r in u1["results"] if r["impl"] == "ep.Launch" and r["out"])
    # One pair: the two sides' relative spreads added.
    assert rows["relu-1MiB", "ep.Launch out="][-1] == pytest.approx(2 * launch["spread"])
    # Two pairs: half the range of the pairwise ratios (here 1 and 3).
    slower = json.loads(json.dumps(data))
    for record in slower["workloads"]:
        for row in record["results"]:
            if "median_s" in row:
                row["median_s"] *= 3
    rows = compare([data, data], [data, slower])
    assert rows and all(ratio == pytest.approx(2) and spread == pytest.approx(1) for *_, ratio, spread in rows)


def test_bench_compare_option_prints_new_over_old(report, tmp_path):
    data, _, _ = report
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    env = dict(os.environ, EP_BENCH_ONLY="relu-16")
    result = subprocess.run(
        [sys.executable, "-m", "ep", "bench", "--quick", "--compare", str(old)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "| new/old |" in result.stdout
    assert "| relu-16 | ep.ops |" in result.stdout and "| relu-16 | ep.Launch out= |" in result.stdout


@pytest.mark.parametrize("option, content, message", [
    ("--compare", None, r"--compare .*missing.json: \[Errno 2\]"),
    ("--compare", "garbage", r"--compare .*bad.json: Expecting value"),
    ("--compare", '{"a": 1}', r"--compare .*bad.json: not a report"),
    ("--json", None, r"--json .*no_folder/x.json: cannot write a file there"),
])
def test_bench_refuses_a_bad_report_file_before_it_runs(tmp_path, option, content, message):
    # Checked first: a full run's results were lost to a traceback at its end.
    import re

    path = tmp_path / ("bad.json" if content else "missing.json" if option == "--compare" else "no_folder/x.json")
    if content:
        path.write_text(content)
    result = subprocess.run([sys.executable, "-m", "ep", "bench", "--quick", option, str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and re.search(message, result.stderr), result.stderr[-2000:]
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_interleaved_rounds_take_their_orders_in_turn():
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    timings = measure_interleaved(fns, lambda: None, repeats=3, min_sample_s=0)
    # One calibration call and one calibration sample each (min_sample_s=0 needs one call),
    # confirmed by a second, then rounds in round_orders(3)'s orders: starting at a, b, c in turn;
    # each sample after an untimed call.
    assert calls == ["a"] * 5 + ["b"] * 5 + ["c"] * 5 + [x for x in "abcbcacab" for _ in range(2)]
    assert all(t.repeats == 3 and t.number == 1 and len(t.samples_s) == 3 for t in timings.values())
    # A workload with no contender available times nothing.
    assert measure_interleaved({}, lambda: None, repeats=3, min_sample_s=0) == {}


@pytest.mark.parametrize("n", range(1, 8))
def test_round_orders_balance_positions_and_predecessors(n):
    orders = round_orders(n)
    assert all(sorted(order) == list(range(n)) for order in orders)
    positions = collections.Counter((x, i) for order in orders for i, x in enumerate(order))
    predecessors = collections.Counter((a, b) for order in orders for a, b in zip(order, order[1:]))
    assert len(positions) == n * n and len(set(positions.values())) == 1
    assert len(predecessors) == n * (n - 1) and len(set(predecessors.values())) <= 1


class _Clock:
    """time as settle sees it: the process's threads keep one CPU busy until busy_until (s)."""

    def __init__(self, busy_until: float) -> None:
        self.now = self.cpu = 0.0
        self.busy_until = busy_until

    def perf_counter(self) -> float:
        return self.now

    def process_time(self) -> float:
        return self.cpu

    def sleep(self, seconds: float) -> None:
        self.cpu += max(0.0, min(self.now + seconds, self.busy_until) - self.now)
        self.now += seconds


def test_settle_waits_until_the_process_threads_go_quiet(monkeypatch):
    # The process's threads busy for 0.1 s, as a thread pool's workers spin after their work; a
    # simulated clock, so that the machine's load cannot change what the test sees.
    clock = _Clock(busy_until=0.1)
    monkeypatch.setattr(timing, "time", clock)
    assert settle() >= 0.1
    # Once quiet, a sample waits a window or so, not the whole limit.
    assert settle() < 0.15
    # Threads that never go quiet: it gives up at its limit.
    clock.busy_until = float("inf")
    assert 0.2 <= settle() < 0.25


def test_relative_spread_is_half_the_interquartile_range_over_the_median():
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    assert relative_spread(values) == pytest.approx((q3 - q1) / 2 / median)
    assert relative_spread([7.0]) == 0


@pytest.mark.parametrize(
    "flags, expected",
    [
        ({"sse2", "avx", "avx2", "fma", "f16c", "avx512f"}, "AVX-512 + FMA + F16C"),
        ({"sse2", "avx", "avx2", "fma"}, "AVX2 + FMA"),
        ({"sse2"}, "SSE"),
        ({"asimd", "fp"}, "other"),
    ],
)
def test_vector_isa_names_the_widest(flags, expected):
    assert vector_isa(flags) == expected


def test_plot_draws_the_report(report, tmp_path):
    pytest.importorskip("matplotlib")
    from ep.bench.plot import main

    data, _, _ = report
    source, path = tmp_path / "bench.json", tmp_path / "bench.png"
    source.write_text(json.dumps(data))
    assert main([str(source), str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install_it(monkeypatch):
    from ep.bench.plot import pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(SystemExit, match=r"pip install -e '\.\[plot\]'"):
        pyplot()


def test_after_times_each_call_right_after_each_other():
    from ep.bench.after import after

    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "ab"}
    seconds = after(fns, rounds=3)
    assert sorted(seconds) == [("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")]
    assert all(len(values) == 3 for values in seconds.values())
    # Each timed call right after its pair's first: the calls come in pairs (previous, timed).
    pairs = list(zip(calls[::2], calls[1::2]))
    assert sorted(set(pairs)) == sorted(seconds) and len(pairs) == 12


def test_quick_has_this_rounds_ops_at_1_MiB_without_torch_compile():
    from ep.bench import peers
    from ep.bench.workloads import round_26_28, workloads

    quick = {w.id: w for w in workloads("cpu", quick=True)}
    full = {w.id for w in workloads("cpu", quick=False)}
    for op in ("permute2d", "permute3d", "permute4d", "pad", "where", "full", "add_n", "one_hot", "cast", "W1", "W2", "W3"):
        assert f"{op}-1MiB" in quick
    assert {"permute2d-64MiB", "softmax-4096x4096", "matmul-1024", "bmm-4096x64", "W3-64MiB"} <= full
    # --quick: no 64 MiB case of this round, and the output of each under 4 MiB.
    for w in round_26_28(quick=True):
        case = w.build()
        assert case.bytes < 8 << 20, w.id
    # The fused expressions alone get numexpr and torch.compile; --quick leaves torch.compile out.
    assert peers.peer_names("cpu", {"unary"}) == ("numpy", "torch")
    assert peers.peer_names("cpu", {"fused"}) == ("numpy", "torch", "numexpr", "torch.compile")
    w1 = quick["W1-1MiB"]
    made = peers.candidates(w1, "cpu", w1.build().inputs, None, names=("torch.compile",))
    assert "left out by --quick" in str(made["torch.compile", False])


def test_a_busy_machine_is_said_and_noisy_ratios_are_not_printed(report):
    # The warning from the load before the run or the timings' spread, and no ratio whose spread
    # exceeds NOISY_RATIO of it: computed from the report's own figures.
    import copy

    from ep.bench import report as report_module

    quiet = copy.deepcopy(report[0])
    assert "load_before" in quiet["machine"]
    quiet["machine"]["load_before"] = 0.0
    for workload in quiet["workloads"]:
        for row in workload["results"]:
            if "spread" in row:
                row["spread"] = 0.01
    assert report_module.busy_warning(quiet) is None
    busy = copy.deepcopy(quiet)
    busy["machine"]["load_before"] = 3.0 * busy["machine"]["logical_cpus"]
    warning = report_module.busy_warning(busy)
    cpus = busy["machine"]["logical_cpus"]
    assert warning.startswith(f"WARNING: the machine is busy ({3.0 * cpus:.1f} of {cpus} CPUs busy before the run")
    assert report_module.table(busy).startswith(warning)
    row = {"ratio_to_best_peer": 1.2, "ratio_spread": 0.5}
    assert report_module._ratio(row) == "noisy (+-0.50)"
    assert report_module._ratio({"ratio_to_best_peer": 1.2, "ratio_spread": 0.1}) == "1.20x +-0.10"
