"""ep.common.math.fast_math against float64 references: dense sweeps, special values, and PTX."""
import math

import numpy as np
import pytest
from numba import njit

from ep.common.math import fast_math
from nvvm import run_without_simulator

RTOL = 2e-6
FLT_MIN = 2.0**-126
SQRT_HALF = math.sqrt(0.5)
_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


REFERENCES = {
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "erf": _erf,
    "erfc": _erfc,
    "gelu": lambda x: 0.5 * x * _erfc(-x * SQRT_HALF),
    "softplus": lambda x: np.logaddexp(0.0, x),
}
# Where each function is not a constant, NaN or inf: the sweep is dense there.
INTERESTING = {"log1p": 2, "exp": 110, "expm1": 110, "tanh": 12, "sigmoid": 110, "softplus": 110, "erf": 5, "erfc": 11, "gelu": 16}
# math.erf and math.erfc run one Python call per point, so their sweeps are coarser.
SLOW_REFERENCES = {"erf", "erfc", "gelu"}


@pytest.fixture(scope="module")
def compiled():
    """A serial loop over each function (serial: compiles faster, and the sweep is cheap)."""

    def loop(fn):
        @njit
        def run(src, dst):
            for i in range(src.size):
                dst[i] = fn(src[i])

        return run

    return {name: loop(getattr(fast_math, name)) for name in REFERENCES}


def _apply(compiled, name, x):
    y = np.empty_like(x)
    compiled[name](x, y)
    return y


def _sweep(name):
    """Every 2^10-th (2^12-th for slow references) float32 bit pattern, plus a fine linspace."""
    step = 1 << 12 if name in SLOW_REFERENCES else 1 << 10
    x = np.arange(0, 1 << 32, step, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[np.isfinite(x)]
    limit = INTERESTING.get(name)
    if limit is not None:
        if name in SLOW_REFERENCES:
            x = x[np.abs(x) < 2 * limit]
        count = 1_000_001 if name in SLOW_REFERENCES else 2_000_001
        x = np.concatenate([x, np.linspace(-limit, limit, count, dtype=np.float32)])
    return x


def _reference(name, x):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return REFERENCES[name](x.astype(np.float64))


@pytest.mark.parametrize("name", [n for n in REFERENCES if n != "gelu"])
def test_dense_sweep_within_2e6_relative(compiled, name):
    x = _sweep(name)
    y = _apply(compiled, name, x)
    ref = _reference(name, x)
    with np.errstate(over="ignore", invalid="ignore"):
        ref32 = ref.astype(np.float32)
    finite = np.isfinite(ref32)
    # Where the exact result overflows (or is NaN) the float32 result must be that same value.
    np.testing.assert_array_equal(y[~finite], ref32[~finite])
    # Relative to the result; below FLT_MIN relative to FLT_MIN, as subnormals hold fewer bits.
    error = np.abs(y[finite] - ref[finite]) / np.maximum(np.abs(ref[finite]), FLT_MIN)
    worst = int(np.argmax(error))
    assert error[worst] <= RTOL, f"{name}({x[finite][worst]!r}) off by {error[worst]:.3g} relative"


def test_gelu_relative_on_the_right_absolute_on_the_left(compiled):
    x = _sweep("gelu")
    y = _apply(compiled, "gelu", x)
    ref = _reference("gelu", x)
    error = np.abs(y - ref)
    right = x > -1
    assert (error[right] <= RTOL * np.abs(ref[right])).all()
    # 1 + erf(x / sqrt(2)) cancels on the left tail, as in PyTorch: the bound there is absolute.
    assert error[~right].max() <= 1e-6


SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, FLT_MIN, -FLT_MIN, 3.4028235e38, -3.4028235e38,
     88.72283, 88.72284, -87.33654, -103.97, -103.98, 1.0, -1.0, 1e-30, -1e-30],
    dtype=np.float32,
)


