"""The package's layering, read from its imports: ops reach kernels only through NewPrimitive + Launch."""
import ast
import pathlib

import pytest

import ep

ROOT = pathlib.Path(ep.__file__).parent


def _imports(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "ops").glob("*.py")), ids=lambda p: p.name)
def test_ops_import_no_device_code(path):
    bad = {name for name in _imports(path) if name.split(".")[:2] in (["ep", "cpu"], ["ep", "cuda"]) or name == "importlib"}
    assert not bad, f"ep/ops/{path.name} imports {sorted(bad)}"


# What each lower layer may import from ep: nothing above it (primitives, devices, ops). The
# interfaces (include) are the foundation: the runtime's types and each other, as in OneFlow.
ALLOWED = {
    "common/runtime": ("ep.common.runtime",),
    "common/math": ("ep.common.runtime", "ep.common.jit", "ep.common.math", "ep.include.primitive.unary_op", "ep.include.primitive.binary_op"),
    "include": ("ep.common.runtime", "ep.include"),
    # The global view sits below the ops: each op is declared beside it (ep/ops/*_rules.py) and
    # handed to ep.sbp, which imports nothing of ep.ops.
    "sbp": ("ep.common", "ep.include", "ep.sbp"),
}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_lower_layers_do_not_import_higher_ones(layer):
    # Imports inside functions count too.
    for path in sorted((ROOT / layer).rglob("*.py")):
        for name in _imports(path):
            if name == "ep" or name.startswith("ep."):
                assert name.startswith(ALLOWED[layer]), f"{path.relative_to(ROOT)} imports {name}"


# The registry loads the device modules by name (NewPrimitive's providers), and the bench its peer
# libraries; nothing else names a module to importlib or __import__ (where the imports above would
# not see an ep module) other than as a string naming no ep module.
BY_NAME = ("include/primitive/primitive.py", "include/primitive/__init__.py", "bench/peers.py")


def _imports_by_name(path: pathlib.Path) -> list[str]:
    """The module arguments of importlib.import_module(...) and __import__(...) calls in path: a
    string, or "<computed>" for any other expression (which may name any module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
        if name in ("import_module", "__import__"):
            arg = node.args[0]
            found.append(arg.value if isinstance(arg, ast.Constant) else "<computed>")
    return found


def test_no_ep_module_is_imported_by_name_outside_the_registry():
    bad = {
        str(path.relative_to(ROOT)): names
        for path in sorted(ROOT.rglob("*.py"))
        if str(path.relative_to(ROOT)) not in BY_NAME
        for names in [[n for n in _imports_by_name(path) if n in ("ep", "<computed>") or n.startswith("ep.")]]
        if names
    }
    assert not bad, f"importlib/__import__ of ep modules outside the registry: {bad}"
    # The check sees such a call.
    assert _imports_by_name(ROOT / "include" / "primitive" / "__init__.py")


def test_every_module_says_what_it_holds():
    # The inventory is the modules' docstrings (docs/architecture.md is the model, not a list).
    missing = [
        str(path.relative_to(ROOT.parent))
        for path in sorted(ROOT.rglob("*.py"))
        if path.name != "__init__.py" and not ast.get_docstring(ast.parse(path.read_text()))
    ]
    assert not missing, f"modules without a docstring: {missing}"


def test_exports_are_derived_from_the_interfaces():
    # No list of primitives kept by hand: a new interface file in ep/include/primitive is exported.
    from ep.include.primitive import ENUMS, FACTORIES

    for path in (ROOT / "__init__.py", ROOT / "include" / "primitive" / "__init__.py"):
        named = [name for name in (*FACTORIES, *ENUMS) if name in path.read_text()]
        assert not named, f"{path.relative_to(ROOT.parent)} names {named} by hand"
    assert len(FACTORIES) >= 27 and {"UnaryOp", "BinaryOp", "MemcpyKind", "BlasTransposeType"} <= set(ENUMS)
    for name, value in {**FACTORIES, **ENUMS}.items():
        assert getattr(ep, name) is value and name in ep.__all__ and name in dir(ep)
    assert {"ops", "fuse"} <= set(dir(ep))
