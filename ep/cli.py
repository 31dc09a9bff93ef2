"""The `python -m ep` command line: list the registry, describe a name, self-check every device,
warm the compile cache, run the benchmarks."""
from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import sys
from typing import Callable

from ep.common.runtime.names import did_you_mean
from ep.include.primitive.primitive import registry_rows


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


@functools.cache
def _registry_names() -> dict[str, dict[str, str]]:
    """Per kind of name the command line takes, each accepted spelling -> the registry's name:
    devices, primitives, dtypes, and ops (OneFlow's names, their values and ep.ops' aliases)."""
    from ep import BinaryOp, DataType, DeviceType, UnaryOp

    rows = registry_rows()
    listed = {r["op"] for r in rows if r["op"]}
    ops = {}
    for enum_type in (UnaryOp, BinaryOp):
        spellings = [(op.value, op) for op in enum_type] + [(op.name, op) for op in enum_type] + list(enum_type.aliases())
        ops.update((spelling, op.name) for spelling, op in spellings if op.name in listed)
    return {
        "device": {d.value: d.value for d in DeviceType},
        "primitive": {name: name for name in sorted({r["primitive"] for r in rows})},
        "op": ops,
        "dtype": {d.value: d.value for d in DataType},
    }


def _name(kind: str, what: str, example: str | None = None) -> Callable[[str], str]:
    """An argparse type: the registry's name for value, a name of kind ("device", "primitive",
    "op", "dtype"); else an error saying it is not what, with the closest names, or every name
    (example, when given, instead of a long list)."""

    def parse(value: str) -> str:
        names = _registry_names()[kind]
        if value in names:
            return names[value]
        # An op in any case, where that names one op (as ep.ops.unary("Relu") takes it).
        folded = {names[n] for n in names if n.lower() == value.lower()}
        if kind == "op" and len(folded) == 1:
            return folded.pop()
        valid = list(names)
        every = f"one of {', '.join(valid)}" if example is None else f"{example} (`python -m ep list --all` lists them)"
        raise argparse.ArgumentTypeError(f"{value!r} is not {what}; {_elsewhere(kind, value) or did_you_mean(value, valid) or 'expected ' + every}")

    parse.__name__ = kind  # argparse names the type in its own errors
    return parse


# What a newcomer may call a device: CUDA's GPUs.
_DEVICE_WORDS = {"gpu": "cuda", "nvidia": "cuda", "host": "cpu"}


def _elsewhere(kind: str, value: str) -> str | None:
    """Where value is a name of another kind: an op that is a primitive (--op softmax), a device by
    another word (gpu)."""
    if kind == "device" and value.lower() in _DEVICE_WORDS:
        return f"did you mean {_DEVICE_WORDS[value.lower()]!r}?"
    if kind == "op":
        for primitive in _registry_names()["primitive"]:
            if primitive.lower() == value.lower().replace("_", ""):
                import ep.ops

                runs = f" (ep.ops.{value.lower()} runs it)" if hasattr(ep.ops, value.lower()) else ""
                return f"it is a primitive: --primitive {primitive}{runs}"
    return None


def _list(args: argparse.Namespace) -> int:
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
        print()
        _print_table(("ep.ops on global tensors", "how"), _global_ops())
    return 0


def _global_ops() -> list[tuple[str, str]]:
    """Each ep.ops function that takes global tensors (ep.fuse too): by its SBP signatures, or,
    declared without them, boxed to broadcast."""
    import ep.ops
    from ep.sbp.signature import declared

    from ep.ops import composite

    names = [n for n in ep.ops.__all__ if "sbp" in inspect.signature(getattr(ep.ops, n)).parameters] + ["fuse"]
    rules = {n: declared(n) for n in names}
    # full takes no tensors: its rules only make a rank's zeros.
    listed = [(n, "SBP signatures" if r else "boxed to broadcast, run, kept broadcast (no SBP signatures)") for n, r in rules.items() if r is None or r.plan]
    return listed + [(n, "ep.fuse's SBP signatures (one fused expression)") for n in composite.__all__]


def _devices(command: str, device: str | None) -> list[str]:
    """The devices command runs on: device, or every one available here; exit 2 with one message
    when device is not available here."""
    from ep.common.runtime.device import available_device_types

    available = [d.value for d in available_device_types()]
    if device is not None and device not in available:
        print(f"ep {command}: --device {device!r} is not available here; expected one of {', '.join(available)}", file=sys.stderr)
        raise SystemExit(2)
    return [device] if device else available


