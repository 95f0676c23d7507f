"""The persistence lens in zero knowledge: the circuit states exactly the plaintext CROWN bounds, and a
prover that rounds, signs or publishes anything else is refused."""
from __future__ import annotations

import dataclasses
import random
from fractions import Fraction

import pytest

import statement.persistence as lens
from circuits.builder import ConstraintSystem
from circuits.field import R
from fairness.persistence import (Flip, counterfactual_pairs, crown_bounds, exact_bounds, g_value,
                                  perturbation_box, proved_bounds)
from fairness_toy_models import random_model, random_query
from statement.adapter import statement_inputs
from statement.shape import StatementShapeError
from statement.witness import StatementWitnessError
from statement_cases import SALT, build, case, exact_case, unsatisfied_labels

TWO_CLASS = ["two_layer", "one_layer", "flip", "two_sensitive", "three_hidden"]


def _lens_shape(c, favourable=1):
    sens = set(c.shape.sensitive_columns)
    cols = tuple(j for j in range(c.shape.n_inputs) if j not in sens)[:2]
    return dataclasses.replace(c.shape, persistence_columns=cols, favourable_class=favourable)


def _refused_labels(shape, public, witness):
    cs = build(shape, public, witness, strict=False)
    return unsatisfied_labels(cs)


# -- plaintext: what a proof states ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_proved_bounds_round_the_crown_bounds_outward_and_are_sound(seed):
    model = random_model(seed, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=6)
    rng = random.Random(seed)
    query = random_query(model, rng)
    cols = [j for j in range(4) if j not in model.sensitive_columns]
    delta = 24
    box = perturbation_box(model, query, cols, Fraction(delta, 64))
    scale = 1 << model.net.logit_scale_bits
    slices = model.slices()
    own = tuple(query[f.column] for f in model.sensitive)
    for (a, v), (lb, ub) in zip(counterfactual_pairs(model), proved_bounds(model, query, 1, cols, delta)):
        flip = Flip(a, slices.index(own), slices.index(own[:a] + v + own[a + 1:]))  # v: the value's point
        crown = crown_bounds(model, 1, flip, box)
        assert Fraction(lb, scale) <= crown.lower < Fraction(lb + 1, scale)
        assert Fraction(ub - 1, scale) < crown.upper <= Fraction(ub, scale)
        low, high = exact_bounds(model, 1, flip, box)  # attained by points of the box
        assert Fraction(lb, scale) <= low and high <= Fraction(ub, scale)
        assert Fraction(lb, scale) <= g_value(model, 1, flip, [Fraction(x, 64) for x in query])


def test_own_value_pair_contains_zero():
    c = case("two_sensitive")
    own = [c.cert.query[j] for j in c.shape.sensitive_columns]
    pairs = counterfactual_pairs(c.model)
    for (a, v), (lb, ub) in zip(pairs, proved_bounds(c.model, c.cert.query, 1, [2, 3], 10)):
        if v == (own[a],):  # one-column attributes: 1-tuple points
            assert lb <= 0 <= ub


# -- the statement -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TWO_CLASS)
@pytest.mark.parametrize("delta", [0, 7, 40])
def test_statement_proves_the_plaintext_bounds(name, delta):
    c = case(name)
    shape = _lens_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=delta)
    assert list(public.persistence_bounds) == proved_bounds(c.model, c.cert.query, 1, shape.persistence_columns,
                                                            delta)
    assert len(public.persistence_bounds) == len(shape.persistence_pairs) == len(counterfactual_pairs(c.model))
    cs = build(shape, public, witness)
    assert cs.compile().is_satisfied(cs.witness())
    assert cs.n_public == shape.n_public


def test_favourable_class_zero_negates_the_bounds():
    c = case("two_layer")
    one = statement_inputs(c.model, SALT, c.cert, _lens_shape(c, 1), persistence_delta=20)[0].persistence_bounds
    zero_shape = _lens_shape(c, 0)
    public, witness = statement_inputs(c.model, SALT, c.cert, zero_shape, persistence_delta=20)
    # the other class's margin is -m: the lower pass of one is the upper pass of the other
    assert public.persistence_bounds == tuple((-ub, -lb) for lb, ub in one)
    cs = build(zero_shape, public, witness)
    assert cs.compile().is_satisfied(cs.witness())


