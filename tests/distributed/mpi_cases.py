"""Run under mpiexec (python -m mpi4py mpi_cases.py, so one rank's exception aborts them all):
every boxing conversion, every global op (through ep.ops) under each of its nd-signatures, the cost
model against brute force, bad input, and CUDA pieces through host buffers (the simulator). Every
rank compares with NumPy; the last line is "ok <count>" per rank."""
from __future__ import annotations

import itertools
import sys

import numpy as np
from mpi4py import MPI

import ep
from ep.sbp import broadcast as B, nd_signatures, partial_sum as P, split as S, split_array
from ep.sbp import boxing, global_ops
from ep.sbp.signature import sbp_of

comm = MPI.COMM_WORLD
RANK, SIZE = comm.Get_rank(), comm.Get_size()
checked = [0]


def placements():
    """The 1-d placement (ranks in reverse order: positions need not be ranks) and on 4 ranks the
    2x2 one."""
    yield ep.placement("cpu", list(reversed(range(SIZE))))
    if SIZE == 4:
        yield ep.placement("cpu", [[0, 1], [2, 3]])


def my_index(placement):
    return next(i for i in placement.indices() if placement.rank(i) == RANK)


def make_global(x: np.ndarray, placement, sbp, seed: int = 0):
    """x as a global tensor under sbp (partial sums as random parts; one seed on every rank)."""
    pieces = split_array(x, sbp, placement, np.random.default_rng(seed))
    return ep.to_global(pieces[my_index(placement)], placement, sbp)


def sbps(ndim: int, hierarchy_ndim: int):
    ones = [S(d) for d in range(ndim)] + [B, P]
    return list(itertools.product(ones, repeat=hierarchy_ndim))


def check_boxing() -> None:
    """Every (sbp_in, sbp_out) pair on uneven shapes, in an integer and a float dtype."""
    rng = np.random.default_rng(1)
    for placement in placements():
        for shape, dtype in [((SIZE + 1, 3), np.int64), ((3, 2 * SIZE + 1), np.float32), ((2, SIZE - 1, 3), np.int32)]:
            x = rng.integers(-9, 10, shape).astype(dtype)
            for sbp_in in sbps(len(shape), len(placement.hierarchy)):
                t = make_global(x, placement, sbp_in)
                assert t.shape == shape and t.sbp == sbp_in and t.dtype == x.dtype
                for sbp_out in sbps(len(shape), len(placement.hierarchy)):
                    u = t.to_global(sbp=sbp_out)
                    assert u.sbp == sbp_out and u.shape == shape
                    if P not in sbp_out:
                        want = split_array(x, sbp_out, placement)[my_index(placement)]
                        np.testing.assert_array_equal(u.to_local(), want, err_msg=f"{sbp_in} -> {sbp_out}")
                    np.testing.assert_array_equal(u.numpy(), x, err_msg=f"{sbp_in} -> {sbp_out}")
                    checked[0] += 1


def check_boxing_packed() -> None:
    """check_boxing again with every strided part of an all-to-all packed by CopyNd in a scratch
    buffer (the path boxing takes for large parts into reused memory) instead of moved in place
    as a vector datatype."""
    default = boxing._packs
    boxing._packs = lambda shape, itemsize, axis, arrays: boxing._lead(shape, axis) > 1
    try:
        check_boxing()
    finally:
        boxing._packs = default


def _gather_ref(params, indices, axis, batch_dims):
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([_gather_ref(p, i, axis - 1, batch_dims - 1) for p, i in zip(params, indices)])


def _gather_grad_ref(dy, indices, params_shape, axis):
    dx = np.zeros(params_shape, dy.dtype)
    moved = np.moveaxis(dx, axis, 0)
    rows = dy.reshape(params_shape[:axis] + (indices.size,) + params_shape[axis + 1:])
    np.add.at(moved, indices.ravel(), np.moveaxis(rows, axis, 0))
    return dx


def _expand_grad_ref(dy, input_shape):
    lead = dy.ndim - len(input_shape)
    summed = dy.sum(axis=tuple(range(lead)))
    return summed.sum(axis=tuple(d for d, n in enumerate(input_shape) if n == 1 and summed.shape[d] != 1), keepdims=True)


