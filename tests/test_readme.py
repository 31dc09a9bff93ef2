"""README.md runs as printed: each ```python block alone in a fresh interpreter, and each bash line
either run alone in a fresh shell or skipped here for a reason named below."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"^```python\n(.*?)^```", README, flags=re.S | re.M)
BASH_BLOCKS = re.findall(r"^```bash\n(.*?)^```", README, flags=re.S | re.M)
# Every command of every bash block (comments and blank lines aside).
BASH_LINES = [
    line for block in BASH_BLOCKS for line in (raw.split("  #")[0].strip() for raw in block.splitlines()) if line and not line.startswith("#")
]

# Bash lines not run here, by a regular expression of their start, and why.
SKIPPED = {
    r"python3 -m venv ": "the set-up commands: CI (.ci/run) runs them in a fresh clone",
    r"\.venv/bin/pip install ": "installs into the venv: needs the network and changes the venv",
    r"\.venv/bin/mpiexec ": "needs MPI ranks: tests/distributed/test_mpi.py runs the example under mpiexec",
    r"\.venv/bin/python -m ep bench": "minutes of timing: tests/test_bench.py runs the benchmarks",
    r"\.venv/bin/python -m ep check": "CI's first command (.ci/run) runs it, in a fresh clone",
    r"\.venv/bin/python -m ep warmup$": "compiles every combination; the narrowed warmup line is run",
}


def _skip_reason(line: str) -> str | None:
    return next((why for start, why in SKIPPED.items() if re.match(start, line)), None)


def _imports_missing(block: str) -> list[str]:
    names = re.findall(r"^(?:import|from) (\w+)", block, flags=re.M)
    return [name for name in names if importlib.util.find_spec(name) is None]


def test_the_first_bash_block_is_two_commands():
    # .ci/run reads it: the set-up and main job, then the set-up and the whole suite.
    first = [line for line in BASH_BLOCKS[0].splitlines() if line.strip() and not line.startswith("#")]
    assert len(first) == 2 and all(line.startswith("python3 -m venv .venv && ") for line in first)


def test_python_is_called_one_way():
    # `.venv/bin/python`, as the first commands do (python3 only makes the venv).
    bare = re.findall(r"(?<![/\w])python3? (?!-m venv)", "\n".join(BASH_BLOCKS))
    inline = re.findall(r"`python3? [^`]*`", re.sub(r"^```.*?^```", "", README, flags=re.S | re.M))
    assert not bare and not inline, bare + inline


@pytest.mark.parametrize("line", BASH_LINES)
def test_bash_line_is_a_command_not_a_synopsis(line):
    # "[--device cpu|cuda] ..." pasted makes bash pipe into `cuda]`: options go in a table or a comment.
    assert not re.search(r"\[-|\.\.\.|<\w+>", line), line
    assert subprocess.run(["bash", "-n", "-c", line]).returncode == 0, line


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"python{i}" for i in range(len(PYTHON_BLOCKS))])
def test_python_block_runs_alone(block, tmp_path):
    missing = _imports_missing(block)
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (the test extra installs it)")
    script = tmp_path / "block.py"
    script.write_text(block)
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(tmp_path / "cache")))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.parametrize("line", BASH_LINES)
def test_bash_line_runs_alone(line, tmp_path):
    why = _skip_reason(line)
    if why is not None:
        pytest.skip(why)
    assert line.startswith(".venv/bin/python -m ep "), f"a new kind of README command: run it here or say why not: {line}"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    command = line.replace(".venv/bin/python", sys.executable, 1)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.strip()


def test_the_readme_lists_every_ops_function():
    import ep.ops

    sentence = README[README.index("It offers every function of `ep.ops.__all__`") :].split(",\nand reaches")[0]
    missing = [name for name in ep.ops.__all__ if f"`{name}`" not in sentence]
    assert not missing, f"README's list of ep.ops leaves out {missing}"


def _parameters(function, skip: int) -> str:
    """function's parameters after the first skip, as the README's Primitives table writes them."""
    import inspect

    written, starred = [], False
    for p in list(inspect.signature(function).parameters.values())[skip:]:
        if p.kind is p.VAR_POSITIONAL:
            written.append(f"*{p.name}")
            starred = True
            continue
        if p.kind is p.KEYWORD_ONLY and not starred:
            written.append("*")
            starred = True
        written.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return ", ".join(written)


def test_the_primitives_table_lists_every_factory_with_new_and_launch():
    import ep
    import ep.include.primitive

    rows = {}
    for line in README[README.index("## Primitives") :].split("| --- | --- | --- |\n")[1].splitlines():
        if not line.startswith("| `"):
            break
        name, new, launch = (cell.strip() for cell in line.strip("|").split(" | ", 2))
        rows[name.strip("`")] = (new, launch)
    assert sorted(rows) == sorted(ep.FACTORIES), "README's Primitives table and the registry's factories differ"
    for name, factory in ep.FACTORIES.items():
        primitive = getattr(ep.include.primitive, name.removesuffix("Factory"))
        new, launch = rows[name]
        assert new == f"`{_parameters(factory.New, 1)}`", f"{name}: New {new}"
        assert launch.startswith(f"`{_parameters(primitive.Launch, 2)}`"), f"{name}: Launch {launch}"
