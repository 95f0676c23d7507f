"""Explanations of where a model discriminates: k is exact, and a planted region is found and described."""
from __future__ import annotations

import json

import numpy as np
import pytest

from audits.explain import Condition, describe_condition, distinct_decisions, explain
from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain
from fairness_toy_models import random_model

S = 8
ONE = 1 << S


def _planted() -> FixedPointModel:
    """Inputs (group, x1, x2), box [-1, 1]; hidden h = relu(10 x1 + 10 group - 10); margin h - 1 for class 1.
    Group 1 is decided favourably exactly where x1 > 0.1; group 0 never: k = 2 exactly where x1 > 0.1."""
    w0 = ((10 * ONE, 10 * ONE, 0),)
    b0 = (-10 << (2 * S),)
    w1 = ((0,), (ONE,))  # logit_0 = 0, logit_1 = h - 1
    b1 = (0, -1 << (3 * S))
    net = QuantisedMLP(S, (w0, w1), (b0, b1))
    group = SensitiveDomain.scalar("group", 0, (0, ONE), ("a", "b"))
    return FixedPointModel(net, (-ONE,) * 3, (ONE,) * 3, (group,))


def test_k_is_the_number_of_distinct_decisions():
    model = random_model(3, n_inputs=4, hidden=(4, 2), n_classes=3, scale_bits=S, sensitive_values=(-1, 0, 1))
    rng = np.random.default_rng(0)
    points = rng.integers(-ONE, ONE + 1, size=(300, 4))
    k = distinct_decisions(model, points)
    for x, kx in zip(points, k):
        decisions = set()
        for values in model.slices():
            y = list(map(int, x))
            y[0] = values[0]
            decisions.add(model.net.decision(y))
        assert kx == len(decisions)