@pytest.mark.parametrize("name", ["two_layer", "two_sensitive"])
def test_per_slice_statement_proves_the_bounds_in_every_part(name):
    c = exact_case(name)
    shape = dataclasses.replace(_lens_shape(c), per_slice=True)
    for si in range(shape.n_slices):
        public, witness = statement_inputs(c.model, SALT, c.cert, shape, si, persistence_delta=12)
        cs = build(shape, public, witness)
        assert cs.compile().is_satisfied(cs.witness())


@pytest.mark.parametrize("name", ["two_layer", "two_sensitive", "flip"])
def test_every_forged_bound_is_refused(name):
    c = case(name)
    shape = _lens_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=20)
    for p, (lb, ub) in enumerate(public.persistence_bounds):
        # a lower LB is still a true statement, but the proof pins the CROWN bound itself
        forgeries = [(lb - 1, ub), (lb + 1, ub), (lb, ub - 1), (lb, ub + 1), (ub, lb)]
        if name == "two_sensitive":  # five pairs of a larger circuit: one forgery of each side per pair
            forgeries = forgeries[p % 2::2][:2]
        for forged_pair in forgeries:
            if forged_pair == (lb, ub):
                continue
            bounds = list(public.persistence_bounds)
            bounds[p] = forged_pair
            labels = _refused_labels(shape, dataclasses.replace(public, persistence_bounds=tuple(bounds)), witness)
            assert any(label.startswith(f"persistence/pair{p}/bounds") for label in labels), labels


def test_another_delta_with_the_same_bounds_is_refused():
    c = case("one_layer")
    shape = _lens_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=20)
    assert public.persistence_bounds != statement_inputs(c.model, SALT, c.cert, shape,
                                                         persistence_delta=21)[0].persistence_bounds
    labels = _refused_labels(shape, dataclasses.replace(public, persistence_delta=21), witness)
    assert any(label.startswith("persistence/pair") for label in labels), labels


@pytest.mark.parametrize("delta", [-1, R - 1, 129, 1 << 130])
def test_delta_outside_its_range_is_refused(delta):
    c = case("one_layer")
    shape = _lens_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=20)
    labels = _refused_labels(shape, dataclasses.replace(public, persistence_delta=delta), witness)
    assert any(label.startswith("persistence/delta") for label in labels), labels
    with pytest.raises(StatementWitnessError, match="delta"):
        statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=delta)


def test_adapter_refuses_a_missing_or_unwanted_delta():
    c = case("one_layer")
    with pytest.raises(StatementWitnessError, match="needs delta"):
        statement_inputs(c.model, SALT, c.cert, _lens_shape(c))
    with pytest.raises(StatementWitnessError, match="no persistence lens"):
        statement_inputs(c.model, SALT, c.cert, c.shape, persistence_delta=3)


# -- a dishonest prover's choices ----------------------------------------------------------------------


def _dishonest(monkeypatch, name, hint, replacement, delta=40):
    """Build the lens statement with one of the prover's hints replaced (everything downstream computed
    honestly from it, as a careful forger would), and return the violated scopes."""
    c = case(name)
    shape = _lens_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=delta)
    monkeypatch.setattr(lens, hint, replacement)
    return _refused_labels(shape, public, witness)


