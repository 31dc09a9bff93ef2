"""fast_divmod against // and %: every divisor up to 2048, every boundary, and random pairs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT, divisors, fast_divmod, fast_divmod_params, needs_wide


@njit
def _divmod_all(dividends, divisor, multiplier, shift, quotients, remainders):
    for j in range(dividends.size):
        quotients[j], remainders[j] = fast_divmod(dividends[j], divisor, multiplier, shift)


def check(dividends: np.ndarray, divisor: int) -> None:
    dividends = dividends.astype(np.int64)
    quotients = np.empty(dividends.size, np.uint32)
    remainders = np.empty(dividends.size, np.uint32)
    _divmod_all(dividends, divisor, *fast_divmod_params(divisor), quotients, remainders)
    np.testing.assert_array_equal(quotients, dividends // divisor, err_msg=f"quotients for divisor {divisor}")
    np.testing.assert_array_equal(remainders, dividends % divisor, err_msg=f"remainders for divisor {divisor}")


def boundary_dividends(divisor: int) -> np.ndarray:
    """0..1023, the top of the range, and every multiple of divisor +-1 at spread-out quotients."""
    quotients = np.unique(np.concatenate([np.arange(64), np.geomspace(1, FAST_DIVMOD_LIMIT // divisor, 64).astype(np.int64)]))
    multiples = quotients * divisor
    values = np.concatenate(
        [np.arange(1024), FAST_DIVMOD_LIMIT - np.arange(1024), multiples - 1, multiples, multiples + 1]
    )
    return np.unique(values[(values >= 0) & (values <= FAST_DIVMOD_LIMIT)])


def test_params_for_small_divisors():
    assert fast_divmod_params(1) == (1, 0)
    for divisor in range(1, 5000):
        multiplier, shift = fast_divmod_params(divisor)
        assert 0 < multiplier < 1 << 32
        assert (1 << shift) >= divisor > (1 << shift) >> 1


def test_every_divisor_up_to_2048_at_the_boundaries():
    for divisor in range(1, 2049):
        check(boundary_dividends(divisor), divisor)


def test_powers_of_two_and_their_neighbours():
    divisors = sorted({d for k in range(31) for d in ((1 << k) - 1, 1 << k, (1 << k) + 1) if 1 <= d <= FAST_DIVMOD_LIMIT})
    for divisor in divisors:
        check(boundary_dividends(divisor), divisor)


def test_every_dividend_below_two_to_the_20_for_a_few_divisors():
    dividends = np.arange(1 << 20)
    for divisor in (3, 7, 10, 641, 1000, 65535, 65537, 1 << 21, (1 << 21) + 1, 4_000_037):
        check(dividends, divisor)


def test_random_divisors_and_dividends():
    rng = np.random.default_rng(1234)
    for divisor in rng.integers(1, FAST_DIVMOD_LIMIT + 1, 300):
        check(np.concatenate([rng.integers(0, FAST_DIVMOD_LIMIT + 1, 2000), boundary_dividends(int(divisor))]), int(divisor))


@given(st.integers(1, FAST_DIVMOD_LIMIT), st.lists(st.integers(0, FAST_DIVMOD_LIMIT), min_size=1, max_size=50))
@settings(max_examples=200, deadline=None)
def test_property_matches_python(divisor, dividends):
    check(np.array(dividends), divisor)


@pytest.mark.parametrize("divisor", [0, -3, FAST_DIVMOD_LIMIT + 1])
def test_divisor_outside_the_32_bit_range_is_refused(divisor):
    with pytest.raises(ValueError, match=f"divisor: {divisor} is outside the 32-bit fast divmod range"):
        fast_divmod_params(divisor)


def test_needs_wide_is_the_32_bit_limit():
    assert not needs_wide(0, FAST_DIVMOD_LIMIT, 5)
    assert needs_wide(3, FAST_DIVMOD_LIMIT + 1)


def test_divisors_are_each_values_arguments_padded_with_divisions_by_one():
    (m7, s7), (m3, s3), (m1, s1) = fast_divmod_params(7), fast_divmod_params(3), fast_divmod_params(1)
    assert divisors((7, 3), 4, wide=False) == ((7, 3, 1, 1), (m7, m3, m1, m1), (s7, s3, s1, s1))
    assert divisors((7,), 2, wide=True) == ((7, 1), (0, 0), (0, 0))
