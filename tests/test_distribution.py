"""Group rates over a learned distribution: the network is the data's smoothed frequencies, and sampling
it reproduces the rates of the generator it was learned from."""
from __future__ import annotations

import numpy as np
import pytest

from fairness.distribution import distribution_rates, learn_network
from fairness.fixed_point import integer_logits
from fairness_toy_models import random_model

S = 8
ONE = 1 << S


def _generator(rng, n):
    """Group g in {-1, 0, 1} (column 0); x1 categorical in {-0.5, 0.5} with Pr depending on g; x2, x3 uniform
    on a g-dependent interval (numeric)."""
    g = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.2, 0.5, 0.3])
    x1 = np.where(rng.random(n) < 0.3 + 0.2 * g, 0.5, -0.5)
    x2 = rng.uniform(-1, 0, n) * (g == -1) + rng.uniform(-0.5, 0.5, n) * (g == 0) + rng.uniform(0, 1, n) * (g == 1)
    x3 = rng.uniform(-1, 1, n)
    return np.stack([g, x1, x2, x3], axis=1)


def test_learned_tables_are_the_smoothed_frequencies():
    model = random_model(1, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=S, sensitive_values=(-1, 0, 1))
    X = _generator(np.random.default_rng(0), 3000)
    net = learn_network(model, X, categorical=[1], bins=4, smoothing=1.0)
    groups = [-ONE, 0, ONE]
    assert [s[0] for s in net.groups] == groups
    counts = np.array([np.sum(X[:, 0] == g / ONE) for g in groups])
    assert np.allclose(net.group_probabilities, (counts + 1) / (counts + 1).sum())
    (x1,) = [f for f in net.features if f.column == 1]
    for gi, g in enumerate(groups):
        rows = X[X[:, 0] == g / ONE]
        expected = np.array([np.sum(rows[:, 1] == -0.5) + 1, np.sum(rows[:, 1] == 0.5) + 1])
        assert np.allclose(x1.probabilities[gi], expected / expected.sum())
    (x2,) = [f for f in net.features if f.column == 2]
    assert len(x2.edges) == 5 and x2.edges[0] == pytest.approx(X[:, 2].min())


def test_sampled_rates_match_the_generators_rates():
    model = random_model(3, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=S, sensitive_values=(-1, 0, 1))
    rng = np.random.default_rng(1)
    net = learn_network(model, _generator(rng, 40_000), categorical=[1], bins=8)
    rates, di, sp = distribution_rates(model, net, favourable=1, samples=20_000)
    truth = _generator(rng, 200_000)
    q = np.clip(np.rint(truth * ONE).astype(np.int64), -ONE, ONE)
    z = integer_logits(model.net, q.astype(object))
    decided = np.array([row[1] > row[0] for row in z])
    for r, g in zip(rates, (-1, 0, 1)):
        expected = decided[truth[:, 0] == g].mean()
        assert r.rate == pytest.approx(expected, abs=0.02), (r.labels, r.rate, expected)
        assert r.interval[0] <= r.rate <= r.interval[1]
    assert sp == pytest.approx(max(r.rate for r in rates) - min(r.rate for r in rates))
    assert di == pytest.approx(min(r.rate for r in rates) / max(r.rate for r in rates))


def test_unusable_inputs_are_refused():
    model = random_model(1, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=S, sensitive_values=(-1, 0, 1))
    X = _generator(np.random.default_rng(0), 100)
    with pytest.raises(ValueError, match="bin"):
        learn_network(model, X, categorical=[1], bins=0)
    X[:, 0] = 0.37  # no row in the sensitive domain
    with pytest.raises(ValueError, match="sensitive values"):
        learn_network(model, X, categorical=[1])


def test_fairness_influence_points_at_the_feature_that_carries_the_group():
    """x2 is drawn from a group-dependent interval and the model leans on it: making x2 uniform removes most
    of the gap; x3 (independent of the group) has no influence up to sampling noise."""
    from fairness.distribution import fairness_influence, with_uniform
    from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain

    # logit_1 - logit_0 = relu(4 x2) - 1 (+ 0 x3): favourable iff x2 > 0.25
    w0 = ((0, 0, 4 * ONE, 0),)
    net = QuantisedMLP(S, (w0, ((0,), (ONE,))), ((0,), (0, -1 << (3 * S))))
    group = SensitiveDomain("group", 0, (-ONE, 0, ONE), ("a", "b", "c"))
    model = FixedPointModel(net, (-ONE,) * 4, (ONE,) * 4, (group,))
    rng = np.random.default_rng(2)
    network = learn_network(model, _generator(rng, 20_000), categorical=[1], bins=8)
    influence = {i.column: i for i in fairness_influence(model, network, favourable=1, samples=20_000)}
    assert set(influence) == {1, 2, 3}
    assert influence[2].parity_change > 0.3  # x2 carries the whole gap
    assert abs(influence[3].parity_change) < 0.02 and abs(influence[1].parity_change) < 0.02
    uniform = with_uniform(network, 2)
    (x2,) = [f for f in uniform.features if f.column == 2]
    assert all(p == pytest.approx(1 / len(x2.probabilities[0])) for row in x2.probabilities for p in row)
    with pytest.raises(ValueError, match="not a feature"):
        with_uniform(network, 0)
