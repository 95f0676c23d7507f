"""Exact Farkas certificates: verification arithmetic, LP-derived multipliers, soundness."""
from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings, strategies as st

from fractions import Fraction

from fairness.farkas import (Box, FarkasCertificate, HalfSpace, find_certificate, find_separation, no_row, separation,
                             separation_distance_sq, separation_proves, solve_phase1, verify)


def test_support_is_the_box_maximum():
    rng = random.Random(1)
    for _ in range(50):
        lo = [rng.randint(-5, 3) for _ in range(3)]
        box = Box(tuple(lo), tuple(v + rng.randint(0, 4) for v in lo))
        v = [rng.randint(-7, 7) for _ in range(3)]
        corners = itertools.product(*zip(box.lower, box.upper))
        assert box.support(v) == max(sum(a * b for a, b in zip(v, c)) for c in corners)


def test_one_dimensional_certificate_by_hand():
    # u in [0, 10], u <= 3 and u >= 5 (extra row -u <= -5): 1*(u <= 3) + 1*(-u <= -5) gives 0 <= -2.
    box = Box((0,), (10,))
    rows = [HalfSpace((1,), 3)]
    extra = HalfSpace((-1,), -5)
    assert verify(rows, extra, False, box, FarkasCertificate((1,), 1))
    assert verify(rows, extra, False, box, FarkasCertificate((3,), 3))
    assert not verify(rows, extra, False, box, FarkasCertificate((0,), 1))   # -u <= -5 alone is satisfiable
    assert not verify(rows, extra, False, box, FarkasCertificate((1,), -1))  # inequality needs mu >= 0
    assert not verify(rows, extra, False, box, FarkasCertificate((1, 0), 1))  # wrong length
    # The box does the work: u <= 3 within [5, 10] is empty with lambda only.
    assert verify([HalfSpace((1,), 3)], HalfSpace((0,), 0), False, Box((5,), (10,)), FarkasCertificate((1,), 0))


def test_equality_multiplier_may_be_negative():
    # u in [0, 10], u <= 3, equality u = 5 (normal (1,), bound 5): -1*(u = 5) + 1*(u <= 3) -> 0 <= -2.
    box = Box((0,), (10,))
    rows = [HalfSpace((1,), 3)]
    eq = HalfSpace((1,), 5)
    assert verify(rows, eq, True, box, FarkasCertificate((1,), -1))
    assert not verify(rows, eq, False, box, FarkasCertificate((1,), -1))
    assert not verify(rows, eq, True, box, FarkasCertificate((-1,), 1))


def _random_system(rng: random.Random, dim: int, m: int):
    rows = [HalfSpace(tuple(rng.randint(-9, 9) for _ in range(dim)), rng.randint(-20, 20)) for _ in range(m)]
    extra = HalfSpace(tuple(rng.randint(-9, 9) for _ in range(dim)), rng.randint(-20, 20))
    return rows, extra


def _feasible_point(rows, extra, eq, box):
    for u in itertools.product(*(range(lo, hi + 1) for lo, hi in zip(box.lower, box.upper))):
        ok = all(sum(a * b for a, b in zip(r.normal, u)) <= r.bound for r in rows)
        v = sum(a * b for a, b in zip(extra.normal, u))
        if ok and (v == extra.bound if eq else v <= extra.bound):
            return u
    return None


def test_lp_certificates_verify_and_never_appear_for_feasible_systems():
    rng = random.Random(7)
    box = Box((-3, -3), (3, 3))
    found = 0
    for _ in range(150):
        rows, extra = _random_system(rng, 2, 3)
        for eq in (False, True):
            cert = find_certificate(rows, extra, eq, box, scale_bits=0)
            point = _feasible_point(rows, extra, eq, box)
            if cert is not None:
                found += 1
                assert verify(rows, extra, eq, box, cert)
                assert point is None  # an exact certificate can never coexist with a feasible point
    assert found > 20


def test_phase1_margin_sign_matches_feasibility():
    box = Box((0, 0), (8, 8))
    rows = [HalfSpace((1, 1), 4)]
    assert solve_phase1(rows, HalfSpace((-1, 0), -2), False, box, 0).margin <= 0   # u0 >= 2, u0 + u1 <= 4: feasible
    assert solve_phase1(rows, HalfSpace((-1, 0), -5), False, box, 0).margin > 0    # u0 >= 5: empty


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.lists(st.integers(0, 50), min_size=3, max_size=3), st.integers(-50, 50),
       st.booleans())