def test_a_planted_region_is_found_and_described():
    model = _planted()
    result = explain(model, {}, seeds=[(0, ONE // 2, 0)], samples=4000, depth=1)
    assert result.rules and result.tree_accuracy > 0.95
    best = result.rules[0]
    assert best.precision > 0.95 and best.mean_k_difference > 0.9
    (cond,) = [c for c in best.conditions if c.column == 1]
    assert not cond.upper and abs(cond.threshold - 0.1) < 0.05  # x1 > ~0.1
    assert all(c.column != 0 for r in result.rules for c in r.conditions)  # never the sensitive column
    with pytest.raises(ValueError, match="samples"):
        explain(model, {}, seeds=[], samples=10)


def test_conditions_read_in_raw_units():
    from fairness.datasets import CATEGORICAL, NUMERIC, Preprocessor

    pre = Preprocessor(feature_names=("age", "job"), kinds=(NUMERIC, CATEGORICAL), categories={"job": ("a", "b", "c")},
                       means=(40.0, 1.0), stds=(10.0, 0.5), sensitive=())
    assert describe_condition(Condition(0, True, 0.5), pre, ("age", "job")) == "age <= 45"
    assert describe_condition(Condition(1, False, 0.2), pre, ("age", "job")) == "job in {c}"  # code > 1.1
    assert describe_condition(Condition(1, True, 0.2), pre, ("age", "job")) == "job in {a, b}"
    assert "standardised" in describe_condition(Condition(0, True, 0.5), object(), ("age", "job"))


def test_audit_explain_command(bank, tmp_path_factory, capsys):
    from bank_fixtures import copy_of_bank_model
    from prover_service.cli import main as fairproof

    root, _, store = copy_of_bank_model(bank, tmp_path_factory, "audit-explain")
    store.dispose()
    out = tmp_path_factory.mktemp("explain") / "rules.json"
    assert fairproof(["audit", "explain", "--model", str(root), "--samples", "1000", "--save-json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "discriminates" in text and "tree accuracy" in text
    report = json.loads(out.read_text())
    assert report["samples"] == 1000 and all(0 <= r["precision"] <= 1 for r in report["rules"])
    code = fairproof(["audit", "explain", "--model", str(root), "--samples", "5"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and "samples" in err


# -- categorical inputs at real encodings, rules and points in the bank's raw units --------------------------

BLOCK = ((1, 2, 3), ((0, 0, 0), (ONE, 0, 0), (0, ONE, 0), (0, 0, ONE)))  # one-hot, the first category dropped


def _one_hot_model() -> FixedPointModel:
    """Inputs (group, purpose=house, purpose=car, purpose=education, age), box [0, 1] on the one-hot block:
    h = relu(group + house - 3/2), so group 1 is decided favourably exactly where purpose is house; k = 2
    exactly there (and, read continuously, wherever house > 1/2)."""
    w0 = ((ONE, ONE, 0, 0, 0),)
    b0 = (-3 << (2 * S - 1),)
    w1 = ((0,), (ONE,))
    b1 = (0, -1 << (3 * S - 4))  # margin h - 1/16
    group = SensitiveDomain.scalar("group", 0, (0, ONE), ("a", "b"))
    return FixedPointModel(QuantisedMLP(S, (w0, w1), (b0, b1)), (0, 0, 0, 0, -ONE), (ONE, ONE, ONE, ONE, ONE),
                           (group,))


def _schema():
    from fairness.schema import FeatureSchema

    return FeatureSchema.model_validate({"name": "toy", "label": {"column": "y", "values": ["no", "yes"]}, "features": [
        {"name": "group", "kind": "sensitive", "values": ["a", "b"]},
        {"name": "purpose", "kind": "categorical", "encoding": "one_hot", "categories": ["none", "house", "car", "education"],
         "drop": "none"},
        {"name": "age", "kind": "numeric", "min": 20, "max": 60, "mean": 40.0, "std": 20.0, "unit": "years"}]})


def test_samples_hold_one_hot_features_at_their_categories():
    from audits.explain import sample

    model = _one_hot_model()
    rng = np.random.default_rng(1)
    seeds = np.array([(ONE, ONE, 0, 0, 0), (0, 0, 0, ONE, ONE // 2)])
    points = sample(model, {}, seeds, 2000, rng, blocks=(BLOCK,))
    blocks = {tuple(p) for p in points[:, 1:4].tolist()}
    assert blocks == set(BLOCK[1])  # every category drawn, nothing between them
    # the twin: without the block, the same sampling reads the one-hot inputs as numbers between categories
    loose = sample(model, {}, seeds, 2000, np.random.default_rng(1))
    assert not {tuple(p) for p in loose[:, 1:4].tolist()} <= set(BLOCK[1])


def test_rules_over_a_one_hot_feature_name_its_category_and_match_a_brute_force():
    model = _one_hot_model()
    result = explain(model, {}, seeds=[(ONE, ONE, 0, 0, 0)], samples=2000, depth=1, blocks=(BLOCK,))
    # brute force over the four categories (age does not matter): k = 2 exactly at purpose = house
    for point in BLOCK[1]:
        x = np.array([[0, *point, 0]])
        assert distinct_decisions(model, x)[0] == (2 if point == (ONE, 0, 0) else 1)
    best = result.rules[0]
    assert best.precision == 1.0 and [c.column for c in best.conditions] == [1]
    assert describe_condition(best.conditions[0], _schema(), _schema().feature_names) == "purpose in {house}"
    assert result.tree_accuracy == 1.0


def test_schema_conditions_and_points_read_in_raw_units():
    from fractions import Fraction

    from audits.global_search import describe_inputs

    schema, names = _schema(), _schema().feature_names
    assert describe_condition(Condition(4, True, 0.25), schema, names) == "age <= 45 years"
    assert describe_condition(Condition(2, False, 0.5), schema, names) == "purpose in {car}"
    assert describe_condition(Condition(2, True, 0.5), schema, names) == "purpose in {none, house, education}"
    point = [Fraction(1), Fraction(0), Fraction(0), Fraction(1), Fraction(-1, 2)]
    assert describe_inputs(schema, point, S, skip=(0,)) == [("purpose", "education"), ("age", "30 years")]
    # the twin: a one-hot value between categories is shown as the numbers it is, never named a category
    between = [Fraction(1), Fraction(1, 2), Fraction(1, 2), Fraction(0), Fraction(0)]
    assert describe_inputs(schema, between, S, skip=(0,))[0] == ("purpose", "(house: 0.5, car: 0.5, education: 0)")
    assert describe_inputs(object(), point, S) is None  # nothing says what raw units are


def test_shipped_dataset_points_read_in_its_units():
    from fractions import Fraction

    from fairness.datasets import CATEGORICAL, NUMERIC, Preprocessor
    from audits.global_search import describe_inputs

    pre = Preprocessor(feature_names=("age", "job"), kinds=(NUMERIC, CATEGORICAL), categories={"job": ("a", "b", "c")},
                       means=(40.0, 1.0), stds=(10.0, 0.5), sensitive=())
    assert describe_inputs(pre, [Fraction(1, 2), Fraction(2)], S) == [("age", "45"), ("job", "c")]
    assert describe_inputs(pre, [Fraction(1, 2), Fraction(1, 2)], S) == [("age", "45"), ("job", "code 1.25")]
    assert describe_inputs(pre, [Fraction(1, 2), Fraction(2)], S, skip=(1,)) == [("age", "45")]
