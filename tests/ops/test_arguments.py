"""Bad arguments to ep.ops and to New get errors naming the caller's argument, on every call
(cache hits included); the ops' caches stay bounded whatever attribute values arrive."""
import importlib
import inspect
import math

import numpy as np
import pytest

import ep
from ep.common.runtime.plan_cache import MAX_ENTRIES
from ep.include.primitive import primitive as primitive_module
from ep.common.runtime.device import DeviceType
from ep.include.primitive.primitive import GetFactory
from ep.testing import to_device, to_numpy

# The modules, not the functions ep.ops exports under the same names.
unary_module, binary_module, gather_module = (importlib.import_module(f"ep.ops.{m}") for m in ("unary", "binary", "gather"))

# Attributes are real numbers: Python or NumPy ints and floats; bool is not a number here (a
# slope of True is a mistake), nor are containers or strings.


def test_attribute_checks_run_on_every_call(device):
    x = to_device(np.linspace(-2, 2, 8, dtype=np.float32), device)
    for good, bad in ((1, True), (1, np.bool_(True)), (0.5, [0.5]), (2, "2")):
        ep.ops.unary("leaky_relu", x, good)
        for _ in range(2):  # the second call would be a cache hit
            with pytest.raises(TypeError, match="attr0: negative_slope of kLeakyRelu must be a number"):
                ep.ops.unary("leaky_relu", x, bad)
    a = to_device(np.ones(4, np.float32), device)
    ep.ops.binary("is_close", a, a, 1e-3)
    for _ in range(2):
        with pytest.raises(TypeError, match="attr0: atol of kIsClose must be a number"):
            ep.ops.binary("is_close", a, a, True)
        with pytest.raises(TypeError, match="attr0: atol of kIsClose must be a number"):
            ep.ops.binary("is_close", a, a, [1e-3])


def test_unhashable_op_and_attributes_are_named(device):
    x = to_device(np.ones(4, np.float32), device)
    with pytest.raises(TypeError, match=r"op: \['relu'\] is not a unary op"):
        ep.ops.unary(["relu"], x)
    with pytest.raises(TypeError, match=r"op: \['add'\] is not a binary op"):
        ep.ops.binary(["add"], x, x)
    with pytest.raises(TypeError, match="attr1: threshold of kSoftPlus must be a number"):
        ep.ops.unary("soft_plus", x, 1.0, {})
    with pytest.raises(ValueError, match=r"attr0: kAdd takes no attributes; got \[1\]"):
        ep.ops.binary("add", x, x, [1])


def test_huge_integers_are_named(device):
    x = to_device(np.ones(4, np.float32), device)
    huge = 10**400
    with pytest.raises(OverflowError, match="attr0: negative_slope of kLeakyRelu is 1000"):
        ep.ops.unary("leaky_relu", x, huge)
    with pytest.raises(OverflowError, match="attr1: rtol of kIsClose is 1000"):
        ep.ops.binary("is_close", x, x, 1e-8, huge)
    with pytest.raises(OverflowError, match="attr0: negative_slope of kLeakyRelu"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "leaky_relu", np.float32, np.float32, huge)
    with pytest.raises(ValueError, match=r"sizes\[0\]: 1000.* does not fit in int64"):
        ep.ops.expand(x, (huge, 4))
    with pytest.raises(ValueError, match=r"sizes\[0\]: 1000.* does not fit in int64"):
        ep.ops.repeat(x, (huge,))
    with pytest.raises(ValueError, match="axis: 1000.* is out of range"):
        ep.ops.gather(x, to_device(np.zeros(2, np.int64), device), huge)
    with pytest.raises(ValueError, match=r"params_shape\[0\]: 1000.* does not fit in int64"):
        ep.ops.gather_grad(x, to_device(np.zeros(4, np.int64), device), (huge,))


@pytest.mark.parametrize("sizes", [(2**40, 2**40), (2**31, 2**31), (2**61, 1), (2**40, 2**40, 0)])
def test_a_result_too_large_names_sizes(device, sizes):
    # NumPy's rule (np.empty refuses the same shapes); the caller passed sizes, not out.
    x = to_device(np.ones((1, 1), np.float32), device)
    with pytest.raises(ValueError):
        np.empty(sizes, np.float32)
    with pytest.raises(ValueError, match=r"sizes: gives shape \(.*\) of float32, \d+ bytes; expected an array of at most 2\*\*63 - 1 bytes"):
        ep.ops.repeat(x, sizes)
    with pytest.raises(ValueError, match=r"sizes: gives shape \(.*\) of float32"):
        ep.ops.expand(x, sizes)


