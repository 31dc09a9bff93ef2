"""The registry, NewPrimitive, devices, streams and data types."""
import json
import subprocess
import sys

import numpy as np
import pytest

import ep
import ep.ops
import ep.testing
from ep.common.math.unary_functor import unary_combinations


def test_import_ep_compiles_nothing_and_skips_numba():
    code = "import sys, ep; print('numba' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


LOADING_SCRIPT = """
import json, sys
import numpy as np
import ep
loaded = lambda: sorted(m.rpartition(".")[2] for m in sys.modules if m.startswith("ep.{device}.primitive."))
first = ep.NewPrimitive(ep.GatherFactory, "{device}", np.float32, np.int64) is not None
after_gather = loaded()
# SoftmaxBackwardFactory's interface module has no namesake in the backend: every module loads.
second = ep.NewPrimitive(ep.SoftmaxBackwardFactory, "{device}", np.float32) is not None
print(json.dumps([first, after_gather, second, len(loaded())]))
"""


def test_a_first_new_primitive_loads_its_namesake_module_only(device):
    script = LOADING_SCRIPT.format(device=device)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    first, after_gather, second, modules = json.loads(result.stdout.splitlines()[-1])
    assert first and second
    assert "gather" in after_gather and "softmax" not in after_gather and len(after_gather) <= 3, after_gather
    assert modules >= 20
    assert len(ep.include.primitive.primitive.RegisteredFactories(device)) >= 20


@pytest.mark.parametrize("data_type", list(ep.DataType))
def test_data_type_converts_to_numpy(data_type):
    assert np.dtype(data_type) == np.dtype(data_type.value)
    assert ep.common.runtime.data_type.as_data_type(np.dtype(data_type.value)) is data_type


@pytest.mark.parametrize("data_type", list(ep.DataType))
def test_pytorch_dtypes_are_data_types(device, data_type):
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, data_type.value)
    assert ep.common.runtime.data_type.as_data_type(dtype) is data_type
    x = np.array([0.0, 1.0, 2.5, 3.0])  # no negative: its uint8 cast is undefined in C
    got = ep.testing.to_numpy(ep.ops.unary("cast", ep.testing.to_device(x, device), dtype=dtype))
    want = torch.from_numpy(x).to(dtype)
    # NumPy's view of a bfloat16 tensor: its int16 view, viewed as ml_dtypes' bfloat16.
    want = want.view(torch.int16).numpy().view(got.dtype) if dtype is torch.bfloat16 else want.numpy()
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "cast", torch.float64, dtype) is not None


def test_pytorch_dtypes_without_a_data_type_are_named():
    torch = pytest.importorskip("torch")
    for dtype in (torch.float8_e4m3fn, torch.complex64):
        with pytest.raises(TypeError, match=f"src_dtype: {dtype} is not a supported data type"):
            ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", "relu", dtype, dtype)


def test_bad_data_type_names_the_argument():
    with pytest.raises(TypeError, match="src_dtype: .*complex64"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", ep.UnaryOp.kRelu, np.complex64, np.complex64)


def test_device_tags_and_streams(device):
    dev = ep.GetDevice(device)
    assert dev is ep.GetDevice(ep.DeviceType(device))
    stream = dev.CreateStream()
    assert stream.device is dev
    stream.Sync()


def test_an_index_given_twice_must_agree(device):
    # PyTorch refuses torch.device("cpu:0", 3) likewise; an index named once is taken.
    tagged = ep.GetDevice(f"{device}:0")
    assert ep.GetDevice(f"{device}:0", 0) is tagged and ep.GetDevice(tagged) is tagged and ep.GetDevice(tagged, 0) is tagged
    for named in (f"{device}:0", tagged):
        with pytest.raises(ValueError, match=rf"device, index: device .*{device}:0.* names index 0 but index is 3; expected one index"):
            ep.GetDevice(named, 3)


def test_new_primitive_reuses_a_combination(device):
    first = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, ep.DataType.kFloat, ep.DataType.kFloat)
    again = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, "float32")
    assert first is not None and first is again


def test_new_primitive_returns_none_when_unsupported(device):
    assert ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kExp, ep.DataType.kInt32, ep.DataType.kInt32) is None
    assert ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, ep.DataType.kFloat, ep.DataType.kDouble) is None


def test_new_primitive_rejects_a_non_factory():
    with pytest.raises(TypeError, match="factory_type"):
        ep.NewPrimitive(int, "cpu")


def test_unknown_device_names_the_value():
    with pytest.raises(ValueError, match="'tpu'"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, "tpu", ep.UnaryOp.kRelu, np.float32, np.float32)


