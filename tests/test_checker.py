"""The exact checker accepts honest certificates and refuses every tampered one with a precise reason."""
from __future__ import annotations

import copy
import random

import pytest
from hypothesis import given, settings, strategies as st

from fairness.certificate import CERTIFIED, FLIP, Certificate, certify
from fairness.checker import check_certificate
from fairness.errors import CertificationError
from fairness.codes import ActivationCode
from fairness.regions import LPRegionOracle, SliceGeometry, distance_sq, free_part
from tests.fairness_toy_models import random_model, random_query
from tests.test_geocert import ONE, line_model


@pytest.fixture(scope="module")
def model():
    return random_model(23, n_inputs=5, hidden=(4, 2))


@pytest.fixture(scope="module")
def certs(model):
    oracle = LPRegionOracle(model)
    rng = random.Random(5)
    out = [certify(model, random_query(model, rng), oracle) for _ in range(20)]
    return out


def _rejects(model, data, match):
    with pytest.raises(CertificationError, match=match):
        check_certificate(model, Certificate.from_json(data))


def _pick(certs, pred):
    for c in certs:
        if pred(c):
            return c
    pytest.fail("no certificate with the needed feature in the fixture")


def _neighbour_rich(c):
    return c.status == CERTIFIED and any(len(s.regions) >= 3 for s in c.slices)


def test_honest_certificates_are_accepted(model, certs):
    kinds = set()
    for c in certs:
        check_certificate(model, Certificate.from_json(c.to_json()))
        kinds.add(c.status if c.status == FLIP else c.attainment.kind)
    assert {"decision", FLIP} <= kinds


def test_dropped_region_is_refused(model, certs):
    c = _pick(certs, _neighbour_rich)
    data = c.to_json()
    si = next(i for i, s in enumerate(c.slices) if len(s.regions) >= 3)
    att = c.attainment.code if c.attainment.slice_index == si else None
    victim = next(k for k, r in enumerate(data["slices"][si]["regions"]) if k > 0 and r["code"] != att)
    del data["slices"][si]["regions"][victim]
    data.pop("leakage")
    _rejects(model, data, "neighbour region is not in the covering set")


def test_shrunk_covering_and_missing_start_are_refused(model, certs):
    c = _pick(certs, _neighbour_rich)
    data = c.to_json()
    data.pop("leakage")
    shrunk = copy.deepcopy(data)
    for s in shrunk["slices"]:
        s["regions"] = s["regions"][:1]
    with pytest.raises(CertificationError):
        check_certificate(model, Certificate.from_json(shrunk))
    no_start = copy.deepcopy(data)
    del no_start["slices"][0]["regions"][0]
    _rejects(model, no_start, "query's region .* is not in the covering set")
    repeated = copy.deepcopy(data)
    repeated["slices"][0]["regions"].append(repeated["slices"][0]["regions"][0])
    _rejects(model, repeated, "repeated")


def _farkas_sites(data):
    for si, s in enumerate(data["slices"]):
        for ri, r in enumerate(s["regions"]):
            for k, cov in enumerate(r["neurons"]):
                if "farkas" in cov:
                    yield si, ri, "neurons", k
            for j, cov in enumerate(r["classes"]):
                if cov is not None and "farkas" in cov:
                    yield si, ri, "classes", j


def test_forged_farkas_multipliers_are_refused(model, certs):
    c = _pick(certs, lambda c: c.farkas_count >= 2)
    data = c.to_json()
    data.pop("leakage")
    sites = list(_farkas_sites(data))
    for si, ri, part, k in sites[:6]:
        cov = data["slices"][si]["regions"][ri][part][k]
        zero = copy.deepcopy(data)
        z = zero["slices"][si]["regions"][ri][part][k]["farkas"]
        z["multipliers"] = [0] * len(z["multipliers"])
        z["extra"] = 0
        _rejects(model, zero, "invalid (Farkas|separation) certificate")
        neg = copy.deepcopy(data)
        f = neg["slices"][si]["regions"][ri][part][k]["farkas"]
        i = next(i for i, v in enumerate(f["multipliers"] + [1]) if v > 0)
        if i < len(f["multipliers"]):
            f["multipliers"][i] = -f["multipliers"][i]
            _rejects(model, neg, "invalid (Farkas|separation) certificate")
        short = copy.deepcopy(data)
        short["slices"][si]["regions"][ri][part][k]["farkas"]["multipliers"].pop()
        _rejects(model, short, "invalid (Farkas|separation) certificate")
        assert cov["kind"] in ("empty_facet", "far_facet", "far_region", "no_class")


