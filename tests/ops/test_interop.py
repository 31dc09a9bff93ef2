"""Other libraries' arrays: ep.ops and Launch take any DLPack array without a copy, and ep.ops give
back the caller's kind. `Boxed`, a minimal DLPack-only array, runs everywhere; PyTorch, JAX and
CuPy cases run where those are installed (CUDA ones on a GPU) and skip with the reason otherwise."""
from __future__ import annotations

import importlib.util
import types

import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy

RNG = np.random.default_rng(10)


class DlpackOnly:
    """A DLPack producer of no library: its module (this test file) has no from_dlpack."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class Boxed(DlpackOnly):
    """Another library's CPU array with nothing but DLPack and a namespace: what ep may rely on."""

    def __array_namespace__(self, api_version=None):
        return BOXED


BOXED = types.SimpleNamespace(from_dlpack=lambda x: Boxed(np.from_dlpack(x)))


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _cuda_torch() -> bool:
    if not _installed("torch"):
        return False
    import torch

    return torch.cuda.is_available()


def _cuda_cupy() -> bool:
    if not _installed("cupy"):
        return False
    import cupy

    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except cupy.cuda.runtime.CUDARuntimeError:
        return False


# kind -> (device it lives on, whether it can run here, why not, NumPy -> that kind, its array type)
def _torch(host, device):
    import torch

    return torch.from_numpy(host.copy()) if device == "cpu" else torch.as_tensor(host, device="cuda")


def _jax(host, device):
    import jax.numpy as jnp

    return jnp.asarray(host)


def _cupy(host, device):
    import cupy

    return cupy.asarray(host)


KINDS = {
    "boxed": ("cpu", lambda: True, "", lambda host, device: Boxed(host.copy()), lambda: Boxed),
    "torch": ("cpu", lambda: _installed("torch"), "PyTorch is not installed", _torch, lambda: __import__("torch").Tensor),
    "jax": ("cpu", lambda: _installed("jax"), "JAX is not installed", _jax, lambda: __import__("jax").Array),
    "torch-cuda": ("cuda", _cuda_torch, "needs PyTorch with CUDA and a GPU", _torch, lambda: __import__("torch").Tensor),
    "cupy": ("cuda", _cuda_cupy, "needs CuPy and a GPU", _cupy, lambda: __import__("cupy").ndarray),
}


def kind_for(name: str, device: str):
    """(NumPy -> kind, kind's type) for a kind that lives on device, or a skip saying why not."""
    where, available, reason, make, array_type = KINDS[name]
    if where != device:
        pytest.skip(f"{name} arrays live on {where}, not {device}")
    if not available():
        pytest.skip(reason)
    return make, array_type()


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def indices(high, *shape):
    return RNG.integers(0, high, shape).astype(np.int32)


# One call per ops function: (NumPy inputs, call(ops, *inputs), NumPy reference(*inputs)).
def _segment_sum(dy, idx, n):
    dx = np.zeros((n, dy.shape[1]), dy.dtype)
    np.add.at(dx, idx, dy)
    return dx


