"""Group fairness over a distribution: FVGM's and Justicia's worked examples, the DP against brute force, and a
committed model over a categorical network against brute-force enumeration."""
from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from audits.probabilistic import (NETWORK_FORMAT, BayesianNetwork, Variable, enumerated_fairness, group_fairness,
                                  learn_group_network, linear_positive_probability, model_decider,
                                  network_fairness, network_from_json, network_to_json, positive_probability,
                                  quantile_bins, sampled_fairness, sampled_positive_probability)


def _fvgm_classifier(a):
    return a["P"] + a["Q"] + a["R"] - a["S"] >= 2


def test_fvgm_example_3_1_independent_features():
    network = BayesianNetwork.independent({"P": 0.5, "Q": 0.4, "R": 0.5, "S": 0.3})
    summary = group_fairness(network, _fvgm_classifier, ["P"])
    assert summary.most_favoured.group == (("P", 1),) and summary.most_favoured.ppv == pytest.approx(0.55)
    assert summary.least_favoured.group == (("P", 0),) and summary.least_favoured.ppv == pytest.approx(0.14)
    assert summary.disparate_impact == pytest.approx(0.14 / 0.55)
    assert summary.statistical_parity == pytest.approx(0.41)


def test_fvgm_example_3_2_with_a_bayesian_network():
    network = BayesianNetwork([
        Variable("P", (), {(): 0.5}),
        Variable("Q", ("P",), {(1,): 0.6, (0,): 0.3}),
        Variable("R", (), {(): 0.5}),
        Variable("S", (), {(): 0.3}),
    ])
    summary = group_fairness(network, _fvgm_classifier, ["P"])
    assert summary.most_favoured.ppv == pytest.approx(0.65)
    assert summary.least_favoured.ppv == pytest.approx(0.105)  # the paper prints 0.11


def test_fvgm_choice_variable_pitfall_is_enumerated():
    """A + 2X >= 2 with X depending on A: the positive weight of A does not make A = 1 the maximiser."""
    network = BayesianNetwork([Variable("A", (), {(): 0.5}), Variable("X", ("A",), {(1,): 0.1, (0,): 0.9})])
    summary = group_fairness(network, lambda a: a["A"] + 2 * a["X"] >= 2, ["A"])
    assert summary.most_favoured.group == (("A", 0),) and summary.most_favoured.ppv == pytest.approx(0.9)


def _justicia(a):
    return (not a["F"] or a["I"]) and (a["F"] or a["J"])


def test_justicia_example_2():
    unconditional = BayesianNetwork.independent({"F": 0.41, "I": 0.93, "J": 0.09})
    assert positive_probability(unconditional, _justicia, {}) == pytest.approx(0.4344, abs=1e-4)
    network = BayesianNetwork([
        Variable("A", (), {(): 0.5}),
        Variable("F", ("A",), {(1,): 0.01, (0,): 0.82}),
        Variable("I", ("A",), {(1,): 0.99, (0,): 0.88}),
        Variable("J", ("A",), {(1,): 0.18, (0,): 0.01}),
    ])
    assert positive_probability(network, _justicia, {"A": 1}) == pytest.approx(0.18, abs=0.01)
    assert positive_probability(network, _justicia, {"A": 0}) == pytest.approx(0.72, abs=0.01)
    assert positive_probability(network, _justicia, {"A": 1}) == pytest.approx(0.1881, abs=1e-4)


def test_justicia_example_3_sensitive_variable_in_the_formula():
    network = BayesianNetwork.independent({"H": 0.41, "I": 0.93, "J": 0.09, "S": 0.5})
    classifier = lambda a: (not a["H"] or a["I"] or a["S"]) and (a["H"] or a["J"])  # noqa: E731
    summary = group_fairness(network, classifier, ["S"])
    assert summary.most_favoured.ppv == pytest.approx(0.4631, abs=1e-4)
    assert summary.least_favoured.ppv == pytest.approx(0.4344, abs=1e-4)
    assert 1 - summary.least_favoured.ppv == pytest.approx(0.5656, abs=1e-4)  # Pr[Phi'_ER]