def op_cases():
    """(name, logical inputs, attributes, call, NumPy reference); indices non-negative where params
    split along the gather axis (the offset launch), negatives elsewhere."""
    rng = np.random.default_rng(2)
    n = SIZE + 1
    params = rng.integers(-9, 10, (n, 3)).astype(np.float32)
    idx = rng.integers(-n, n, (4,))
    yield ("gather", {"params": params, "indices": idx}, {"axis": 0, "batch_dims": 0},
           lambda t: ep.ops.gather(t["params"], t["indices"], 0, 0, sbp=t["sbp"]), np.take(params, idx, 0))
    params3 = rng.integers(-9, 10, (2, 3, n)).astype(np.int64)
    idx2 = rng.integers(0, n, (2, 3))
    yield ("gather", {"params": params3, "indices": idx2}, {"axis": 2, "batch_dims": 1},
           lambda t: ep.ops.gather(t["params"], t["indices"], 2, 1, sbp=t["sbp"]), _gather_ref(params3, idx2, 2, 1))
    bparams = rng.integers(-9, 10, (3, n, 2)).astype(np.float64)
    bidx = rng.integers(0, n, (3, 2))
    yield ("batch_gather", {"params": bparams, "indices": bidx}, {},
           lambda t: ep.ops.batch_gather(t["params"], t["indices"], sbp=t["sbp"]), _gather_ref(bparams, bidx, 1, 1))
    dy = rng.integers(-9, 10, (4, 3)).astype(np.float32)
    gidx = rng.integers(0, n, (4,))
    yield ("gather_grad", {"dy": dy, "indices": gidx}, {"params_shape": (n, 3), "axis": 0, "batch_dims": 0},
           lambda t: ep.ops.gather_grad(t["dy"], t["indices"], (n, 3), 0, 0, sbp=t["sbp"]), _gather_grad_ref(dy, gidx, (n, 3), 0))
    x = rng.integers(-9, 10, (n, 1, 2)).astype(np.int32)
    yield ("expand", {"x": x}, {"sizes": (2, n, 3, 2)},
           lambda t: ep.ops.expand(t["x"], (2, n, 3, 2), sbp=t["sbp"]), np.broadcast_to(x, (2, n, 3, 2)))
    edy = rng.integers(-9, 10, (2, n, 3)).astype(np.float64)
    yield ("expand_grad", {"dy": edy}, {"input_shape": (n, 1)},
           lambda t: ep.ops.expand_grad(t["dy"], (n, 1), sbp=t["sbp"]), _expand_grad_ref(edy, (n, 1)))
    r = rng.integers(-9, 10, (n, 1)).astype(np.int64)
    yield ("repeat", {"x": r}, {"sizes": (2, 1, 3)},
           lambda t: ep.ops.repeat(t["x"], (2, 1, 3), sbp=t["sbp"]), np.tile(r, (2, 1, 3)))
    u = rng.integers(-9, 10, (n, 3)).astype(np.float32)
    for op, ref in [("negative", np.negative(u)), ("relu", np.maximum(u, 0))]:
        yield ("unary", {"x": u}, {"op": op, "dtype": "float32"},
               lambda t, op=op: ep.ops.unary(op, t["x"], sbp=t["sbp"]), ref)
    a = rng.integers(-9, 10, (n, 3)).astype(np.float64)
    b = rng.integers(1, 10, (3,)).astype(np.float64)
    for op, ref in [("add", a + b), ("mul", a * b), ("div", a / b), ("less_than", a < b)]:
        yield ("binary", {"a": a, "b": b}, {"op": op, "dtype": "float64"},
               lambda t, op=op: ep.ops.binary(op, t["a"], t["b"], sbp=t["sbp"]), ref)
    hot = rng.integers(0, 4, (n, 2))
    yield ("one_hot", {"indices": hot}, {"num_classes": 4, "dtype": "float32", "on_value": 2, "off_value": 0},
           lambda t: ep.ops.one_hot(t["indices"], 4, dtype=np.float32, on_value=2, sbp=t["sbp"]),
           np.where(hot[..., None] == np.arange(4), 2, 0).astype(np.float32))
    sx = rng.standard_normal((n, 3))
    e = np.exp(sx - sx.max(1, keepdims=True))
    yield ("softmax", {"x": sx.astype(np.float32)}, {"dim": 1},
           lambda t: ep.ops.softmax(t["x"], 1, sbp=t["sbp"]), (e / e.sum(1, keepdims=True)).astype(np.float32))
    sm = rng.integers(-9, 10, (n, 3, 2)).astype(np.float64)
    yield ("sum", {"x": sm}, {"dim": (0, 2), "keepdim": False, "dtype": None, "x_dtype": "float64"},
           lambda t: ep.ops.sum(t["x"], (0, 2), sbp=t["sbp"]), sm.sum((0, 2)))
    yield ("amax", {"x": sm}, {"dim": (1,), "keepdim": True, "dtype": None, "x_dtype": "float64"},
           lambda t: ep.ops.amax(t["x"], 1, keepdim=True, sbp=t["sbp"]), sm.max(1, keepdims=True))
    # Over a split dim, finished from the ranks' results: ties (small integers) take the first index,
    # a NaN wins argmax and amax; with fewer rows than ranks one rank holds none.
    am = rng.integers(-2, 3, (n, 3, 2)).astype(np.float32)
    am[n // 2, 1, 0] = np.nan
    for name, dim, ref in [("argmax", 0, np.argmax(am, 0)), ("argmin", None, np.argmin(am)), ("argmax", 2, np.argmax(am, 2))]:
        yield (name, {"x": am}, {"dim": dim, "keepdim": False, "dtype": None, "x_dtype": "float32"},
               lambda t, name=name, dim=dim: getattr(ep.ops, name)(t["x"], dim, sbp=t["sbp"]), ref)
    few = rng.integers(-3, 4, (SIZE - 1, 3)).astype(np.int32)
    for name, ref in [("prod", np.prod(few, 0, dtype=np.int64)), ("amin", few.min(0)), ("any", few.any(0))]:
        yield (name, {"x": few}, {"dim": (0,), "keepdim": False, "dtype": None, "x_dtype": "int32"},
               lambda t, name=name: getattr(ep.ops, name)(t["x"], 0, sbp=t["sbp"]), ref)
    yield ("amax", {"x": am}, {"dim": None, "keepdim": False, "dtype": None, "x_dtype": "float32"},
           lambda t: ep.ops.amax(t["x"], sbp=t["sbp"]), np.float32(np.nan))
    yield ("mean", {"x": sm}, {"dim": (0, 2), "keepdim": True, "dtype": None, "x_dtype": "float64"},
           lambda t: ep.ops.mean(t["x"], (0, 2), keepdim=True, sbp=t["sbp"]), sm.mean((0, 2), keepdims=True))
    ls = rng.standard_normal((n, 3)).astype(np.float64)
    yield ("logsumexp", {"x": ls}, {"dim": (0,), "keepdim": False, "dtype": None, "x_dtype": "float64"},
           lambda t: ep.ops.logsumexp(t["x"], 0, sbp=t["sbp"]), np.logaddexp.reduce(ls, 0))
    # var, std and norm over split dims: the parts' moments (norms) all-gathered and merged.
    sv = rng.standard_normal((n, 3, 2))
    yield ("var", {"x": sv}, {"dim": (0, 2), "keepdim": False, "dtype": None, "x_dtype": "float64", "correction": 1},
           lambda t: ep.ops.var(t["x"], (0, 2), sbp=t["sbp"]), sv.var((0, 2), ddof=1))
    yield ("std", {"x": sv.astype(np.float32)}, {"dim": (0,), "keepdim": True, "dtype": None, "x_dtype": "float32", "correction": 0},
           lambda t: ep.ops.std(t["x"], 0, correction=0, keepdim=True, sbp=t["sbp"]), sv.astype(np.float32).std(0, keepdims=True))
    yield ("norm", {"x": sv}, {"dim": (0, 1), "keepdim": False, "dtype": None, "x_dtype": "float64", "p": 3.0},
           lambda t: ep.ops.norm(t["x"], 3, (0, 1), sbp=t["sbp"]), (np.abs(sv) ** 3).sum((0, 1)) ** (1 / 3))
    c0, c1 = rng.integers(-9, 10, (n, 2)).astype(np.float32), rng.integers(-9, 10, (n, 3)).astype(np.float32)
    yield ("cat", {"tensors[0]": c0, "tensors[1]": c1}, {"dim": 1},
           lambda t: ep.ops.cat([t["tensors[0]"], t["tensors[1]"]], 1, sbp=t["sbp"]), np.concatenate([c0, c1], 1))
    yield ("flip", {"x": sm}, {"dims": (1,)}, lambda t: ep.ops.flip(t["x"], (1,), sbp=t["sbp"]), np.flip(sm, 1))
    yield ("cumsum", {"x": sx.astype(np.float32)}, {"dim": 1, "dtype": None, "x_dtype": "float32"},
           lambda t: ep.ops.cumsum(t["x"], 1, sbp=t["sbp"]), np.cumsum(sx.astype(np.float32), 1))
    # Split along the scanned dim (fewer rows than ranks: one holds none), continued by Exscan in int64.
    cp = rng.integers(-3, 4, (SIZE - 1, 2)).astype(np.int32)
    yield ("cumprod", {"x": cp}, {"dim": 0, "dtype": None, "x_dtype": "int32"},
           lambda t: ep.ops.cumprod(t["x"], 0, sbp=t["sbp"]), np.cumprod(cp, 0, dtype=np.int64))
    # logcumsumexp split along dim: the totals all-gathered (MPI has no log-add-exp).
    yield ("logcumsumexp", {"x": ls}, {"dim": 0, "dtype": None, "x_dtype": "float64"},
           lambda t: ep.ops.logcumsumexp(t["x"], 0, sbp=t["sbp"]), np.logaddexp.accumulate(ls, 0))
    # Batches split on both (b's batch dim of 1 broadcasts), and the contracted dim of 3 (uneven, a
    # rank without any on 4) in a partial sum.
    ma, mb = rng.integers(-9, 10, (2, n, 3)).astype(np.float64), rng.integers(-9, 10, (1, 3, 4)).astype(np.float64)
    yield ("matmul", {"a": ma, "b": mb}, {"dtype": "float64"},
           lambda t: ep.ops.matmul(t["a"], t["b"], sbp=t["sbp"]), np.matmul(ma, mb))
    # A term added the product's way: split with it, a partial sum beside a partial product.
    bias = rng.integers(-9, 10, (4,)).astype(np.float64)
    yield ("addmm", {"input": bias, "mat1": ma[0], "mat2": mb[0]}, {"beta": 0.5, "alpha": 2.0, "dtype": "float64"},
           lambda t: ep.ops.addmm(t["input"], t["mat1"], t["mat2"], beta=0.5, alpha=2.0, sbp=t["sbp"]), 0.5 * bias + 2.0 * ma[0] @ mb[0])
    yield ("linear", {"input": ma, "weight": mb[0].T.copy(), "bias": bias}, {"dtype": "float64"},
           lambda t: ep.ops.linear(t["input"], t["weight"], t["bias"], sbp=t["sbp"]), ma @ mb[0] + bias)
    # Scatters: split on every dim but dim (index and src with input's size there), P (linear), B;
    # repeated indices, and on 3 and 4 ranks a rank without rows.
    si = rng.integers(-9, 10, (n, 4)).astype(np.float64)
    iidx = rng.integers(0, 4, (5,))
    isrc = rng.integers(-9, 10, (n, 5)).astype(np.float64)
    ref = si.copy()
    np.add.at(ref, (slice(None), iidx), 2 * isrc)
    yield ("index_add", {"input": si, "index": iidx, "source": isrc}, {"dim": 1, "alpha": 2, "dtype": "float64"},
           lambda t: ep.ops.index_add(t["input"], 1, t["index"], t["source"], alpha=2, sbp=t["sbp"]), ref)
    sidx = rng.integers(0, 4, (n, 3))
    ssrc = rng.integers(-9, 10, (n, 3)).astype(np.int32)
    sin = si.astype(np.int32)
    rows = np.arange(n)[:, None]
    ref = sin.copy()
    np.add.at(ref, (rows, sidx), ssrc)
    yield ("scatter_add", {"input": sin, "index": sidx, "src": ssrc}, {"dim": 1, "dtype": "int32"},
           lambda t: ep.ops.scatter_add(t["input"], 1, t["index"], t["src"], sbp=t["sbp"]), ref)
    ref = sin.copy()
    for j in range(3):  # repeats: the last write along dim lands
        ref[rows[:, 0], sidx[:, j]] = ssrc[:, j]
    yield ("scatter", {"input": sin, "index": sidx, "src": ssrc}, {"dim": 1, "reduce": None, "dtype": "int32"},
           lambda t: ep.ops.scatter(t["input"], 1, t["index"], t["src"], sbp=t["sbp"]), ref)
    ref = si.copy()
    ref[rows, sidx] = 7.0
    yield ("scatter", {"input": si, "index": sidx}, {"dim": 1, "value": 7.0, "reduce": None, "dtype": "float64"},
           lambda t: ep.ops.scatter(t["input"], 1, t["index"], 7.0, sbp=t["sbp"]), ref)
    sy, sdy = rng.random((n, 3)), rng.standard_normal((n, 3))
    yield ("log_softmax_grad", {"y": sy, "dy": sdy}, {"dim": 0},
           lambda t: ep.ops.log_softmax_grad(t["y"], t["dy"], 0, sbp=t["sbp"]), sdy - np.exp(sy) * sdy.sum(0))


def check_ops() -> None:
    """Every global op under each of its nd-signatures (inputs laid out as the signature asks and
    the result's SBP requested, so nothing is boxed), against NumPy, on every rank."""
    for placement in placements():
        for name, arrays, attrs, call, expected in op_cases():
            kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
            for seed, sig in enumerate(nd_signatures(name, placement, **kw)):
                tensors = {n: make_global(a, placement, sbp_of(sig, n), seed) for n, a in arrays.items()}
                before = boxing.received[0]
                out = call({**tensors, "sbp": sbp_of(sig, "out")})
                assert boxing.received[0] == before, f"{name} {sig} boxed its inputs"
                assert out.sbp == sbp_of(sig, "out") and out.shape == expected.shape, (name, sig, out)
                got = out.numpy()
                assert got.dtype == expected.dtype, (name, sig, got.dtype)
                if got.dtype.kind == "f":
                    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6, err_msg=f"{name} {sig}")
                else:
                    np.testing.assert_array_equal(got, expected, err_msg=f"{name} {sig}")
                checked[0] += 1
    check_split_on_dim()


