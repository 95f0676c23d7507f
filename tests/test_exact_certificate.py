"""Exact-radius certificates: accepted when honest, and every forgery of the
minimality rule (the counterexample) or of a far-class cover is refused."""
from __future__ import annotations

import copy
import random
from fractions import Fraction

import pytest

from fairness.certificate import (CERTIFIED, COUNTEREXAMPLE, EXACT, FAR_CLASS, Certificate, certify)
from fairness.checker import check_certificate
from fairness.errors import CertificationError
from fairness.regions import LPRegionOracle, free_part
from tests.fairness_toy_models import random_model, random_query

N_QUERIES = 14


@pytest.fixture(scope="module")
def model():
    return random_model(23, n_inputs=5, hidden=(4, 2))


@pytest.fixture(scope="module")
def pairs(model):
    """(fast, exact) certificates of the same queries."""
    oracle = LPRegionOracle(model)
    rng = random.Random(5)
    out = []
    for _ in range(N_QUERIES):
        q = random_query(model, rng)
        out.append((certify(model, q, oracle), certify(model, q, oracle, radius=EXACT)))
    return out


def _exact(pairs, pred=lambda c: True) -> Certificate:
    for _, c in pairs:
        if c.status == CERTIFIED and c.attainment.kind == COUNTEREXAMPLE and pred(c):
            return c
    pytest.fail("no exact certificate with the needed feature in the fixture")


def _refused(model, data, match):
    with pytest.raises(CertificationError, match=match):
        check_certificate(model, Certificate.from_json(data))


def test_exact_certificates_are_accepted_and_never_below_the_fast_radius(model, pairs):
    exact = 0
    for fast, ex in pairs:
        check_certificate(model, Certificate.from_json(ex.to_json()))
        assert ex.status == fast.status and ex.decision == fast.decision
        if ex.status != CERTIFIED:
            continue
        assert ex.eps >= fast.eps  # the fast radius is a lower bound of the true one
        if ex.attainment.kind == COUNTEREXAMPLE:
            exact += 1
            assert ex.radius_is_exact
            assert Fraction(ex.eps, 1 << ex.eps_bits) ** 2 <= ex.min_distance_sq \
                < Fraction(ex.eps + 1, 1 << ex.eps_bits) ** 2
    assert exact >= N_QUERIES // 2


def test_exact_radius_is_sound_on_sampled_inputs(model, pairs):
    """No input within the exact eps (any slice) changes the decision."""
    rng = random.Random(11)
    s = model.scale_bits
    for _, c in pairs[:6]:
        if c.status != CERTIFIED or c.eps == 0:
            continue
        u = free_part(model, c.query)
        radius_int = (c.eps << s) >> c.eps_bits  # eps in integer units, rounded down
        for sv in model.slices():
            for _ in range(150):
                step = [rng.gauss(0, 1) for _ in u]
                norm = sum(v * v for v in step) ** 0.5
                scale = rng.uniform(0, 1) * max(radius_int - len(u), 0) / norm
                x = list(model.with_slice(c.query, sv))
                point = [int(a + b * scale) for a, b in zip(u, step)]
                if not all(lo <= v <= hi for v, lo, hi in
                           zip(point, (model.box_lower[k] for k in model.free_columns),
                               (model.box_upper[k] for k in model.free_columns))):
                    continue
                for col, v in zip(model.free_columns, point):
                    x[col] = v
                logits = model.net.logits(x)
                assert all(logits[c.decision] > z for j, z in enumerate(logits) if j != c.decision)


def test_unknown_radius_mode_is_refused(model, pairs):
    with pytest.raises(CertificationError, match="radius must be one of"):
        certify(model, pairs[0][1].query, radius="approximate")


# ------------------------------------------------------------ forged counterexamples

