"""Bad and edge inputs to every ep.ops entry point: wrong types, dtypes and devices, edge layouts,
subclasses, extreme integers. Errors name the argument; inputs never change; results match NumPy.
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ep import ops
from ep.testing import to_device, to_numpy
from guards import FAST, GUARD, Guarded, digest, expect_error, misaligned_copy

X = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
INDICES = np.array([2, 0, -1], np.int64)

# Each entry point with its array arguments: name -> (call(**arrays), the arguments, a NumPy reference).
ENTRY_POINTS = {
    "unary": (lambda x: ops.unary("relu", x), {"x": X}, lambda x: np.maximum(x, 0)),
    "binary": (lambda a, b: ops.binary("add", a, b), {"a": X, "b": X[:1]}, lambda a, b: a + b),
    "gather": (lambda params, indices: ops.gather(params, indices, axis=1), {"params": X, "indices": INDICES},
               lambda params, indices: np.take(params, indices, axis=1)),
    "batch_gather": (lambda params, indices: ops.batch_gather(params, indices), {"params": X, "indices": np.array([[1, 0], [3, 3], [0, 2]])},
                     lambda params, indices: np.take_along_axis(params, indices, axis=1)),
    "gather_grad": (lambda dy, indices: ops.gather_grad(dy, indices, (3, 4), axis=1), {"dy": X[:, :3], "indices": INDICES},
                    lambda dy, indices: _segment_sum(dy, indices)),
    "expand": (lambda x: ops.expand(x, (2, 3, 4)), {"x": X}, lambda x: np.broadcast_to(x, (2, 3, 4))),
    "expand_grad": (lambda dy: ops.expand_grad(dy, (1, 4)), {"dy": X}, lambda dy: dy.sum(axis=0, keepdims=True)),
    "repeat": (lambda x: ops.repeat(x, (2, 1)), {"x": X}, lambda x: np.tile(x, (2, 1))),
}


def _segment_sum(dy, indices):
    out = np.zeros((3, 4), dy.dtype)
    np.add.at(out, (slice(None), indices % 4), dy)
    return out


def _other_device(device):
    return "cuda" if device == "cpu" else "cpu"


BAD_TYPES = [None, [1.0, 2.0], "ab", object(), 3.5]
BAD_DTYPES = [np.complex64, object, np.dtype("M8[s]"), np.dtype([("a", "<f4")])]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@FAST
@given(data=st.data())
def test_wrong_type_dtype_or_device_is_named(device, entry, data):
    call, arrays, _ = ENTRY_POINTS[entry]
    name = data.draw(st.sampled_from(sorted(arrays)), label="argument")
    args = {k: to_device(v, device) for k, v in arrays.items()}
    # An op of one array runs on that array's device: a wrong device needs two arrays.
    how = data.draw(st.sampled_from(["type", "dtype", "device"] if len(arrays) > 1 else ["type", "dtype"]), label="what is wrong")
    if how == "type":
        bad = data.draw(st.sampled_from(BAD_TYPES), label="value")
        # binary takes a Python scalar as an operand.
        if entry == "binary" and isinstance(bad, float):
            bad = None
        error = TypeError
    elif how == "dtype":
        dtype = data.draw(st.sampled_from(BAD_DTYPES), label="dtype")
        if device != "cpu" and np.dtype(dtype).hasobject:
            dtype = np.complex64  # no object arrays on a GPU
        bad, error = to_device(np.zeros(arrays[name].shape, dtype), device), TypeError
    else:
        bad, error = to_device(arrays[name], _other_device(device)), TypeError
    args[name] = bad
    before = {k: digest(v) for k, v in args.items()}
    expect_error(lambda: call(**args), error, (name,))
    assert {k: digest(v) for k, v in args.items()} == before


def _layout(label, host, device):
    """host in one edge layout on device (the same values)."""
    if label == "misaligned":
        return misaligned_copy(host, device) if device == "cpu" else None
    if label == "non-contiguous":
        wide = np.zeros(host.shape[:-1] + (2 * host.shape[-1],), host.dtype) if host.ndim else None
        if wide is None:
            return to_device(host, device)
        every_other = (slice(None),) * (wide.ndim - 1) + (slice(None, None, 2),)  # numba's arrays take no Ellipsis
        wide[every_other] = host
        return to_device(wide, device)[every_other]
    if device != "cpu":
        return to_device(host, device)
    if label == "read-only":
        copy = host.copy()
        copy.flags.writeable = False
        return copy
    if label == "broadcast (stride 0)":
        return np.broadcast_to(host[:1], host.shape) if host.shape[:1] == (1,) else host.copy()
    if label == "matrix" and host.ndim == 2:
        return np.matrix(host)
    if label == "subclass":
        return host.copy().view(_Tagged)
    return host.copy()


class _Tagged(np.ndarray):
    pass


LAYOUTS = ["plain", "non-contiguous", "read-only", "broadcast (stride 0)", "matrix", "subclass", "misaligned"]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("entry", ENTRY_POINTS)
@FAST
@given(data=st.data())
def test_edge_layouts_give_numpy_results_and_leave_inputs_alone(device, entry, data):
    call, arrays, reference = ENTRY_POINTS[entry]
    args, misaligned = {}, []
    for name, host in arrays.items():
        label = data.draw(st.sampled_from(LAYOUTS), label=name)
        args[name] = _layout(label, host, device)
        if args[name] is None:
            args[name] = misaligned_copy(host, device)
            misaligned.append(name)
    if misaligned:
        # A misaligned cuda array is refused, naming the op's argument.
        expect_error(lambda: call(**args), ValueError, tuple(misaligned))
        return
    before = {k: digest(v) for k, v in args.items()}
    result = to_numpy(call(**args))
    np.testing.assert_array_equal(result, reference(**arrays))
    assert {k: digest(v) for k, v in args.items()} == before


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_zero_size_inputs(device, entry):
    call, arrays, reference = ENTRY_POINTS[entry]
    if entry in ("gather_grad", "batch_gather", "expand_grad", "expand"):
        pytest.skip("their shapes tie the inputs together; the Launch-level suite covers zero sizes")
    empty = {k: v[:0] if k != "indices" else v[:0] for k, v in arrays.items()}
    if entry == "binary":
        empty = {"a": X[:0], "b": X[:1]}
    if entry == "gather":
        empty = {"params": X, "indices": INDICES[:0]}
    np.testing.assert_array_equal(to_numpy(call(**{k: to_device(v, device) for k, v in empty.items()})), reference(**empty))


INTEGER_ARGUMENTS = {
    "axis": lambda v: ops.gather(X, INDICES, axis=v),
    "batch_dims": lambda v: ops.gather(X, INDICES, batch_dims=v),
    "sizes": lambda v: ops.expand(X[:1], (v, 4)),
    "sizes ": lambda v: ops.repeat(X, (v, 1)),
    "params_shape": lambda v: ops.gather_grad(X[:, :3], INDICES, (3, v), axis=1),
    "input_shape": lambda v: ops.expand_grad(X, (v, 4)),
}
# (value, error)
BAD_INTEGERS = [(None, TypeError), ("0", TypeError), (1.0, TypeError), (True, TypeError), (math.nan, TypeError),
                (math.inf, TypeError), (np.float64(1), TypeError), (1 << 63, ValueError), (10**400, ValueError)]


@FAST
@given(argument=st.sampled_from(sorted(INTEGER_ARGUMENTS)), bad=st.sampled_from(BAD_INTEGERS))
def test_bad_integer_arguments_are_named(argument, bad):
    value, error = bad
    expect_error(lambda: INTEGER_ARGUMENTS[argument](value), error, (argument.strip(),))


@pytest.mark.parametrize("entry", ["unary", "binary", "gather", "expand"])
def test_out_is_written_and_nothing_around_it(device, entry):
    call, arrays, reference = ENTRY_POINTS[entry]
    expected = reference(**arrays)
    out = Guarded(device, expected.dtype, expected.size)
    args = {k: to_device(v, device) for k, v in arrays.items()}
    kwargs = {"out": out.middle.reshape(expected.shape)}
    if entry == "unary":
        ops.unary("relu", args["x"], **kwargs)
    elif entry == "binary":
        ops.binary("add", args["a"], args["b"], **kwargs)
    elif entry == "gather":
        ops.gather(args["params"], args["indices"], axis=1, **kwargs)
    else:
        ops.expand(args["x"], (2, 3, 4), **kwargs)
    out.check_guards()
    np.testing.assert_array_equal(out.value().reshape(expected.shape), expected)
    assert GUARD > 0
