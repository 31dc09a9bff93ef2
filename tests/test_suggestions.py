"""Did-you-mean: one helper (ep.common.runtime.names.did_you_mean) behind every name ep resolves."""
import subprocess
import sys

import numpy as np
import pytest

import ep
import ep.ops
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.names import did_you_mean


def test_did_you_mean_names_the_closest_choices_ignoring_case_and_underscores():
    assert did_you_mean("rleu", ["relu", "gelu_tanh", "abs"]) == "did you mean 'relu'?"
    assert did_you_mean("LEAKYRELU", ["leaky_relu", "relu"]).startswith("did you mean 'leaky_relu'")
    assert did_you_mean("frobnicate", ["relu", "abs"]) == ""
    assert did_you_mean(3, ["relu"]) == ""


@pytest.mark.parametrize("value, close", [("flaot32", "float32"), ("unit8", "uint8"), ("in64", "int64")])
def test_a_misspelled_dtype_suggests_the_dtype(value, close):
    with pytest.raises(TypeError, match=f"src_dtype: '{value}' is not a supported data type; did you mean '{close}'"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cpu", "relu", value, "float32")


def test_a_dtype_far_from_any_lists_them_all():
    with pytest.raises(TypeError, match="dtype: 'frobnicate' is not a supported data type; expected one of bool, .*float64$"):
        as_data_type("frobnicate")


def test_ops_dtype_argument_suggests_too():
    with pytest.raises(TypeError, match="did you mean 'float16'"):
        ep.ops.unary("cast", np.ones(3, np.float32), dtype="flaot16")


@pytest.mark.parametrize("value, close", [("cdua", "cuda"), ("CPUU", "cpu"), ("cdua:0", "cuda")])
def test_a_misspelled_device_suggests_the_device(value, close):
    with pytest.raises(ValueError, match=f"device: '.*' is not a device; did you mean '{close}'"):
        ep.GetDevice(value)


def _ep(*args):
    return subprocess.run([sys.executable, "-m", "ep", *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    "args, message",
    [
        (("list", "--op", "rleu"), "argument --op: 'rleu' is not an op; did you mean 'relu'"),
        (("list", "--primitive", "Gathr"), "argument --primitive: 'Gathr' is not a primitive; did you mean 'Gather'"),
        (("list", "--device", "cdua"), "argument --device: 'cdua' is not a device; did you mean 'cuda'?"),
        (("check", "--device", "cdua"), "argument --device: 'cdua' is not a device; did you mean 'cuda'?"),
        (("warmup", "--dtypes", "flaot32"), "argument --dtypes: 'flaot32' is not a data type; did you mean 'float32'"),
        (("warmup", "--ops", "relu", "ad"), "argument --ops: 'ad' is not an op; did you mean 'add'"),
        (("warmup", "--primitives", "CopyND"), "argument --primitives: 'CopyND' is not a primitive; did you mean 'CopyNd'?"),
    ],
)
def test_cli_suggests_the_closest_name(args, message):
    result = _ep(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr) < 1000  # a suggestion, not the 150 names


def test_cli_lists_every_name_when_none_is_close():
    result = _ep("list", "--primitive", "Frobnicate")
    assert result.returncode == 2
    listed = result.stderr.split("'Frobnicate' is not a primitive; expected one of ")[1].split(", ")
    assert {"BatchGather", "CopyNd", "ElementwiseUnary", "Gather"} <= {name.strip() for name in listed}


def test_cli_points_to_the_op_list_when_no_op_is_close():
    result = _ep("list", "--op", "frobnicate")
    assert result.returncode == 2
    assert "'frobnicate' is not an op; expected e.g. 'relu' or 'kRelu' (`python -m ep list --all` lists them)" in result.stderr


def test_cli_takes_ep_ops_aliases():
    result = _ep("list", "--op", "neg", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    assert {line.split()[2] for line in result.stdout.splitlines()[2:-1]} == {"kNegative"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--op", "softmax"], "'softmax' is not an op; it is a primitive: --primitive Softmax (ep.ops.softmax runs it)"),
        (["--device", "gpu"], "'gpu' is not a device; did you mean 'cuda'?"),
    ],
)
def test_cli_points_to_the_name_meant(args, message):
    result = subprocess.run([sys.executable, "-m", "ep", "list", *args], capture_output=True, text=True)
    assert result.returncode == 2 and message in result.stderr


def test_cli_takes_an_op_in_any_case():
    result = subprocess.run([sys.executable, "-m", "ep", "list", "--op", "Relu"], capture_output=True, text=True)
    assert result.returncode == 0 and "kRelu" in result.stdout


def test_data_type_has_numpys_names():
    assert ep.DataType.float32 is ep.DataType.kFloat and ep.DataType.bool is ep.DataType.kBool
    assert len(list(ep.DataType)) == 13  # aliases, not members


def test_a_factorys_help_shows_new_and_launch():
    doc = ep.SoftmaxFactory.__doc__
    assert "SoftmaxFactory.New(dtype)" in doc and "Softmax.Launch(stream, rows: int, cols: int, x, y)" in doc
    for factory in (ep.GatherFactory, ep.MatmulFactory, ep.ElementwiseUnaryFactory):
        assert ".Launch(stream, " in factory.__doc__


def test_unary_points_to_the_ops_function_of_that_name():
    with pytest.raises(ValueError, match="ep.ops.softmax computes 'softmax'"):
        ep.ops.unary("softmax", np.ones(3))
