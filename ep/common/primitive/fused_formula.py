"""One scalar function from a resolved fused expression: the op records' formulas composed.

compose_formula writes a small Python function per expression and device, one line per node, that
calls the records' own scalar functions (formula_for(dtype), the integer formulas, the float16
load and store of ep.common.math.convert) bound as its globals, and makes it a scalar_function.
Each node computes what its unfused kernel computes: its formula on its operands' compute values,
then its store to its dtype and the load back (so a float16 node is rounded, an integer wraps,
where the unfused chain stores between ops). Equal subtrees are computed once. The source is
deterministic, so kernel_digest gives an expression one digest in every process (Numba's disk
cache keys it), whatever object built it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ep.common.jit import define, linked, scalar_function
from ep.common.math.binary_functor import binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.special import as_type
from ep.common.math.unary_functor import UNARY_FUNCTORS
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.keys import exact_key


def _float_store(np_type: type) -> Callable:
    @scalar_function
    def store(value):
        return as_type(value, np_type(0))

    return store


# A float node's value converted to its dtype: the unfused kernel's array store converts (an int
# cast to float64, a float64 cast to float32), which a value passed on in registers skips.
_FLOAT_STORES = {DataType.kFloat: _float_store(np.float32), DataType.kDouble: _float_store(np.float64)}


def node_dtype(node: tuple) -> DataType:
    """The DataType a resolved node gives."""
    kind = node[0]
    if kind in ("input", "scalar"):
        return node[2]
    if kind == "where":
        return node[1]
    return node[3]  # unary, binary: (kind, op, src, dst, ...)


def children(node: tuple) -> tuple:
    """The operand nodes of a resolved node: ("unary" | "binary", op, src, dst, attrs, *operands),
    ("where", dtype, condition, x, y); a leaf ("input" | "scalar", index, dtype) has none."""
    kind = node[0]
    if kind == "where":
        return node[2:]
    return node[5:] if kind in ("unary", "binary") else ()


class _Writer:
    """The function's lines and globals, each global named by its role and the node's number."""

    def __init__(self, device: DeviceType) -> None:
        self.device = device
        self.lines: list[str] = []
        self.globals: dict[str, object] = {}
        # By exact_key: a subtree with attribute -0.0 is not one with 0.0 (softplus' beta).
        self.names: dict[object, str] = {}

    def bind(self, name: str, value: object) -> str:
        self.globals[name] = value
        return name

    def value(self, node: tuple) -> str:
        """The local holding node's compute value, its lines written first (once per subtree)."""
        key = exact_key(node)
        found = self.names.get(key)
        if found is not None:
            return found
        kind = node[0]
        # Children first: the node's number, which names its globals, counts them.
        operands = [self.value(child) for child in children(node)]
        k = len(self.names)
        if kind == "scalar":
            name = f"a{node[1]}"  # passed in its compute dtype
        elif kind == "input":
            name = f"t{k}"
            load = self.bind(f"L{k}", load_fn(node[2], self.device))
            self.lines.append(f"{name} = {load}(a{node[1]})")
        elif kind == "where":
            condition, x, y = operands
            name = f"t{k}"
            self.lines.append(f"{name} = {x} if {condition} else {y}")
        else:
            _, op, src, dst, attrs = node[:5]
            if kind == "unary":
                formula = UNARY_FUNCTORS[op].formula_for(src)
                store = _FLOAT_STORES.get(dst) or store_fn(dst, self.device, src.compute_dtype)  # as unary_bindings
            else:
                formula = binary_formula(op, src)
                store = _FLOAT_STORES.get(dst) or store_fn(dst, self.device)  # as the binary kernels' bindings
            f, s, l = self.bind(f"F{k}", formula), self.bind(f"S{k}", store), self.bind(f"L{k}", load_fn(dst, self.device))
            a0, a1 = self.bind(f"A{k}_0", attrs[0]), self.bind(f"A{k}_1", attrs[1])
            name = f"t{k}"
            self.lines.append(f"{name} = {l}({s}({f}({', '.join(operands)}, {a0}, {a1})))")
        self.names[key] = name
        return name


# CPython compiles a call of more than 30 arguments, and a tuple of more than 30 items, through a
# list (CALL_FUNCTION_EX, LIST_TO_TUPLE), which Numba can neither inline nor type: past GROUP, the
# formula takes its arguments and gives its results as tuples of GROUP (MAX_ARITY in all).
GROUP = 16
MAX_ARITY = GROUP * GROUP


def grouped(items: list[str]) -> str:
    """items as a call's arguments or a tuple's items: as they are up to GROUP, else tuples of GROUP."""
    if len(items) <= GROUP:
        return ", ".join(items)
    return ", ".join(f"({', '.join(items[i : i + GROUP])},)" for i in range(0, len(items), GROUP))


def result(j: int, outputs: int) -> str:
    """Output j of r, a formula's result of that many outputs."""
    return f"r[{j}]" if outputs <= GROUP else f"r[{j // GROUP}][{j % GROUP}]"


def compose_formula(outputs: tuple, dtypes: tuple[DataType, ...], device: DeviceType) -> Callable:
    """The scalar function fused(a0, a1, ...) of the arguments (an Input's storage element, a
    Scalar's compute value) returning the tuple of the outputs' storage values, on device; past
    GROUP arguments or outputs, grouped (called as bound.compute(grouped(operands)), read by result)."""
    writer = _Writer(device)
    results = []
    for j, node in enumerate(outputs):
        value = writer.value(node)
        store = writer.bind(f"O{j}", store_fn(node_dtype(node), device))
        results.append(f"{store}({value})")
    arguments = [f"a{i}" for i in range(len(dtypes))]
    if len(arguments) <= GROUP:
        parameters, unpack = ", ".join(arguments), []
    else:
        groups = range(0, len(arguments), GROUP)
        parameters = ", ".join(f"g{i}" for i in groups)
        unpack = [f"{', '.join(arguments[i : i + GROUP])}, = g{i}" for i in groups]
    body = "".join(f"    {line}\n" for line in unpack + writer.lines)
    source = f"def fused({parameters}):\n{body}    return ({grouped(results)},)\n"
    fused = define(source, "fused", writer.globals)
    # On the CPU linked: a fused reduction calls it at a dozen places.
    return linked(fused) if device is DeviceType.kCPU else scalar_function(fused)