def check_split_on_dim() -> None:
    """The scatters of inputs split on dim (no signature of theirs): boxed to a declared one, the
    result NumPy's."""
    rng = np.random.default_rng(5)
    n = SIZE + 1
    x, idx, src = rng.integers(-9, 10, (3, n)).astype(np.float32), rng.integers(0, n, (3, n)), rng.integers(-9, 10, (3, n)).astype(np.float32)
    add = x.copy()
    np.add.at(add, (np.arange(3)[:, None], idx), src)
    iadd = x.copy()
    np.add.at(iadd, (slice(None), idx[0]), src)
    for placement in placements():
        h = len(placement.hierarchy)
        t = {n_: make_global(a, placement, (S(1),) * h) for n_, a in (("x", x), ("idx", idx), ("src", src))}
        for got, expected in [(ep.ops.scatter_add(t["x"], 1, t["idx"], t["src"]), add), (ep.ops.index_add(t["x"], 1, make_global(idx[0], placement, (S(0),) * h), t["src"]), iadd)]:
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
            checked[0] += 1


def check_fuse() -> None:
    """An ep.fuse call under each nd-signature of its expression runs on the pieces as they are
    (nothing boxed); inputs no signature takes (a partial sum into relu, mismatched splits) are
    boxed first; every result equals NumPy's."""
    rng = np.random.default_rng(5)
    n = SIZE + 1
    x, y, z = (rng.integers(-6, 7, s).astype(np.float32) for s in [(n, 3), (3,), (n, 1)])
    step = ep.fuse(lambda x, y, z: (ep.ops.unary("relu", x * y + z), x + z))
    for placement in placements():
        h = len(placement.hierarchy)
        trace = step.trace((x, y, z), ep.GetDevice("cpu"))
        kw = {"args[0]": x.shape, "args[1]": y.shape, "args[2]": z.shape, "expression": trace.nodes, "dtypes": ("float32", "float32")}
        for seed, sig in enumerate(nd_signatures("fuse", placement, **kw)):
            tensors = [make_global(a, placement, sbp_of(sig, f"args[{p}]"), seed) for p, a in enumerate((x, y, z))]
            before = boxing.received[0]
            relu, added = step(*tensors)
            assert boxing.received[0] == before, f"fuse {sig} boxed its inputs"
            assert relu.sbp == sbp_of(sig, "out[0]") and added.sbp == sbp_of(sig, "out[1]"), sig
            np.testing.assert_array_equal(relu.numpy(), np.maximum(x * y + z, 0), err_msg=repr(sig))
            np.testing.assert_array_equal(added.numpy(), x + z, err_msg=repr(sig))
            checked[0] += 1
        relu, added = step(make_global(x, placement, (P,) * h, 1), make_global(y, placement, (S(0),) * h), make_global(z, placement, (B,) * h))
        np.testing.assert_array_equal(relu.numpy(), np.maximum(x * y + z, 0))
        np.testing.assert_array_equal(added.numpy(), x + z)
        checked[0] += 1
        # A fused reduction: the expression fused on the pieces, then the reduction's global op
        # (a split dim reduced gives a partial sum, boxed as the result asks).
        for dim, sbp in ((0, (S(0),) * h), (1, (S(0),) * h), (None, (S(1),) * h)):
            total = ep.fuse(lambda x, y: ep.ops.sum(x * y + 1, dim=dim))(make_global(x, placement, sbp), make_global(y, placement, (B,) * h))
            np.testing.assert_array_equal(total.numpy(), (x * y + 1).sum(axis=dim), err_msg=f"fused sum over {dim} of {sbp}")
            checked[0] += 1