CASES = {
    "unary": ((floats(2, 3),), lambda o, x: o.unary("neg", x), lambda x: -x),
    "binary": ((floats(2, 3), floats(3)), lambda o, a, b: o.binary("add", a, b), lambda a, b: a + b),
    "binary_scalar": ((floats(2, 3),), lambda o, b: o.binary("mul", 2.0, b), lambda b: 2.0 * b),
    "gather": ((floats(4, 5), indices(5, 3)), lambda o, p, i: o.gather(p, i, axis=1), lambda p, i: np.take(p, i, axis=1)),
    "batch_gather": ((floats(2, 5), indices(5, 2, 3)), lambda o, p, i: o.batch_gather(p, i), lambda p, i: np.take_along_axis(p, i, 1)),
    "gather_grad": ((floats(6, 3), indices(4, 6)), lambda o, dy, i: o.gather_grad(dy, i, (4, 3)), lambda dy, i: _segment_sum(dy, i, 4)),
    "expand": ((floats(3, 1),), lambda o, x: o.expand(x, (3, 4)), lambda x: np.broadcast_to(x, (3, 4))),
    "expand_grad": ((floats(3, 4),), lambda o, dy: o.expand_grad(dy, (3, 1)), lambda dy: dy.sum(1, keepdims=True)),
    "repeat": ((floats(2, 3),), lambda o, x: o.repeat(x, (2, 1)), lambda x: np.tile(x, (2, 1))),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_result_is_of_the_callers_kind(device, kind, case):
    make, array_type = kind_for(kind, device)
    inputs, call, reference = CASES[case]
    result = call(ep.ops, *(make(x, device) for x in inputs))
    assert isinstance(result, array_type)
    np.testing.assert_allclose(to_numpy(result), reference(*inputs), rtol=1e-6)


@pytest.mark.parametrize("case", CASES)
def test_numpy_and_numba_arrays_give_what_they_gave(device, case):
    inputs, call, reference = CASES[case]
    arrays = [to_device(x, device) for x in inputs]
    result = call(ep.ops, *arrays)
    assert type(result) is type(arrays[0])
    np.testing.assert_allclose(to_numpy(result), reference(*inputs), rtol=1e-6)


@pytest.mark.parametrize("kind", ["boxed", "torch", "torch-cuda", "cupy"])
def test_out_of_the_callers_kind_is_written_and_returned(device, kind):
    make, _ = kind_for(kind, device)
    a, b = floats(2, 3), floats(2, 3)
    out = make(np.zeros((2, 3), np.float32), device)
    assert ep.ops.binary("add", make(a, device), make(b, device), out=out) is out
    np.testing.assert_allclose(to_numpy(out), a + b, rtol=1e-6)
    assert ep.ops.unary("neg", make(a, device), out=out) is out
    np.testing.assert_array_equal(to_numpy(out), -a)


@pytest.mark.parametrize("kind", ["boxed", "torch", "torch-cuda", "cupy"])
def test_a_strided_out_of_the_callers_kind_is_written_through_its_strides(device, kind):
    make, _ = kind_for(kind, device)
    a = floats(2, 3)
    memory = make(np.zeros((3, 2), np.float32), device)
    out = Boxed(memory.array.T) if kind == "boxed" else memory.T  # (2, 3), strides (1, 2)
    assert ep.ops.unary("neg", make(a, device), out=out) is out
    np.testing.assert_array_equal(to_numpy(memory), -a.T)


@pytest.mark.parametrize("kind", ["boxed", "torch", "torch-cuda", "cupy"])
def test_arrays_are_shared_not_copied(device, kind):
    make, _ = kind_for(kind, device)
    host = floats(5)
    x = make(host, device)
    # Written through ep (in place), read through the caller's array.
    ep.ops.binary("add", x, 1.0, out=x)
    np.testing.assert_array_equal(to_numpy(x), host + 1)
    # Written through ep's view, read through the caller's array.
    view = ep.from_dlpack(x)
    if device == "cpu":
        view[2] = 7.0
    else:
        view[2:3].copy_to_device(np.array([7.0], np.float32))
    assert to_numpy(x)[2] == 7.0


def test_launch_takes_torch_cpu_tensors_as_buffers(device):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    if primitive is None:
        pytest.skip(f"no ElementwiseUnary on {device}")
    host = floats(2, 3)
    x, y = torch.from_numpy(host.copy()), torch.zeros(2, 3)
    stream = ep.GetDevice(device).default_stream
    if device == "cpu":
        primitive.Launch(stream, x, y, x.numel())
        np.testing.assert_array_equal(y.numpy(), np.maximum(host, 0))
        primitive.Launch(stream, x, x, x.numel())  # in place: the tensor's own memory
        np.testing.assert_array_equal(x.numpy(), np.maximum(host, 0))
    else:
        with pytest.raises(TypeError, match="src: .* was given to a cuda primitive"):
            primitive.Launch(stream, x, to_device(np.zeros(6, np.float32), device), 6)


def test_a_cpu_primitive_refuses_a_strided_tensor_naming_it(device):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    if device != "cpu" or primitive is None:
        pytest.skip("the cpu primitive's buffers")
    with pytest.raises(ValueError, match=r"src: storage must be C-contiguous"):
        primitive.Launch(ep.GetDevice(device).default_stream, torch.zeros(6)[::2], torch.zeros(3), 3)


def test_mixed_kinds_the_first_array_decides(device):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if device != "cpu":
        pytest.skip("PyTorch CPU tensors mix with cpu arrays")
    a, b = floats(3), floats(3)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    assert type(ep.ops.binary("add", a, tb)) is np.ndarray
    assert type(ep.ops.binary("add", ta, b)) is torch.Tensor
    assert type(ep.ops.binary("add", 2.0, tb)) is torch.Tensor
    assert type(ep.ops.binary("add", Boxed(a), tb)) is Boxed
    assert type(ep.ops.binary("add", ta, Boxed(b))) is torch.Tensor
    params, idx = floats(4, 2), indices(4, 3)
    assert type(ep.ops.gather(params, torch.from_numpy(idx))) is np.ndarray
    result = ep.ops.gather(torch.from_numpy(params), idx)
    assert type(result) is torch.Tensor
    np.testing.assert_array_equal(result.numpy(), params[idx])
    # out= of any kind receives the result and comes back as given.
    out = np.zeros(3, np.float32)
    assert ep.ops.binary("add", ta, tb, out=out) is out
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


@pytest.mark.parametrize("view", ["transposed", "step", "broadcast", "offset"])
def test_non_contiguous_tensors(device, view):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if device != "cpu":
        pytest.skip("PyTorch CPU tensors are cpu arrays")
    host = floats(4, 6)
    views = {
        "transposed": (lambda t: t.t(), lambda a: a.T),
        "step": (lambda t: t[:, ::2], lambda a: a[:, ::2]),
        "broadcast": (lambda t: t[:1].expand(3, 6), lambda a: np.broadcast_to(a[:1], (3, 6))),
        "offset": (lambda t: t[1:, 2:], lambda a: a[1:, 2:]),
    }
    of_tensor, of_array = views[view]
    tensor = of_tensor(torch.from_numpy(host.copy()))
    result = ep.ops.unary("abs", tensor)
    assert type(result) is torch.Tensor and result.is_contiguous()
    np.testing.assert_array_equal(result.numpy(), np.abs(of_array(host)))
    gathered = ep.ops.gather(tensor, torch.tensor([0, 0, 1]), axis=1)
    np.testing.assert_array_equal(gathered.numpy(), np.take(of_array(host), [0, 0, 1], axis=1))


TORCH_DTYPES = ["float16", "float32", "float64", "bool", "int8", "uint8", "int32", "int64"]


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_torch_dtypes(device, dtype):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if device != "cpu":
        pytest.skip("PyTorch CPU tensors are cpu arrays")
    host = (RNG.standard_normal((2, 3)) * 4).astype(dtype)
    tensor = torch.from_numpy(host.copy())
    repeated = ep.ops.repeat(tensor, (2, 1))
    assert repeated.dtype is getattr(torch, dtype)
    np.testing.assert_array_equal(repeated.numpy(), np.tile(host, (2, 1)))
    equal = ep.ops.binary("equal", tensor, torch.flip(tensor, (1,)))
    assert equal.dtype is torch.bool
    np.testing.assert_array_equal(equal.numpy(), host == host[:, ::-1])


def test_tensor_dtypes_promote_as_in_numpy(device):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if device != "cpu":
        pytest.skip("PyTorch CPU tensors are cpu arrays")
    a, b = floats(3), np.arange(3, dtype=np.int64)
    result = ep.ops.binary("add", torch.from_numpy(a), torch.from_numpy(b))
    expected = a + b
    assert result.numpy().dtype == expected.dtype
    np.testing.assert_array_equal(result.numpy(), expected)


def test_tensors_that_require_grad_are_refused(device):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if device != "cpu":
        pytest.skip("PyTorch CPU tensors are cpu arrays")
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match=r"x: the tensor requires grad .* pass x\.detach\(\)"):
        ep.ops.unary("neg", x)
    with pytest.raises(ValueError, match=r"out: the tensor requires grad"):
        ep.ops.unary("neg", torch.ones(3), out=x)
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "neg", np.float32, np.float32)
    with pytest.raises(ValueError, match=r"dst: the tensor requires grad"):
        primitive.Launch(ep.GetDevice(device).default_stream, torch.ones(3), x, 3)
    # Detached, it shares the memory and is written in place.
    ep.ops.unary("neg", torch.ones(3), out=x.detach())
    np.testing.assert_array_equal(x.detach().numpy(), -np.ones(3, np.float32))


