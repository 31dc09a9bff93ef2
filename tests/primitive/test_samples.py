"""Every registered primitive's samples (ep.common.primitive.sample): one or more for each of its
Combinations, naming Launch's parameters in order; warmup, `ep check` and the bad-input tests are
derived from them, so no module keeps a list of primitives."""
import ast
import inspect
import pathlib

import pytest

import ep
from ep.testing.samples import registered

ROOT = pathlib.Path(ep.__file__).parent


def _launch_parameters(factory_type) -> list[inspect.Parameter]:
    primitive = getattr(ep.include.primitive, factory_type.__name__.removesuffix("Factory"))
    return list(inspect.signature(primitive.Launch).parameters.values())[2:]  # after self and stream


@pytest.mark.parametrize("name", sorted(registered("cpu")))
def test_every_combination_has_samples_naming_launch_parameters(device, name):
    factory_type, factory = registered(device)[name]
    parameters = _launch_parameters(factory_type)
    for op, dtypes in factory.Combinations():
        samples = list(factory.Samples(op, dtypes))
        assert samples, f"{name} {op} {dtypes}: no sample"
        for sample in samples:
            names = list(sample.args)
            assert names == [p.name for p in parameters[: len(names)]], f"{name} {op} {dtypes}: {names}"
            assert all(p.default is not inspect.Parameter.empty for p in parameters[len(names) :]), names
            assert set(sample.expected or {}) <= set(names) and set(sample.host) <= set(names)


def _code_words(tree: ast.AST) -> set[str]:
    """The names, attributes and strings of tree's code (its docstrings and comments left out)."""
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.add(node.value)
    return words


@pytest.mark.parametrize("module", ["warmup.py", "selfcheck.py"])
def test_derived_modules_name_no_primitive(module):
    words = _code_words(ast.parse((ROOT / module).read_text()))
    named = sorted(name for name in ep.FACTORIES if {name, name.removesuffix("Factory")} & words)
    assert not named, f"ep/{module} names {named}: it is derived from the registry and the samples"
