"""The paper's projection bound (tests/projection_reference.py): hand-made closed forms, and never above the
exact radius of tests/exact_reference.py on random small models."""
from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain
from tests.exact_reference import reference_radius
from tests.fairness_toy_models import random_model, random_query
from tests.projection_reference import (floor_scaled_sqrt, projection_radius, projection_search,
                                        projection_slice_radii)

S = 8
ONE = 1 << S


def corner_model(sens_weight: int = 0, logit_bias: Fraction = Fraction(-51, 4)) -> FixedPointModel:
    """x = (sens, u1, u2), box [-1, 1]^3; hidden z1 = u1, z2 = u2 + 2, z3 = u1 + 2 + sens_weight * sens / ONE
    (z2, z3 > 0 on the box); logit0 = 0, logit1 = -3 h1 + 2 h2 + 4 h3 + logit_bias.

    With the default bias, logit1 - logit0 is 4 u1 + 2 u2 - 3/4 where u1 <= 0 and u1 + 2 u2 - 3/4 where u1 >= 0.
    From u* = (-1/2, 0) (class 0), the nearest class-1 point is the corner (0, 3/8) at distance 5/8, but the
    hyperplane u1 + 2 u2 = 3/4 of the region u1 >= 0, entered through the facet u1 = 0 at distance 1/2, lies
    at projection distance (5/4) / sqrt 5 < 5/8: that is where the projection search stops."""
    w0 = ((0, ONE, 0), (0, 0, ONE), (sens_weight, ONE, 0))
    b0 = (0, 2 << (2 * S), 2 << (2 * S))
    w1 = ((0, 0, 0), (-3 * ONE, 2 * ONE, 4 * ONE))
    b = logit_bias * (1 << (3 * S))
    assert b.denominator == 1
    b1 = (0, int(b))
    net = QuantisedMLP(scale_bits=S, weights=(w0, w1), biases=(b0, b1))
    return FixedPointModel(net=net, box_lower=(-ONE,) * 3, box_upper=(ONE,) * 3,
                           sensitive=(SensitiveDomain.scalar("group", 0, (0, ONE), ("a", "b")),))


QUERY = (0, -ONE // 2, 0)


def test_corner_model_stops_at_the_projection_of_the_second_region():
    model = corner_model()
    assert model.net.decision(QUERY) == 0
    res = projection_search(model, QUERY)
    assert res.radius_sq == Fraction(25, 16) / 5                      # ((5/4) / sqrt 5)^2
    assert res.radius == pytest.approx(1.25 / math.sqrt(5), abs=1e-12)
    assert [sl.reason for sl in res.slices] == ["decision", "decision"]
    assert res.slices[0].code == ((True, True, True),) and res.slices[0].cls == 1
    assert res.slices[0].regions == 2                                  # the start region and u1 >= 0
    assert projection_slice_radii(model, QUERY) == pytest.approx((1.25 / math.sqrt(5),) * 2, abs=1e-12)
    # The projection bound is strictly below the exact radius here.
    exact = reference_radius(model, QUERY)
    assert exact.radius_sq == Fraction(25, 64)
    assert res.radius < exact.radius
    assert res.eps(16) == floor_scaled_sqrt(Fraction(5, 16), 16) == math.isqrt((5 << 32) // 16)


def test_a_decision_row_with_no_class_point_in_the_box_is_skipped():
    """Bias -75/4: logit1 - logit0 is 4 u1 + 2 u2 - 27/4 (u1 <= 0) and u1 + 2 u2 - 27/4 (u1 >= 0), at most
    -11/4 and -15/4 on the box: class 1 is never reached. Both decision rows are popped and skipped, the queue empties,
    the bound is the box diagonal of the free coordinates."""
    model = corner_model(logit_bias=Fraction(-75, 4))
    res = projection_search(model, QUERY)
    assert [sl.reason for sl in res.slices] == ["cap", "cap"]
    assert res.radius_sq == Fraction(8) and res.radius == pytest.approx(2 * math.sqrt(2), abs=1e-12)
    assert math.isinf(reference_radius(model, QUERY).radius)


def test_the_minimum_over_slices_and_a_flip():
    # sens = 1 shifts z3 by 1/4 (h3 = u1 + 9/4): logit1 - logit0 grows by 1 everywhere.
    model = corner_model(sens_weight=ONE // 4)
    res = projection_search(model, QUERY)
    # slice 1: 4 u1 + 2 u2 + 1/4 >= 0 on u1 <= 0 at projection distance (7/4) / sqrt 20 from u*, nearer
    # than the facet u1 = 0 (1/2)
    assert res.slices[0].radius_sq == Fraction(5, 16)
    assert res.slices[1].radius_sq == Fraction(49, 16) / 20
    assert res.radius_sq == Fraction(49, 320)
    assert res.slices[1].regions == 1
    # a query at which slice 1 already decides class 1: radius 0
    q = (0, -ONE // 16, 0)          # slice 1: 4(-1/16) + 1/4 = 0, a tie: not a strict decision
    assert model.net.decision(q) == 0
    res = projection_search(model, q)
    assert res.slices[1].reason == "flip" and res.radius == 0.0 and res.eps() == 0
    assert projection_radius(model, q) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_never_above_the_exact_radius_on_random_models(seed):
    model = random_model(100 + seed, n_inputs=4, hidden=(4, 2))
    rng = random.Random(seed)
    for _ in range(5):
        q = random_query(model, rng)
        p = projection_search(model, q)
        ref = reference_radius(model, q)
        assert p.radius_sq <= p.cap_sq
        if ref.radius_sq is not None:
            assert p.radius_sq <= ref.radius_sq
        else:
            assert p.radius <= ref.radius * (1 + 1e-9) + 1e-12