def check_cost_model() -> None:
    """For inputs no signature takes as they are: the op boxes to the legal nd-signature of least
    modelled cost; brute force boxes to every legal one and measures the bytes each moves."""
    rng = np.random.default_rng(3)
    for placement in placements():
        h = len(placement.hierarchy)
        n = 2 * SIZE + 1
        a = rng.integers(-9, 10, (n, 4)).astype(np.float32)
        b = rng.integers(-9, 10, (n, 4)).astype(np.float32)
        params = rng.integers(-9, 10, (n, 6)).astype(np.float64)
        idx = rng.integers(0, n, (3,))
        cases = [
            ("binary", {"a": (a, (S(0),) * h), "b": (b, (S(1),) * h)}, {"op": "add", "dtype": "float32"}, "float32", a + b,
             lambda t, sbp: ep.ops.binary("add", t["a"], t["b"], sbp=sbp)),
            ("unary", {"x": (a, (P,) * h)}, {"op": "relu", "dtype": "float32"}, "float32", np.maximum(a, 0),
             lambda t, sbp: ep.ops.unary("relu", t["x"], sbp=sbp)),
            ("gather", {"params": (params, (S(1),) * h), "indices": (idx, (S(0),) * h)}, {"axis": 0, "batch_dims": 0}, "float64",
             params[idx], lambda t, sbp: ep.ops.gather(t["params"], t["indices"], sbp=sbp)),
        ]
        for layout in [(S(1), S(1)), (P, P)]:  # matmul: columns split in both, partial sums in both
            cases.append(("matmul", {"a": (a, (layout[0],) * h), "b": (np.ascontiguousarray(b.T), (layout[1],) * h)}, {"dtype": "float32"}, "float32",
                          a @ b.T, lambda t, sbp: ep.ops.matmul(t["a"], t["b"], sbp=sbp)))
        for name, inputs, attrs, out_dtype, expected, call in cases:
            for requested in (None, (B,) * h):
                tensors = {n_: make_global(x, placement, s) for n_, (x, s) in inputs.items()}
                kw = {**{n_: x.shape for n_, (x, _) in inputs.items()}, **attrs}
                sbps = {n_: t.sbp for n_, t in tensors.items()}
                sizes = {n_: t.dtype.itemsize for n_, t in tensors.items()}
                measured = {}
                for sig in nd_signatures(name, placement.hierarchy, **kw):
                    before = boxing.received[0]
                    for n_, t in tensors.items():
                        t.to_global(sbp=sbp_of(sig, n_))
                    moved = comm.allreduce(boxing.received[0] - before)
                    predicted = global_ops.signature_cost(name, placement.hierarchy, kw, sbps, sizes, np.dtype(out_dtype).itemsize, None, sig)
                    # An all-reduce's count rounds down per rank.
                    assert abs(moved - predicted) <= SIZE, (name, sig, moved, predicted)
                    measured[sig] = moved
                    checked[0] += 1
                chosen = global_ops.choose(name, tensors, attrs, np.dtype(out_dtype), requested)
                totals = {
                    sig: global_ops.signature_cost(name, placement.hierarchy, kw, sbps, sizes, np.dtype(out_dtype).itemsize, requested, sig)
                    for sig in measured
                }
                assert totals[chosen] == min(totals.values()), (name, chosen, totals)
                if requested is None:
                    assert measured[chosen] == min(measured.values()), (name, chosen, measured)
                out = call(tensors, requested)
                np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
                assert requested is None or out.sbp == requested


