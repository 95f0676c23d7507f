"""GeoCert with projection distances: exact answers on a hand-built model, invariants on random ones."""
from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

from fairness.certificate import CERTIFIED, FLIP, Certificate, certify
from fairness.checker import check_certificate
from fairness.errors import CertificationError
from fairness.exact_radius import exact_radius
from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain
from fairness.geocert import geocert_slice
from fairness.regions import LPRegionOracle
from tests.fairness_toy_models import random_model, random_query

S = 8          # model scale 2^8
ONE = 1 << S


def line_model() -> FixedPointModel:
    """x = (sens, u); hidden h1 = relu(u), h2 = relu(-u), h3 = relu(sens);
    z0 = h1 - h2 + h3/8 - 1/4, z1 = 0. Slice sens=0: boundary u = 1/4; sens=1: u = 1/8."""
    w0 = ((0, ONE), (0, -ONE), (ONE, 0))
    b0 = (0, 0, 0)
    w1 = ((ONE, -ONE, ONE // 8), (0, 0, 0))
    b1 = (-(1 << (3 * S)) // 4, 0)
    net = QuantisedMLP(scale_bits=S, weights=(w0, w1), biases=(b0, b1))
    return FixedPointModel(net=net, box_lower=(-ONE, -ONE), box_upper=(ONE, ONE),
                           sensitive=(SensitiveDomain.scalar("group", 0, (0, ONE), ("a", "b")),))


def test_hand_model_radius_is_exact_and_attained_on_the_nearest_boundary():
    model = line_model()
    cert = certify(model, (0, 3 * ONE // 4))  # u* = 0.75 -> class 0; boundaries at 0.25 and 0.125
    assert cert.status == CERTIFIED and cert.decision == 0
    assert cert.eps == 1 << 15 and cert.eps_bits == 16          # eps = 0.5 exactly
    assert cert.min_distance_sq == Fraction(1, 4)
    a = cert.attainment
    assert a.kind == "decision" and a.slice_index == 0 and a.row == 1
    assert Fraction(a.witness.numerators[0], a.witness.denominator) == ONE // 4   # the point u = 1/4
    check_certificate(model, cert)


def test_hand_model_crosses_a_neuron_and_covers_zero_normal_rows():
    model = line_model()
    cert = certify(model, (0, -ONE // 2))  # u* = -0.5 -> class 1; crosses u = 0 (at 0.5) before the boundaries
    assert cert.decision == 1 and cert.status == CERTIFIED
    assert cert.eps == (5 << 16) // 8                            # slice 1: boundary 0.125 at distance 0.625
    assert cert.attainment.slice_index == 1
    # h1 and h2 share the hyperplane u = 0, so the codes (h1, h2) = 01, 11 (the flat region u = 0), 10, 00
    # are all visited; on slice 0, h3 is identically 0 (zero normal and offset) and is crossed for free,
    # doubling them; on slice 1, h3 > 0 is an empty facet.
    assert cert.regions_per_slice == (8, 4)
    kinds = {c.kind for s in cert.slices for r in s.regions for c in r.neurons}
    assert kinds == {"neighbor", "empty_facet"}   # no neuron row needs a distance here
    check_certificate(model, cert)


def test_counterfactual_flip_and_tie_give_zero():
    model = line_model()
    flip = certify(model, (0, 3 * ONE // 16))  # u* = 0.1875: class 1 on slice 0, class 0 on slice 1
    assert flip.status == FLIP and flip.eps == 0 and flip.flip.slice_index == 1 and not flip.flip.tie
    check_certificate(model, flip)
    tie = certify(model, (0, ONE // 4))  # logits tie at the query itself
    assert tie.status == FLIP and tie.decision == 0 and tie.flip.slice_index == 0 and tie.flip.tie
    check_certificate(model, tie)


def test_constant_decision_is_capped_at_the_box_diagonal():
    base = line_model()
    w1 = ((0, 0, 0), (0, 0, 0))
    b1 = (1 << (3 * S), 0)
    net = QuantisedMLP(scale_bits=S, weights=(base.net.weights[0], w1), biases=(base.net.biases[0], b1))
    model = FixedPointModel(net=net, box_lower=base.box_lower, box_upper=base.box_upper, sensitive=base.sensitive)
    cert = certify(model, (ONE, 0))
    assert cert.attainment.kind == "cap" and cert.eps == 2 << 16   # free box [-1, 1]: diagonal 2
    check_certificate(model, cert)


def test_region_budget_stops_at_the_crossing_with_a_neuron_attainment():
    model = line_model()
    cert = certify(model, (ONE, -ONE // 2), max_regions=1)
    assert cert.attainment.kind == "neuron" and cert.eps == 1 << 15   # the row u = 0 at distance 0.5
    check_certificate(model, cert)


def test_bad_queries_are_refused():
    model = line_model()
    for q, msg in [((0,), "features"), ((0, 2 * ONE), "box"), ((7, 0), "domain value"), ((0, 0.5), "integers")]:
        with pytest.raises(CertificationError, match=msg):
            certify(model, q)


@pytest.mark.parametrize("seed,hidden,classes", [(0, (4, 2), 2), (1, (2, 4), 2), (2, (4, 2), 3), (3, (6, 3), 2)])
def test_random_models_certify_check_and_stay_below_the_exact_radius(seed, hidden, classes):
    model = random_model(seed, n_inputs=5, hidden=hidden, n_classes=classes)
    oracle = LPRegionOracle(model)
    rng = random.Random(seed)
    statuses = set()
    for _ in range(5):
        x = random_query(model, rng)
        cert = certify(model, x, oracle)
        statuses.add(cert.status)
        again = Certificate.from_json(json.loads(json.dumps(cert.to_json())))
        assert again == cert
        check_certificate(model, again)
        if cert.status == CERTIFIED:
            for sc, sv in zip(cert.slices, model.slices()):
                start = (model.net.activation_code(model.with_slice(x, sv))).key
                assert sc.regions[0].code == start
            ref = exact_radius(model, cert)
            assert float(cert.eps_value) <= ref.radius + 1e-9
    assert CERTIFIED in statuses


def test_warm_oracle_makes_no_lp_calls_and_reproduces_the_certificate():
    model = random_model(11, n_inputs=5, hidden=(4, 2))
    oracle = LPRegionOracle(model)
    rng = random.Random(3)
    queries = [random_query(model, rng) for _ in range(5)]
    first = [certify(model, q, oracle) for q in queries]
    calls = oracle.lp_calls
    assert calls > 0
    assert [certify(model, q, oracle) for q in queries] == first
    assert oracle.lp_calls == calls


def test_geocert_pops_in_distance_order_and_visits_the_start_first():
    model = random_model(4, n_inputs=5, hidden=(4, 2))
    rng = random.Random(9)
    x = random_query(model, rng)
    y = model.net.decision(x)
    search = geocert_slice(model, x, y, model.slices()[0], LPRegionOracle(model))
    assert search.codes[0] == model.net.activation_code(model.with_slice(x, model.slices()[0]))
    assert search.steps >= 1 and len({c.key for c in search.codes}) == len(search.codes)
    if search.stop.reason == "decision":
        assert search.stop.distance_sq is not None and search.stop.distance_sq >= 0


class _LyingOracle:
    """Hands out forged (all-zero) Farkas certificates for every question."""

    def __init__(self, model):
        self.inner = LPRegionOracle(model)

    def facet(self, region, k):
        from fairness.farkas import FarkasCertificate
        from fairness.regions import FacetInfo

        return FacetInfo(False, FarkasCertificate((0,) * len(region.neurons), 0))

    def no_class(self, region, y, j):
        from fairness.farkas import FarkasCertificate
        from fairness.regions import ClassInfo

        info = self.inner.no_class(region, y, j)
        return ClassInfo(False, FarkasCertificate((0,) * len(region.neurons), 0), info.tie_point)


def test_forged_oracle_answers_cost_radius_not_validity():
    model = random_model(23, n_inputs=5, hidden=(4, 2))
    rng = random.Random(5)
    for _ in range(4):
        x = random_query(model, rng)
        honest = certify(model, x)
        lied = certify(model, x, _LyingOracle(model))
        check_certificate(model, lied)
        # every forged certificate was dropped; without them the search stops no later than the honest one
        assert lied.farkas_count == 0 and lied.eps <= honest.eps


def test_degenerate_class_region_is_certified_empty_with_per_layer_widths():
    """German (2,4) unfair, test customer #14: slice 0 stops at a decision row of its start
    region whose class region the LP finds empty, but whose Farkas multipliers span more
    than 2^34 (logit rows at a far larger scale than first-layer rows). At a uniform 40
    bits they cannot be rounded, and the certificate had no attaining row to offer; with
    per-layer widths the emptiness certificate rounds exactly, the fast statement takes it
    on its decision entry, and the stopped search certifies at once."""
    pytest.importorskip("torch")
    from fairness import certificate as fc
    from fairness.errors import DataError
    from fairness.fixed_point import to_fixed_point
    from fairness.training import load_or_train
    from offline_precompute.certify import query_from_index
    from statement.adapter import bucket_sizes, statement_inputs, statement_shape

    try:
        artifact = load_or_train("german", (2, 4), "unfair")
    except DataError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"German Credit dataset not available: {exc}")
    model = to_fixed_point(artifact)
    query = query_from_index(artifact, model, 14)
    oracle = LPRegionOracle(model)
    y = model.net.decision(query)
    stopped = fc._certify_searches(model, query, y, model.slices(), oracle, fc.DEFAULT_EPS_BITS,
                                   fc.eps_cap(model, fc.DEFAULT_EPS_BITS), 4096, 8, True, True)
    assert stopped is not None
    wide = [c.farkas for sc in stopped.slices for r in sc.regions for c in r.classes
            if c is not None and c.kind == fc.NO_CLASS and max(c.farkas.multipliers) >= 1 << 40]
    assert wide  # the certificate the uniform width could not hold
    shape = statement_shape(model, region_slots=max(bucket_sizes(stopped)[0], 4),
                            farkas_slots=max(bucket_sizes(stopped)[1], 4), eps_bits=fc.DEFAULT_EPS_BITS)
    statement_inputs(model, 1, stopped, shape)  # within the fast statement's widths
    exact = certify(model, query, oracle, radius="exact")
    check_certificate(model, exact)
    assert exact.radius_is_exact and exact.eps >= stopped.eps
    for separate in (True, False):
        cert = certify(model, query, oracle, separate=separate)
        assert cert.status == CERTIFIED and cert.attainment.kind == "decision" and cert.eps > 0
        check_certificate(model, cert)
        assert cert.min_distance_sq is not None and cert.eps_value ** 2 <= cert.min_distance_sq
        for e, match in [(cert.eps + 1, "closer than eps"), (cert.eps - 1, "not maximal")]:
            data = cert.to_json()
            data["eps"]["E"] = e
            with pytest.raises(CertificationError, match=match):
                check_certificate(model, Certificate.from_json(data))
        data = cert.to_json()
        data["attainment"]["witness"] = None
        with pytest.raises(CertificationError, match="needs a boundary witness"):
            check_certificate(model, Certificate.from_json(data))