def _check(args: argparse.Namespace) -> int:
    from ep.selfcheck import run_self_check

    _devices("check", args.device)  # one message, not one failure per family
    return run_self_check(args.device)


def _warmup(args: argparse.Namespace) -> int:
    from ep.warmup import chosen_rows, warm

    rows = chosen_rows(_devices("warmup", args.device), args.ops, args.dtypes, args.primitives)
    if not rows:
        print("ep warmup: no registered combination matches these --ops, --dtypes and --primitives", file=sys.stderr)
        return 2
    return warm(rows)


def describe(name: str) -> str:
    """What name is, by any name ep takes: an ep.ops function (its docstring's first paragraph), a
    primitive or its factory (New and Launch), or an elementwise op (ep.ops.describe); ValueError
    with the closest names for another."""
    import ep
    import ep.ops

    function = getattr(ep.ops, name, None) if name in ep.ops.__all__ and name != "describe" else None
    if function is not None:
        return f"ep.ops.{name}{inspect.signature(function)}\n    " + inspect.getdoc(function).split("\n\n")[0].replace("\n", "\n    ")
    factories = {f.removesuffix("Factory"): getattr(ep, f) for f in ep.FACTORIES}
    factory = factories.get(name.removesuffix("Factory"))
    if factory is not None:
        return inspect.getdoc(factory)
    try:
        return ep.ops.describe(name)
    except ValueError:
        names = [*ep.ops.__all__, *factories] + [v for e in (ep.UnaryOp, ep.BinaryOp) for v in [m.value for m in e] + [a for a, _ in e.aliases()]]
        hint = did_you_mean(name, names) or "expected an ep.ops function, a primitive or an elementwise op, e.g. 'softmax', 'Gather' or 'relu'"
        raise ValueError(f"name: {name!r} names nothing of ep's; {hint}") from None


def _describe(args: argparse.Namespace) -> int:
    try:
        print(describe(args.name))
    except ValueError as error:
        print(f"ep describe: {error}", file=sys.stderr)
        return 2
    return 0


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
    list_parser.add_argument("--device", type=_name("device", "a device"), metavar="{cpu,cuda}")
    list_parser.add_argument("--primitive", type=_name("primitive", "a primitive"), help="e.g. Gather, ElementwiseUnary")
    list_parser.add_argument("--op", type=_name("op", "an op", "e.g. 'relu' or 'kRelu'"), help="e.g. relu or kRelu")
    list_parser.add_argument("--all", action="store_true", help="print every combination, not the summary")
    list_parser.add_argument("--json", action="store_true", help="print a JSON list of rows")
    list_parser.set_defaults(run=_list)

    check_parser = commands.add_parser("check", help="launch each primitive family once on each available device")
    check_parser.add_argument("--device", type=_name("device", "a device"), metavar="{cpu,cuda}")
    check_parser.set_defaults(run=_check)

    warmup_parser = commands.add_parser("warmup", help="compile kernels into the disk cache before the first launch")
    warmup_parser.add_argument("--device", type=_name("device", "a device"), metavar="{cpu,cuda}", help="default: every available device")
    warmup_parser.add_argument("--ops", nargs="+", type=_name("op", "an op", "e.g. 'relu' or 'kRelu'"), metavar="OP", help="e.g. relu add (default: every op, and the primitives without one)")
    warmup_parser.add_argument("--dtypes", nargs="+", type=_name("dtype", "a data type"), metavar="DTYPE", help="the data's dtypes, e.g. float32 (default: all)")
    warmup_parser.add_argument("--primitives", nargs="+", type=_name("primitive", "a primitive"), metavar="PRIMITIVE", help="e.g. Gather (default: all)")
    warmup_parser.set_defaults(run=_warmup)

    describe_parser = commands.add_parser("describe", help="what an ep.ops function, a primitive or an elementwise op is")
    describe_parser.add_argument("name", help="e.g. softmax, Gather, relu, arccos")
    describe_parser.set_defaults(run=_describe)

    bench_parser = commands.add_parser("bench", help="time ep against NumPy and PyTorch")
    bench_parser.add_argument("--device", type=_name("device", "a device"), metavar="{cpu,cuda}", default="cpu")
    bench_parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    bench_parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    bench_parser.add_argument("--compare", nargs="+", metavar="OLD_JSON", help="print this run's time over these reports'")
    bench_parser.add_argument("--plot", metavar="FILE.png", help="also draw the results (needs matplotlib: pip install -e '.[plot]')")
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