def test_linear_dp_equals_brute_force_on_random_instances():
    rng = random.Random(0)
    for _ in range(2000):
        n = rng.randint(1, 6)
        w = [rng.randint(-5, 5) for _ in range(n)]
        tau = rng.randint(-8, 8)
        p = [rng.random() for _ in range(n)]
        brute = 0.0
        for xs in itertools.product((0, 1), repeat=n):
            prob = 1.0
            for x, q in zip(xs, p):
                prob *= q if x else 1 - q
            if sum(wi * x for wi, x in zip(w, xs)) >= tau:
                brute += prob
        assert linear_positive_probability(w, tau, p) == pytest.approx(brute, abs=1e-12)


def test_sampling_agrees_with_enumeration():
    network = BayesianNetwork([
        Variable("A", (), {(): 0.3}),
        Variable("B", ("A",), {(1,): 0.8, (0,): 0.2}),
        Variable("C", ("A", "B"), {(1, 1): 0.9, (1, 0): 0.4, (0, 1): 0.5, (0, 0): 0.1}),
        Variable("D", ("C",), {(1,): 0.7, (0,): 0.3}),
    ])
    classifier = lambda a: a["B"] + a["C"] + a["D"] >= 2  # noqa: E731
    rng = random.Random(1)
    for group in ({"A": 0}, {"A": 1}):
        exact = positive_probability(network, classifier, group)
        assert sampled_positive_probability(network, classifier, group, 40_000, rng) == pytest.approx(exact, abs=0.02)


def test_malformed_networks_are_refused():
    with pytest.raises(ValueError, match="parents must come first"):
        BayesianNetwork([Variable("B", ("A",), {(0,): 0.1, (1,): 0.2}), Variable("A", (), {(): 0.5})])
    with pytest.raises(ValueError, match="probability"):
        BayesianNetwork([Variable("A", (), {(): 1.5})])
    with pytest.raises(ValueError, match="probability"):
        BayesianNetwork([Variable("A", (), {(): 0.5}), Variable("B", ("A",), {(0,): 0.1})])
    with pytest.raises(ValueError, match="probability 0"):
        positive_probability(BayesianNetwork([Variable("A", (), {(): 0.0})]), lambda a: True, {"A": 1})


# -- categorical networks, the file format, and a committed model over a network ---------------------------

SCHEMA = {
    "name": "tiny-credit",
    "features": [
        {"name": "income", "kind": "numeric", "min": 0, "max": 100, "mean": 50.0, "std": 25.0},
        {"name": "purpose", "kind": "categorical", "encoding": "one_hot", "categories": ["car", "home", "study"]},
        {"name": "race", "kind": "sensitive", "encoding": "one_hot", "values": ["a", "b", "c"]},
        {"name": "sex", "kind": "sensitive", "values": ["F", "M"]},
    ],
    "label": {"column": "default", "values": ["no", "yes"]},
}

NETWORK = {
    "format": NETWORK_FORMAT,
    "variables": [
        {"name": "race", "states": ["a", "b", "c"], "probabilities": [0.5, 0.3, 0.2]},
        {"name": "sex", "states": ["F", "M"], "parents": ["race"],
         "table": [{"given": ["a"], "probabilities": [0.5, 0.5]}, {"given": ["b"], "probabilities": [0.6, 0.4]},
                   {"given": ["c"], "probabilities": [0.3, 0.7]}]},
        {"name": "income", "states": ["20", "50", "85"], "parents": ["race"],
         "table": [{"given": ["a"], "probabilities": [0.2, 0.5, 0.3]},
                   {"given": ["b"], "probabilities": [0.5, 0.3, 0.2]},
                   {"given": ["c"], "probabilities": [0.6, 0.3, 0.1]}]},
        {"name": "purpose", "states": ["car", "home", "study"], "parents": ["income", "sex"],
         "table": [{"given": [i, s], "probabilities": p} for (i, s), p in zip(
             [(i, s) for i in ("20", "50", "85") for s in ("F", "M")],
             [[0.6, 0.1, 0.3], [0.5, 0.2, 0.3], [0.3, 0.5, 0.2], [0.4, 0.4, 0.2], [0.2, 0.7, 0.1], [0.1, 0.8, 0.1]])]},
    ],
}