def raises(kind, match: str, fn) -> None:
    """fn raises kind with match in its message on this rank (so on every rank)."""
    try:
        fn()
    except kind as error:
        assert match in str(error), (match, str(error))
        checked[0] += 1
        return
    raise AssertionError(f"expected {kind.__name__} ({match})")


def check_errors() -> None:
    """Bad input: the same clear error on every rank, and the ranks carry on (no deadlock)."""
    pl = ep.placement("cpu", list(range(SIZE)))
    other = ep.placement("cpu", list(reversed(range(SIZE))))
    x = np.arange(SIZE * 2 * 3, dtype=np.float32).reshape(SIZE * 2, 3)
    t = make_global(x, pl, S(0))
    raises(ValueError, "splits axis 2 of a piece of rank 2", lambda: ep.to_global(np.zeros((2, 3)), pl, S(2)))
    bad = np.zeros((2 + (RANK == 1), 3), np.float32)
    raises(ValueError, "are not the balanced pieces", lambda: ep.to_global(bad, pl, S(0)))
    raises(ValueError, "every rank must give the same sbp", lambda: ep.to_global(np.zeros((2, 3)), pl, S(0) if RANK else B))
    raises(ValueError, "every rank must give the same placement", lambda: ep.to_global(np.zeros((2, 3)), pl if RANK else other, B))
    raises(TypeError, "every piece must have one dtype", lambda: ep.to_global(np.zeros(3, np.float32 if RANK else np.float64), pl, B))
    raises(TypeError, "rank 0: sbp", lambda: ep.to_global(np.zeros(3, bool), pl, P))
    raises(ValueError, "a placement spans all of them", lambda: ep.to_global(np.zeros(3), ep.placement("cpu", [0]), B))
    u = make_global(x, other, S(0))
    raises(ValueError, "expected one placement", lambda: ep.ops.binary("add", t, u))
    raises(TypeError, "b: ndarray is not a GlobalTensor", lambda: ep.ops.binary("add", t, x))
    raises(TypeError, "a: ndarray is not a GlobalTensor", lambda: ep.ops.binary("add", x, t))
    raises(TypeError, "out: unary of global tensors", lambda: ep.ops.unary("relu", t, out=x))
    raises(ValueError, "splits axis 2 of a tensor of rank 2", lambda: t.to_global(sbp=S(2)))
    raises(ValueError, "expected 1, one per hierarchy axis", lambda: t.to_global(sbp=(S(0), B)))
    # An index out of bounds on one rank's piece only: every rank raises it.
    params = make_global(np.ones((5, 2), np.float32), pl, B)
    idx = np.zeros(SIZE, np.int64)
    idx[-1] = 7
    raises(IndexError, f"rank {pl.rank((SIZE - 1,))}: ", lambda: ep.ops.gather(params, make_global(idx, pl, S(0))))
    sparams = make_global(np.ones((5, 2), np.float32), pl, S(0))
    raises(IndexError, "out of range for an axis of size 5", lambda: ep.ops.gather(sparams, make_global(idx, pl, B)))
    # An error other than an index's, raised only where a piece holds elements (the others return
    # early): every rank raises it (an OverflowError left the empty pieces' ranks waiting).
    small = make_global(np.ones((1, 2), np.int8), pl, S(0))  # the last ranks' pieces are empty
    raises(OverflowError, "rank 0: ", lambda: ep.ops.pad(small, (1, 1), 300))
    raises(OverflowError, "rank 0: on_value: 300", lambda: ep.ops.one_hot(make_global(np.zeros(1, np.int64), pl, S(0)), 4, dtype=np.int8, on_value=300))
    # The ranks still agree afterwards.
    np.testing.assert_array_equal(ep.ops.unary("negative", t).numpy(), -x)


