"""k-discrimination: the MILP's k re-checks exactly, is never below a dense sample's, and is 1 for a model
that ignores the sensitive attribute."""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest

from audits.global_search import GlobalSearchError
from audits.k_discrimination import OPTIMAL, exact_buckets, max_buckets, sampled_max_buckets
from fairness.fixed_point import QuantisedMLP

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


# -- categorical inputs at real records' encodings ----------------------------------------------------------

ONE = 1 << 8
BLOCK = ((1, 2, 3), ((0, 0, 0), (ONE, 0, 0), (0, ONE, 0), (0, 0, ONE)))  # one-hot, the first category dropped
CODES = {4: (-ONE, 0, ONE)}  # an ordinal feature's three codes


def _categorical_only(seed: int):
    """A sensitive column and five categorical inputs (a one-hot block of three, an ordinal code): a finite
    domain of twelve records, which a brute force enumerates."""
    return random_model(seed, n_inputs=5, hidden=(6, 3), n_classes=2, scale_bits=8, sensitive_values=(-1, 0, 1),
                        weight_range=0.8)


def _brute_force_k(model, width: float) -> int:
    best = 1
    for point in BLOCK[1]:
        for code in CODES[4]:
            x = [Fraction(0), *(Fraction(v, ONE) for v in point), Fraction(code, ONE)]
            best = max(best, len(set(exact_buckets(model, x, 1, Fraction(width)))))
    return best


@pytest.mark.parametrize("seed", [1, 2, 4, 6])  # seed 1: read continuously, its inputs reach one bucket more
def test_k_over_categorical_encodings_equals_a_brute_force(seed):
    model = _categorical_only(seed)
    result = max_buckets(model, favourable=1, width=0.5, time_limit=60, choices=CODES, blocks=(BLOCK,))
    assert result.status == OPTIMAL and result.k == _brute_force_k(model, 0.5)
    block = tuple(int(result.point[c] * ONE) for c in BLOCK[0])
    assert block in BLOCK[1] and int(result.point[4] * ONE) in CODES[4]  # never between two categories
    sampled, per_sample = sampled_max_buckets(model, 1, 0.5, samples=2000, seed=seed, choices=CODES, blocks=(BLOCK,))
    assert sampled == result.k and per_sample.max() == sampled


def _between_categories_only():
    """Inputs (group, a, b) with (a, b) one-hot over three categories (the third dropped): h = relu(group + a
    + b - 2) is 0 at every category (a + b <= 1) and for group 0 everywhere, positive for group 1 only between
    categories, and the margin is 10 h - 1/2: the groups fall into different buckets only at a one-hot
    value no record has."""
    from fairness.fixed_point import FixedPointModel, SensitiveDomain

    w0 = ((ONE, ONE, ONE),)
    b0 = (-2 << 16,)
    w1 = ((0,), (10 * ONE,))
    b1 = (0, -(1 << 23))  # -1/2 at 2^(3 s)
    group = SensitiveDomain.scalar("group", 0, (0, ONE), ("a", "b"))
    return FixedPointModel(QuantisedMLP(8, (w0, w1), (b0, b1)), (0, 0, 0), (ONE, ONE, ONE), (group,))


def test_a_one_hot_block_is_never_read_between_its_categories():
    model = _between_categories_only()
    block = ((1, 2), ((ONE, 0), (0, ONE), (0, 0)))
    kept = max_buckets(model, favourable=1, width=1.0, time_limit=60, blocks=(block,))
    assert (kept.status, kept.k, kept.upper_bound) == (OPTIMAL, 1, 1)
    assert tuple(int(kept.point[c] * ONE) for c in (1, 2)) in block[1]
    # the twin: the same model searched as if its inputs were continuous reaches k = 2 between categories
    loose = max_buckets(model, favourable=1, width=1.0, time_limit=60)
    assert loose.k == 2 and tuple(int(loose.point[c] * ONE) for c in (1, 2)) not in block[1]
    with pytest.raises(GlobalSearchError, match="block"):
        max_buckets(model, favourable=1, width=1.0, blocks=(((0, 1), ((0, 0), (ONE, 0))),))  # a sensitive column