def test_no_multipliers_refute_a_feasible_system(seed, lam, mu, eq):
    """Soundness of `verify`: if some box point satisfies the system, every multiplier vector is refused."""
    rng = random.Random(seed)
    box = Box((-4, -4), (4, 4))
    point = (rng.randint(-4, 4), rng.randint(-4, 4))
    rows = []
    for _ in range(3):
        n = (rng.randint(-6, 6), rng.randint(-6, 6))
        rows.append(HalfSpace(n, sum(a * b for a, b in zip(n, point)) + rng.randint(0, 5)))
    n = (rng.randint(-6, 6), rng.randint(-6, 6))
    extra = HalfSpace(n, sum(a * b for a, b in zip(n, point)) + (0 if eq else rng.randint(0, 5)))
    assert not verify(rows, extra, eq, box, FarkasCertificate(tuple(lam), mu if eq else abs(mu)))


def test_certificate_json_round_trip_and_type_checks():
    cert = FarkasCertificate((1, 0, 2**80), -3)
    assert FarkasCertificate.from_json(cert.to_json()) == cert
    with pytest.raises(ValueError):
        FarkasCertificate.from_json({"multipliers": [1.5], "extra": 0})


# ---------------------------------------------------------------- separation certificates

def _sampled_min_distance(rows, extra, box, u, rng, n=4000):
    """Smallest distance from u to sampled box points satisfying rows and extra (inequality)."""
    best = None
    for _ in range(n):
        v = [rng.randint(lo, hi) for lo, hi in zip(box.lower, box.upper)]
        if all(sum(a * x for a, x in zip(r.normal, v)) <= r.bound for r in (*rows, extra)):
            d = sum((a - b) ** 2 for a, b in zip(v, u))
            best = d if best is None or d < best else best
    return best


def test_separation_by_hand():
    # Box [0,10]^2, u = (1, 1); the set {v1 + v2 >= 12} lies at distance 10/sqrt(2) from u.
    box = Box((0, 0), (10, 10))
    rows = [HalfSpace((-1, -1), -12)]
    extra = no_row(2)
    cert = FarkasCertificate((1,), 0, (0, 0))
    h, r2 = separation(rows, extra, box, cert, (1, 1))
    assert (h, r2) == (10, (-1, -1))
    assert separation_distance_sq(rows, extra, box, cert, (1, 1), 0) == Fraction(100, 2)
    assert separation_proves(rows, extra, box, cert, (1, 1), 7, 0, 0)       # 7 <= 7.07
    assert not separation_proves(rows, extra, box, cert, (1, 1), 8, 0, 0)   # 8 > 7.07
    # Box multipliers: with the box, {v1 >= 12 - v2, v2 <= 10} needs v1 >= 2: distance from u = 1 along v1
    # only if the box row is used; nu = (0, 1) adds v2 <= 10, giving h(v) = -v1 + 2 and distance 1.
    box_cert = FarkasCertificate((1,), 0, (0, 1))
    assert separation(rows, extra, box, box_cert, (1, 1)) == (1, (-1, 0))
    # Rejections: a negative multiplier, a wrong-length box vector, a point on the wrong side.
    assert separation(rows, extra, box, FarkasCertificate((-1,), 0, (0, 0)), (1, 1)) is None
    assert separation(rows, extra, box, FarkasCertificate((1,), 0, (0,)), (1, 1)) is None
    assert not separation_proves(rows, extra, box, cert, (9, 9), 0, 0, 0)  # h(u) <= 0: proves nothing
    # An emptiness certificate is not a separation certificate and vice versa.
    assert not verify(rows, extra, False, box, box_cert)


def test_found_separations_are_sound_and_nearly_tight():
    rng = random.Random(3)
    found_any = 0
    for _ in range(30):
        dim = 3
        box = Box((-20,) * dim, (20,) * dim)
        rows = [HalfSpace(tuple(rng.randint(-5, 5) for _ in range(dim)), rng.randint(-30, 30)) for _ in range(3)]
        extra = HalfSpace(tuple(rng.randint(-5, 5) for _ in range(dim)), rng.randint(-30, 30))
        u = tuple(rng.randint(-20, 20) for _ in range(dim))
        found = find_separation(rows, extra, False, box, u, 0)
        sampled = _sampled_min_distance(rows, extra, box, u, rng)
        if found is None:
            continue
        cert, d = found
        assert d == separation_distance_sq(rows, extra, box, cert, u, 0)
        if sampled is not None:
            assert d <= sampled  # never more than the true distance (soundness)
            found_any += 1
    assert found_any >= 5
