"""The bound radius (fairness/bound_radius.py): never above the exact radius where enumeration gives it,
never beyond a counterexample the attack finds on wider networks, every point of its ball decided the
same in exact arithmetic, and each relaxation it uses valid."""
from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from fairness.bound_radius import (CERTIFIED, FLIP, SLOPE_ONE, LayerBounds, _InputSet, bound_certificate,
                                   certifies, margin_lower_bounds)
from fairness.certificate import EXACT, certify
from fairness.counterexample import find_counterexample
from fairness.regions import LPRegionOracle, eps_cap
from tests.fairness_toy_models import random_model, random_query

N_QUERIES = 10


def _queries(model, seed: int, n: int = N_QUERIES):
    rng = random.Random(seed)
    return [random_query(model, rng) for _ in range(n)]


@pytest.mark.parametrize("hidden, n_classes", [((4, 2), 2), ((8, 2), 2), ((6, 4), 3)])
def test_the_bound_radius_never_exceeds_the_exact_radius(hidden, n_classes):
    model = random_model(31, n_inputs=5, hidden=hidden, n_classes=n_classes)
    oracle = LPRegionOracle(model)
    ratios = []
    for q in _queries(model, 3):
        bound = bound_certificate(model, q)
        exact = certify(model, q, oracle, radius=EXACT)
        assert bound.decision == exact.decision
        assert (bound.status == FLIP) == (exact.status == "flip")
        assert bound.eps <= exact.eps, (q, bound.eps, exact.eps)
        if bound.status == CERTIFIED:
            assert certifies(model, q, bound.decision, bound.eps, bound.eps_bits)
            if exact.eps:
                ratios.append(bound.eps / exact.eps)
    assert ratios and max(ratios) <= 1  # some certified, tabulated in benchmarks/bound_radius.py


def test_every_point_of_the_certified_ball_keeps_the_decision_exactly():
    model = random_model(7, n_inputs=5, hidden=(8, 4))
    rng = np.random.default_rng(0)
    s, free = model.scale_bits, list(model.free_columns)
    checked = 0
    for q in _queries(model, 9, 6):
        cert = bound_certificate(model, q)
        if cert.status != CERTIFIED:
            continue
        eps = Fraction(cert.eps << s, 1 << cert.eps_bits)  # in input units
        for slice_values in model.slices():
            base = list(model.with_slice(q, slice_values))
            for _ in range(60):
                direction = rng.normal(size=len(free))
                direction *= float(eps) * rng.uniform(0, 1) ** (1 / len(free)) / np.linalg.norm(direction)
                den = 1 << 20
                x = [v * den for v in base]
                for k, d in zip(free, direction):
                    x[k] = min(max(round((base[k] + d) * den), model.box_lower[k] * den), model.box_upper[k] * den)
                if sum(Fraction(x[k] - base[k] * den, den) ** 2 for k in free) > eps * eps:
                    continue  # rounding left the ball
                z = model.net.scaled_logits(x, den)
                assert all(z[cert.decision] > z[j] for j in range(len(z)) if j != cert.decision)
                checked += 1
    assert checked > 200


@pytest.mark.parametrize("hidden", [(16, 8), (32, 16)])
def test_the_bound_radius_never_exceeds_an_attacks_counterexample(hidden):
    model = random_model(13, n_inputs=6, hidden=hidden)
    found = 0
    for q in _queries(model, 4, 6):
        cert = bound_certificate(model, q)
        counter = find_counterexample(model, q, seed=1, samples_per_radius=64, n_radii=10, walks=4)
        if counter is None:
            continue
        found += 1
        assert Fraction(cert.eps, 1 << cert.eps_bits) ** 2 <= counter.distance_sq
    assert found >= 3


def test_relaxations_are_valid_whatever_the_bounds():
    rng = random.Random(2)
    for _ in range(2000):
        l, u = -rng.randint(1, 10**9), rng.randint(1, 10**9)
        a, t, off = LayerBounds((l,), (u,)).slopes()
        for z in (Fraction(l), Fraction(0), Fraction(u), Fraction(rng.randint(l, u)), Fraction(l + u, 2)):
            relu = max(z, Fraction(0))
            assert Fraction(a[0], SLOPE_ONE) * z <= relu <= Fraction(t[0], SLOPE_ONE) * (z - off[0])
        assert t[0] - 1 < Fraction(u * SLOPE_ONE, u - l) <= t[0]  # the tightest slope at 2^-16, rounded up
    on, off_ = LayerBounds((3, -5), (9, -1)).slopes()[:2]
    assert on == (SLOPE_ONE, 0) and off_ == (SLOPE_ONE, 0)


