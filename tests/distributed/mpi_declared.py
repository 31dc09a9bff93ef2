"""Run under mpiexec (python -m mpi4py mpi_declared.py): a global op checks, names and agrees as its
local op does. NumPy's and PyTorch's names keep their dtype rules and refusals on global tensors;
the ranks agree on the communicator of the tensors' own placement (a list's, ep.fuse's too) and on
the op they run; a global tensor with no elements is checked as a local one. Every rank compares
with the local op on the logical arrays; the last line is "ok <count>" per rank."""
from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
from mpi4py import MPI

import ep
from ep.sbp import broadcast as B, partial_sum as P, split as S, split_array

comm = MPI.COMM_WORLD
RANK, SIZE = comm.Get_rank(), comm.Get_size()
checked = [0]


def make_global(x: np.ndarray, placement, sbp, world=None):
    """x as a global tensor under sbp over placement (on world's ranks, COMM_WORLD by default)."""
    world = world or comm
    index = next(i for i in placement.indices() if placement.rank(i) == world.Get_rank())
    piece = split_array(x, sbp, placement, np.random.default_rng(0))[index]
    return ep.to_global(piece, placement, sbp, comm=world)


def outcome(fn):
    """(result, None) or (None, the exception) of fn()."""
    try:
        return fn(), None
    except Exception as error:  # compared below
        return None, error


def same_as_local(name: str, local, global_) -> None:
    """The global call's outcome is the local call's: its dtype and values, or its error's type and
    message (after a 'rank k: ' a shared error carries)."""
    want, want_error = outcome(local)
    got, got_error = outcome(global_)
    if want_error is not None:
        assert got_error is not None, f"{name}: local raised {want_error!r}, global gave {got!r}"
        builtin = next(k for k in type(want_error).__mro__ if k.__module__ == "builtins")
        assert isinstance(got_error, builtin), (name, got_error, want_error)
        assert str(want_error) in str(got_error), (name, str(got_error), str(want_error))
    else:
        assert got_error is None, f"{name}: local gave {want!r}, global raised {got_error!r}"
        logical = got.numpy()
        assert logical.dtype == want.dtype, (name, logical.dtype, want.dtype)
        np.testing.assert_array_equal(logical, want, err_msg=name)
    checked[0] += 1


def check_names() -> None:
    """NumPy's and PyTorch's names on global tensors: their dtype rules and refusals, as locally."""
    pl = ep.placement("cpu", list(range(SIZE)))
    ints = np.array([7, 9, 4, 2] * SIZE, np.int64)
    twos = np.full(4 * SIZE, 2, np.int64)
    small = np.array([0, 1, -1, 1] * SIZE, np.int32)
    bools = np.array([True, False, True, True] * SIZE)
    minus = np.array([1, 2, -1, 0] * SIZE, np.int64)
    for sbp in (S(0), B):
        g = lambda x: make_global(x, pl, sbp)  # noqa: E731
        same_as_local("true_divide", lambda: ep.ops.binary("true_divide", ints, twos), lambda: ep.ops.binary("true_divide", g(ints), g(twos)))
        same_as_local("arccos", lambda: ep.ops.unary("arccos", small), lambda: ep.ops.unary("arccos", g(small)))
        same_as_local("expit", lambda: ep.ops.unary("expit", small), lambda: ep.ops.unary("expit", g(small)))
        same_as_local("power bool", lambda: ep.ops.binary("power", bools, bools), lambda: ep.ops.binary("power", g(bools), g(bools)))
        same_as_local("subtract bool", lambda: ep.ops.binary("subtract", bools, bools), lambda: ep.ops.binary("subtract", g(bools), g(bools)))
        same_as_local("power -1", lambda: ep.ops.binary("power", twos, minus), lambda: ep.ops.binary("power", g(twos), g(minus)))
        same_as_local("floor_divide", lambda: ep.ops.binary("floor_divide", -ints, twos), lambda: ep.ops.binary("floor_divide", g(-ints), g(twos)))
    # Through ep.fuse these were right already: they stay right.
    f = ep.fuse(lambda a, b: a / b)
    same_as_local("fuse true_divide", lambda: f(ints, twos), lambda: f(make_global(ints, pl, S(0)), make_global(twos, pl, S(0))))


