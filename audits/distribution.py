"""Group fairness over a learned distribution (FVGM's setting) rather than over the rows at hand.

The distribution is a Bayesian network over the compound sensitive group and every other feature,
discretised (numeric features in quantile bins, drawn uniformly inside the drawn bin; categorical ones
among the values the data shows), with the group as a root: sensitive attributes have no parents, as
in FVGM. Two structures:

- `learn_network`: the star, every feature with the group as its only parent (Laplace-smoothed
  frequencies within the group), FVGM's structure when nothing else is known of the dependencies;
- `learn_structured_network`: the structure learned from the data by hill climbing on the BIC score
  (pgmpy's `HillClimbSearch`, at most `max_indegree` parents each, no edge into the group), with
  Laplace-smoothed tables given each node's parents, so dependencies between features are kept.

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

from fairness.fixed_point import FixedPointModel, integer_logits
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
            x[:, f.column] = _values(f, rng.choice(len(p), size=n, p=p), rng)
        return x

    def with_uniform(self, column: int) -> "LearnedNetwork":
        """The network with one feature's table replaced by the uniform distribution over its support, in every
        group (FVGM's D_{-S}; the other tables unchanged)."""
        tables = []
        for f in self.features:
            if f.column == column:
                k = len(f.probabilities[0])
                f = FeatureTable(f.column, f.edges, f.values, tuple((1.0 / k,) * k for _ in f.probabilities))
            tables.append(f)
        if all(f.column != column for f in self.features):
            raise ValueError(f"column {column} is not a feature of the network")
        return LearnedNetwork(self.groups, self.group_probabilities, tuple(tables))


def _values(f: "FeatureTable | Discretisation", states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Feature values of drawn states: the category, or a uniform point of the bin."""
    if f.edges is None:
        return np.array(f.values)[states]
    lo, hi = np.array(f.edges[:-1])[states], np.array(f.edges[1:])[states]
    return lo + (hi - lo) * rng.random(len(states))


@dataclass(frozen=True)
class Discretisation:
    column: int
    edges: tuple[float, ...] | None  # numeric: bin edges; None: categorical
    values: tuple[float, ...]  # categorical: the values

    @property
    def states(self) -> int:
        return len(self.values) if self.edges is None else len(self.edges) - 1


def _discretise(X: np.ndarray, j: int, categorical: bool, bins: int) -> tuple[Discretisation, np.ndarray]:
    """(how column j is discretised, each row's state)."""
    column = X[:, j]
    if categorical:
        values = tuple(sorted(set(column.tolist())))
        return Discretisation(j, None, values), np.searchsorted(values, column)
    edges = tuple(np.unique(np.quantile(column, np.linspace(0, 1, bins + 1))).tolist())
    if len(edges) == 1:
        edges = (edges[0], edges[0])
    return Discretisation(j, edges, ()), np.clip(np.searchsorted(edges, column, side="right") - 1, 0, len(edges) - 2)


def _groups_of(model: FixedPointModel, X: np.ndarray) -> np.ndarray:
    """Each row's slice index (-1: sensitive values outside the model's domain)."""
    one = 1 << model.scale_bits
    slices = model.slices()
    codes = np.rint(X[:, list(model.sensitive_columns)] * one).astype(np.int64)
    return np.array([slices.index(tuple(int(v) for v in row)) if tuple(int(v) for v in row) in slices else -1
                     for row in codes])


def learn_network(model: FixedPointModel, X: np.ndarray, categorical: Sequence[int], bins: int = 4,
                  smoothing: float = 1.0) -> LearnedNetwork:
    """The network of the module docstring from rows X (standardised floats, model column order)."""
    if bins < 1 or smoothing < 0:
        raise ValueError("need at least one bin and non-negative smoothing")
    X = np.asarray(X, dtype=float)
    slices = model.slices()
    sens = model.sensitive_columns
    group_of = _groups_of(model, X)
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
        d, index = _discretise(X, j, j in set(categorical), bins)
        per_group = []
        for g in range(len(slices)):
            c = np.bincount(index[group_of == g], minlength=d.states).astype(float) + smoothing
            per_group.append(tuple((c / c.sum()).tolist()))
        tables.append(FeatureTable(j, d.edges, d.values, tuple(per_group)))
    return LearnedNetwork(tuple(slices), group_p, tuple(tables))


GROUP = "group"


@dataclass(frozen=True)
class StructuredNetwork:
    """A Bayesian network over the group (a root) and the discretised features, any structure: node
    j's parents (columns, or GROUP) and its table Pr[state | parents' states], Laplace-smoothed."""

    groups: tuple[tuple[int, ...], ...]
    group_probabilities: tuple[float, ...]
    features: tuple[Discretisation, ...]
    parents: dict  # column -> tuple of parent names (GROUP or columns)
    tables: dict  # column -> {parents' states: probabilities}; unseen parent states: uniform
    order: tuple[int, ...]  # the feature columns, parents first

    def edges(self) -> list[tuple[str | int, int]]:
        return [(p, j) for j in self.order for p in self.parents[j]]

    def _distribution(self, column: int, key: tuple[int, ...]) -> np.ndarray:
        table = self.tables[column]
        k = next(f.states for f in self.features if f.column == column)
        return np.asarray(table.get(key, (1.0 / k,) * k))

    def sample(self, group: int, n: int, rng: np.random.Generator, n_inputs: int) -> np.ndarray:
        """n rows (standardised floats) given the group: ancestral sampling in topological order."""
        states: dict = {GROUP: np.full(n, group)}
        by_column = {f.column: f for f in self.features}
        x = np.zeros((n, n_inputs))
        for j in self.order:
            parents = self.parents[j]
            keys = np.stack([states[p] for p in parents], axis=1) if parents else np.zeros((n, 0), dtype=np.int64)
            drawn = np.empty(n, dtype=np.int64)
            unique, inverse = np.unique(keys, axis=0, return_inverse=True)
            for u, key in enumerate(unique):
                rows = np.flatnonzero(inverse.reshape(-1) == u)
                p = self._distribution(j, tuple(int(v) for v in key))
                drawn[rows] = rng.choice(len(p), size=len(rows), p=p)
            states[j] = drawn
            x[:, j] = _values(by_column[j], drawn, rng)
        return x

    def with_uniform(self, column: int) -> "StructuredNetwork":
        """FVGM's D_{-S} in a structured network: the feature made uniform over its support and cut from its
        parents; its children keep their tables (they now see a uniform parent)."""
        if column not in self.parents:
            raise ValueError(f"column {column} is not a feature of the network")
        k = next(f.states for f in self.features if f.column == column)
        return StructuredNetwork(self.groups, self.group_probabilities, self.features,
                                 {**self.parents, column: ()}, {**self.tables, column: {(): (1.0 / k,) * k}},
                                 self.order)


def learn_structured_network(model: FixedPointModel, X: np.ndarray, categorical: Sequence[int], bins: int = 4,
                             smoothing: float = 1.0, max_indegree: int = 2) -> StructuredNetwork:
    """The network of the module docstring, its structure learned by pgmpy's hill climbing on BIC."""
    import logging
    import warnings

    if bins < 1 or smoothing < 0 or max_indegree < 1:
        raise ValueError("need at least one bin, non-negative smoothing and at least one parent allowed")
    X = np.asarray(X, dtype=float)
    slices = model.slices()
    group_of = _groups_of(model, X)
    keep = group_of >= 0
    X, group_of = X[keep], group_of[keep]
    if not len(X):
        raise ValueError("no row has sensitive values of the model's domain")
    free = [j for j in range(X.shape[1]) if j not in set(model.sensitive_columns)]
    features, states = [], {GROUP: group_of}
    for j in free:
        d, index = _discretise(X, j, j in set(categorical), bins)
        features.append(d)
        states[j] = index
    n_states = {GROUP: len(slices), **{f.column: f.states for f in features}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.getLogger("pgmpy").setLevel(logging.ERROR)
        try:
            import pandas as pd
            from pgmpy.causal_discovery import ExpertKnowledge
            from pgmpy.estimators import HillClimbSearch
        except ImportError:
            raise ValueError("structure learning needs pgmpy (pip install 'fairproof[audit]'); the star "
                             "structure does not") from None
        frame = pd.DataFrame({str(k): v for k, v in states.items()}).astype("category")  # discrete for pgmpy
        dag = HillClimbSearch(frame).estimate(
            scoring_method="bic-d", max_indegree=max_indegree, show_progress=False,
            expert_knowledge=ExpertKnowledge(forbidden_edges=[(str(j), GROUP) for j in free]))
    name = {str(j): j for j in free} | {GROUP: GROUP}
    parents = {j: tuple(sorted((name[p] for p, c in dag.edges() if name[c] == j), key=str)) for j in free}
    if any(name[c] == GROUP for _, c in dag.edges()):
        raise ValueError("structure learning gave the group a parent")  # the search forbids it; never trusted
    order: list[int] = []
    placed = {GROUP}
    while len(order) < len(free):
        ready = [j for j in free if j not in placed and all(p in placed for p in parents[j])]
        if not ready:
            raise ValueError("the learned structure has a cycle")
        order += ready
        placed |= set(ready)
    tables = {}
    for j in free:
        k = n_states[j]
        keys = np.stack([states[p] for p in parents[j]], axis=1) if parents[j] else np.zeros((len(X), 0), dtype=np.int64)
        table = {}
        for key in {tuple(int(v) for v in row) for row in keys}:
            mask = np.all(keys == np.array(key, dtype=np.int64), axis=1) if key else np.ones(len(X), dtype=bool)
            c = np.bincount(states[j][mask], minlength=k).astype(float) + smoothing
            table[key] = tuple((c / c.sum()).tolist())
        tables[j] = table
    counts = np.bincount(group_of, minlength=len(slices)).astype(float) + smoothing
    return StructuredNetwork(tuple(slices), tuple(counts / counts.sum()), tuple(features), parents, tables,
                             tuple(order))


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
        labels = model.slice_labels(values)
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


def with_uniform(network: "LearnedNetwork | StructuredNetwork", column: int):
    """The network with one feature made uniform over its support (FVGM's D_{-S}): see each network's own."""
    return network.with_uniform(column)


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
