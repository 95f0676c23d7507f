"""Optimised relaxation slopes for the bound radius (fairness/alpha_crown.py, fairness/bound_radius.py's search):
any slopes in [0, 1] give a sound bound and none certifies beyond the exact radius; the search's slopes prove at
least CROWN's radius, usually more, and the search is deterministic (a prover that runs it again gets the same
witness); the set minimum the search optimises through is the true minimum; a one-hot sensitive attribute
(several inputs) is covered like a scalar one, plaintext and circuit."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

import fairness.bound_radius as br
from circuits.builder import ConstraintSystem
from fairness.alpha_crown import ball_box_minimiser, optimise_plans
from fairness.bound_radius import CERTIFIED, bound_certificate, plans_certify, radius_search
from fairness.certificate import EXACT, certify
from fairness.fixed_point import FixedPointModel, SensitiveDomain
from fairness.multipliers import best_multiplier
from fairness.regions import LPRegionOracle
from fairness.slope_plans import DEFAULT_ALPHA_BITS, SlicePlan, plan_size, unflatten
from statement.adapter import statement_inputs, statement_shape
from statement.circuit import build_statement
from statement.relaxation import radius_layout, radius_plan_size
from tests.fairness_toy_models import random_model, random_query

ONE = 1 << DEFAULT_ALPHA_BITS


def _random_plans(model: FixedPointModel, y: int, rng: random.Random) -> tuple[SlicePlan, ...]:
    size = plan_size(model.net.hidden_sizes, model.net.n_classes)
    return tuple(unflatten([rng.choice((0, ONE, rng.randint(0, ONE))) for _ in range(size)], DEFAULT_ALPHA_BITS,
                           model.net.hidden_sizes, model.net.n_classes) for _ in model.slices())


@pytest.mark.parametrize("hidden, n_classes", [((4, 2), 2), ((6, 4), 3)])
def test_no_slopes_certify_beyond_the_exact_radius(hidden, n_classes):
    """Soundness whatever the prover picks: random slopes in [0, 1] (0, 1 or anything between) never prove
    eps above the exact radius; the search's own slopes prove its eps, which is never above it either."""
    model = random_model(5, n_inputs=5, hidden=hidden, n_classes=n_classes)
    oracle = LPRegionOracle(model)
    rng = random.Random(1)
    checked = 0
    for _ in range(4):
        q = random_query(model, rng)
        exact = certify(model, q, oracle, radius=EXACT)
        found = radius_search(model, q)
        if found.status != CERTIFIED or exact.eps == 0:
            continue
        assert found.eps <= exact.eps
        assert plans_certify(model, q, found.decision, found.eps, 16, found.plans)
        for _ in range(6):
            plans = _random_plans(model, found.decision, rng)
            for eps in (exact.eps + 1, 2 * exact.eps):
                assert not plans_certify(model, q, found.decision, eps, 16, plans)
        checked += 1
    assert checked


def test_optimised_slopes_prove_at_least_crowns_radius_and_often_more():
    model = random_model(8, n_inputs=5, hidden=(6, 4), n_classes=3)
    rng = random.Random(8)
    more = 0
    for _ in range(5):
        q = random_query(model, rng)
        crown, optimised = bound_certificate(model, q, alpha_bits=0), bound_certificate(model, q)
        assert optimised.status == crown.status and optimised.decision == crown.decision
        assert optimised.eps >= crown.eps
        more += optimised.eps > crown.eps
    assert more


def test_the_search_is_deterministic():
    """The witness holds the search's slopes; a prover in another process runs the search again."""
    model = random_model(23, n_inputs=5, hidden=(4, 2))
    q = random_query(model, random.Random(3))
    first = radius_search(model, q)
    br._SEARCHES.clear()
    again = radius_search(model, q)
    assert again == first and again is not first


def test_crowns_slopes_are_the_search_without_steps():
    """Zero steps from CROWN's slopes: 0 or 1 only, and they prove exactly what CROWN's fixed rule proves."""
    model = random_model(23, n_inputs=5, hidden=(4, 2))
    rng = random.Random(4)
    for _ in range(3):
        q = random_query(model, rng)
        crown = bound_certificate(model, q, alpha_bits=0)
        if crown.status != CERTIFIED:
            continue
        plans = optimise_plans(model, q, crown.decision, crown.eps, 16, iterations=0)
        assert {a for plan in plans for a in plan.flat()} <= {0, ONE}
        assert plans_certify(model, q, crown.decision, crown.eps, 16, plans)


