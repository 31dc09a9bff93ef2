"""The `python -m ep` command line: list the registry, self-check every device, run the benchmarks."""
from __future__ import annotations

import argparse
import json
import os
import sys


def registry_rows(device: str | None = None, primitive: str | None = None, op: str | None = None) -> list[dict]:
    """One row per registered (primitive, device, op, dtypes) combination; compiles nothing.

    op matches an op's OneFlow name or value ("kRelu" or "relu").
    """
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
            for each_op, dtypes in factory.Combinations():
                if op is not None and (each_op is None or op not in (each_op.name, each_op.value)):
                    continue
                rows.append(
                    {
                        "primitive": name,
                        "device": device_type.value,
                        "op": None if each_op is None else each_op.name,
                        "dtypes": [dtype.value for dtype in dtypes],
                    }
                )
    return rows


def _print_table(header: tuple[str, ...], table: list[tuple]) -> None:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *table)]
    for line in [header, tuple("-" * w for w in widths), *table]:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip())


def _summary(rows: list[dict]) -> list[tuple]:
    """One line per (primitive, device): how many combinations, ops and dtypes."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["primitive"], row["device"]), []).append(row)
    table = []
    for (primitive, device), group in groups.items():
        ops = {r["op"] for r in group if r["op"]}
        dtypes = sorted({d for r in group for d in r["dtypes"]})
        table.append((primitive, device, len(group), len(ops) or "-", ",".join(dtypes)))
    return table


def _list(args: argparse.Namespace) -> int:
    everything = registry_rows()
    primitives = sorted({r["primitive"] for r in everything})
    if args.primitive is not None and args.primitive not in primitives:
        print(f"ep list: --primitive {args.primitive!r} is not a primitive; expected one of {', '.join(primitives)}", file=sys.stderr)
        return 2
    if args.op is not None and not registry_rows(op=args.op):
        ops = sorted({r["op"] for r in everything if r["op"]})
        print(f"ep list: --op {args.op!r} is not an op; expected one of {', '.join(ops)}", file=sys.stderr)
        return 2
    rows = registry_rows(args.device, args.primitive, args.op)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    elif args.all or args.primitive or args.op:
        _print_table(("primitive", "device", "op", "dtypes"), [(r["primitive"], r["device"], r["op"] or "-", ",".join(r["dtypes"])) for r in rows])
        print(f"{len(rows)} combinations")
    else:
        _print_table(("primitive", "device", "combinations", "ops", "dtypes"), _summary(rows))
        print(f"{len(rows)} combinations; `python -m ep list --all` lists each, --primitive/--op/--device filter")
    return 0


def _check(args: argparse.Namespace) -> int:
    from ep.selfcheck import run_self_check

    return run_self_check(args.device)


def _bench(args: argparse.Namespace) -> int:
    if args.distributed:
        from ep.bench.distributed import main as distributed_main

        return distributed_main(args)
    from ep.bench import main as bench_main

    return bench_main(args)


def main(argv: list[str] | None = None) -> int:
    from ep import __version__

    parser = argparse.ArgumentParser(prog="python -m ep", description="ep execution-provider primitives")
    parser.add_argument("--version", action="version", version=f"ep {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    list_parser = commands.add_parser("list", help="summarize the primitive registry (--all: every combination)")
    list_parser.add_argument("--device", choices=("cpu", "cuda"))
    list_parser.add_argument("--primitive", help="e.g. Gather, ElementwiseUnary")
    list_parser.add_argument("--op", help="e.g. relu or kRelu")
    list_parser.add_argument("--all", action="store_true", help="print every combination, not the summary")
    list_parser.add_argument("--json", action="store_true", help="print a JSON list of rows")
    list_parser.set_defaults(run=_list)

    check_parser = commands.add_parser("check", help="launch each primitive family once on each available device")
    check_parser.add_argument("--device", choices=("cpu", "cuda"))
    check_parser.set_defaults(run=_check)

    bench_parser = commands.add_parser("bench", help="time ep against NumPy and PyTorch")
    bench_parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    bench_parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench_parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench_parser.add_argument("--compare", nargs="+", metavar="OLD_JSON", help="print this run's time over these reports'")
    bench_parser.add_argument("--distributed", action="store_true", help="under mpiexec: boxing against raw MPI collectives")
    bench_parser.set_defaults(run=_bench)

    args = parser.parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (head, less) closed the pipe: stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code