def test_the_set_minimum_is_a_lower_bound_and_beats_ball_and_box_alone():
    model = random_model(5, n_inputs=5, hidden=(4, 2))
    rng = random.Random(8)
    for q in _queries(model, 6, 5):
        for e in (1000, 20000, 200000):
            inputs = _InputSet(model, q, e, 16)
            eps = Fraction(e << model.scale_bits, 1 << 16)  # in input units
            a = [rng.randint(-10**6, 10**6) for _ in q]
            c = rng.randint(-10**9, 10**9)
            bound = Fraction(inputs.minimum_scaled(a, c), 1 << 16)
            free = list(model.free_columns)
            # box alone and ball alone, exactly (both are relaxations of the set, so the dual bound is above)
            box = c + sum(a[k] * q[k] for k in model.sensitive_columns) + \
                sum(min(a[k] * model.box_lower[k], a[k] * model.box_upper[k]) for k in free)
            ball = c + sum(ak * qk for ak, qk in zip(a, q)) - float(eps) * math.sqrt(sum(a[k] ** 2 for k in free))
            assert bound >= box - 1 and float(bound) >= ball - 1e-6 * abs(ball) - 1
            for _ in range(200):  # and never above the value at a point of the set
                x = list(q)
                for k in free:
                    x[k] = Fraction(rng.randint(model.box_lower[k], model.box_upper[k]))
                d2 = sum((x[k] - q[k]) ** 2 for k in free)
                if d2 > eps * eps:
                    continue
                assert bound <= sum(ak * xk for ak, xk in zip(a, x)) + c


def test_margin_bounds_at_eps_zero_are_the_exact_margins():
    model = random_model(3, n_inputs=4, hidden=(4, 3), n_classes=3)
    for q in _queries(model, 1, 5):
        y = model.net.decision(q)
        z = model.net.logits(q)
        bounds = margin_lower_bounds(model, q, y, 0, 16)
        scale = 16 + 16 * len(model.net.hidden_sizes)
        assert bounds == {j: (z[y] - z[j]) << scale for j in range(len(z)) if j != y}


def test_a_flip_is_reported_and_a_capped_radius_is_the_whole_box():
    model = random_model(23, n_inputs=5, hidden=(4, 2))
    statuses = {bound_certificate(model, q).status for q in _queries(model, 5, 8)}
    assert statuses == {CERTIFIED, FLIP}
    constant = random_model(2, n_inputs=3, hidden=(2,))
    net = constant.net
    flat = type(net)(net.scale_bits, tuple(tuple(tuple(0 for _ in row) for row in w) for w in net.weights),
                     (net.biases[0], (1 << (3 * net.scale_bits), 0)))
    model = type(constant)(flat, constant.box_lower, constant.box_upper, constant.sensitive)
    cert = bound_certificate(model, _queries(model, 1, 1)[0])
    assert cert.status == CERTIFIED and cert.capped and cert.eps == eps_cap(model, 16)


def test_certify_command_offers_the_bound_radius(bank, capsys):
    from prover_service.cli import main as fairproof
    from prover_service.outputs import CertifyOutput

    root = str(bank.prover.workspace.root)
    assert fairproof(["certify", "--model", root, "--index", "0", "--radius", "bound", "--json"]) == 0
    out = CertifyOutput.model_validate_json(capsys.readouterr().out, strict=True)
    assert out.radius.kind in ("bound", "flip", "cap")
    assert fairproof(["certify", "--model", root, "--index", "0", "--radius", "exact", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert out.decision == exact["decision"] and out.radius.numerator <= exact["radius"]["numerator"]


def test_hybrid_takes_the_exact_radius_within_the_budget_and_the_bound_beyond(bank, capsys):
    from prover_service.cli import main as fairproof
    from prover_service.outputs import CertifyOutput

    root = str(bank.prover.workspace.root)
    kinds = {}
    for budget in ("120", "0.001"):
        assert fairproof(["certify", "--model", root, "--index", "2", "--radius", "hybrid", "--exact-budget", budget,
                          "--json"]) == 0
        captured = capsys.readouterr()
        kinds[budget] = CertifyOutput.model_validate_json(captured.out, strict=True).radius
        assert ("finished within the budget" in captured.err) == (budget == "120")
    assert kinds["120"].kind == "exact" and kinds["0.001"].kind == "bound"
    assert kinds["0.001"].numerator <= kinds["120"].numerator
    assert fairproof(["certify", "--model", root, "--index", "2", "--radius", "hybrid", "--exact-budget", "0"]) != 0


@pytest.mark.slow
def test_the_bound_radius_never_exceeds_the_exact_radius_at_16x8():
    """The (16,8) comparison: exact enumeration takes 5-40 s a query here, so it runs with -m slow."""
    model = random_model(31, n_inputs=4, hidden=(16, 8))
    oracle = LPRegionOracle(model)
    compared = 0
    for q in _queries(model, 3, 6):
        bound = bound_certificate(model, q)
        exact = certify(model, q, oracle, radius=EXACT)
        assert bound.decision == exact.decision and (bound.status == FLIP) == (exact.status == "flip")
        assert bound.eps <= exact.eps, (q, bound.eps, exact.eps)
        compared += bound.status == CERTIFIED
    assert compared >= 3