def test_farkas_certificate_moved_to_a_crossed_facet_is_refused(model, certs):
    c = _pick(certs, lambda c: c.farkas_count >= 1 and _neighbour_rich(c))
    data = c.to_json()
    data.pop("leakage")
    si, ri, part, k = next(iter(_farkas_sites(data)))
    farkas = data["slices"][si]["regions"][ri][part][k]["farkas"]
    oracle = LPRegionOracle(model)
    geom = SliceGeometry(model, tuple(data["slices"][si]["slice_values"]))
    moved = 0
    for rj, r in enumerate(data["slices"][si]["regions"]):
        region = geom.region(ActivationCode.parse(r["code"], model.net.hidden_sizes))
        for n, cov in enumerate(r["neurons"]):
            if cov["kind"] == "neighbor" and oracle.facet(region, n).nonempty:
                bad = copy.deepcopy(data)
                bad["slices"][si]["regions"][rj]["neurons"][n] = {"kind": "empty_facet", "farkas": farkas}
                _rejects(model, bad, "invalid Farkas certificate")
                moved += 1
                if moved >= 5:
                    return
    assert moved > 0


def test_inflated_and_deflated_eps_are_refused(model, certs):
    c = _pick(certs, lambda c: c.status == CERTIFIED and c.attainment.kind != "cap" and c.eps > 1)
    for e, match in [(c.eps + 1, "closer than eps"), (2 * c.eps, "closer than eps"),
                     (c.eps - 1, "not maximal")]:
        data = c.to_json()
        data["eps"]["E"] = e
        _rejects(model, data, match)
    data = c.to_json()
    data["attainment"] = {"kind": "cap", "slice_index": None, "code": None, "row": None, "witness": None}
    _rejects(model, data, "claimed to be the cap")


def test_distance_cover_on_a_close_hyperplane_is_refused(model, certs):
    swapped = 0
    for c in certs:
        if c.status != CERTIFIED:
            continue
        u = free_part(model, c.query)
        for si, s in enumerate(c.slices):
            geom = SliceGeometry(model, s.slice_values)
            for ri, r in enumerate(s.regions):
                region = geom.region(ActivationCode.parse(r.code, model.net.hidden_sizes))
                for k, cov in enumerate(r.neurons):
                    d2 = distance_sq(region.neurons[k], u, model.scale_bits)
                    if cov.kind == "neighbor" and d2 is not None and d2 * (1 << 2 * c.eps_bits) < c.eps ** 2:
                        data = c.to_json()
                        data.pop("leakage")
                        data["slices"][si]["regions"][ri]["neurons"][k] = {"kind": "distance"}
                        _rejects(model, data, "closer than eps")
                        swapped += 1
                        if swapped >= 5:
                            return
    pytest.fail("no neighbour-covered row closer than eps in the fixture")


def test_wrong_decision_is_refused(model, certs):
    c = _pick(certs, lambda c: c.status == CERTIFIED)
    data = c.to_json()
    data["decision"] = 1 - c.decision
    _rejects(model, data, "wrong decision")


def test_tampered_boundary_point_is_refused(model, certs):
    c = _pick(certs, lambda c: c.status == CERTIFIED and c.attainment.kind == "decision")
    w = c.attainment.witness
    for numerators, den, match in [
        ([w.numerators[0] + 1] + list(w.numerators[1:]), w.denominator, "not on the decision hyperplane|outside"),
        (list(w.numerators), w.denominator * 2, "not on the decision hyperplane|outside"),
        (list(w.numerators), 0, "non-positive denominator"),
        ([v * 1000 for v in w.numerators], w.denominator, "outside"),
    ]:
        data = c.to_json()
        data["attainment"]["witness"] = {"numerators": numerators, "denominator": den}
        _rejects(model, data, match)
    data = c.to_json()
    data["attainment"]["witness"] = None
    _rejects(model, data, "needs a boundary witness")