def test_understated_radius_is_refused(model, pairs):
    """A bank publishing E - 1 keeps every cover valid, but its counterexample is no longer closer than E."""
    c = _exact(pairs, lambda c: c.eps > 1)
    data = c.to_json()
    data["eps"]["E"] -= 1
    _refused(model, data, "not closer than")


def test_overstated_radius_is_refused(model, pairs):
    c = _exact(pairs)
    data = c.to_json()
    data["eps"]["E"] += 1
    with pytest.raises(CertificationError):
        check_certificate(model, Certificate.from_json(data))


def test_counterexample_at_the_query_is_refused(model, pairs):
    """The query itself is in the box and closer than anything, but y strictly wins there."""
    c = _exact(pairs)
    data = c.to_json()
    data["attainment"]["witness"] = {"numerators": list(free_part(model, c.query)), "denominator": 1}
    _refused(model, data, "does not reach the decision")


def test_counterexample_outside_the_box_is_refused(model, pairs):
    c = _exact(pairs)
    data = c.to_json()
    w = data["attainment"]["witness"]
    hi = model.box_upper[model.free_columns[0]]
    w["numerators"][0] = hi * w["denominator"] + 1
    _refused(model, data, "outside the box")


@pytest.mark.parametrize("den", [0, -1])
def test_counterexample_with_a_non_positive_denominator_is_refused(model, pairs, den):
    c = _exact(pairs)
    data = c.to_json()
    w = data["attainment"]["witness"]
    w["numerators"] = [-v for v in w["numerators"]] if den < 0 else w["numerators"]
    w["denominator"] = den * abs(w["denominator"])
    _refused(model, data, "positive integer denominator")


def test_counterexample_of_the_decision_class_is_refused(model, pairs):
    c = _exact(pairs)
    data = c.to_json()
    data["attainment"]["row"] = c.decision
    _refused(model, data, "not another class")


def test_counterexample_in_a_missing_slice_is_refused(model, pairs):
    c = _exact(pairs)
    data = c.to_json()
    data["attainment"]["slice_index"] = len(model.slices())
    _refused(model, data, "slice the model does not have")


def test_counterexample_moved_to_a_slice_where_the_decision_holds_is_refused(model, pairs):
    """The point flips the decision in its own slice only; named under another slice it proves nothing."""
    for _, c in pairs:
        if c.status != CERTIFIED or c.attainment.kind != COUNTEREXAMPLE:
            continue
        a = c.attainment
        other = 1 - a.slice_index
        w = a.witness
        full = [w.denominator * v for v in model.with_slice([0] * model.net.n_inputs, model.slices()[other])]
        for col, v in zip(model.free_columns, w.numerators):
            full[col] = v
        logits = model.net.scaled_logits(full, w.denominator)
        if logits[a.row] < logits[c.decision]:
            data = c.to_json()
            data["attainment"]["slice_index"] = other
            _refused(model, data, "does not reach the decision")
            return
    pytest.fail("no counterexample in the fixture changes class only in its own slice")


def test_counterexample_too_far_is_refused(model, pairs):
    """Scaling the point's offset from the query moves it beyond (E+1)/2^t (or back into y's class)."""
    c = _exact(pairs, lambda c: c.eps > 0)
    data = c.to_json()
    w = data["attainment"]["witness"]
    u = free_part(model, c.query)
    d = w["denominator"]
    far = [2 * p - d * x for p, x in zip(w["numerators"], u)]  # u* + 2 (v - u*)
    lo = [model.box_lower[k] * d for k in model.free_columns]
    hi = [model.box_upper[k] * d for k in model.free_columns]
    w["numerators"] = [min(max(v, a), b) for v, a, b in zip(far, lo, hi)]
    _refused(model, data, "not closer than|does not reach the decision")


def test_counterexample_with_a_region_code_is_malformed(model, pairs):
    c = _exact(pairs)
    data = c.to_json()
    data["attainment"]["code"] = c.slices[0].regions[0].code
    with pytest.raises(CertificationError, match="names no region"):
        Certificate.from_json(data)


