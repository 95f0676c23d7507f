"""Group fairness over a learned distribution (FVGM's setting) rather than over the rows at hand.

The distribution is a Bayesian network learned by counting: the compound sensitive group is the root
(its frequency in the data) and every other feature, discretised, has the group as its only parent
(Laplace-smoothed frequencies of its bins within the group), FVGM's structure when nothing else is
known of the dependencies. Numeric features use quantile bins and are drawn uniformly inside the drawn
bin; categorical ones are drawn among the values the data shows.

Per group, samples of the other features are drawn from the network, the group's sensitive values
set, and the committed model decides each (exact integer model at the model's grid); the selection
rate per group then has a Wilson interval from the sampling alone, and DI (min/max) and SP (max - min)
follow. This measures the model against the population the data suggests, including feature
combinations the data set itself does not hold; it inherits the structure's assumption (features
independent given the group).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .fixed_point import FixedPointModel, integer_logits
from .group_metrics import wilson


@dataclass(frozen=True)
class FeatureTable:
    column: int
    edges: tuple[float, ...] | None  # numeric: bin edges (len = bins + 1); None: categorical
    values: tuple[float, ...]  # categorical: the values; numeric: empty
    probabilities: tuple[tuple[float, ...], ...]  # per group: Pr[bin or value | group]


@dataclass(frozen=True)
class LearnedNetwork:
    groups: tuple[tuple[int, ...], ...]  # the model's slices (sensitive values at 2^s)
    group_probabilities: tuple[float, ...]
    features: tuple[FeatureTable, ...]

    def sample(self, group: int, n: int, rng: np.random.Generator, n_inputs: int) -> np.ndarray:
        """n rows (standardised floats) of the non-sensitive features given the group; sensitive columns 0."""
        x = np.zeros((n, n_inputs))
        for f in self.features:
            p = np.array(f.probabilities[group])
            picks = rng.choice(len(p), size=n, p=p)
            if f.edges is None:
                x[:, f.column] = np.array(f.values)[picks]
            else:
                lo, hi = np.array(f.edges[:-1])[picks], np.array(f.edges[1:])[picks]
                x[:, f.column] = lo + (hi - lo) * rng.random(n)
        return x


def learn_network(model: FixedPointModel, X: np.ndarray, categorical: Sequence[int], bins: int = 4,
                  smoothing: float = 1.0) -> LearnedNetwork:
    """The network of the module docstring from rows X (standardised floats, model column order)."""
    if bins < 1 or smoothing < 0:
        raise ValueError("need at least one bin and non-negative smoothing")
    X = np.asarray(X, dtype=float)
    one = 1 << model.scale_bits
    slices = model.slices()
    sens = model.sensitive_columns
    codes = np.rint(X[:, list(sens)] * one).astype(np.int64)
    group_of = np.array([slices.index(tuple(int(v) for v in row)) if tuple(int(v) for v in row) in slices else -1
                         for row in codes])
    keep = group_of >= 0
    X, group_of = X[keep], group_of[keep]
    if not len(X):
        raise ValueError("no row has sensitive values of the model's domain")
    counts = np.bincount(group_of, minlength=len(slices)).astype(float)
    group_p = tuple((counts + smoothing) / (counts + smoothing).sum())
    tables = []
    for j in range(X.shape[1]):
        if j in sens:
            continue
        column = X[:, j]
        if j in set(categorical):
            values = tuple(sorted(set(column.tolist())))
            index = np.searchsorted(values, column)
            edges = None
        else:
            edges = tuple(np.unique(np.quantile(column, np.linspace(0, 1, bins + 1))).tolist())
            if len(edges) == 1:
                edges = (edges[0], edges[0])
            index = np.clip(np.searchsorted(edges, column, side="right") - 1, 0, len(edges) - 2)
            values = ()
        k = len(values) if edges is None else len(edges) - 1
        per_group = []
        for g in range(len(slices)):
            c = np.bincount(index[group_of == g], minlength=k).astype(float) + smoothing
            per_group.append(tuple((c / c.sum()).tolist()))
        tables.append(FeatureTable(j, edges, values, tuple(per_group)))
    return LearnedNetwork(tuple(slices), group_p, tuple(tables))


@dataclass(frozen=True)
class DistributionRates:
    labels: tuple[str, ...]
    samples: int
    selected: int

    @property
    def rate(self) -> float:
        return self.selected / self.samples

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.selected, self.samples)


def distribution_rates(model: FixedPointModel, network: LearnedNetwork, favourable: int, samples: int = 20_000,
                       seed: int = 0) -> tuple[list[DistributionRates], float | None, float | None]:
    """Per group, the committed model's selection rate over `samples` draws of the network given the group;
    then DI (min/max) and SP (max - min)."""
    rng = np.random.default_rng(seed)
    one = 1 << model.scale_bits
    lo, hi = np.array(model.box_lower), np.array(model.box_upper)
    out = []
    for g, values in enumerate(network.groups):
        x = network.sample(g, samples, rng, model.net.n_inputs)
        q = np.clip(np.rint(x * one).astype(np.int64), lo, hi)  # onto the model's grid, inside the box
        for c, v in zip(model.sensitive_columns, values):
            q[:, c] = v
        z = integer_logits(model.net, q.astype(object))
        decided = [max(range(len(row)), key=lambda j, row=row: (row[j], -j)) == favourable for row in z]
        labels = tuple(f.labels[f.values.index(v)] for f, v in zip(model.sensitive, values))
        out.append(DistributionRates(labels, samples, int(sum(decided))))
    rates = [r.rate for r in out]
    di = min(rates) / max(rates) if max(rates) > 0 else None
    return out, di, max(rates) - min(rates)


@dataclass(frozen=True)
class Influence:
    """FVGM's fairness influence of one feature: Q(D) - Q(D with the feature uniform over its support),
    for Q each group's selection rate and for Q = SP (a positive SP influence: the feature widens the gap)."""

    column: int
    rate_change: tuple[float, ...]  # per group
    parity_change: float


def with_uniform(network: LearnedNetwork, column: int) -> LearnedNetwork:
    """The network with one feature's table replaced by the uniform distribution over its support, in every
    group (FVGM's D_{-S}; the other tables unchanged)."""
    tables = []
    for f in network.features:
        if f.column == column:
            k = len(f.probabilities[0])
            f = FeatureTable(f.column, f.edges, f.values, tuple((1.0 / k,) * k for _ in f.probabilities))
        tables.append(f)
    if all(f.column != column for f in network.features):
        raise ValueError(f"column {column} is not a feature of the network")
    return LearnedNetwork(network.groups, network.group_probabilities, tuple(tables))


def fairness_influence(model: FixedPointModel, network: LearnedNetwork, favourable: int, samples: int = 20_000,
                       seed: int = 0) -> list[Influence]:
    """The influence of every feature, each measured with the same random draws as the baseline (common
    random numbers), so the differences are not swamped by sampling noise."""
    base, _, base_sp = distribution_rates(model, network, favourable, samples, seed)
    out = []
    for f in network.features:
        rates, _, sp = distribution_rates(model, with_uniform(network, f.column), favourable, samples, seed)
        out.append(Influence(f.column, tuple(b.rate - r.rate for b, r in zip(base, rates)), base_sp - sp))
    return out