def test_bfloat16_tensors_are_taken_and_promote_as_torch(device):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if device != "cpu":
        pytest.skip("PyTorch CPU tensors are cpu arrays")
    x = torch.tensor([1.5, -2.0, 0.25], dtype=torch.bfloat16)
    assert torch.equal(ep.ops.unary("neg", x), -x)
    for other in (torch.ones(3), torch.ones(3, dtype=torch.float16), torch.ones(3, dtype=torch.int32)):
        got = ep.ops.binary("add", other, x)
        assert got.dtype == torch.result_type(other, x) and torch.equal(got, other + x), other.dtype
    # Fused results too (clamp is ep.fuse's; it handed torch a bfloat16 array DLPack cannot carry).
    assert torch.equal(ep.ops.clamp(x, 0, 1), torch.clamp(x, 0, 1))
    doubled, summed = ep.fuse(lambda a: (a * 2, a + 1))(x)
    assert torch.equal(doubled, x * 2) and torch.equal(summed, x + 1)
    total = ep.fuse(lambda a: ep.ops.sum(a * 2))(x)
    assert total.dtype == torch.bfloat16 and torch.equal(total, torch.sum(x * 2))


def test_jax_arrays_are_immutable_so_out_is_refused(device):
    kind_for("jax", device)
    import jax.numpy as jnp

    with pytest.raises(ValueError, match="out: the array is read-only"):
        ep.ops.unary("neg", jnp.ones(3, jnp.float32), out=jnp.zeros(3, jnp.float32))