@pytest.mark.parametrize("name", list(REFERENCES))
def test_special_values(compiled, name):
    y = _apply(compiled, name, SPECIAL)
    with np.errstate(all="ignore"):
        ref = _reference(name, SPECIAL)
        ref32 = ref.astype(np.float32)
    for x, got, want, exact in zip(SPECIAL, y, ref32, ref):
        if np.isnan(want) or np.isinf(want) or want == 0:
            # NaN in, NaN out; overflow gives inf; and zeros keep their sign (erf(-0) = -0).
            assert got.tobytes() == want.tobytes() or (np.isnan(got) and np.isnan(want)), (name, x, got, want)
        else:
            assert abs(got - exact) <= RTOL * max(abs(exact), FLT_MIN), (name, x, got, exact)


@pytest.mark.parametrize("name, reference", [("atan2", np.arctan2), ("hypot", np.hypot)])
def test_two_argument_functions_within_2_ulp_and_cs_at_the_specials(name, reference):
    fn = getattr(fast_math, name)

    @njit
    def run(y, x, out):
        for i in range(y.size):
            out[i] = fn(y[i], x[i])

    rng = np.random.default_rng(0)
    y, x = ((rng.standard_normal(1_000_000) * np.exp2(rng.integers(-70, 70, 1_000_000))).astype(np.float32) for _ in range(2))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -3.4028235e38], np.float32)
    sy, sx = (g.ravel() for g in np.meshgrid(special, special))
    y, x = np.concatenate([y, sy]), np.concatenate([x, sx])
    got = np.empty_like(y)
    run(y, x, got)
    exact = reference(y.astype(np.float64), x.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    with np.errstate(over="ignore"):  # hypot beyond float32's range: inf, as C's hypotf
        exact32 = exact.astype(np.float32)
    ulp = np.spacing(np.abs(exact32)).astype(np.float64)
    finite = np.isfinite(exact32)
    assert (np.abs(got[finite] - exact[finite]) <= 2 * ulp[finite]).all()
    np.testing.assert_array_equal(got[~finite & ~np.isnan(exact)], exact32[~finite & ~np.isnan(exact)])
    zero = exact == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(exact[zero]))


def test_erfinv_within_2e6_relative():
    torch = pytest.importorskip("torch")

    @njit
    def run(x, out):
        for i in range(x.size):
            out[i] = fast_math.erfinv(x[i])

    # Every float32 in (-1, 1) at a stride, the values next to +-1, and the specials.
    bits = np.arange(0, 0x3F800000, 97, dtype=np.uint32)
    x = bits.view(np.float32)
    x = np.concatenate([x, -x, np.nextafter(np.float32(1), np.float32(0)) - np.arange(64, dtype=np.float32) * 2.0**-24])
    got = np.empty_like(x)
    run(x, got)
    exact = torch.special.erfinv(torch.from_numpy(x.astype(np.float64))).numpy()
    error = np.abs(got - exact) / np.maximum(np.abs(exact), FLT_MIN)
    assert error.max() <= RTOL, f"erfinv({x[np.argmax(error)]!r}) off by {error.max():.3g}"
    special = np.array([1.0, -1.0, 1.5, -2.0, np.nan, 0.0, -0.0, np.inf], np.float32)
    out = np.empty_like(special)
    run(special, out)
    assert out[:2].tolist() == [np.inf, -np.inf] and np.isnan(out[2:5]).all() and np.isnan(out[7])
    assert out[5].tobytes() == np.float32(0.0).tobytes() and out[6].tobytes() == np.float32(-0.0).tobytes()


PTX_SCRIPT = """
import numpy as np
from numba import cuda, float32
from ep.common.math import fast_math

def kernel_for(fn):
    def kernel(src, dst):
        i = cuda.grid(1)
        if i < src.size:
            dst[i] = fn(src[i])
    return kernel

for name in {names!r}:
    ptx, _ = cuda.compile_ptx(kernel_for(getattr(fast_math, name)), (float32[::1], float32[::1]), cc=(8, 0))
    assert ".entry" in ptx and "fma.rn.f32" in ptx, name
    # No libdevice or libm call: the whole function is inlined float32 arithmetic.
    assert "call" not in ptx.split(".entry", 1)[1], name
    print("ok", name)
"""


@pytest.mark.ptx
def test_every_function_compiles_to_ptx():
    names = list(REFERENCES)
    stdout = run_without_simulator(["-c", PTX_SCRIPT.format(names=names)], timeout=600)
    assert stdout.count("ok ") == len(names)
