"""Group fairness over a distribution: FVGM's and Justicia's worked examples, and the DP against brute force."""
from __future__ import annotations

import itertools
import random

import pytest

from fairness.probabilistic import (BayesianNetwork, Variable, group_fairness, linear_positive_probability,
                                    positive_probability, sampled_positive_probability)


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