def test_from_dlpack(device):
    host = floats(3)
    native = to_device(host, device)
    assert ep.from_dlpack(native) is native
    if device == "cpu":
        boxed = Boxed(host.copy())
        view = ep.from_dlpack(boxed)
        assert type(view) is np.ndarray and np.shares_memory(view, boxed.array)
    with pytest.raises(TypeError, match=r"x: list is not an array; expected one with __dlpack__"):
        ep.from_dlpack([1.0])


def test_not_an_array_is_still_named(device):
    with pytest.raises(TypeError, match="x: list is not an array"):
        ep.ops.unary("neg", [1.0, 2.0])
    with pytest.raises(TypeError, match="b: .*not an array"):
        ep.ops.binary("add", to_device(floats(2), device), object())


class DLPackOnlyCuda(Boxed):
    """An array in CUDA memory that offers DLPack only (as JAX's on a GPU): its memory is never read."""

    def __dlpack_device__(self):
        return (2, 0)


def test_cuda_memory_without_the_cuda_array_interface_is_refused(device):
    array = DLPackOnlyCuda(floats(3))
    with pytest.raises(TypeError, match=r"x: a [\w.]*DLPackOnlyCuda in CUDA memory without __cuda_array_interface__"):
        ep.ops.unary("neg", array)
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "neg", np.float32, np.float32)
    if primitive is None:
        pytest.skip(f"no ElementwiseUnary on {device}")
    where = "in CUDA memory; expected an array in CPU memory" if device == "cpu" else "was given to a cuda primitive"
    with pytest.raises(TypeError, match=f"src: .*{where}"):
        primitive.Launch(ep.GetDevice(device).default_stream, array, to_device(np.zeros(3, np.float32), device), 3)


def test_types_seen_on_the_slow_path_are_bounded(device, monkeypatch):
    # same_kind remembers the types it found not to be arrays, but only up to a limit: a caller
    # passing ever new classes must not grow the set without end.
    from ep.ops import arrays

    monkeypatch.setattr(arrays, "_NATIVE", set(arrays._NATIVE))
    x = to_device(np.ones(3, np.float32), device)
    for i in range(arrays._NATIVE_LIMIT + 8):
        with pytest.raises(TypeError, match="stream"):
            ep.ops.unary("relu", x, stream=type(f"NotAStream{i}", (), {})())
    assert len(arrays._NATIVE) <= arrays._NATIVE_LIMIT
    np.testing.assert_array_equal(to_numpy(ep.ops.unary("negative", x)), -np.ones(3, np.float32))


