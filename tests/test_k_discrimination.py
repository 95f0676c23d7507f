"""k-discrimination: the MILP's k re-checks exactly, is never below a dense sample's, and is 1 for a model
that ignores the sensitive attribute."""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from fairness.fixed_point import QuantisedMLP
from fairness.global_search import GlobalSearchError
from fairness.k_discrimination import OPTIMAL, exact_buckets, max_buckets, sampled_max_buckets

from fairness_toy_models import random_model


def _four_valued(seed: int):
    return random_model(seed, n_inputs=3, hidden=(4, 2), n_classes=2, scale_bits=8, sensitive_values=(-1, 0, 1),
                        weight_range=2.0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_milp_reaches_at_least_what_sampling_finds_and_rechecks_exactly(seed):
    model = _four_valued(seed)
    width = 0.25
    result = max_buckets(model, favourable=1, width=width, time_limit=60)
    sampled, _ = sampled_max_buckets(model, favourable=1, width=width, samples=20_000, seed=seed)
    assert result.status == OPTIMAL
    assert result.k >= sampled
    assert result.upper_bound == result.k
    assert len(set(exact_buckets(model, result.point, 1, Fraction(width)))) == result.k
    assert result.buckets == exact_buckets(model, result.point, 1, Fraction(width))
    assert 1 <= result.k <= len(model.slices())


def test_a_model_blind_to_the_sensitive_column_has_k_one():
    model = _four_valued(4)
    w0 = tuple(tuple(0 if j == 0 else v for j, v in enumerate(row)) for row in model.net.weights[0])
    net = QuantisedMLP(scale_bits=model.net.scale_bits, weights=(w0, *model.net.weights[1:]), biases=model.net.biases)
    blind = dataclasses.replace(model, net=net)
    result = max_buckets(blind, favourable=1, width=0.1, time_limit=60)
    assert (result.status, result.k, result.upper_bound) == (OPTIMAL, 1, 1)


def test_unusable_questions_are_refused():
    model = _four_valued(5)
    with pytest.raises(GlobalSearchError):
        max_buckets(model, favourable=2, width=0.2)
    with pytest.raises(GlobalSearchError):
        max_buckets(model, favourable=1, width=0.0)