def test_hidden_flipping_slice_is_refused():
    model = line_model()
    honest = certify(model, (0, 3 * ONE // 4))
    flip_query = (0, 3 * ONE // 16)
    flipped = certify(model, flip_query)
    assert flipped.status == FLIP
    # Claim a radius at the flipping query (its decision set correctly).
    data = honest.to_json()
    data["query"] = list(flip_query)
    data["decision"] = flipped.decision
    _rejects(model, data, "does not strictly decide")
    # A flip must name a slice that really flips, and certify eps = 0 only.
    data = flipped.to_json()
    data["flip"]["slice_index"], data["flip"]["slice_values"] = 0, [0]
    _rejects(model, data, "does not flip")
    data = flipped.to_json()
    data["eps"]["E"] = 5
    _rejects(model, data, "eps = 0 only")
    data = flipped.to_json()
    data["flip"]["tie"] = True
    _rejects(model, data, "tie flag")
    # Calling an honest certified query a flip is refused too.
    data = honest.to_json()
    data.update(status="flip", flip={"slice_index": 1, "slice_values": [ONE], "tie": False}, slices=[],
                attainment=None)
    data["eps"]["E"] = 0
    data.pop("leakage")
    _rejects(model, data, "does not flip")


def test_zero_normal_row_cannot_be_a_distance_cover():
    model = line_model()
    cert = certify(model, (0, -ONE // 2))
    data = cert.to_json()
    data.pop("leakage")
    # neuron 2 (h3) has a zero normal on every slice
    data["slices"][0]["regions"][0]["neurons"][2] = {"kind": "distance"}
    _rejects(model, data, "neuron 2: hyperplane closer than eps")


def test_structural_tampering_is_refused(model, certs):
    c = _pick(certs, lambda c: c.status == CERTIFIED)
    data = c.to_json()
    data["version"] = 2
    with pytest.raises(CertificationError, match="version"):
        Certificate.from_json(data)
    data = c.to_json()
    data["leakage"]["regions_per_slice"][0] += 1
    with pytest.raises(CertificationError, match="leakage"):
        Certificate.from_json(data)
    data = c.to_json()
    data["slices"] = data["slices"][:1]
    data.pop("leakage")
    _rejects(model, data, "slices")
    data = c.to_json()
    data["slices"][0]["slice_values"], data["slices"][1]["slice_values"] = \
        data["slices"][1]["slice_values"], data["slices"][0]["slice_values"]
    _rejects(model, data, "not the model's slice")
    data = c.to_json()
    data["query"][1] = model.box_upper[1] + 1
    _rejects(model, data, "outside the domain box")
    data = c.to_json()
    data["slices"][0]["regions"][0]["neurons"][0] = {"kind": "no_class", "farkas": {"multipliers": [], "extra": 1}}
    data.pop("leakage")
    _rejects(model, data, "does not apply to a neuron")
    data = c.to_json()
    data["slices"][0]["regions"][0]["code"] = "10101.01"
    data.pop("leakage")
    _rejects(model, data, "does not match hidden sizes")
    with pytest.raises(CertificationError, match="Farkas"):
        bad = c.to_json()
        bad["slices"][0]["regions"][0]["neurons"][0] = {"kind": "empty_facet", "farkas": {"multipliers": [0.5],
                                                                                          "extra": 0}}
        Certificate.from_json(bad)


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 10_000), st.sampled_from([(4, 2), (2, 4), (3, 3)]))
def test_property_honest_accepted_inflated_refused(model_seed, query_seed, hidden):
    model = random_model(model_seed, n_inputs=4, hidden=hidden)
    x = random_query(model, random.Random(query_seed))
    cert = certify(model, x)
    check_certificate(model, Certificate.from_json(cert.to_json()))
    data = cert.to_json()
    data["eps"]["E"] = cert.eps + 1
    if cert.status == FLIP:
        match = "eps = 0 only"
    elif cert.attainment.kind == "cap":
        match = "exceeds the published cap"
    else:
        match = "closer than eps"
    _rejects(model, data, match)


def test_object_level_float_multipliers_are_refused(model, certs):
    """Certificates built in code (not parsed) cannot smuggle floats into exact checks."""
    import dataclasses

    from fairness.farkas import FarkasCertificate

    c = _pick(certs, lambda c: c.farkas_count >= 1)
    slices = list(c.slices)
    for si, s in enumerate(slices):
        for ri, r in enumerate(s.regions):
            for k, cov in enumerate(r.neurons):
                if cov.farkas is not None:
                    f = cov.farkas
                    forged = dataclasses.replace(cov, farkas=FarkasCertificate(
                        tuple(float(v) for v in f.multipliers), float(f.extra)))
                    neurons = list(r.neurons)
                    neurons[k] = forged
                    regions = list(s.regions)
                    regions[ri] = dataclasses.replace(r, neurons=tuple(neurons))
                    slices[si] = dataclasses.replace(s, regions=tuple(regions))
                    bad = dataclasses.replace(c, slices=tuple(slices))
                    with pytest.raises(CertificationError, match="invalid Farkas"):
                        check_certificate(model, bad)
                    return
    pytest.fail("no empty-facet certificate in the fixture")


def _far_region_site(certs):
    for c in certs:
        if c.status != CERTIFIED:
            continue
        for si, s in enumerate(c.slices):
            for ri, r in enumerate(s.regions):
                for k, cov in enumerate(r.neurons):
                    if cov.kind == "far_region":
                        return c, si, ri, k
    pytest.fail("no FAR_REGION cover in the fixture")


def test_far_region_cover_with_tampered_box_multipliers_is_refused(model, certs):
    c, si, ri, k = _far_region_site(certs)
    data = c.to_json()
    data.pop("leakage")
    f = data["slices"][si]["regions"][ri]["neurons"][k]["farkas"]
    f["box"] = [v + (1 << 40) * (-1) ** j for j, v in enumerate(f["box"])]
    _rejects(model, data, "invalid separation certificate for a far neighbouring region")
    extra = c.to_json()
    extra.pop("leakage")
    extra["slices"][si]["regions"][ri]["neurons"][k]["farkas"]["extra"] = 1  # a region has no extra row
    _rejects(model, extra, "invalid separation certificate")
    bare = c.to_json()
    bare.pop("leakage")
    bare["slices"][si]["regions"][ri]["neurons"][k]["farkas"].pop("box")
    with pytest.raises(CertificationError, match="box multipliers missing"):
        Certificate.from_json(bare)


def test_far_facet_cover_is_checked_against_eps(model, certs):
    from fairness import farkas as fk
    from fairness.certificate import FAR_FACET, Cover
    from fairness.regions import facet_system, free_box

    c, si, ri, k = _far_region_site(certs)
    geom = SliceGeometry(model, c.slices[si].slice_values)
    region = geom.region(ActivationCode.parse(c.slices[si].regions[ri].code, model.net.hidden_sizes))
    u = free_part(model, c.query)
    rows, extra, eq = facet_system(region, k)
    found = fk.find_separation(rows, extra, eq, free_box(model), u, model.scale_bits)
    assert found is not None
    data = c.to_json()
    data.pop("leakage")
    data["slices"][si]["regions"][ri]["neurons"][k] = Cover(FAR_FACET, found[0]).to_json()
    proves = fk.separation_proves(rows, extra, free_box(model), found[0], u, c.eps, c.eps_bits, model.scale_bits)
    if proves:  # the facet lies inside the far neighbour, so it is at least as far
        check_certificate(model, Certificate.from_json(data))
    tampered = copy.deepcopy(data)
    tampered["slices"][si]["regions"][ri]["neurons"][k]["farkas"]["multipliers"] = [0] * len(found[0].multipliers)
    tampered["slices"][si]["regions"][ri]["neurons"][k]["farkas"]["extra"] = 0
    _rejects(model, tampered, "invalid separation certificate for a far facet")


def test_certificates_without_separation_refinement_are_accepted(model):
    # The crossing-only search (no FAR covers from GeoCert) stays a valid prover path.
    oracle = LPRegionOracle(model)
    rng = random.Random(11)
    for _ in range(5):
        c = certify(model, random_query(model, rng), oracle, separate=False)
        check_certificate(model, Certificate.from_json(c.to_json()))
