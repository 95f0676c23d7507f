"""The exact-distance reference radius: closed forms, brute force with the exact forward pass, edge cases."""
from __future__ import annotations

import math
import random
import time
from fractions import Fraction

import numpy as np
import pytest

from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain
from tests import exact_reference as er
from tests.exact_reference import (ReferenceLimitError, reference_radius, reference_slice_radii,
                                   reference_slice_results, scaled_logits)
from tests.fairness_toy_models import random_model, random_query

S = 8
ONE = 1 << S


def plane_model() -> FixedPointModel:
    """x = (sens, u1, u2); hidden relu(u1), relu(-u1), relu(u2), relu(-u2), relu(sens);
    z0 = u1 + u2 + sens/4 - 1/2, z1 = 0. Class 1 below the line u1 + u2 = 1/2 - sens/4, class 0 on or above it."""
    w0 = ((0, ONE, 0), (0, -ONE, 0), (0, 0, ONE), (0, 0, -ONE), (ONE, 0, 0))
    b0 = (0,) * 5
    w1 = ((ONE, -ONE, ONE, -ONE, ONE // 4), (0,) * 5)
    b1 = (-(1 << (3 * S)) // 2, 0)
    net = QuantisedMLP(scale_bits=S, weights=(w0, w1), biases=(b0, b1))
    return FixedPointModel(net=net, box_lower=(-ONE,) * 3, box_upper=(ONE,) * 3,
                           sensitive=(SensitiveDomain.scalar("group", 0, (0, ONE), ("a", "b")),))


def unreachable_model() -> FixedPointModel:
    """z0 = relu(u1) + relu(u2) + relu(sens) + 3 >= 3 > 0 = z1 on the whole box: class 1 is never reached."""
    w0 = ((0, ONE, 0), (0, 0, ONE), (ONE, 0, 0))
    w1 = ((ONE, ONE, ONE), (0, 0, 0))
    b1 = (3 << (3 * S), 0)
    net = QuantisedMLP(scale_bits=S, weights=(w0, w1), biases=((0, 0, 0), b1))
    return FixedPointModel(net=net, box_lower=(-ONE,) * 3, box_upper=(ONE,) * 3,
                           sensitive=(SensitiveDomain.scalar("group", 0, (0, ONE), ("a", "b")),))


# --------------------------------------------------------------------------- closed forms


def test_plane_model_radius_is_the_distance_to_the_nearest_slice_line():
    model = plane_model()
    q = (0, -ONE // 2, -ONE // 4)                      # u* = (-1/2, -1/4): class 1 in both slices
    assert model.net.decision(q) == 1
    r = reference_radius(model, q)
    # slice 1's line u1 + u2 = 1/4 is at (1/4 + 3/4) / sqrt 2; slice 0's (1/2) at (5/4) / sqrt 2
    assert r.radius == pytest.approx(1 / math.sqrt(2), abs=1e-12)
    assert r.radius_sq == Fraction(1, 2)
    assert r.slice_index == 1 and r.cls == 0
    assert r.point == pytest.approx((0.0, 0.25), abs=1e-12)
    assert r.confirmed_exact and r.confirmed_upper == pytest.approx(r.radius, abs=1e-12)
    assert r.confirmed_pushed is not None and 0 <= r.confirmed_pushed - r.radius < 1e-6
    assert r.unverified_qps == 0
    radii = reference_slice_radii(model, q)
    assert radii == pytest.approx((1.25 / math.sqrt(2), 1 / math.sqrt(2)), abs=1e-12)


@pytest.mark.parametrize("sens", [0, ONE])
def test_plane_model_radius_at_a_box_corner_is_clipped_by_the_box(sens):
    model = plane_model()
    q = (sens, ONE, -ONE)                              # corner (1, -1): the projections leave the box (u1 <= 1)
    r = reference_radius(model, q)
    assert r.radius == pytest.approx(0.25, abs=1e-12) and r.radius_sq == Fraction(1, 16)
    assert r.slice_index == 1 and r.cls == 0
    assert r.point == pytest.approx((1.0, -0.75), abs=1e-12)
    assert r.confirmed_upper == pytest.approx(0.25, abs=1e-12)
    assert reference_slice_radii(model, q) == pytest.approx((0.5, 0.25), abs=1e-12)


def test_a_slice_that_already_flips_gives_zero():
    model = plane_model()
    q = (0, 3 * ONE // 8, 0)                           # u1 + u2 = 3/8: class 1 for sens 0, class 0 for sens 1
    r = reference_radius(model, q)
    assert r.radius == 0.0 and r.slice_index == 1 and r.cls == 0
    assert r.regions == 0 and r.qps == 0 and r.confirmed_upper == 0.0
    assert reference_slice_radii(model, q)[1] == 0.0


def test_a_tie_at_the_query_is_not_a_strict_decision():
    model = plane_model()
    q = (0, ONE // 2, 0)                               # z0 = z1 = 0: decided 0 (lowest index) but not strictly
    assert model.net.decision(q) == 0 and model.net.is_tie(q)
    r = reference_radius(model, q)
    assert r.radius == 0.0 and r.slice_index == 0 and r.cls == 1


def test_an_unreachable_class_gives_an_infinite_radius():
    model = unreachable_model()
    q = (ONE, -ONE // 3, ONE // 5)
    r = reference_radius(model, q)
    assert r.radius == math.inf
    assert r.slice_index is None and r.point is None and r.cls is None and r.confirmed_upper is None
    assert r.regions >= 2                             # every reachable region of both slices was searched
    assert reference_slice_radii(model, q) == (math.inf, math.inf)


def test_region_limit_raises_rather_than_answering():
    model = plane_model()
    with pytest.raises(ReferenceLimitError):
        reference_radius(model, (0, -ONE // 2, -ONE // 4), max_regions=3)


def test_scaled_forward_pass_is_homogeneous():
    model = random_model(3, n_inputs=3, hidden=(4, 2))
    rng = random.Random(1)
    for _ in range(20):
        x = random_query(model, rng)
        z = model.net.logits(x)
        assert scaled_logits(model.net, x, 1) == z
        assert scaled_logits(model.net, [7 * v for v in x], 7) == tuple(7 * v for v in z)


# --------------------------------------------------------------------------- brute force


def int64_logits(net: QuantisedMLP, P: np.ndarray, D: int) -> np.ndarray:
    """D times the logits at the rational inputs P / D (rows of int64 at scale 2^s), exactly in int64."""
    bound = float(np.max(np.abs(P)))
    h = P.astype(np.int64)
    for l, (w, b) in enumerate(zip(net.weights, net.biases)):
        W = np.array(w, dtype=np.int64)
        bb = np.array(b, dtype=np.int64) * D
        bound = float(np.max(np.abs(W).sum(axis=1))) * bound + float(np.max(np.abs(bb)))
        assert bound < 2.0 ** 62, "int64 would overflow"
        h = h @ W.T + bb
        if l < net.n_layers - 1:
            h = np.maximum(h, 0)
    return h


def not_strict(Z: np.ndarray, y: int) -> np.ndarray:
    others = np.delete(Z, y, axis=1)
    return np.max(others, axis=1) >= Z[:, y]


def embed(model: FixedPointModel, U: np.ndarray, slice_values, D: int) -> np.ndarray:
    P = np.zeros((len(U), model.net.n_inputs), dtype=np.int64)
    P[:, list(model.free_columns)] = U
    for f, v in zip(model.sensitive, slice_values):
        P[:, f.column] = v * D
    return P


def check_against_grid(model: FixedPointModel, q, ref_slices, tol=1e-9):
    """Every integer point of the free box nearer than a slice's radius strictly decides y there."""
    free = model.free_columns
    y = model.net.decision(q)
    axes = [np.arange(model.box_lower[i], model.box_upper[i] + 1, dtype=np.int64) for i in free]
    U = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(free))
    u_star = np.array([q[i] for i in free], dtype=np.int64)
    dist = np.sqrt(((U - u_star) ** 2).sum(axis=1).astype(float)) / (1 << model.scale_bits)
    for sv, ref in zip(model.slices(), ref_slices):
        bad = not_strict(int64_logits(model.net, embed(model, U, sv, 1), 1), y)
        nearest_bad = float(dist[bad].min()) if bad.any() else math.inf
        assert nearest_bad >= ref.radius - tol, (nearest_bad, ref.radius)


def check_against_ball(model: FixedPointModel, q, ref_slices, rng: np.random.Generator, n=60_000, k=10):
    """Random rational points (denominator 2^k) inside each slice's radius ball strictly decide y."""
    free = model.free_columns
    y = model.net.decision(q)
    d = len(free)
    s = model.scale_bits
    D = 1 << k
    u_star = np.array([q[i] for i in free], dtype=np.int64)
    lo = np.array([model.box_lower[i] for i in free], dtype=np.int64) * D
    hi = np.array([model.box_upper[i] for i in free], dtype=np.int64) * D
    for sv, ref in zip(model.slices(), ref_slices):
        if ref.radius == 0:
            continue
        rad = min(ref.radius, 4.0) * (1 << (s + k))      # in units of 2^-(s+k)
        g = rng.standard_normal((n, d))
        g /= np.linalg.norm(g, axis=1, keepdims=True)
        scale = rng.uniform(0, 1, n) ** (1.0 / d)
        scale[: n // 4] = 1 - 10.0 ** rng.uniform(-8, -3, n // 4)           # a quarter right at the rim
        g *= rad * scale[:, None]
        U = np.clip(np.floor(g).astype(np.int64) + u_star * D, lo, hi)
        dist = np.sqrt(((U - u_star * D).astype(float) ** 2).sum(axis=1)) / (1 << (s + k))
        inside = dist < ref.radius * (1 - 1e-9) - 1e-12
        bad = not_strict(int64_logits(model.net, embed(model, U[inside], sv, D), D), y)
        assert not bad.any(), float(dist[inside][bad].min())


def check_reference(model: FixedPointModel, q, *, grid: bool, rng: np.random.Generator):
    ref = reference_radius(model, q)
    per_slice = reference_slice_results(model, q)
    assert ref.radius == pytest.approx(min(r.radius for r in per_slice), rel=1e-12, abs=1e-15)
    for r in per_slice + (ref,):
        if r.radius in (0.0, math.inf):
            continue
        assert r.unverified_qps == 0 and r.radius_sq is not None
        assert math.sqrt(r.radius_sq) == pytest.approx(r.radius, rel=1e-14)
        # an exact counterexample at the minimiser, and one within a hair of it from the float point alone
        assert r.confirmed_exact and r.confirmed_upper - r.radius <= 1e-12 * max(1.0, r.radius)
        assert r.confirmed_pushed is not None and 0 <= r.confirmed_pushed - r.radius <= 1e-6 * max(1.0, r.radius)
        u_star = [q[i] / ONE for i in model.free_columns]
        assert math.dist(r.point, u_star) == pytest.approx(r.radius, rel=1e-9, abs=1e-12)
    if grid:
        check_against_grid(model, q, per_slice)
    check_against_ball(model, q, per_slice, rng)
    return ref


# (seed, whether the radius is finite and positive): mostly finite, so that the brute force is not vacuous
TWO_FREE = [(1, True), (3, True), (5, True), (14, True), (17, True), (18, True), (22, True), (26, True),
            (29, True), (0, False)]
THREE_FREE = [(0, True), (1, True), (2, True), (5, True), (6, True), (8, True), (12, True), (3, False)]
THREE_CLASS = [(3, True), (7, True), (8, True), (9, True), (12, True), (14, True), (0, False)]


@pytest.mark.parametrize("seed,finite", TWO_FREE)
def test_random_two_free_inputs_against_the_full_integer_grid(seed, finite):
    model = random_model(seed, n_inputs=3, hidden=(4, 2))
    q = random_query(model, random.Random(100 + seed))
    ref = check_reference(model, q, grid=True, rng=np.random.default_rng(seed))
    assert (0 < ref.radius < math.inf) == finite


@pytest.mark.parametrize("seed,finite", THREE_FREE)
def test_random_three_free_inputs_against_dense_sampling(seed, finite):
    model = random_model(50 + seed, n_inputs=4, hidden=(4, 2))
    q = random_query(model, random.Random(200 + seed))
    ref = check_reference(model, q, grid=False, rng=np.random.default_rng(seed))
    assert (0 < ref.radius < math.inf) == finite


@pytest.mark.parametrize("seed,finite", THREE_CLASS)
def test_random_three_class_models_against_the_full_integer_grid(seed, finite):
    model = random_model(80 + seed, n_inputs=3, hidden=(4, 2), n_classes=3)
    q = random_query(model, random.Random(300 + seed))
    ref = check_reference(model, q, grid=True, rng=np.random.default_rng(seed))
    assert (0 < ref.radius < math.inf) == finite


# --------------------------------------------------------------------------- solver paths


def test_fallback_solvers_give_the_same_exact_radius(monkeypatch):
    cases = []
    for seed in range(4):
        model = random_model(seed, n_inputs=4, hidden=(4, 2))
        q = random_query(model, random.Random(seed))
        cases.append((model, q, reference_radius(model, q)))
    monkeypatch.setattr(er._LDP, "_nnls", lambda self, G, h: "failed")   # LP start, then SLSQP
    for model, q, ref in cases:
        alt = reference_radius(model, q)
        assert alt.radius_sq == ref.radius_sq and alt.slice_index == ref.slice_index
    monkeypatch.setattr(er._LDP, "_slsqp", lambda self, rows, x0: x0 + np.nan)  # LP start, then trust-constr
    model, q, ref = cases[3]
    assert 0 < ref.radius < math.inf
    alt = reference_radius(model, q)
    assert alt.radius_sq == ref.radius_sq and alt.slice_index == ref.slice_index


def test_float_answers_match_the_exact_polish(monkeypatch):
    cases = []
    for seed in range(4):
        model = random_model(seed, n_inputs=4, hidden=(4, 2))
        q = random_query(model, random.Random(seed))
        cases.append((model, q, reference_radius(model, q)))
    monkeypatch.setattr(er._LDP, "_exact", lambda self, rows, active, fixed: None)
    for model, q, ref in cases:
        alt = reference_radius(model, q)
        assert alt.radius == pytest.approx(ref.radius, rel=1e-9, abs=1e-12)
        if 0 < ref.radius < math.inf:
            assert alt.radius_sq is None and 0 < alt.unverified_qps <= alt.qps
            assert alt.confirmed_pushed is not None and alt.confirmed_pushed - ref.radius <= 1e-6


# --------------------------------------------------------------------------- a trained model


@pytest.mark.slow
def test_german_reference_radii_are_confirmed():
    from fairness.datasets import load_dataset
    from fairness.fixed_point import queries_in_box, to_fixed_point
    from fairness.training import load_or_train

    fp = to_fixed_point(load_or_train("german", (4, 2)))
    for q in queries_in_box(fp, load_dataset("german").X_test, 10):
        t = time.perf_counter()
        r = reference_radius(fp, q)
        assert time.perf_counter() - t < 30
        if 0 < r.radius < math.inf:
            assert r.radius_sq is not None and r.confirmed_exact
            assert r.confirmed_pushed - r.radius <= 1e-6 * max(1.0, r.radius)