def test_a_result_no_array_can_have_names_the_argument_that_gave_its_shape(device):
    # The caller passed no out=: the error names the argument whose value gave the result's shape.
    index = lambda *v: to_device(np.array(v, np.int64), device)  # noqa: E731
    cases = [
        (lambda: ep.ops.one_hot(index(1, 2), 2**62), "num_classes"),
        (lambda: ep.ops.pad(to_device(np.arange(5.0), device), (2**62, 2**62)), "pad"),
        (lambda: ep.ops.full((2**62, 0, 2**62), 1, device=device), "shape"),
        (lambda: ep.ops.gather_grad(to_device(np.ones(2), device), index(0, 0), (2**62,)), "params_shape"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=rf"^{name}: gives shape \(.*\) of \w+, which no array can have here"):
            call()


def test_one_hot_of_negative_indices_names_the_first(device):
    # num_classes=-1 infers no classes from indices all below 0: the first is out of range, by name.
    with pytest.raises(IndexError, match=r"indices\[0\] = -5 is out of range"):
        result = ep.ops.one_hot(to_device(np.array([-5, -3], np.int64), device))
        ep.GetDevice(device).default_stream.Sync()
        del result


@pytest.mark.parametrize(
    "factory, args, named",
    [
        ("UnsortedSegmentSumFactory", ("float32", "complex64"), "segment_ids_dtype"),
        ("UnsortedSegmentSumFactory", ("complex64", "int32"), "data_dtype"),
        ("GatherFactory", ("float32", "complex64"), "indices_dtype"),
        ("GatherFactory", ("complex64", "int32"), "params_dtype"),
        ("BatchGatherFactory", ("float32", "complex64"), "indices_dtype"),
        ("BatchGatherFactory", ("complex64", "int32"), "params_dtype"),
        ("ExpandFactory", ("complex64",), "dtype"),
        ("ExpandGradFactory", ("complex64",), "dtype"),
        ("ElementwiseUnaryFactory", ("relu", "complex64", "float32"), "src_dtype"),
        ("ElementwiseUnaryFactory", ("relu", "float32", "complex64"), "dst_dtype"),
        ("BroadcastElementwiseBinaryFactory", ("add", "complex64", "float32"), "src_dtype"),
        ("BroadcastElementwiseBinaryFactory", ("add", "float32", "complex64"), "dst_dtype"),
    ],
)
def test_factory_errors_name_the_parameter_of_new(device, factory, args, named):
    # Each name is a parameter of that factory's New, so the caller can find what was wrong.
    factory = getattr(ep, factory)
    assert named in inspect.signature(factory.New).parameters
    with pytest.raises(TypeError, match=f"^{named}: "):
        ep.NewPrimitive(factory, device, *args)


def test_none_is_not_a_dtype(device):
    for args in (("relu", None, None), ("relu", np.float32, None)):
        with pytest.raises(TypeError, match=r"(src|dst)_dtype: None is not a supported data type"):
            ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, *args)
    with pytest.raises(TypeError, match="src_dtype: None"):
        ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, "add", None, np.float32)
    with pytest.raises(TypeError, match="dtype: kCast needs a destination dtype"):
        ep.ops.unary("cast", to_device(np.ones(2, np.float32), device), dtype=None)
    assert ep.DataType._missing_(None) is None


def test_non_shape_arguments_are_named(device):
    dy = to_device(np.ones(3, np.float32), device)
    indices = to_device(np.arange(3), device)
    with pytest.raises(TypeError, match="params_shape: 10 is not a sequence of sizes"):
        ep.ops.gather_grad(dy, indices, 10)
    with pytest.raises(ValueError, match=r"params_shape\[0\]: -1 is negative"):
        ep.ops.gather_grad(dy, indices, (-1,))
    with pytest.raises(TypeError, match="axis: 'a' is not an integer"):
        ep.ops.gather(dy, indices, "a")
    with pytest.raises(TypeError, match="sizes: 4 is not a sequence of ints"):
        ep.ops.expand(dy, 4)
    with pytest.raises(TypeError, match="input_shape: 3 is not a sequence of sizes"):
        ep.ops.expand_grad(dy, 3)
    with pytest.raises(TypeError, match="x: list is not an array"):
        ep.ops.unary("relu", [1.0])
    with pytest.raises(TypeError, match="b: list is not an array"):
        ep.ops.binary("add", dy, [1.0])