def test_cli_json_lists_every_unary_combination():
    result = subprocess.run([sys.executable, "-m", "ep", "list", "--json"], capture_output=True, text=True, check=True)
    rows = json.loads(result.stdout)
    for device in ("cpu", "cuda"):
        listed = {(r["op"], tuple(r["dtypes"])) for r in rows if r["device"] == device and r["primitive"] == "ElementwiseUnary"}
        expected = {(op.name, (s.value, d.value)) for op, s, d in unary_combinations()}
        assert listed == expected


def test_cli_filters_by_device_and_primitive():
    result = subprocess.run(
        [sys.executable, "-m", "ep", "list", "--device", "cpu", "--primitive", "ElementwiseUnary"],
        capture_output=True, text=True, check=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines[0].split()[:4] == ["primitive", "device", "op", "dtypes"]
    assert all(" cpu " in line for line in lines[2:-1])


def _ep(*args):
    return subprocess.run([sys.executable, "-m", "ep", *args], capture_output=True, text=True)


def test_cli_list_summarizes_by_primitive_and_device():
    result = _ep("list")
    assert result.returncode == 0
    rows = json.loads(_ep("list", "--json").stdout)
    pairs = {(r["primitive"], r["device"]) for r in rows}
    for primitive, device in pairs:
        count = sum(1 for r in rows if r["primitive"] == primitive and r["device"] == device)
        assert any(line.split()[:3] == [primitive, device, str(count)] for line in result.stdout.splitlines())
    # One line per primitive and device, and a few of header and footer: a summary, not every row;
    # then how each ep.ops function takes global tensors (ep.ops.full takes none).
    import ep.ops

    table, _, globals_ = result.stdout.partition("ep.ops on global tensors")
    assert len(table.splitlines()) <= len(pairs) + 6
    listed = {line.split()[0]: line.split(None, 1)[1] for line in globals_.splitlines()[2:]}
    assert set(listed) == set(ep.ops.__all__) - {"describe", "full"} | {"fuse"}
    assert listed["gather"] == "SBP signatures"


def test_cli_filters_by_op():
    rows = json.loads(_ep("list", "--op", "relu", "--json").stdout)
    assert rows and {r["op"] for r in rows} == {"kRelu"}
    assert json.loads(_ep("list", "--op", "kRelu", "--json").stdout) == rows


@pytest.mark.parametrize("flag, value, listed", [("--primitive", "Nonsense", "Gather"), ("--op", "nonsense", "kRelu"), ("--device", "tpu", "cpu")])
def test_cli_unknown_names_exit_2_listing_valid_ones(flag, value, listed):
    result = _ep("list", flag, value)
    assert result.returncode == 2
    assert value in result.stderr and listed in result.stderr


def test_cli_version_and_closed_pipe():
    assert _ep("--version").stdout.strip() == f"ep {ep.__version__}"
    pipe = subprocess.run(f"{sys.executable} -m ep list --json | head -1", shell=True, capture_output=True, text=True)
    assert pipe.stdout.strip() == "[" and "Traceback" not in pipe.stderr


@pytest.mark.parametrize("args", [("cpu:abc",), ("cpu", 1), ("cpu:1",), ("cuda", 7), ("cuda:7",), ("cpu", -1)])
def test_get_device_refuses_devices_this_machine_lacks(args):
    with pytest.raises(ValueError, match="device|index") as error:
        ep.GetDevice(*args)
    assert repr(args[-1]).strip("'") in str(error.value) or str(args[-1]) in str(error.value)


@pytest.mark.parametrize("tag", ["cuda:7", "cpu:3"])
def test_new_primitive_refuses_a_device_index_this_machine_lacks(tag):
    with pytest.raises(ValueError, match=tag.split(":")[1]):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, tag, ep.UnaryOp.kRelu, np.float32, np.float32)


@pytest.mark.parametrize("value", [np.float32, np.dtype(np.float32), "float32", "kFloat", ep.DataType.kFloat])
def test_data_type_from_numpy_and_names(value):
    assert ep.DataType(value) is ep.DataType.kFloat


def test_data_type_refuses_other_dtypes():
    with pytest.raises(ValueError, match="complex64"):
        ep.DataType(np.complex64)


def test_cli_describe_names_any_op_function_primitive_or_elementwise_op():
    import ep.ops

    for name, start in [("softmax", "ep.ops.softmax(x, dim"), ("Gather", "Makes Gather."), ("GatherFactory", "Makes Gather."), ("arccos", "acos(x)")]:
        result = _ep("describe", name)
        assert result.returncode == 0 and result.stdout.startswith(start), (name, result.stdout[:200])
    assert "Launch(" in _ep("describe", "Softmax").stdout
    assert _ep("describe", "relu").stdout.strip() == ep.ops.describe("relu")
    result = _ep("describe", "relux")
    assert result.returncode == 2 and "did you mean 'relu'" in result.stderr
