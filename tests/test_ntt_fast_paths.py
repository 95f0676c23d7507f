"""The numpy NTT module's shortcuts give the same bytes as the plain routes.

- `fr_array` converts lists of values below 2^64 through uint64 limbs and one
  Montgomery multiplication; wider values take the per-element route.
- `qap_quotient` uses six NTTs (C is only interpolated, never moved to the
  coset); the reference backend computes the quotient independently.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from backend_fixtures import mcl_or_skip
from circuits.backends import get_backend
from circuits.errors import UnsatisfiedConstraint
from circuits.field import R

ntt = pytest.importorskip("circuits.backends.ntt")


def _generic(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=ntt.FR)


@pytest.mark.parametrize(
    "values",
    [
        [0, 1, 2, 3],
        [(1 << 64) - 1, 1 << 63, 12345, 0],
        [1] * 7 + [(1 << 32) + 5],
    ],
)
def test_small_values_take_the_limb_route_with_identical_bytes(values):
    assert ntt.fr_array(values).tobytes() == _generic(values).tobytes()
    assert [int(v) for v in ntt.fr_array(values)] == values


@pytest.mark.parametrize("values", [[1, 1 << 64], [R - 1, 0, 1], [1 << 200]])
def test_wide_values_fall_back_to_the_generic_route(values):
    assert ntt.fr_array(values).tobytes() == _generic(values).tobytes()
    assert [int(v) for v in ntt.fr_array(values)] == values


def test_limb_route_distinguishes_values():
    # a broken conversion that mapped everything to one value would pass an equality-with-itself check
    assert ntt.fr_array([1, 2]).tobytes() != ntt.fr_array([2, 1]).tobytes()
    assert ntt.fr_array([5]).tobytes() != _generic([6]).tobytes()


def _bit_rows(rng: random.Random, n: int) -> tuple[list[int], list[int], list[int]]:
    """Rows of a range-check-like system: a = b = c = bit, plus a few packed values times 1."""
    a = [rng.getrandbits(1) for _ in range(n)]
    b = list(a)
    for j in range(0, n, 33):
        a[j], b[j] = rng.getrandbits(32), 1
    c = [x * y % R for x, y in zip(a, b)]
    return a, b, c


@pytest.mark.parametrize("n", [1 << 10, 1 << 12])
def test_six_ntt_quotient_matches_reference_backend(n):
    mcl = mcl_or_skip()
    ref = get_backend("reference")
    rng = random.Random(n)
    a, b, c = _bit_rows(rng, n)
    a[-1] = rng.randrange(R)  # one full-width value so the generic route is exercised too
    c[-1] = a[-1] * b[-1] % R
    got = mcl.qap_quotient(*(mcl.scalar_vector(v) for v in (a, b, c)))
    assert mcl.scalar_vector_to_ints(got) == ref.qap_quotient(a, b, c)


def test_six_ntt_quotient_refuses_a_violated_row():
    mcl = mcl_or_skip()
    a, b, c = _bit_rows(random.Random(7), 1 << 10)
    c[100] = (c[100] + 1) % R
    with pytest.raises(UnsatisfiedConstraint, match="constraint 100"):
        mcl.qap_quotient(*(mcl.scalar_vector(v) for v in (a, b, c)))


@pytest.mark.parametrize("n", [1, 2, 8, 1 << 11])
def test_bit_reversed_powers_equal_gathered_powers(n):
    expected = (ntt.powers(5, n) * ntt.fr_const(77))[ntt.bit_reverse_permutation(n)]
    assert ntt.bit_reversed_powers(5, n, 77).tobytes() == expected.tobytes()
    if n > 2:  # from 4 on, natural order is not bit-reversed order
        assert ntt.bit_reversed_powers(5, n, 77).tobytes() != (ntt.powers(5, n) * ntt.fr_const(77)).tobytes()