def test_slope_rounded_down_is_refused(monkeypatch):
    def floor_slope(slope_bits):
        def hint(lv, uv, flag):
            lv, uv = lens.to_signed(lv), lens.to_signed(uv)
            return [(uv << slope_bits) // (uv - lv) if flag == 1 and uv > lv else 0]
        return hint
    labels = _dishonest(monkeypatch, "two_sensitive", "slope_hint", floor_slope)
    assert any("/neuron" in label for label in labels), labels


def test_a_steeper_slope_is_refused_too(monkeypatch):
    """Any slope >= u / (u - l) is a valid relaxation, but a looser bound is not the statement."""
    honest = lens.slope_hint

    def steeper(slope_bits):
        def hint(lv, uv, flag):
            (t,) = honest(slope_bits)(lv, uv, flag)
            return [t + 1 if t else 0]
        return hint
    labels = _dishonest(monkeypatch, "two_sensitive", "slope_hint", steeper)
    assert any("/neuron" in label for label in labels), labels


def test_a_slope_that_wraps_the_field_is_refused(monkeypatch):
    """T with T (u - l) = u 2^k + 0 mod R, T far outside [0, 2^(k+1)): the range check refuses it."""
    def wrapping(slope_bits):
        def hint(lv, uv, flag):
            if flag != 1:
                return [0]
            d = (uv - lv) % R
            return [((uv << slope_bits) * pow(d, R - 2, R)) % R]
        return hint
    labels = _dishonest(monkeypatch, "two_sensitive", "slope_hint", wrapping)
    assert any("/neuron" in label for label in labels), labels


def test_a_wrong_sign_is_refused(monkeypatch):
    """Every sign bit inverted (a relaxation of the wrong side, a corner of the wrong side)."""
    labels = _dishonest(monkeypatch, "two_layer", "sign_hint", lambda v: [int(lens.to_signed(v) < 0)])
    assert any("backward" in label for label in labels) and any("bounds" in label for label in labels), labels


def test_a_wrong_sign_of_one_coefficient_is_refused(monkeypatch):
    calls = []

    def one_wrong(v):
        calls.append(v)
        s = lens.to_signed(v)
        return [int(s < 0)] if len(calls) == 9 and s != 0 else [int(s >= 0)]
    labels = _dishonest(monkeypatch, "two_layer", "sign_hint", one_wrong)
    assert lens.to_signed(calls[8]) != 0
    assert any("/assert_range" in label for label in labels), labels


def test_a_published_bound_above_the_proved_one_needs_another_quotient():
    """The bank keeps LB + 1 and moves the private quotient to match: its remainder range check refuses."""
    c = case("two_layer")
    shape = _lens_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=20)
    cs = build(shape, public, witness)
    r1cs = cs.compile()
    values = cs.witness()
    wires = [w for w in range(cs.n_wires) if "persistence/pair0/bounds" in cs.wire_name(w)
             and "quotient" in cs.wire_name(w)]
    assert len(wires) == 2
    for w in wires:
        forged = list(values)
        forged[w] = (forged[w] + 1) % R
        assert not r1cs.is_satisfied(forged)


# -- gadgets alone -------------------------------------------------------------------------------------


def _gadget(values, fn):
    cs = ConstraintSystem(with_values=True, strict=False)
    ins = [cs.private_input(f"v{i}", v % R) for i, v in enumerate(values)]
    return cs, fn(cs, ins)


@pytest.mark.parametrize("x", [5, -5, 0, 1 << 60, -(1 << 60)])
def test_sign_split(x):
    cs, (pos, neg) = _gadget([x], lambda cs, ins: lens.sign_split(cs, ins[0], 1 << 61))
    assert cs.compile().is_satisfied(cs.witness())
    assert (cs.signed_value_of(pos), cs.signed_value_of(neg)) == (max(x, 0), min(x, 0))


@pytest.mark.parametrize("x", [5, -5])
def test_sign_split_refuses_the_other_sign(monkeypatch, x):
    monkeypatch.setattr(lens, "sign_hint", lambda v: [int(lens.to_signed(v) < 0)])
    cs, _ = _gadget([x], lambda cs, ins: lens.sign_split(cs, ins[0], 64))
    assert not cs.compile().is_satisfied(cs.witness())