@pytest.mark.parametrize("seed", range(3))
def test_the_ball_and_box_minimiser_attains_the_dual_bound(seed):
    """The point the search differentiates through is feasible (box and ball) and attains the Lagrangian
    dual's value at its best multiplier, so it is the minimiser of a.x over the set."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        d = int(rng.integers(1, 8))
        lo, hi = -rng.random(d), rng.random(d)
        x = lo + (hi - lo) * rng.random(d)
        a = rng.normal(size=(6, d))
        a[rng.random((6, d)) < 0.2] = 0
        eps = float(rng.random() * 1.5)
        p = ball_box_minimiser(a, x, lo, hi, eps)
        assert np.all(p >= lo - 1e-12) and np.all(p <= hi + 1e-12)
        assert np.all(np.linalg.norm(p - x, axis=1) <= eps + 1e-9)
        mu = best_multiplier(a, x, lo, hi, eps)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(mu[:, None] > 0, np.clip(x - a / (2 * mu[:, None]), lo, hi),
                         np.where(a > 0, lo, np.where(a < 0, hi, x)))
        dual = (a * q).sum(1) + mu * (((q - x) ** 2).sum(1) - eps * eps)
        assert np.all((a * p).sum(1) <= dual + 1e-9)  # no feasible point is below the dual bound: equal


def test_the_circuit_cuts_the_slopes_as_the_plaintext_lays_them_out():
    for hidden, n_classes in [((4, 2), 2), ((3, 2, 2), 3), ((5,), 2)]:
        size = plan_size(hidden, n_classes)
        assert radius_plan_size(hidden, n_classes) == size
        values = list(range(size))
        plan = unflatten(values, 4, hidden, n_classes)
        neurons, margins = radius_layout(values, hidden, n_classes)
        assert plan.flat() == values
        assert [[(list(map(list, lo)), list(map(list, up))) for lo, up in layer] for layer in plan.neurons] == \
            [[(lo, up) for lo, up in layer] for layer in neurons]
        assert [list(map(list, m)) for m in plan.margins] == margins
    with pytest.raises(ValueError):
        radius_layout(list(range(plan_size((4, 2), 2) + 1)), (4, 2), 2)


def _one_hot_model() -> FixedPointModel:
    """A random network whose sensitive attribute is one-hot over three inputs (unit points)."""
    base = random_model(11, n_inputs=6, hidden=(4, 3))
    one = 1 << base.scale_bits
    race = SensitiveDomain("race", (0, 1, 2), ((one, 0, 0), (0, one, 0), (0, 0, one)), ("a", "b", "c"))
    lower, upper = list(base.box_lower), list(base.box_upper)
    for c in (0, 1, 2):
        lower[c], upper[c] = 0, one
    return FixedPointModel(base.net, tuple(lower), tuple(upper), (race,))


def test_a_one_hot_attribute_is_proved_with_optimised_slopes():
    model = _one_hot_model()
    shape = statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=16, radius="bound")
    assert shape.alpha_bits == DEFAULT_ALPHA_BITS and shape.sensitive_widths == (3,)
    rng = random.Random(2)
    proved = 0
    for _ in range(6):
        q = [rng.randint(lo, hi) for lo, hi in zip(model.box_lower, model.box_upper)]
        q[0:3] = rng.choice(model.sensitive[0].points)
        cert = bound_certificate(model, q)
        if cert.status != CERTIFIED or cert.capped:
            continue
        public, witness = statement_inputs(model, 0x0E, cert.certificate(model), shape)
        assert len(witness.radius_slopes) == 3 * radius_plan_size(shape.hidden_sizes, 2)  # one plan per slice
        for eps, expected in ((cert.eps, True), (cert.eps + 1, False)):
            cs = ConstraintSystem(with_values=True, strict=False)
            build_statement(cs, shape, dataclasses.replace(public, eps=eps), witness)
            assert cs.compile(wire_names=False).is_satisfied(cs.witness()) == expected
        proved += 1
    assert proved


@pytest.mark.parametrize("hidden, n_classes", [((4, 2), 2), ((6, 4), 3)])
def test_crowns_own_plans_bound_exactly_as_crowns_rule(hidden, n_classes):
    """`crown_plans` lays CROWN's fixed rule out as slopes: every margin bound is the integer CROWN's rule gives,
    so the optimised radius can always fall back to CROWN's and is never below it."""
    model = random_model(31, n_inputs=5, hidden=hidden, n_classes=n_classes)
    rng = random.Random(5)
    compared = 0
    for _ in range(4):
        q = random_query(model, rng)
        crown = bound_certificate(model, q, alpha_bits=0)
        if crown.status != CERTIFIED:
            continue
        for bits in (16, 8):
            plans = br.crown_plans(model, q, crown.decision, crown.eps, 16, bits)
            assert {a for plan in plans for a in plan.flat()} <= {0, 1 << bits}
            for plan, values in zip(plans, model.slices()):
                x = model.with_slice(q, values)
                assert (br.margin_lower_bounds(model, x, crown.decision, crown.eps, 16, plan)
                        == br.margin_lower_bounds(model, x, crown.decision, crown.eps, 16, None))
            assert plans_certify(model, q, crown.decision, crown.eps, 16, plans)
        compared += 1
    assert compared


def test_slopes_finer_than_the_relaxation_are_refused():
    model = random_model(31, n_inputs=5, hidden=(4, 2), n_classes=2)
    q = random_query(model, random.Random(5))
    with pytest.raises(ValueError, match="at most 16"):
        br.crown_plans(model, q, 0, 1, 16, 17)
