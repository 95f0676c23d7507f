"""Group rates over a learned distribution: the network is the data's smoothed frequencies, and sampling
it reproduces the rates of the generator it was learned from."""
from __future__ import annotations

import numpy as np
import pytest

from audits.distribution import distribution_rates, learn_network
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
    from audits.distribution import fairness_influence, with_uniform
    from fairness.fixed_point import FixedPointModel, QuantisedMLP, SensitiveDomain

    # logit_1 - logit_0 = relu(4 x2) - 1 (+ 0 x3): favourable iff x2 > 0.25
    w0 = ((0, 0, 4 * ONE, 0),)
    net = QuantisedMLP(S, (w0, ((0,), (ONE,))), ((0,), (0, -1 << (3 * S))))
    group = SensitiveDomain.scalar("group", 0, (-ONE, 0, ONE), ("a", "b", "c"))
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


def _chained(rng, n):
    """Group g in {0, 1}; x1 categorical in {-0.5, 0.5}, mostly equal to the group's sign; x2 numeric, near x1
    (x2 depends on the group only through x1); x3 uniform noise."""
    g = rng.choice([0.0, 1.0], size=n, p=[0.4, 0.6])
    x1 = np.where(rng.random(n) < 0.15 + 0.7 * g, 0.5, -0.5)
    x2 = np.clip(x1 + rng.uniform(-0.4, 0.4, n), -1, 1)
    x3 = rng.uniform(-1, 1, n)
    return np.stack([g, x1, x2, x3], axis=1)


def test_a_learned_structure_keeps_the_dependencies_a_star_loses():
    """x2 depends on x1 (a chain g -> x1 -> x2): hill climbing finds an edge between them, never one into the
    group, and the samples keep x1 and x2 correlated within a group as the data does (up to the bins'
    resolution); the star, which makes them independent given the group, loses it."""
    from audits.distribution import GROUP, learn_structured_network

    model = random_model(5, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=S, sensitive_values=(0, 1))
    rng = np.random.default_rng(2)
    X = _chained(rng, 20_000)
    learned = learn_structured_network(model, X, categorical=[1], bins=4)
    star = learn_network(model, X, categorical=[1], bins=4)
    edges = {(str(a), str(b)) for a, b in learned.edges()}
    assert ("1", "2") in edges or ("2", "1") in edges
    assert all(b != GROUP for _, b in learned.edges())
    truth = _chained(rng, 100_000)
    for g in (0, 1):
        rows = truth[truth[:, 0] == g]
        want = np.corrcoef(rows[:, 1], rows[:, 2])[0, 1]
        learned_x = learned.sample(g, 40_000, np.random.default_rng(3), 4)
        star_x = star.sample(g, 40_000, np.random.default_rng(3), 4)
        assert want > 0.8
        assert np.corrcoef(learned_x[:, 1], learned_x[:, 2])[0, 1] > 0.7
        assert abs(np.corrcoef(star_x[:, 1], star_x[:, 2])[0, 1]) < 0.05


def test_structured_rates_and_influence_run_on_the_same_machinery():
    from audits.distribution import fairness_influence, learn_structured_network, with_uniform

    model = random_model(6, n_inputs=4, hidden=(4, 2), n_classes=2, scale_bits=S, sensitive_values=(0, 1))
    rng = np.random.default_rng(4)
    X = _chained(rng, 10_000)
    network = learn_structured_network(model, X, categorical=[1], bins=4)
    rates, di, sp = distribution_rates(model, network, favourable=1, samples=20_000)
    truth = _chained(rng, 100_000)
    q = np.clip(np.rint(truth * ONE).astype(np.int64), -ONE, ONE)
    z = integer_logits(model.net, q.astype(object))
    decided = np.array([row[1] > row[0] for row in z])
    for r, g in zip(rates, (0, 1)):
        assert r.rate == pytest.approx(decided[truth[:, 0] == g].mean(), abs=0.03)
    uniform = with_uniform(network, 1)
    assert uniform.parents[1] == () and uniform.tables[1] == {(): (0.5, 0.5)}
    assert {i.column for i in fairness_influence(model, network, favourable=1, samples=5_000)} == {1, 2, 3}
    with pytest.raises(ValueError):
        with_uniform(network, 0)  # the sensitive column is the group, not a feature
