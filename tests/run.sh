#!/usr/bin/env bash
# The README's test command: the suite (-m "not sweep") in parts, each in fresh pytest workers, so
# that no process holds the kernels of the whole suite (why: README, Testing). worksteal: the idle
# worker takes queued tests from the busy one. Arguments are passed to every part; every part runs,
# and the exit status is 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
parts=(
    "tests/ops/test_[a-k]*.py"
    "tests/ops/test_[l-o]*.py"
    "tests/ops/test_[p-z]*.py"
    "tests/primitive"
    "tests --ignore=tests/ops --ignore=tests/primitive"
)
status=0
for part in "${parts[@]}"; do
    echo "+ pytest $part"
    # $part unquoted: a part is several arguments, and its globs name files.
    .venv/bin/python -m pytest -n 2 --dist worksteal -m "not sweep" $part "$@" || status=1
done
exit $status