def test_sbp_is_in_every_ops_signature():
    import inspect

    for name in ("unary", "binary", "gather", "batch_gather", "gather_grad", "expand", "expand_grad", "repeat"):
        parameter = inspect.signature(getattr(ep.ops, name)).parameters["sbp"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None, name


def test_sbp_with_another_librarys_array_is_a_clear_error(device):
    x = Boxed(np.ones(3, np.float32)) if device == "cpu" else to_device(np.ones(3, np.float32), device)
    with pytest.raises(TypeError, match="sbp: unary takes sbp= only with global tensors"):
        ep.ops.unary("relu", x, sbp=ep.sbp.broadcast)



def test_tensors_with_the_negative_bit_are_refused(device):
    # c.conj().imag reads -2, 4 but its memory holds 2, -4: read as memory, every op saw the wrong
    # sign, and an out= was written unsigned. Refused, naming the argument, as tensor.numpy() does.
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    on = "cpu" if device == "cpu" else "cuda"
    if on == "cuda" and not _cuda_torch():
        pytest.skip("needs PyTorch with CUDA and a GPU")
    c = torch.tensor([1 + 2j, 3 - 4j], device=on)
    neg = c.conj().imag
    assert neg.is_neg() and neg.dtype == torch.float32
    ones = torch.ones(2, device=on)
    calls = [
        ("x", lambda: ep.ops.unary("relu", neg)),
        ("b", lambda: ep.ops.binary("add", ones, neg)),
        ("a", lambda: ep.ops.binary("mul", neg, 2.0)),
        ("params", lambda: ep.ops.gather(neg, torch.zeros(2, dtype=torch.int64, device=on))),
        ("x", lambda: ep.ops.expand(neg, (2, 2))),
        ("dy", lambda: ep.ops.expand_grad(neg, (2,))),
        ("out", lambda: ep.ops.expand(ones[:1], (2,), out=neg)),
        ("out", lambda: ep.ops.binary("add", ones, ones, out=neg)),
        ("y", lambda: ep.from_dlpack(neg, "y")),
    ]
    if on == "cpu":
        primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
        stream = ep.GetDevice(device).default_stream
        calls.append(("src", lambda: primitive.Launch(stream, neg, torch.empty(2), 2)))
        calls.append(("dst", lambda: primitive.Launch(stream, ones, neg, 2)))
    for name, call in calls:
        with pytest.raises(ValueError, match=rf"{name}: the tensor has PyTorch's negative bit set .* pass {name}\.resolve_neg\(\)"):
            call()
    # Nothing was written through it, and resolved it gives PyTorch's answers.
    np.testing.assert_array_equal(c.cpu().numpy(), [1 + 2j, 3 - 4j])
    np.testing.assert_array_equal(to_numpy(ep.ops.unary("relu", neg.resolve_neg())), [0, 4])
    np.testing.assert_array_equal(to_numpy(ep.ops.binary("add", ones, neg.resolve_neg())), [-1, 5])


class _NegatedCudaTensor:
    """Stands in for a PyTorch CUDA tensor with the negative bit (or requiring grad): the refusals
    are decided from these attributes, before its memory is ever looked at."""

    def __init__(self, negative: bool, requires_grad: bool) -> None:
        self._negative, self.requires_grad = negative, requires_grad
        self.__cuda_array_interface__ = {"shape": (2,), "typestr": "<f4", "data": (0, False), "version": 3}

    def is_neg(self) -> bool:
        return self._negative


class _ReadOnlyCudaArray:
    """Stands in for another library's read-only CUDA array: __cuda_array_interface__'s data is
    (pointer, True). The refusal is decided before its memory is looked at."""

    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, True), "version": 3}


def test_a_cuda_launch_refuses_to_write_read_only_memory(device):
    if device != "cuda":
        pytest.skip("a CUDA launch's buffers (tests/ops/test_arguments.py has the CPU's)")
    stream = ep.GetDevice(device).default_stream
    src = to_device(np.ones(4, np.float32), device)
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    with pytest.raises(ValueError, match=r"^dst: the array is read-only"):
        relu.Launch(stream, src, _ReadOnlyCudaArray(), 4)
    memset = ep.NewPrimitive(ep.MemsetFactory, device)
    with pytest.raises(ValueError, match=r"^ptr: the array is read-only"):
        memset.Launch(stream, _ReadOnlyCudaArray(), 0, 16)
    memcpy = ep.NewPrimitive(ep.MemcpyFactory, device, ep.MemcpyKind.kDtoD)
    with pytest.raises(ValueError, match=r"^dst: the array is read-only"):
        memcpy.Launch(stream, _ReadOnlyCudaArray(), src, 16)
    np.testing.assert_array_equal(to_numpy(src), np.ones(4, np.float32))