def check_agreement() -> None:
    """Ranks that disagree on a collective call's arguments (to_global, boxing, numpy(), every global
    op through ep.ops and global_ops) all raise one ValueError naming the argument, before anything
    is exchanged; dtypes ep does not support are refused at to_global. No rank waits on another."""
    last = SIZE - 1
    odd = RANK == last  # the one rank that calls differently
    pl = ep.placement("cpu", list(range(SIZE)))
    other = ep.placement("cpu", list(reversed(range(SIZE))))
    x = np.arange(SIZE * 2 * 3, dtype=np.float32).reshape(SIZE * 2, 3)
    t = make_global(x, pl, S(0))
    t64 = make_global(x.astype(np.float64), pl, S(0))
    wide = make_global(np.ones((SIZE * 2, 4), np.float32), pl, S(0))
    # Object, string and structured pieces: refused at to_global, on every rank (their bytes are
    # PyObject pointers; boxing them crashed both ranks).
    for dtype in (object, "U3", [("a", "i4"), ("b", "f8")]):
        raises(TypeError, "local: dtype(", lambda: ep.to_global(np.zeros((2, 3), dtype), pl, B))
        raises(TypeError, f"rank {last}: local: dtype(", lambda: ep.to_global(np.zeros((2, 3), dtype if odd else np.float32), pl, B))
    same = "; every rank must give the same"
    # Boxing: S(0) -> B on all but the last rank, S(1) there (rank 0 returned garbage, the other
    # raised mpi4py's bare Exception); also the last rank's sbp equal to the tensor's (no boxing).
    raises(ValueError, f"sbp: rank {last} gave S(1) and rank 0 B{same} sbp to GlobalTensor.to_global", lambda: t.to_global(sbp=S(1) if odd else B))
    raises(ValueError, f"sbp: rank {last} gave S(0) and rank 0 B{same} sbp", lambda: t.to_global(sbp=S(0) if odd else B))
    raises(ValueError, f"placement: rank {last} gave {other!r}", lambda: t.to_global(other if odd else pl, B))
    raises(ValueError, f"self: rank {last} gave a global tensor of shape {wide.shape}", lambda: (wide if odd else t).numpy())
    # Global ops: shapes, dtypes, placements, attributes and out= that differ on one rank.
    u = make_global(x, other, S(0))
    binary = lambda: ep.ops.binary("add", t, wide if odd else t)  # noqa: E731
    raises(ValueError, f"b: rank {last} gave a global tensor of shape {wide.shape} and dtype float32 laid out by (S(0),) on {pl!r} and rank 0", binary)
    raises(ValueError, f"{same} b to ep.ops.binary", binary)
    raises(ValueError, f"x: rank {last} gave a global tensor of shape {t.shape} and dtype float64", lambda: ep.ops.unary("relu", t64 if odd else t))
    raises(ValueError, f"x: rank {last} gave a global tensor of shape {t.shape} and dtype float32 laid out by (S(0),) on {other!r}", lambda: ep.ops.expand(u if odd else t, (2, SIZE * 2, 3)))
    raises(ValueError, f"op: rank {last} gave 'sub' and rank 0 'add'", lambda: ep.ops.binary("sub" if odd else "add", t, t))
    raises(ValueError, f"sbp: rank {last} gave (B,) and rank 0 None", lambda: ep.ops.unary("relu", t, sbp=(B,) if odd else None))
    raises(ValueError, f"out: rank {last} gave a numpy.ndarray of shape {x.shape} and dtype float32 and rank 0 None", lambda: ep.ops.unary("relu", t, out=x if odd else None))
    raises(ValueError, f"sizes: rank {last} gave (3, 1, 1) and rank 0 (2, 1, 1)", lambda: ep.ops.repeat(t, (3, 1, 1) if odd else (2, 1, 1)))
    idx = make_global(np.arange(3), pl, B)
    raises(ValueError, f"axis: rank {last} gave 1 and rank 0 0{same} axis to ep.ops.gather", lambda: ep.ops.gather(t, idx, 1 if odd else 0))
    raises(ValueError, "negative_slope", lambda: ep.ops.unary("leaky_relu", t, negative_slope=0.5 if odd else 0.25))
    # Attributes given as arrays are compared by their values (one rank's dims= array held others),
    # and taken as their values (an array is no key of the signature cache).
    raises(ValueError, f"dims: rank {last} gave a numpy.ndarray of shape (2,) and dtype int64 holding [1, 0]", lambda: ep.ops.permute(wide, np.array([1, 0] if odd else [0, 1])))
    np.testing.assert_array_equal(ep.ops.softmax(wide, dim=np.array(1)).numpy(), ep.ops.softmax(wide.numpy(), dim=1))
    checked[0] += 1
    # Each rank's own ep.fuse function: its expression and constants agree (a differing closure
    # scale gave each rank its own "broadcast" result; a differing expression, a hang).
    scale = 3.0 if odd else 2.0
    raises(ValueError, f"its constants: rank {last} gave", lambda: ep.fuse(lambda a: a * scale)(wide))
    other_fn = ep.fuse(lambda a: ep.ops.unary("relu", a)) if odd else ep.fuse(lambda a: a + a)
    raises(ValueError, f"expression: rank {last} gave", lambda: other_fn(make_global(np.ones(2, np.float32), pl, P)))
    # A rank calling with arguments Python refuses (one too many) raises it on every rank.
    raises(TypeError, f"rank {last}: ", lambda: ep.ops.expand(t, (2, SIZE * 2, 3), *((1,) if odd else ())))
    # The ranks still agree afterwards.
    np.testing.assert_array_equal(ep.ops.binary("add", t, t).numpy(), x + x)