def check_empty() -> None:
    """A global tensor with no elements is checked as a local one: every rank raises its error."""
    pl = ep.placement("cpu", list(range(SIZE)))
    empty64 = np.zeros((0, 3), np.int64)
    f32, f64 = np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float64)
    for sbp in (S(0), S(1), B):
        g = lambda x: make_global(x, pl, sbp)  # noqa: E731
        same_as_local("softmax int64", lambda: ep.ops.softmax(empty64, 1), lambda: ep.ops.softmax(g(empty64), 1))
        same_as_local("one_hot float", lambda: ep.ops.one_hot(np.zeros(0), 3), lambda: ep.ops.one_hot(make_global(np.zeros(0), pl, B), 3))
        same_as_local("add_n mixed", lambda: ep.ops.add_n([f64, f32]), lambda: ep.ops.add_n([g(f64), g(f32)]))
        same_as_local("softmax_grad mixed", lambda: ep.ops.softmax_grad(f32, f64, 1), lambda: ep.ops.softmax_grad(g(f32), g(f64), 1))
        same_as_local("gather float indices", lambda: ep.ops.gather(f32, np.zeros(0), 1), lambda: ep.ops.gather(g(f32), make_global(np.zeros(0), pl, B), 1))
        same_as_local("matmul int", lambda: ep.ops.matmul(empty64, empty64.T), lambda: ep.ops.matmul(g(empty64), make_global(empty64.T, pl, B)))
        same_as_local("where int condition", lambda: ep.ops.where(empty64, f32, f32), lambda: ep.ops.where(g(empty64), g(f32), g(f32)))
        same_as_local("softmax empty float", lambda: ep.ops.softmax(f32, 1), lambda: ep.ops.softmax(g(f32), 1))
    for sbp in (S(0), S(1), B, P):  # a mean over no elements is NaN, a sum 0
        g = lambda x: make_global(x, pl, sbp)  # noqa: E731
        for dim in (None, 0, 1):
            same_as_local(f"mean {sbp} {dim}", lambda: ep.ops.mean(f32, dim), lambda: ep.ops.mean(g(f32), dim))
            same_as_local(f"sum {sbp} {dim}", lambda: ep.ops.sum(f32, dim), lambda: ep.ops.sum(g(f32), dim))


def raises_everywhere(kind, match: str, fn) -> None:
    got = outcome(fn)[1]
    assert isinstance(got, kind) and match in str(got), (kind, match, got)
    checked[0] += 1


def check_same_op() -> None:
    """Ranks calling different ops on the same arguments: one ValueError naming the op, on every rank."""
    pl = ep.placement("cpu", list(range(SIZE)))
    last = SIZE - 1
    odd = RANK == last
    x = np.arange(SIZE * 2 * 3, dtype=np.float32).reshape(SIZE * 2, 3)
    for sbp in (B, S(0)):
        t = make_global(x, pl, sbp)
        raises_everywhere(ValueError, f"function: rank {last} gave 'ep.ops.log_softmax' and rank 0 'ep.ops.softmax'", lambda: (ep.ops.log_softmax if odd else ep.ops.softmax)(t, 1))
        raises_everywhere(ValueError, f"function: rank {last} gave 'ep.ops.repeat' and rank 0 'ep.ops.expand'", lambda: (ep.ops.repeat if odd else ep.ops.expand)(t, (2, 1)))
    np.testing.assert_allclose(ep.ops.softmax(t, 1).numpy(), ep.ops.softmax(x, 1))
    checked[0] += 1