@pytest.mark.parametrize("data, error, message", [
    ([0, True], ValueError, r"^dst: the array is read-only"),  # a list is read as numba reads it
    ((0, True, 0), TypeError, r"^dst: its __cuda_array_interface__ is not a valid array .*pair"),
    (0, TypeError, r"^dst: its __cuda_array_interface__ is not a valid array .*pair"),
])
def test_a_cuda_launch_reads_the_read_only_mark_of_any_pair(device, data, error, message):
    if device != "cuda":
        pytest.skip("a CUDA launch's buffers")
    interface = {"shape": (4,), "typestr": "<f4", "data": data, "version": 3}
    dst = type("Foreign", (), {"__cuda_array_interface__": interface})()
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    src = to_device(np.ones(4, np.float32), device)
    with pytest.raises(error, match=message):
        relu.Launch(ep.GetDevice(device).default_stream, src, dst, 4)


@pytest.mark.parametrize("negative, requires_grad, message", [(True, False, "negative bit"), (False, True, "requires grad")])
def test_a_cuda_launch_refuses_what_the_ops_refuse(device, negative, requires_grad, message):
    # A CUDA tensor handed straight to Launch passes the same checks as one given to ep.ops.
    if device != "cuda":
        pytest.skip("a CUDA launch's buffers")
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    stream = ep.GetDevice(device).default_stream
    ones = to_device(np.ones(2, np.float32), device)
    with pytest.raises(ValueError, match=f"src: the tensor .*{message}"):
        primitive.Launch(stream, _NegatedCudaTensor(negative, requires_grad), ones, 2)
    np.testing.assert_array_equal(to_numpy(ones), [1, 1])


def test_a_dlpack_object_of_no_library_gives_a_numpy_result():
    got = ep.ops.binary("add", DlpackOnly(np.ones(3)), 1.0)
    assert type(got) is np.ndarray
    np.testing.assert_array_equal(got, [2, 2, 2])


def test_a_torch_subclass_gives_a_torch_result():
    torch = pytest.importorskip("torch")

    class Sub(torch.Tensor):
        pass

    got = ep.ops.unary("neg", torch.arange(4.0).as_subclass(Sub))
    assert isinstance(got, torch.Tensor)
    assert torch.equal(got, -torch.arange(4.0))


def test_a_masked_out_is_refused_naming_out():
    out = np.ma.masked_array(np.zeros(2), mask=[0, 1])
    with pytest.raises(TypeError, match="out: a numpy.ma.MaskedArray"):
        ep.ops.unary("neg", np.ones(2), out=out)
    with pytest.raises(TypeError, match="out: a numpy.ma.MaskedArray"):
        ep.ops.full(2, 1.0, out=out)


class _InterfaceOnly:
    """Another library's CUDA array offered only through __cuda_array_interface__ (a numba array's
    here), with shape and dtype attributes that disagree with it: ep must read the interface, what
    a kernel reads, and never the attributes (a shape of 1000 would write past a 4-element out)."""

    def __init__(self, array) -> None:
        self.__cuda_array_interface__ = getattr(array, "__cuda_array_interface__", None)

    @property
    def shape(self):
        raise AssertionError("ep read the shape attribute of an array it should have viewed")

    dtype = ndim = strides = size = shape


@pytest.mark.parametrize("call", [
    lambda x, out: ep.ops.unary("relu", x, out=out),
    lambda x, out: ep.ops.binary("mul", x, 2.0, out=out),
    lambda x, out: ep.ops.cat([x], out=out),
    lambda x, out: ep.fuse(lambda a: a * 2)(x, out=out),
], ids=["unary", "binary", "cat", "fuse"])
def test_cuda_memory_offered_only_through_the_interface_is_viewed_first(device, call):
    if device != "cuda":
        pytest.skip("CUDA memory")
    from ep.ops import arrays

    host = np.arange(4, dtype=np.float32) - 2
    x, out = to_device(host, device), to_device(np.zeros(4, np.float32), device)
    foreign_x, foreign_out = _InterfaceOnly(x), _InterfaceOnly(out)
    if foreign_x.__cuda_array_interface__ is None:
        # The simulator's arrays have no interface: viewing one is refused, before any attribute is read.
        foreign_x.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (host.ctypes.data, False), "version": 3}
        with pytest.raises(TypeError, match=r"_InterfaceOnly is not an array of the CUDA simulator"):
            call(foreign_x, None)
        with pytest.raises(TypeError, match=r"_InterfaceOnly is not an array of the CUDA simulator"):
            call(x, foreign_x)
    else:
        expected = to_numpy(call(x, None))
        np.testing.assert_array_equal(to_numpy(call(foreign_x, None)), expected)
        assert call(x, foreign_out) is foreign_out
        np.testing.assert_array_equal(to_numpy(out), expected)
    assert _InterfaceOnly not in arrays._NATIVE  # never taken as it is, by class