def _tiny_model(seed: int):
    """A random (4,) ReLU network over the schema's 8 inputs (income, three purpose inputs, three race
    inputs, sex), committed at 2^16."""
    from fairness.fixed_point import to_fixed_point
    from fairness.model import FloatMLP, artifact_from_schema
    from fairness.schema import FeatureSchema

    schema = FeatureSchema.model_validate(SCHEMA)
    rng = np.random.default_rng(seed)
    net = FloatMLP([rng.normal(size=(4, 8)) * 2, rng.normal(size=(2, 4)) * 2], [rng.normal(size=4), rng.normal(size=2)])
    return schema, to_fixed_point(artifact_from_schema(net, schema), 16)


def _decide_inputs(model, favourable):
    from fairness.fixed_point import quantise_query

    return lambda X: np.array([model.net.decision(quantise_query(model, list(x))) == favourable for x in X])


def _brute_force(schema, model, favourable: int) -> dict[tuple[str, str], float]:
    """Pr[favourable | race, sex] by explicit loops over the four attributes, the probabilities read off
    the file by hand, each record encoded by the schema and decided by the integer model."""
    from fairness.fixed_point import quantise_query

    race = dict(zip("abc", (0.5, 0.3, 0.2)))
    sex = {"a": {"F": 0.5, "M": 0.5}, "b": {"F": 0.6, "M": 0.4}, "c": {"F": 0.3, "M": 0.7}}
    income = {"a": (0.2, 0.5, 0.3), "b": (0.5, 0.3, 0.2), "c": (0.6, 0.3, 0.1)}
    purpose = {("20", "F"): (0.6, 0.1, 0.3), ("20", "M"): (0.5, 0.2, 0.3), ("50", "F"): (0.3, 0.5, 0.2),
               ("50", "M"): (0.4, 0.4, 0.2), ("85", "F"): (0.2, 0.7, 0.1), ("85", "M"): (0.1, 0.8, 0.1)}
    out = {}
    for r in "abc":
        for s in "FM":
            mass = good = 0.0
            for i, inc in enumerate(("20", "50", "85")):
                for k, p in enumerate(("car", "home", "study")):
                    w = race[r] * sex[r][s] * income[r][i] * purpose[(inc, s)][k]
                    x = schema.encode({"income": inc, "purpose": p, "race": r, "sex": s})
                    mass += w
                    good += w * (model.net.decision(quantise_query(model, list(x))) == favourable)
            out[(r, s)] = good / mass
    return out


@pytest.mark.parametrize("seed", range(4))
def test_a_committed_model_over_a_categorical_network_equals_brute_force(seed):
    schema, model = _tiny_model(seed)
    network = network_from_json(json.loads(json.dumps(NETWORK)))
    decide = model_decider(network, schema.attributes, schema.transform_record, _decide_inputs(model, 1))
    result = enumerated_fairness(network, decide, ["race", "sex"])
    expected = _brute_force(schema, model, 1)
    assert result.method == "enumeration" and result.assignments == 3 * 2 * 3 * 3
    assert len(result.groups) == 6  # the one-hot race is one variable of three states, not three bits
    for g in result.groups:
        key = (dict(g.group)["race"], dict(g.group)["sex"])
        assert g.ppv == pytest.approx(expected[key], abs=1e-12) and g.interval == (g.ppv, g.ppv)
    rates = list(expected.values())
    assert result.statistical_parity == pytest.approx(max(rates) - min(rates), abs=1e-12)
    if max(rates) > 0:
        assert result.disparate_impact == pytest.approx(min(rates) / max(rates), abs=1e-12)
    assert sum(g.probability for g in result.groups) == pytest.approx(1.0)