def test_counterexample_with_fractional_coordinates_is_malformed(model, pairs):
    c = _exact(pairs)
    data = c.to_json()
    data["attainment"]["witness"]["numerators"][0] += 0.5
    with pytest.raises(CertificationError, match="malformed"):
        Certificate.from_json(data)


# ------------------------------------------------------------ forged far-class covers

def _far_class_location(c: Certificate):
    for si, sc in enumerate(c.slices):
        for ri, rc in enumerate(sc.regions):
            for j, cover in enumerate(rc.classes):
                if cover is not None and cover.kind == FAR_CLASS:
                    return si, ri, j
    return None


def test_far_class_cover_without_its_region_rows_is_refused(model, pairs):
    """Dropping the region's rows leaves the hyperplane alone, which lies closer than eps."""
    c = _exact(pairs, lambda c: _far_class_location(c) is not None)
    si, ri, j = _far_class_location(c)
    data = c.to_json()
    cover = data["slices"][si]["regions"][ri]["classes"][j]["farkas"]
    cover["multipliers"] = [0] * len(cover["multipliers"])
    cover["box"] = [0] * len(cover["box"])
    _refused(model, data, "far class region")


def test_far_class_cover_with_a_negative_multiplier_is_refused(model, pairs):
    c = _exact(pairs, lambda c: _far_class_location(c) is not None)
    si, ri, j = _far_class_location(c)
    data = c.to_json()
    cover = data["slices"][si]["regions"][ri]["classes"][j]["farkas"]
    k = max(range(len(cover["multipliers"])), key=lambda i: cover["multipliers"][i])
    cover["multipliers"][k] = -cover["multipliers"][k]
    _refused(model, data, "far class region")


def test_far_class_cover_moved_to_another_region_is_refused(model, pairs):
    """A separation certificate proves something about one region's class part only."""
    for _, c in pairs:
        loc = _far_class_location(c) if c.status == CERTIFIED else None
        if loc is None:
            continue
        si, ri, j = loc
        regions = c.slices[si].regions
        for rj in range(len(regions)):
            if rj == ri:
                continue
            data = c.to_json()
            moved = copy.deepcopy(data["slices"][si]["regions"][ri]["classes"][j])
            data["slices"][si]["regions"][rj]["classes"][j] = moved
            del data["leakage"]  # a recount the bank would publish with the moved cover
            try:
                check_certificate(model, Certificate.from_json(data))
            except CertificationError as exc:
                assert "far class region" in str(exc)
                return
    pytest.fail("no far-class cover in the fixture that fails when moved")


def test_far_class_cover_on_a_neuron_row_is_refused(model, pairs):
    c = _exact(pairs, lambda c: _far_class_location(c) is not None)
    si, ri, j = _far_class_location(c)
    data = c.to_json()
    data["slices"][si]["regions"][ri]["neurons"][0] = copy.deepcopy(data["slices"][si]["regions"][ri]["classes"][j])
    del data["leakage"]
    _refused(model, data, "does not apply to a neuron")


def test_far_class_cover_without_box_multipliers_is_malformed(model, pairs):
    c = _exact(pairs, lambda c: _far_class_location(c) is not None)
    si, ri, j = _far_class_location(c)
    data = c.to_json()
    del data["slices"][si]["regions"][ri]["classes"][j]["farkas"]["box"]
    with pytest.raises(CertificationError, match="box multipliers missing"):
        Certificate.from_json(data)


def test_the_fast_statement_refuses_exact_certificates(model, pairs):
    """Until the circuit proves the exact rule, the witness builder says so instead of proving a wrong statement."""
    from statement.adapter import StatementWitnessError, statement_inputs, statement_shape
    c = _exact(pairs)
    shape = statement_shape(model, region_slots=64, farkas_slots=64, eps_bits=c.eps_bits)
    with pytest.raises(StatementWitnessError, match="exact statement"):
        statement_inputs(model, 1, c, shape)