@pytest.mark.parametrize("l,u", [(-30, 10), (-10, 30), (-5, 5), (3, 9), (0, 4), (-9, -2), (-7, 0), (0, 0), (-1, 1000)])
def test_relaxation_matches_crown(l, u):
    k = 16
    cs, rel = _gadget([l, u], lambda cs, ins: lens.relaxation(cs, ins[0], ins[1], 2048, k))
    assert cs.compile().is_satisfied(cs.witness())
    lower, upper, icpt = (cs.signed_value_of(v) for v in (rel.lower, rel.upper, rel.intercept))
    if l >= 0:
        assert (lower, upper, icpt) == (1 << k, 1 << k, 0)
    elif u <= 0:
        assert (lower, upper, icpt) == (0, 0, 0)
    else:
        t = -((-u << k) // (u - l))
        assert (lower, upper, icpt) == ((1 << k) if u >= -l else 0, t, -t * l)
        # the relaxation is valid at every integer of [l, u]
        for z in range(l, u + 1):
            assert lower * z <= max(z, 0) << k <= upper * z + icpt


@pytest.mark.parametrize("x,d,lo,hi", [(10, 3, 0, 20), (1, 3, 0, 20), (19, 3, 0, 20), (5, 0, 0, 20), (-4, 100, -8, 8)])
def test_clamp_box(x, d, lo, hi):
    cs, (a, b) = _gadget([x, d], lambda cs, ins: lens.clamp_box(cs, ins[0], ins[1], lo, hi, 128))
    assert cs.compile().is_satisfied(cs.witness())
    assert (cs.signed_value_of(a), cs.signed_value_of(b)) == (max(lo, x - d), min(hi, x + d))


# -- the shape -----------------------------------------------------------------------------------------


def test_shape_refuses_a_bad_lens():
    c = case("two_layer")
    sens = c.shape.sensitive_columns[0]
    for cols, match in (((sens,), "non-sensitive"), ((2, 1), "in order"), ((1, 1), "in order"), ((99,), "non-sensitive")):
        with pytest.raises(StatementShapeError, match=match):
            dataclasses.replace(c.shape, persistence_columns=cols, favourable_class=1)
    with pytest.raises(StatementShapeError, match="two-class"):
        dataclasses.replace(case("three_class").shape, persistence_columns=(1,))


def test_shape_digest_unchanged_without_the_lens_and_changed_with_it():
    c = case("two_layer")
    assert "persistence_columns" not in c.shape.to_json()
    with_lens = _lens_shape(c)
    assert with_lens.digest() != c.shape.digest()
    assert with_lens.digest() != dataclasses.replace(with_lens, persistence_columns=(1,)).digest()
    assert type(with_lens).from_json(with_lens.to_json()) == with_lens


# -- optimised slopes (shapes with alpha_bits) ----------------------------------------------------------


def _optimised_shape(c, favourable=1):
    return dataclasses.replace(_lens_shape(c, favourable), alpha_bits=16)


@pytest.mark.parametrize("name", TWO_CLASS)
@pytest.mark.parametrize("delta", [0, 40])
def test_statement_proves_the_optimised_bounds(name, delta):
    """The public bounds are the plaintext ones of the LP's slopes: inside CROWN's, and proved."""
    c = case(name)
    shape = _optimised_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=delta)
    assert list(public.persistence_bounds) == proved_bounds(c.model, c.cert.query, 1, shape.persistence_columns,
                                                            delta, alpha_bits=16)
    crown = proved_bounds(c.model, c.cert.query, 1, shape.persistence_columns, delta)
    assert all(c_lo <= lo <= hi <= c_hi for (lo, hi), (c_lo, c_hi) in zip(public.persistence_bounds, crown))
    assert len(witness.persistence_slopes) == 4 * shape.n_hidden * len(shape.persistence_pairs)
    cs = build(shape, public, witness)
    assert cs.compile().is_satisfied(cs.witness())


def test_optimised_bounds_are_tighter_somewhere():
    c = case("three_hidden")
    shape = _optimised_shape(c)
    optimised = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=40)[0].persistence_bounds
    crown = proved_bounds(c.model, c.cert.query, 1, shape.persistence_columns, 40)
    assert any(hi - lo < c_hi - c_lo for (lo, hi), (c_lo, c_hi) in zip(optimised, crown))