def _out_errors(device, call, shape, dtype):
    """call(out) names out (never dst) for a misshapen and a mistyped 1-d out, C-contiguous or
    strided (which is written through a new result), and writes a strided one."""
    other = np.float64 if np.dtype(dtype) != np.float64 else np.float32
    for step in (1, 2):
        with pytest.raises(ValueError, match=r"out: has shape"):
            call(to_device(np.zeros((step * (shape[0] + 1),), dtype), device)[::step])
        with pytest.raises(TypeError, match=r"out: has dtype"):
            call(to_device(np.zeros((step * shape[0],), other), device)[::step])
    strided = to_device(np.zeros(2 * shape[0], dtype), device)
    assert call(strided[::2]) is not None
    np.testing.assert_array_equal(to_numpy(strided)[::2], to_numpy(call(None)))
    assert not to_numpy(strided)[1::2].any()


def test_out_errors_name_out(device):
    x = to_device(np.ones(4, np.float32), device)
    i = to_device(np.arange(4), device)
    calls = [
        (lambda out: ep.ops.unary("relu", x, out=out), (4,), np.float32),
        (lambda out: ep.ops.binary("add", x, x, out=out), (4,), np.float32),
        (lambda out: ep.ops.binary("add", x, 1, out=out), (4,), np.float32),
        (lambda out: ep.ops.gather(x, i, out=out), (4,), np.float32),
        (lambda out: ep.ops.expand(x, (4,), out=out), (4,), np.float32),
        (lambda out: ep.ops.expand_grad(x, (4,), out=out), (4,), np.float32),
        (lambda out: ep.ops.repeat(x, (1,), out=out), (4,), np.float32),
    ]
    for call, shape, dtype in calls:
        _out_errors(device, call, shape, dtype)
    readonly = np.zeros(4, np.float32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="out: the array is read-only"):
        ep.ops.unary("relu", np.ones(4, np.float32), out=readonly)


def _cache_sizes():
    return (len(unary_module._PRIMITIVES), len(binary_module._RULES), len(gather_module._GATHER_OPS), len(primitive_module._PRIMITIVES))


def _factory_cache(factory_type):
    return len(GetFactory(factory_type, DeviceType.kCPU)._primitives._entries)


def test_caches_stay_bounded():
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    for i in range(20_000):
        ep.ops.unary("leaky_relu", x, 0.5 + i * 1e-6)
        ep.ops.binary("is_close", x, x, 1e-8, 1e-5 + i * 1e-9)
    for _ in range(5_000):
        ep.ops.unary("leaky_relu", x, float("nan"))
        ep.ops.binary("is_close", x, x, float("nan"))
    for size in _cache_sizes():
        assert size <= MAX_ENTRIES
    for factory in (ep.ElementwiseUnaryFactory, ep.BroadcastElementwiseBinaryFactory):
        assert _factory_cache(factory) <= MAX_ENTRIES
    assert math.isnan(ep.ops.unary("leaky_relu", np.array([-1.0], np.float32), float("nan"))[0])


def test_errors_about_a_copied_operand_or_out_name_the_callers_argument(device):
    # Operands are copied (contiguous) before the launch, and out= is checked before it: an error
    # there names the caller's argument, not the primitive's (x, dst).
    from ep.common.runtime.device import available_device_types

    d = to_device(np.arange(12, dtype=np.float32).reshape(3, 4), device)
    # Reversed operands are read as NumPy reads them (on cuda: turned around, copied, turned back).
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(to_numpy(ep.ops.binary("add", d, d[:, ::-1])), host + host[:, ::-1])
    np.testing.assert_array_equal(to_numpy(ep.ops.gather(d, to_device(np.array([2, 1, 0]), device)[::-1])), host)
    others = [t.value for t in available_device_types() if t.value != device]
    for other in others:
        wrong = to_device(np.empty((3, 4), np.float32), other)
        for call in (lambda: ep.ops.unary("negative", d, out=wrong), lambda: ep.ops.binary("add", d, 1.0, out=wrong),
                     lambda: ep.ops.gather(d, to_device(np.array([0, 1, 2]), device), out=wrong)):
            with pytest.raises(TypeError, match=rf"^out: is on {other}; expected an array on {device}"):
                call()


