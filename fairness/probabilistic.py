"""Group fairness over a distribution, exactly (FVGM's and Justicia's verification problem).

A classifier over discrete (here Boolean) features and a distribution over those features: a small
Bayesian network, each variable with parents and a table Pr[var = 1 | parents]. For every group (an
assignment of the sensitive variables) the probability of a positive prediction,

    PPV(group) = Pr[classifier(X) = 1 | sensitive = group],

by exact enumeration of the non-sensitive variables (variable elimination is not needed at these
sizes; enumeration is the reference), and by Monte-Carlo sampling for networks too large to enumerate.
From the PPVs: the most and least favoured groups, disparate impact min/max and statistical parity
max - min. For linear threshold classifiers over independent features FVGM's dynamic programme over
partial sums (`linear_positive_probability`) gives the same number in polynomial space.

Choice variables inside the network are enumerated, never fixed by the sign of their weight: a
variable with a positive weight can lower the positive rate through its children (FVGM's pitfall).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping, Sequence

Assignment = Mapping[str, int]


@dataclass(frozen=True)
class Variable:
    name: str
    parents: tuple[str, ...] = ()
    # Pr[name = 1 | parents], keyed by the parents' values in order (() for a root)
    table: Mapping[tuple[int, ...], float] = None  # type: ignore[assignment]

    def probability(self, value: int, assignment: Assignment) -> float:
        key = tuple(assignment[p] for p in self.parents)
        p1 = self.table[key]
        return p1 if value == 1 else 1.0 - p1


class BayesianNetwork:
    """Boolean variables in topological order (parents before children)."""

    def __init__(self, variables: Sequence[Variable]):
        seen: set[str] = set()
        for v in variables:
            if any(p not in seen for p in v.parents):
                raise ValueError(f"variable {v.name!r}: parents must come first")
            keys = set(itertools.product((0, 1), repeat=len(v.parents)))
            if v.table is None or set(v.table) != keys or any(not 0.0 <= q <= 1.0 for q in v.table.values()):
                raise ValueError(f"variable {v.name!r}: a probability in [0, 1] per assignment of its parents")
            seen.add(v.name)
        self.variables = tuple(variables)
        self.names = tuple(v.name for v in variables)

    @classmethod
    def independent(cls, probabilities: Mapping[str, float]) -> "BayesianNetwork":
        return cls([Variable(n, (), {(): p}) for n, p in probabilities.items()])

    def joint(self, assignment: Assignment) -> float:
        out = 1.0
        for v in self.variables:
            out *= v.probability(assignment[v.name], assignment)
        return out

    def sample(self, n: int, rng) -> list[dict[str, int]]:
        out = []
        for _ in range(n):
            a: dict[str, int] = {}
            for v in self.variables:
                a[v.name] = int(rng.random() < v.probability(1, a))
            out.append(a)
        return out


def positive_probability(network: BayesianNetwork, classifier: Callable[[Assignment], bool],
                         group: Assignment) -> float:
    """Pr[classifier = 1 | group] by exact enumeration over every other variable."""
    unknown = [n for n in network.names if n not in group]
    total = positive = 0.0
    for values in itertools.product((0, 1), repeat=len(unknown)):
        a = {**group, **dict(zip(unknown, values))}
        p = network.joint(a)
        total += p
        if classifier(a):
            positive += p
    if total == 0:
        raise ValueError(f"group {dict(group)} has probability 0")
    return positive / total


def sampled_positive_probability(network: BayesianNetwork, classifier: Callable[[Assignment], bool],
                                 group: Assignment, n: int, rng) -> float:
    """The same by rejection sampling (for networks too large to enumerate)."""
    hits = kept = 0
    for a in network.sample(n, rng):
        if all(a[k] == v for k, v in group.items()):
            kept += 1
            hits += bool(classifier(a))
    if kept == 0:
        raise ValueError(f"no sample fell in group {dict(group)}")
    return hits / kept


@dataclass(frozen=True)
class GroupPPV:
    group: tuple[tuple[str, int], ...]
    ppv: float


@dataclass(frozen=True)
class FairnessSummary:
    groups: tuple[GroupPPV, ...]
    most_favoured: GroupPPV
    least_favoured: GroupPPV
    disparate_impact: float  # min / max
    statistical_parity: float  # max - min


def group_fairness(network: BayesianNetwork, classifier: Callable[[Assignment], bool],
                   sensitive: Sequence[str]) -> FairnessSummary:
    """PPV of every compound group (every assignment of the sensitive variables), exactly."""
    groups = []
    for values in itertools.product((0, 1), repeat=len(sensitive)):
        group = dict(zip(sensitive, values))
        groups.append(GroupPPV(tuple(group.items()), positive_probability(network, classifier, group)))
    most = max(groups, key=lambda g: g.ppv)
    least = min(groups, key=lambda g: g.ppv)
    return FairnessSummary(tuple(groups), most, least, least.ppv / most.ppv if most.ppv else 1.0,
                           most.ppv - least.ppv)


def linear_positive_probability(weights: Sequence[int], threshold: int, probabilities: Sequence[float]) -> float:
    """Pr[sum_i w_i X_i >= threshold] for independent Boolean X_i (integer weights), by FVGM's dynamic
    programme over the partial sum, pruned when the rest can no longer change the outcome."""
    n = len(weights)
    rest_max = [sum(max(w, 0) for w in weights[i:]) for i in range(n + 1)]
    rest_min = [sum(min(w, 0) for w in weights[i:]) for i in range(n + 1)]

    @lru_cache(maxsize=None)
    def go(i: int, partial: int) -> float:
        if partial + rest_min[i] >= threshold:
            return 1.0  # decided whatever the rest
        if partial + rest_max[i] < threshold:
            return 0.0
        p = probabilities[i]
        return p * go(i + 1, partial + weights[i]) + (1 - p) * go(i + 1, partial)

    return go(0, 0)
