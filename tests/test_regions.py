"""Regions per slice: exact affine forms, codes, distances, LP oracle answers."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from fairness import farkas as fk
from fairness.codes import ActivationCode
from fairness.regions import (AffineForm, LPRegionOracle, RationalPoint, SliceGeometry, class_system,
                              distance_at_least, distance_below_next, distance_sq, eps_cap, facet_system, free_box,
                              free_part, max_eps, tie_point)
from tests.fairness_toy_models import random_model, random_query


@pytest.mark.parametrize("hidden", [(4, 2), (2, 4), (3, 3, 2)])
def test_affine_forms_equal_the_integer_forward_pass(hidden):
    model = random_model(3, n_inputs=5, hidden=hidden, n_classes=3)
    rng = random.Random(0)
    for _ in range(100):
        x = random_query(model, rng)
        sv = tuple(x[f.column] for f in model.sensitive)
        geom = SliceGeometry(model, sv)
        u = free_part(model, x)
        code = model.net.activation_code(x)
        assert geom.code_of(u) == code
        region = geom.region(code)
        pre = model.net.pre_activations(x)
        assert [f.value(u) for f in region.neurons] == [v for z in pre[:-1] for v in z]
        assert [f.value(u) for f in region.logits] == list(pre[-1])
        assert region.contains(u)
        # Flipping a bit whose neuron is non-zero excludes the point.
        k = next((k for k, f in enumerate(region.neurons) if f.value(u) != 0), None)
        if k is not None:
            assert not geom.region(code.flip(k)).contains(u)


def test_codes_round_trip_and_reject_bad_text():
    code = ActivationCode(((True, False, True, True), (False, True)))
    assert code.key == str(code) == "1011.01"
    assert ActivationCode.parse("1011.01", (4, 2)) == code
    assert code.flip(4) == ActivationCode(((True, False, True, True), (True, True)))
    assert code.bits == (True, False, True, True, False, True) and code.bit_ints == (1, 0, 1, 1, 0, 1)
    assert code.id == 0b101101 and ActivationCode.from_bits(code.bit_ints, (4, 2)) == code
    assert code.hidden_sizes == (4, 2) and list(code) == [(True, False, True, True), (False, True)]
    for bad in ("1011", "1011.012", "10x1.01", "101.01"):
        with pytest.raises(ValueError):
            ActivationCode.parse(bad, (4, 2))
    with pytest.raises(ValueError):
        ActivationCode.from_bits((1, 0, 1), (4, 2))
    with pytest.raises(IndexError):
        code.flip(6)
    model = random_model(0)
    with pytest.raises(ValueError):
        SliceGeometry(model, (12345,))
    with pytest.raises(ValueError):
        SliceGeometry(model, (0,)).region(ActivationCode(((True,), (False,))))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-2**20, 2**20), min_size=3, max_size=3), st.integers(-2**30, 2**30),
       st.lists(st.integers(-2**10, 2**10), min_size=3, max_size=3), st.integers(0, 2**20),
       st.integers(0, 12), st.integers(0, 12))
def test_distance_tests_agree_with_exact_rationals(normal, offset, u, e, t, s):
    form = AffineForm(tuple(normal), offset)
    value, nsq = form.value(u), form.norm_sq
    ok = distance_at_least(value, nsq, e, t, s)
    if nsq == 0:
        assert not ok and max_eps(value, nsq, t, s) is None
        return
    d2 = distance_sq(form, u, s)
    assert d2 == Fraction(value * value, nsq * 4**s)
    assert ok == (d2 >= Fraction(e * e, 4**t))
    assert distance_below_next(value, nsq, e, t, s) == (d2 < Fraction((e + 1) ** 2, 4**t))
    m = max_eps(value, nsq, t, s)
    assert distance_at_least(value, nsq, m, t, s) and not distance_at_least(value, nsq, m + 1, t, s)


def test_eps_cap_is_the_floored_box_diagonal():
    model = random_model(0, n_inputs=4, scale_bits=8)
    # free box [-1, 1]^3: diagonal 2*sqrt(3) = 3.4641...; at t = 10: floor(3547.24) = 3547
    assert eps_cap(model, 10) == 3547
    from fairness.bitwidth import eps_cap as bitwidth_cap
    assert eps_cap(model, 16) == bitwidth_cap(model, 16)


def _segment_hits_facet(region, k, u, box):
    """An exact rational point of facet k of `region`, on the segment from u towards the hyperplane, or None."""
    f = region.neurons[k]
    v, nsq = f.value(u), f.norm_sq
    if nsq == 0 or v == 0:
        return None
    # q = u - v/nsq * a, as numerators over nsq
    p = RationalPoint(tuple(x * nsq - v * a for x, a in zip(u, f.normal)), nsq)
    return p if p.in_box(box) and region.contains_rational(p) and p.form_value(f) == 0 else None


def test_oracle_facets_agree_with_exact_points_and_certificates_verify():
    model = random_model(5, n_inputs=4, hidden=(4, 2))
    oracle = LPRegionOracle(model)
    box = free_box(model)
    rng = random.Random(2)
    checked_nonempty = checked_empty = 0
    for _ in range(40):
        x = random_query(model, rng)
        geom = SliceGeometry(model, tuple(x[f.column] for f in model.sensitive))
        u = free_part(model, x)
        region = geom.region(geom.code_of(u))
        for k in range(len(region.neurons)):
            info = oracle.facet(region, k)
            if _segment_hits_facet(region, k, u, box) is not None:
                assert info.nonempty and info.farkas is None
                checked_nonempty += 1
            if info.farkas is not None:
                rows, extra, eq = facet_system(region, k)
                assert fk.verify(rows, extra, eq, box, info.farkas)
                checked_empty += 1
    assert checked_nonempty > 10 and checked_empty > 5
    calls = oracle.lp_calls
    oracle.facet(region, 0)
    assert oracle.lp_calls == calls  # memoised


def test_class_answers_and_tie_points_are_exact():
    model = random_model(8, n_inputs=4, hidden=(4, 2))
    oracle = LPRegionOracle(model)
    box = free_box(model)
    rng = random.Random(4)
    ties = certs = 0
    for _ in range(30):
        x = random_query(model, rng)
        geom = SliceGeometry(model, tuple(x[f.column] for f in model.sensitive))
        region = geom.region(geom.code_of(free_part(model, x)))
        y = model.net.decision(x)
        j = 1 - y
        info = oracle.no_class(region, y, j)
        if info.farkas is not None:
            rows, extra, eq = class_system(region, y, j)
            assert not info.reachable and fk.verify(rows, extra, eq, box, info.farkas)
            certs += 1
        if info.tie_point is not None:
            w = info.tie_point
            assert info.reachable and w.in_box(box) and region.contains_rational(w)
            assert w.form_value(region.decision_form(y, j)) == 0
            ties += 1
    assert ties > 3 and certs > 3


def test_tie_point_interpolates_exactly():
    form = AffineForm((2, -1), 3)
    plus, minus = RationalPoint((1, 0), 1), RationalPoint((-7, 0), 2)  # f = 5 and f = -4
    q = tie_point(plus, minus, form)
    assert q is not None and q.form_value(form) == 0 and q.denominator > 0
    assert tie_point(minus, plus, form) is None