def test_an_out_with_only_a_cuda_array_interface_is_checked_through_it(device):
    # check_out read out.shape, which such an object need not have (an AttributeError).
    if device != "cuda":
        pytest.skip("a __cuda_array_interface__ object is a cuda array")

    class Interface:
        def __init__(self, read_only):
            self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0x10000, read_only), "version": 3, "strides": None}

    from numba import config

    x = to_device(np.arange(4, dtype=np.float32), device)
    for call in (lambda out: ep.ops.unary("negative", x, out=out), lambda out: ep.ops.binary("add", x, 1.0, out=out)):
        with pytest.raises(ValueError, match=r"^out: the array is read-only"):
            call(Interface(True))
        if config.ENABLE_CUDASIM:  # the simulator views no foreign memory (a GPU would write 0x10000)
            with pytest.raises(TypeError, match=r"^out: Interface is not an array of the CUDA simulator"):
                call(Interface(False))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: ep.ops.permute(x, {2, 0, 1}),
        lambda x: ep.ops.pad(x, {1, 0}),
        lambda x: ep.ops.expand(x, {2, 3, 4}),
        lambda x: ep.ops.repeat(x, {1, 2, 3}),
        lambda x: ep.ops.full({2: 1}, 1.0),
    ],
    ids=["permute", "pad", "expand", "repeat", "full"],
)
def test_a_set_or_dict_is_no_sequence_of_dims(device, call):
    # A set iterates in its own order: permute(x, {2, 0, 1}) returned x unpermuted, silently.
    x = to_device(np.arange(24, dtype=np.float32).reshape(2, 3, 4), device)
    with pytest.raises(TypeError, match="is a (set|dict), not a sequence of"):
        call(x)


@pytest.mark.parametrize(
    "call, named",
    [
        (lambda x, bad: ep.ops.cumsum(bad, 0), "x"),
        (lambda x, bad: ep.ops.cummax(x=bad, dim=0), "x"),
        (lambda x, bad: ep.ops.logcumsumexp(bad, 0, out=x), "x"),
        (lambda x, bad: ep.ops.unary("relu", bad), "x"),
        (lambda x, bad: ep.ops.binary("add", x, bad), "b"),
        (lambda x, bad: ep.ops.sum(bad), "x"),
        (lambda x, bad: ep.ops.where(x > 0, bad, x), "x"),
        (lambda x, bad: ep.ops.matmul(bad, x), "a"),
        (lambda x, bad: ep.ops.cat([x, bad]), r"tensors\[1\]"),
        (lambda x, bad: ep.ops.stack([bad, x]), r"tensors\[0\]"),
    ],
    ids=["cumsum", "cummax-keyword", "logcumsumexp-out", "unary", "binary", "sum", "where", "matmul", "cat", "stack"],
)
@pytest.mark.parametrize("bad", [[1.0, 2.0], (1.0, 2.0), "12"], ids=["list", "tuple", "str"])
def test_a_list_where_an_array_goes_is_a_type_error_naming_it(device, call, named, bad):
    # As torch refuses a list for a tensor: cumsum and cat read its .dtype and .shape (AttributeError).
    x = to_device(np.ones(2, np.float32), device)
    with pytest.raises(TypeError, match=f"^{named}: {type(bad).__name__} is not an array"):
        call(x, bad)


def test_a_float_matmul_that_cannot_run_is_refused_before_any_cast(device, monkeypatch):
    from cublas import missing

    why = missing(device)
    if why is None:
        pytest.skip(f"float matmul runs on {device} here")
    matmul_module = importlib.import_module("ep.ops.matmul")
    casts = []
    monkeypatch.setattr(matmul_module, "unary", lambda *args, **kwargs: casts.append(args))
    a, b = to_device(np.ones((2, 3), np.int32), device), to_device(np.ones((3, 2), np.float32), device)
    with pytest.raises(TypeError, match="no matmul of float64 runs on cuda here") as error:
        ep.ops.matmul(a, b)
    assert why in str(error.value) and casts == []