def test_an_out_marked_read_only_by_the_interface_is_refused(device):
    if device != "cuda":
        pytest.skip("CUDA memory")
    x = to_device(np.ones(4, np.float32), device)
    with pytest.raises(ValueError, match=r"^out: the array is read-only"):
        ep.ops.unary("relu", x, out=_ReadOnlyCudaArray())
    with pytest.raises(ValueError, match=r"^out: the array is read-only"):
        ep.fuse(lambda a: a * 2)(x, out=_ReadOnlyCudaArray())


class _Lying(np.ndarray):
    """A NumPy subclass whose shape property and view method are not its memory's: ep views it as
    the base class before reading anything of it (NumPy's own functions read the memory's shape)."""

    @property
    def shape(self):
        return (100000,)

    def view(self, *args, **kwargs):
        return np.full(100000, 7, np.float32)


@pytest.mark.parametrize("call, reference", [
    (lambda x, out: ep.ops.unary("relu", x, out=out), lambda x: np.maximum(x, 0)),
    (lambda x, out: ep.ops.binary("mul", x, 2.0, out=out), lambda x: x * 2),
    (lambda x, out: ep.ops.binary("add", np.ones(4, np.float32), x, out=out), lambda x: x + 1),
    (lambda x, out: ep.ops.cat([x], out=out), lambda x: x),
    (lambda x, out: ep.fuse(lambda a: a * 2)(x, out=out), lambda x: x * 2),
    (lambda x, out: ep.ops.cumsum(x, 0, out=out), lambda x: np.cumsum(x)),
], ids=["unary", "binary", "binary-b", "cat", "fuse", "cumsum"])
def test_a_numpy_subclass_is_read_as_its_memory(call, reference):
    from ep.ops import arrays

    base = np.arange(4, dtype=np.float32) - 2
    expected = reference(base)
    for _ in range(2):  # the second call as the first: the class is never taken as it is
        np.testing.assert_array_equal(call(base.view(_Lying), None), expected)
        out = np.zeros(4, np.float32).view(_Lying)
        assert call(base, out) is out
        np.testing.assert_array_equal(np.ndarray.view(out, np.ndarray), expected)
    assert _Lying not in arrays._NATIVE
    np.testing.assert_array_equal(base, np.arange(4, dtype=np.float32) - 2)


def test_a_numpy_subclass_out_smaller_than_it_says_is_refused():
    out = np.zeros(2, np.float32).view(_Lying)
    with pytest.raises(ValueError, match=r"out: has shape \(2,\); expected \(100000,\)"):
        ep.ops.unary("relu", np.ones(100000, np.float32), out=out)
    assert ep.ops.sum(np.ones(4, np.float32).view(_Lying)) == 4


def test_an_array_dlpack_cannot_place_is_refused_naming_it(device):
    torch = pytest.importorskip("torch")
    meta = torch.empty(4, device="meta")  # no memory: its __dlpack_device__ raises ValueError
    with pytest.raises(TypeError, match=r"^x: a torch.Tensor whose memory DLPack cannot describe"):
        ep.ops.unary("relu", meta)
    x = to_device(np.ones(4, np.float32), device)
    with pytest.raises(TypeError, match=r"^out: a torch.Tensor whose memory DLPack cannot describe"):
        ep.ops.unary("relu", x, out=meta)
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    with pytest.raises(TypeError, match=r"^src: "):
        relu.Launch(ep.GetDevice(device).default_stream, meta, x, 4)


def test_an_array_in_the_other_byte_order_is_refused_saying_so():
    # As torch.from_numpy: a kernel reads native words (NumPy would cast; a hidden copy here).
    swapped = np.arange(4, dtype=np.float32).astype(np.dtype(np.float32).newbyteorder("S"))
    with pytest.raises(TypeError, match=r"^x: dtype\('.f4'\) is float32 in the other byte order; ep takes native byte order"):
        ep.ops.unary("relu", swapped)
    with pytest.raises(TypeError, match=r"^src_dtype: .* is float32 in the other byte order"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", "relu", swapped.dtype, np.float32)
    np.testing.assert_array_equal(ep.ops.unary("relu", swapped.astype(swapped.dtype.newbyteorder("="))), np.arange(4))
