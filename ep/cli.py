"""The `python -m ep` command line: list the registry, self-check every device, run the benchmarks."""
from __future__ import annotations

import argparse
import json
import sys


def registry_rows(device: str | None = None, primitive: str | None = None) -> list[dict]:
    """One row per registered (primitive, device, op, dtypes) combination; compiles nothing."""
    from ep.common.runtime.device import DeviceType
    from ep.include.primitive.primitive import RegisteredFactories

    rows = []
    for device_type in DeviceType:
        if device not in (None, device_type.value):
            continue
        for factory_type, factory in RegisteredFactories(device_type).items():
            name = factory_type.__name__.removesuffix("Factory")
            if primitive not in (None, name):
                continue
            for op, dtypes in factory.Combinations():
                rows.append(
                    {
                        "primitive": name,
                        "device": device_type.value,
                        "op": None if op is None else op.name,
                        "dtypes": [dtype.value for dtype in dtypes],
                    }
                )
    return rows


def _list(args: argparse.Namespace) -> int:
    rows = registry_rows(args.device, args.primitive)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    header = ("primitive", "device", "op", "dtypes")
    table = [(r["primitive"], r["device"], r["op"] or "-", ",".join(r["dtypes"])) for r in rows]
    widths = [max(len(str(c)) for c in column) for column in zip(header, *table)]
    for line in [header, tuple("-" * w for w in widths), *table]:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())
    print(f"{len(rows)} combinations")
    return 0


def _check(args: argparse.Namespace) -> int:
    from ep.selfcheck import run_self_check

    return run_self_check(args.device)


def _bench(args: argparse.Namespace) -> int:
    from ep.bench import main as bench_main

    return bench_main(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ep", description="ep execution-provider primitives")
    commands = parser.add_subparsers(dest="command", required=True)

    list_parser = commands.add_parser("list", help="print the primitive registry")
    list_parser.add_argument("--device", choices=("cpu", "cuda"))
    list_parser.add_argument("--primitive", help="e.g. Gather, ElementwiseUnary")
    list_parser.add_argument("--json", action="store_true", help="print a JSON list of rows")
    list_parser.set_defaults(run=_list)

    check_parser = commands.add_parser("check", help="launch each primitive family once on each available device")
    check_parser.add_argument("--device", choices=("cpu", "cuda"))
    check_parser.set_defaults(run=_check)

    bench_parser = commands.add_parser("bench", help="time ep against NumPy and PyTorch")
    bench_parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    bench_parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench_parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench_parser.set_defaults(run=_bench)

    args = parser.parse_args(argv)
    return args.run(args)