def test_sampling_lies_within_its_stated_interval():
    schema, model = _tiny_model(1)
    network = network_from_json(NETWORK)
    decide = model_decider(network, schema.attributes, schema.transform_record, _decide_inputs(model, 1))
    exact = enumerated_fairness(network, decide, ["race", "sex"])
    sampled = sampled_fairness(network, decide, ["race", "sex"], 3000, 0.99, random.Random(4))
    assert sampled.method == "sampling" and sampled.confidence == 0.99
    for e, s in zip(exact.groups, sampled.groups):
        assert s.group == e.group and s.samples == 3000 and s.probability == pytest.approx(e.probability)
        assert s.interval[0] <= e.ppv <= s.interval[1]
        assert s.interval[1] - s.interval[0] <= 2 * 0.04  # sqrt(ln(2 * 6 / 0.01) / 6000) = 0.034
    low, high = sampled.statistical_parity_interval
    assert low <= exact.statistical_parity <= high
    low, high = sampled.disparate_impact_interval
    assert low <= exact.disparate_impact <= high
    # beyond --max-enumeration the same question is sampled, below it enumerated
    assert network_fairness(network, decide, ["race", "sex"], max_enumeration=10, samples=200, confidence=0.9,
                            rng=random.Random(0)).method == "sampling"
    assert network_fairness(network, decide, ["race", "sex"], max_enumeration=54, samples=200, confidence=0.9,
                            rng=random.Random(0)).method == "enumeration"


def test_the_network_file_round_trips_and_its_defects_are_named():
    network = network_from_json(NETWORK)
    assert network_from_json(network_to_json(network)).variables == network.variables
    assert network.arity == {"race": 3, "sex": 2, "income": 3, "purpose": 3}

    def broken(change) -> dict:
        data = json.loads(json.dumps(NETWORK))
        change(data)
        return data

    cases = [
        (lambda d: d["variables"][0].update(probabilities=[0.5, 0.3, 0.3]), "summing to 1"),
        (lambda d: d["variables"][0].update(probabilities=[0.5, 0.5]), "3 probabilities"),
        (lambda d: d["variables"][1]["table"].pop(), "per assignment of its parents"),
        (lambda d: d["variables"][1]["table"][0].update(given=["z"]), "one state of each parent"),
        (lambda d: d["variables"][1]["table"].append(d["variables"][1]["table"][0]), "appears twice"),
        (lambda d: d["variables"].insert(0, d["variables"].pop(2)), "must be variables listed before it"),
        (lambda d: d["variables"][0].update(states=["a", "a", "c"]), "distinct states"),
        (lambda d: d["variables"][0].update(table=[]), "a root gives"),
        (lambda d: d.update(format="other/1"), "not a Bayesian network file"),
        (lambda d: d["variables"].append(dict(d["variables"][0])), "named twice"),
    ]
    for change, words in cases:
        with pytest.raises(ValueError, match=words):
            network_from_json(broken(change), "net.json")


def test_a_network_without_a_model_attribute_is_refused():
    schema, model = _tiny_model(0)
    data = json.loads(json.dumps(NETWORK))
    data["variables"].pop()  # no purpose
    network = network_from_json(data)
    with pytest.raises(ValueError, match="no variable for the model's attribute.*purpose"):
        model_decider(network, schema.attributes, schema.transform_record, _decide_inputs(model, 1))
    with pytest.raises(ValueError, match="no variable for the sensitive attribute.*religion"):
        network_fairness(network, lambda a: np.ones(len(a), dtype=bool), ["religion"], max_enumeration=100,
                         samples=10, confidence=0.9, rng=None)


def test_the_learned_network_holds_the_groups_frequencies():
    """Justicia's distribution: the compound group's frequencies, and each attribute's given the group."""
    records = [{"g": "x", "c": "u"}, {"g": "x", "c": "v"}, {"g": "x", "c": "v"}, {"g": "y", "c": "u"}]
    network = learn_group_network(records, ["g"], {"g": ("x", "y"), "c": ("u", "v", "w")}, lambda a, v: v)
    assert network.variable("g").distribution(()) == (0.75, 0.25)
    assert network.variable("c").distribution((0,)) == pytest.approx((1 / 3, 2 / 3, 0.0))
    assert network.variable("c").distribution((1,)) == (1.0, 0.0, 0.0)


def test_quantile_bins_give_each_bin_its_mean():
    edges, means = quantile_bins([1, 2, 3, 4, 5, 6, 7, 8], 4)
    assert edges == (2.75, 4.5, 6.25) and means == (1.5, 3.5, 5.5, 7.5)
    edges, means = quantile_bins([1, 1, 1, 1, 9], 4)  # repeated values: fewer bins, none empty
    assert edges == (1.0,) and means == (1.0, 9.0)