def check_zero_d() -> None:
    """0-d tensors keep their shape through boxing and ops (a host copy made them 1-d)."""
    pl = ep.placement("cpu", list(range(SIZE)))
    for sbp in (B, P):
        t = make_global(np.array(3.5, np.float32), pl, sbp)
        for target in (B, P):
            got = t.to_global(sbp=target)
            assert got.shape == () and got.to_local().shape == (), (sbp, target, got.to_local().shape)
            assert got.numpy().shape == () and got.numpy() == np.float32(3.5), (sbp, target, got.numpy())
            checked[0] += 1
    # -0.0 stays -0.0 into a partial sum: the other ranks' pieces add -0.0, not +0.0.
    signed = np.array([-0.0, 1.0, -0.0, 2.0] * SIZE, np.float32)
    for source in (B, S(0)):
        summed = make_global(signed, pl, source).to_global(sbp=P)
        assert np.signbit(summed.numpy()).tolist() == np.signbit(signed).tolist(), source
        checked[0] += 1
    # amax and amin over a split dim follow the local rule in any order of the ranks: +0.0 is the
    # max of zeros of both signs, -0.0 their min (np.maximum would take the later rank's zero).
    zeros = np.zeros((SIZE * 2, 2), np.float32)
    zeros[SIZE:, 0] = zeros[:SIZE, 1] = -0.0
    for name, negative in [("amax", False), ("amin", True)]:
        got = getattr(ep.ops, name)(make_global(zeros, pl, S(0)), 0, sbp=B).numpy()
        local = getattr(ep.ops, name)(zeros, 0)
        assert np.signbit(got).tolist() == np.signbit(local).tolist() == [negative] * 2, (name, got)
        flags = zeros != 0
        flags[SIZE, 0] = True
        got = getattr(ep.ops, name)(make_global(flags, pl, S(0)), 0, sbp=B).numpy()
        assert got.dtype == np.bool_ and got.tolist() == getattr(np, name[1:])(flags, 0).tolist(), (name, got)
        checked[0] += 1
    v = np.arange(SIZE * 2, dtype=np.float32)
    dot = ep.ops.matmul(make_global(v, pl, S(0)), make_global(v, pl, S(0)))  # S(0) x S(0): a partial sum
    assert dot.shape == () and dot.numpy().shape == () and dot.numpy() == np.matmul(v, v), dot.numpy()
    checked[0] += 1


def check_promotion() -> None:
    """A partial sum that an op promotes is summed in its own dtype first, as NumPy sums the logical
    array: int8 pieces of 100 make -56, which the pieces cast to int32 first would make 200."""
    pl = ep.placement("cpu", list(range(SIZE)))
    logical = (np.full(2, 100, np.int64) * SIZE).astype(np.int8)  # wraps
    a = ep.to_global(np.full(2, 100, np.int8), pl, P)
    b = ep.to_global(np.zeros(2, np.int32) if RANK else np.ones(2, np.int32), pl, P)
    ones = make_global(np.ones(2, np.float32), pl, B)
    cases = {
        "add": (ep.ops.binary("add", a, b), logical.astype(np.int32) + 1),
        "mul": (ep.ops.binary("mul", a, ones), logical.astype(np.float32)),
        "where": (ep.ops.where(make_global(np.array([True, False]), pl, B), a, b), np.where([True, False], logical, 1).astype(np.int32)),
    }
    for name, (got, want) in cases.items():
        assert got.dtype == want.dtype, (name, got.dtype)
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
        checked[0] += 1
    # A bool table split on the gather axis: no partial sum of bool (the table is boxed instead).
    table = np.arange(SIZE * 2 * 2).reshape(SIZE * 2, 2) % 3 == 0
    rows = ep.ops.gather(make_global(table, pl, S(0)), make_global(np.array([0, SIZE * 2 - 1]), pl, B))
    assert P not in rows.sbp and rows.dtype == np.bool_, rows.sbp
    np.testing.assert_array_equal(rows.numpy(), table[[0, SIZE * 2 - 1]])
    checked[0] += 1
    # float16 pieces 2048 and 1 (spread over the other ranks) hold 2048 in float16; in float32, 2049.
    half = ep.to_global(np.array([2048.0 if RANK == 0 else 1.0 / (SIZE - 1)], np.float16), pl, P)
    got = ep.ops.matmul(half, make_global(np.ones((1, 1), np.float32), pl, B))
    np.testing.assert_array_equal(got.numpy(), [2048.0])
    checked[0] += 1