@pytest.mark.parametrize("name", ["two_layer", "flip"])
def test_every_forged_optimised_bound_is_refused(name):
    """The public bounds are those of the witness's slopes: one off either way is refused."""
    c = case(name)
    shape = _optimised_shape(c)
    public, witness = statement_inputs(c.model, SALT, c.cert, shape, persistence_delta=20)
    for p, (lb, ub) in enumerate(public.persistence_bounds):
        for forged_pair in ((lb - 1, ub), (lb + 1, ub), (lb, ub - 1), (lb, ub + 1)):
            bounds = list(public.persistence_bounds)
            bounds[p] = forged_pair
            labels = _refused_labels(shape, dataclasses.replace(public, persistence_bounds=tuple(bounds)), witness)
            assert any(label.startswith(f"persistence/pair{p}/bounds") for label in labels), labels


@pytest.mark.parametrize("name", ["two_layer"])
def test_per_slice_statement_proves_the_optimised_bounds_in_every_part(name):
    c = exact_case(name)
    shape = dataclasses.replace(_optimised_shape(c), per_slice=True)
    for si in range(shape.n_slices):
        public, witness = statement_inputs(c.model, SALT, c.cert, shape, si, persistence_delta=12)
        cs = build(shape, public, witness)
        assert cs.compile().is_satisfied(cs.witness())


def test_the_optimised_lens_costs_few_constraints():
    from statement.circuit import statement_relation

    c = case("two_sensitive")
    fixed, optimised = statement_relation(_lens_shape(c)), statement_relation(_optimised_shape(c))
    assert fixed.n_constraints < optimised.n_constraints < 1.1 * fixed.n_constraints


def test_a_one_hot_attribute_gets_optimised_bounds():
    """An attribute spread over three inputs (unit points): each counterfactual copy moves all three."""
    from fairness.bound_radius import bound_certificate
    from fairness.fixed_point import FixedPointModel, SensitiveDomain
    from statement.adapter import statement_shape

    base = random_model(11, n_inputs=6, hidden=(4, 3), n_classes=2, scale_bits=6)
    one = 1 << 6
    race = SensitiveDomain("race", (0, 1, 2), ((one, 0, 0), (0, one, 0), (0, 0, one)), ("a", "b", "c"))
    lower, upper = list(base.box_lower), list(base.box_upper)
    lower[0:3], upper[0:3] = [0] * 3, [one] * 3
    model = FixedPointModel(base.net, tuple(lower), tuple(upper), (race,))
    shape = dataclasses.replace(statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=8, radius="bound"),
                                persistence_columns=(3, 4), favourable_class=1)
    assert shape.alpha_bits and len(shape.persistence_pairs) == 3
    query = (0, one, 0, 5, -7, 20)
    cert = bound_certificate(model, query, eps_bits=8).certificate(model)
    public, witness = statement_inputs(model, SALT, cert, shape, persistence_delta=16)
    assert list(public.persistence_bounds) == proved_bounds(model, query, 1, (3, 4), 16, alpha_bits=16)
    lo, hi = public.persistence_bounds[1]  # the query's own value: g = 0
    assert lo <= 0 <= hi
    cs = build(shape, public, witness)
    assert cs.compile().is_satisfied(cs.witness())


def test_alpha_bits_only_where_there_are_slopes():
    """The field names a circuit only where bound propagation has slopes, and a shape without it keeps its
    digest (its keys and its cards)."""
    c = case("two_layer")
    assert "alpha_bits" not in c.shape.to_json() and "alpha_bits" not in _lens_shape(c).to_json()
    with pytest.raises(StatementShapeError, match="bound radius and the persistence lens"):
        dataclasses.replace(c.shape, alpha_bits=16)  # a region statement without the lens has no slopes
    for bad in (-1, 17, True, 2.0):
        with pytest.raises(StatementShapeError, match="alpha_bits"):
            dataclasses.replace(_lens_shape(c), alpha_bits=bad)
    optimised = _optimised_shape(c)
    assert optimised.to_json()["alpha_bits"] == 16 and optimised.digest() != _lens_shape(c).digest()
    assert type(optimised).from_json(optimised.to_json()) == optimised
    assert optimised.bucket == _lens_shape(c).bucket  # the bucket's name is its sizes and radius
