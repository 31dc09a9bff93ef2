"""Every elementwise op as one record, grouped by family as CuPy's cupy/_math: activation (tanh too),
arithmetic (rounding too), transcendental (exp and log, erf and gamma, hyperbolic, trigonometric),
two_argument (atan2, hypot, logaddexp, ...), integer (gcd, lcm, shifts), logic (comparison,
content, logical, bitwise) and conversion.

A family module holds, per op, its formula (and float32 variant), its derivatives and its record:
a UnaryFunctor or BinaryFunctor bound to a module-level name (ep.common.math.ops.record), which
says the op, the dtypes, the attributes with PyTorch's defaults and the derivatives. The tables
(unary_functor.UNARY_FUNCTORS, binary_functor.BINARY_FUNCTORS) are collected from FAMILIES.

A unary formula is f(x, attr0, attr1) in the compute dtype (float16 is computed in float32), a
binary one f(a, b, attr0, attr1); ops without attributes ignore them. Both devices compile them
(@scalar_function). Formulas follow PyTorch's function of the same name, NaN in gives NaN out
(sign gives 0, as PyTorch). Constants go through as_type so float32 math stays float32; integer
results go through it so they wrap as NumPy's do. Float division is `divide`, IEEE division
without the CPU kernel's ZeroDivisionError check. A derivative calls the forward formulas it is
a function of (sigmoid' = s (1 - s) with s from sigmoid's formula), so none is written twice.

Ops built on exp, expm1, tanh, sigmoid, erf, erfc or log also have a `*_float32` variant, the same
formula over ep.common.math.fast_math's vectorizable float32 functions instead of libm's scalar
calls (picked when the compute dtype is float32, float16 included). Both come from one
`_*_over(m)` factory over a math module (or record.of_x_variants), built over ep.common.math.libm
and over fast_math by record.float_variants, so a formula is written once and only the module it
calls differs; sigmoid, softplus and gelu use fast_math's own float32 formulations of the whole function.
"""
from ep.common.math.ops import activation, arithmetic, conversion, integer, logic, transcendental, two_argument

FAMILIES = (activation, arithmetic, conversion, logic, transcendental, two_argument, integer)