def check_add_n() -> None:
    """ep.ops.add_n of global tensors (a list: same_kind's parameters did not reach into it)."""
    pl = ep.placement("cpu", list(range(SIZE)))
    xs = [np.arange(SIZE * 2 * 3, dtype=np.float32).reshape(SIZE * 2, 3) * (i + 1) for i in range(3)]
    for layouts in ((S(0), S(0), S(0)), (P, P, P), (B, S(1), P)):
        got = ep.ops.add_n([make_global(x, pl, sbp, seed=i) for i, (x, sbp) in enumerate(zip(xs, layouts))])
        np.testing.assert_allclose(got.numpy(), xs[0] + xs[1] + xs[2], rtol=1e-6, err_msg=str(layouts))
        checked[0] += 1
    t = make_global(xs[0], pl, S(0))
    assert ep.ops.add_n([t, t], sbp=B).sbp == (B,)
    raises(TypeError, "arrays[1]: ndarray is not a GlobalTensor", lambda: ep.ops.add_n([t, xs[1]]))
    raises(TypeError, "arrays[1]: has dtype float64; expected float32, as arrays[0] (add_n does not promote)", lambda: ep.ops.add_n([t, make_global(xs[1].astype(np.float64), pl, S(0))]))
    raises(TypeError, "out: add_n of global tensors", lambda: ep.ops.add_n([t, t], out=xs[0]))
    raises(ValueError, f"arrays: rank {SIZE - 1} gave", lambda: ep.ops.add_n([t, t] if RANK == SIZE - 1 else [t, t, t]))


def _on_cuda(x) -> bool:
    """Whether x is a CUDA array (a simulator array has no __cuda_array_interface__)."""
    return not isinstance(x, np.ndarray) and hasattr(x, "copy_to_host")


def check_cuda() -> None:
    """CUDA pieces (the simulator without a GPU) go through host buffers: boxing along each hierarchy
    axis, and a global op through ep.ops, give CUDA pieces equal to NumPy's."""
    from numba import cuda

    from ep.common.runtime.device import cuda_available

    if not cuda_available():
        return
    rng = np.random.default_rng(4)
    x = rng.integers(-9, 10, (SIZE + 1, 3)).astype(np.float32)
    for placement in [ep.placement("cuda", list(range(SIZE)))] + ([ep.placement("cuda", [[0, 1], [2, 3]])] if SIZE == 4 else []):
        h = len(placement.hierarchy)
        for sbp_in, sbp_out in [((S(0),) * h, (B,) * h), ((P,) * h, (S(1),) * h), ((S(1),) * h, (S(0),) * h), ((B,) * h, (P,) * h)]:
            piece = split_array(x, sbp_in, placement, np.random.default_rng(5))[my_index(placement)]
            t = ep.to_global(cuda.to_device(np.ascontiguousarray(piece)), placement, sbp_in)
            u = t.to_global(sbp=sbp_out)
            assert _on_cuda(u.to_local()), (sbp_in, sbp_out)
            if P not in sbp_out:
                want = split_array(x, sbp_out, placement)[my_index(placement)]
                np.testing.assert_array_equal(u.to_local().copy_to_host(), want, err_msg=f"{sbp_in} -> {sbp_out}")
            np.testing.assert_array_equal(u.numpy(), x, err_msg=f"{sbp_in} -> {sbp_out}")
            checked[0] += 1
        if h == 1:
            lo, hi = ep.sbp.balanced_split(SIZE + 1, SIZE)[RANK]
            params = ep.to_global(cuda.to_device(np.ascontiguousarray(x[lo:hi])), placement, S(0))
            idx = np.array([SIZE, 0, 1, SIZE])
            rows = ep.ops.gather(params, ep.to_global(cuda.to_device(idx), placement, B))
            assert rows.sbp == (P,) and _on_cuda(rows.to_local())
            np.testing.assert_array_equal(rows.numpy(), x[idx])
            checked[0] += 1


def check_extremes() -> None:
    """cummax and cummin (two outputs) under each nd-signature, along a split dim too (continued from
    the parts before: ties to the later index, the latest NaN), against torch's, values and indices."""
    import torch

    rng = np.random.default_rng(9)
    for placement in placements():
        for dtype in (np.float32, np.int32):
            x = rng.integers(-2, 3, (SIZE + 3, 3)).astype(dtype)
            if dtype == np.float32:
                x[1, 1] = x[SIZE + 1, 1] = np.nan
            for dim in (0, 1):
                for seed, sig in enumerate(nd_signatures("cummax", placement, x=x.shape, dim=dim)):
                    t = make_global(x, placement, sbp_of(sig, "x"), seed)
                    for name in ("cummax", "cummin"):
                        before = boxing.received[0]
                        out = getattr(ep.ops, name)(t, dim)
                        assert boxing.received[0] == before and out.values.sbp == sbp_of(sig, "out[0]"), (name, sig)
                        want = getattr(torch, name)(torch.from_numpy(x), dim)
                        np.testing.assert_array_equal(out.values.numpy(), want.values.numpy(), err_msg=f"{name} {sig}")
                        np.testing.assert_array_equal(out.indices.numpy(), want.indices.numpy(), err_msg=f"{name} {sig}")
                        checked[0] += 1


PARTS = {"boxing": check_boxing, "extremes": check_extremes, "packed": check_boxing_packed, "ops": check_ops, "fuse": check_fuse, "cost": check_cost_model, "errors": check_errors, "zero_d": check_zero_d, "promotion": check_promotion, "add_n": check_add_n, "agreement": check_agreement, "cuda": check_cuda}

if __name__ == "__main__":
    for part in sys.argv[1:] or PARTS:
        PARTS[part]()
    comm.Barrier()
    print(f"ok {checked[0]} rank {RANK}/{SIZE}", flush=True)
