"""out= overlapping an input gives NumPy's answer: as if every input were read before out is
written. Inputs and out are shifted views of one buffer, on both devices."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.testing import to_device, to_numpy

# A buffer of int64 values in [0, M): any view of it is valid indices for params of M rows.
M, N = 6, 40


def buffer(device):
    host = np.arange(N, dtype=np.int64) * 7 % M
    return host, to_device(host, device)


def view(array, start, shape):
    size = int(np.prod(shape))
    return array[start : start + size].reshape(shape)


def check(device, host, base, out_start, expected, call):
    """call() writes expected into base at out_start; every other element stays as it was."""
    call()
    after = to_numpy(base)
    want = host.copy()
    want[out_start : out_start + expected.size] = expected.reshape(-1)
    np.testing.assert_array_equal(after, want)


starts = st.integers(0, 16)
SETTINGS = settings(max_examples=25, deadline=None)


@SETTINGS
@given(x_start=starts, out_start=starts, n=st.integers(1, 20))
def test_unary(device, x_start, out_start, n):
    host, base = buffer(device)
    x, out = view(base, x_start, (n,)), view(base, out_start, (n,))
    expected = np.negative(view(host, x_start, (n,)))
    check(device, host, base, out_start, expected, lambda: ep.ops.unary("negative", x, out=out))


@SETTINGS
@given(a_start=starts, b_start=starts, out_start=starts, rows=st.integers(1, 4), row_a=st.booleans())
def test_binary(device, a_start, b_start, out_start, rows, row_a):
    host, base = buffer(device)
    shape = (rows, 5)
    a_shape = (1, 5) if row_a else shape  # a broadcast row overlapping out, as binary(add, o[0:1], y, out=o)
    a, b, out = view(base, a_start, a_shape), view(base, b_start, shape), view(base, out_start, shape)
    expected = view(host, a_start, a_shape) - view(host, b_start, shape)
    check(device, host, base, out_start, expected, lambda: ep.ops.binary("sub", a, b, out=out))


@SETTINGS
@given(p_start=starts, i_start=starts, out_start=starts, n=st.integers(1, 12))
def test_gather(device, p_start, i_start, out_start, n):
    host, base = buffer(device)
    params, indices, out = view(base, p_start, (M,)), view(base, i_start, (n,)), view(base, out_start, (n,))
    expected = view(host, p_start, (M,))[view(host, i_start, (n,))]
    check(device, host, base, out_start, expected, lambda: ep.ops.gather(params, indices, out=out))


@SETTINGS
@given(p_start=starts, i_start=starts, out_start=starts, n=st.integers(1, 4))
def test_batch_gather(device, p_start, i_start, out_start, n):
    host, base = buffer(device)
    params, indices, out = view(base, p_start, (2, M)), view(base, i_start, (2, n)), view(base, out_start, (2, n))
    expected = np.take_along_axis(view(host, p_start, (2, M)), view(host, i_start, (2, n)), axis=1)
    check(device, host, base, out_start, expected, lambda: ep.ops.batch_gather(params, indices, out=out))


@SETTINGS
@given(x_start=starts, out_start=starts, n=st.integers(1, 8))
def test_expand(device, x_start, out_start, n):
    host, base = buffer(device)
    x, out = view(base, x_start, (1, n)), view(base, out_start, (3, n))
    expected = np.broadcast_to(view(host, x_start, (1, n)), (3, n))
    check(device, host, base, out_start, expected, lambda: ep.ops.expand(x, (3, n), out=out))


@SETTINGS
@given(x_start=starts, out_start=starts, n=st.integers(1, 8))
def test_repeat(device, x_start, out_start, n):
    host, base = buffer(device)
    x, out = view(base, x_start, (n,)), view(base, out_start, (3 * n,))
    expected = np.tile(view(host, x_start, (n,)), 3)
    check(device, host, base, out_start, expected, lambda: ep.ops.repeat(x, (3,), out=out))


def test_gather_into_its_own_params(device):
    host = np.arange(10, dtype=np.float32) * 3
    params = to_device(host, device)
    perm = to_device(np.random.default_rng(0).permutation(10), device)
    assert ep.ops.gather(params, perm, out=params) is params
    np.testing.assert_array_equal(to_numpy(params), host[to_numpy(perm)])


def test_exact_in_place_is_copy_free(monkeypatch, device):
    # The elementwise ops run in place when out is the input, element for element.
    from ep.common.primitive import operands

    def no_copy(*args, **kwargs):
        raise AssertionError("an exact in-place call was copied")

    monkeypatch.setattr(operands, "contiguous", no_copy)
    host = np.arange(-4, 8, dtype=np.float32).reshape(3, 4)
    x = to_device(host, device)
    assert ep.ops.unary("relu", x, out=x) is x
    same = x[:]  # another object for the same elements
    ep.ops.binary("mul", same, x, out=x)
    ep.ops.binary("add", x, 1.0, out=same)
    np.testing.assert_array_equal(to_numpy(x), np.maximum(host, 0) ** 2 + 1)


def test_disjoint_views_of_one_buffer_are_not_copied(monkeypatch, device):
    from ep.common.primitive import operands

    copies = []
    real = operands.contiguous
    monkeypatch.setattr(operands, "contiguous", lambda *a, **k: copies.append(k) or real(*a, **k))
    base = to_device(np.arange(20, dtype=np.float32), device)
    ep.ops.binary("add", base[:10], base[:10], out=base[10:])
    ep.ops.unary("negative", base[:10], out=base[10:])
    ep.ops.gather(base[:10], to_device(np.arange(10), device), out=base[10:])
    assert copies == []
    np.testing.assert_array_equal(to_numpy(base)[10:], np.arange(10))