def check_sub_communicators() -> None:
    """Two groups of ranks on their own communicators: add_n and ep.fuse agree within a group only
    (one group calling alone returns; both at once with different shapes give each its own answer)."""
    if SIZE < 2:
        return
    color = RANK % 2
    sub = comm.Split(color, RANK)
    pl = ep.placement("cpu", list(range(sub.Get_size())))
    n = 2 * sub.Get_size() * (color + 1)  # the groups' shapes differ
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    t = make_global(x, pl, S(0), sub)
    f = ep.fuse(lambda a, b: a * b + 1)
    if color == 0:  # group 0 alone (group 1 waits at the barrier below)
        np.testing.assert_array_equal(ep.ops.add_n([t, t]).numpy(), x + x)
        np.testing.assert_array_equal(f(t, t).numpy(), x * x + 1)
        checked[0] += 2
    comm.Barrier()
    # Both groups at once, with their own shapes.
    np.testing.assert_array_equal(ep.ops.add_n([t, t, t]).numpy(), 3 * x)
    np.testing.assert_array_equal(f(t, t).numpy(), x * x + 1)
    # A disagreement inside one group names that group's ranks.
    odd = sub.Get_rank() == sub.Get_size() - 1
    if sub.Get_size() > 1:
        raises_everywhere(ValueError, "arrays: rank", lambda: ep.ops.add_n([t, t] if odd else [t, t, t]))
    checked[0] += 2
    sub.Free()
    # MPI may give the next communicator the freed one's handle: ep must not take it for the old one.
    again = comm.Split(1 - color, RANK)
    pl = ep.placement("cpu", list(range(again.Get_size())))
    y = np.arange(again.Get_size() * 2, dtype=np.float32)
    np.testing.assert_array_equal(ep.ops.add_n([make_global(y, pl, S(0), again)] * 2).numpy(), 2 * y)
    np.testing.assert_array_equal(ep.ops.sum(make_global(y, pl, S(0), again), dtype=np.float64).numpy(), y.sum(dtype=np.float64))
    checked[0] += 2
    again.Free()


def check_bfloat16() -> None:
    """bfloat16 global tensors: elementwise ops take them, and a partial sum (MPI has no bfloat16)
    is summed in float32. Small integers, so that every result is exact."""
    pl = ep.placement("cpu", list(range(SIZE)))
    x = np.arange(12, dtype=np.float32).reshape(4, 3).astype(ml_dtypes.bfloat16)
    w = np.ones((3, 4), ml_dtypes.bfloat16)
    for sbp in (S(0), S(1), B, P):
        g = make_global(x, pl, sbp)
        same_as_local(f"add {sbp}", lambda: ep.ops.binary("add", x, x), lambda: ep.ops.binary("add", g, g))
        same_as_local(f"mul {sbp}", lambda: ep.ops.binary("mul", x, x), lambda: ep.ops.binary("mul", g, make_global(x, pl, B)))
        same_as_local(f"sum {sbp}", lambda: ep.ops.sum(x), lambda: ep.ops.sum(g))
        same_as_local(f"sum 0 {sbp}", lambda: ep.ops.sum(x, 0), lambda: ep.ops.sum(g, 0))
        same_as_local(f"matmul {sbp}", lambda: ep.ops.matmul(x, w), lambda: ep.ops.matmul(g, make_global(w, pl, S(0) if sbp == S(1) else B)))


def check_bools() -> None:
    """Bool tensors split along the op's dim: no signature boxes them to a partial sum (no count)."""
    pl = ep.placement("cpu", list(range(SIZE)))
    x = np.arange(6 * SIZE).reshape(2 * SIZE, 3) % 3 == 0
    for sbp in (S(0), S(1), B):
        g = make_global(x, pl, sbp)
        same_as_local(f"flip {sbp}", lambda: ep.ops.flip(x, (0, 1)), lambda: ep.ops.flip(g, (0, 1)))
        same_as_local(f"roll {sbp}", lambda: ep.ops.roll(x, 1, 1), lambda: ep.ops.roll(g, 1, 1))
        same_as_local(f"cat {sbp}", lambda: ep.ops.cat([x, x], 1), lambda: ep.ops.cat([g, make_global(x, pl, S(0))], 1))
        same_as_local(f"stack {sbp}", lambda: ep.ops.stack([x, x]), lambda: ep.ops.stack([g, make_global(x, pl, S(1))]))
        same_as_local(f"repeat {sbp}", lambda: ep.ops.repeat(x, (2, 1)), lambda: ep.ops.repeat(g, (2, 1)))


PARTS = {"bools": check_bools, "names": check_names, "empty": check_empty, "same_op": check_same_op, "sub": check_sub_communicators, "bfloat16": check_bfloat16}

if __name__ == "__main__":
    for part in sys.argv[1:] or PARTS:
        PARTS[part]()
    comm.Barrier()
    print(f"ok {checked[0]} rank {RANK}/{SIZE}", flush=True)
