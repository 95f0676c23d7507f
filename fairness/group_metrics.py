"""Group fairness of the committed model over a data set (FVGM's and Justicia's metrics, empirical).

Every row is quantised as a customer's query is (rows outside the domain box are counted apart, as
no certificate is issued for them) and decided by the exact integer model. A group is a compound
sensitive group: one combination of every sensitive attribute's values. Per group: its size, the
share decided favourably (selection rate) and, among rows whose label is the favourable class, the
share decided favourably (true positive rate), each with a Wilson 95% interval. Across groups:

    disparate impact   DI = min selection rate / max selection rate     (1 is parity)
    statistical parity SP = max selection rate - min selection rate     (0 is parity)
    equal opportunity  EO = max TPR - min TPR (groups with a positive)  (0 is parity)

with percentile bootstrap intervals (resampling rows, fixed seed), and the most and least favoured
groups (highest and lowest selection rate). Groups with no row are listed with n = 0 and left out
of DI, SP and EO.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import DataError
from .fixed_point import FixedPointModel, integer_logits, quantise_query

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (0, 1 for n = 0)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class GroupRates:
    values: tuple[int, ...]  # the group's sensitive values (the model's slice)
    labels: tuple[str, ...]
    n: int
    selected: int
    positives: int
    true_positives: int

    @property
    def selection_rate(self) -> float | None:
        return self.selected / self.n if self.n else None

    @property
    def true_positive_rate(self) -> float | None:
        return self.true_positives / self.positives if self.positives else None

    @property
    def selection_interval(self) -> tuple[float, float]:
        return wilson(self.selected, self.n)

    @property
    def true_positive_interval(self) -> tuple[float, float]:
        return wilson(self.true_positives, self.positives)


@dataclass(frozen=True)
class GroupReport:
    favourable_class: int
    rows: int
    outside_box: int
    groups: tuple[GroupRates, ...]
    disparate_impact: float | None
    statistical_parity: float | None
    equal_opportunity: float | None
    intervals: dict  # metric -> (low, high), bootstrap percentiles
    most_favoured: tuple[str, ...] | None
    least_favoured: tuple[str, ...] | None


def _metrics(group_of: np.ndarray, decided: np.ndarray, positive: np.ndarray, n_groups: int):
    rates, tprs = [], []
    for g in range(n_groups):
        rows = group_of == g
        n = int(rows.sum())
        if n:
            rates.append(float(decided[rows].mean()))
        pos = rows & positive
        if pos.any():
            tprs.append(float(decided[pos].mean()))
    di = (min(rates) / max(rates) if max(rates) > 0 else None) if len(rates) >= 2 else None
    sp = max(rates) - min(rates) if len(rates) >= 2 else None
    eo = max(tprs) - min(tprs) if len(tprs) >= 2 else None
    return di, sp, eo


def decisions(model: FixedPointModel, X: np.ndarray) -> tuple[list[tuple[int, ...]], list[int]]:
    """(queries of the rows inside the domain box, their row indices), quantised as customers' queries."""
    queries, kept = [], []
    for i, row in enumerate(X):
        try:
            queries.append(quantise_query(model, [float(v) for v in row]))
        except DataError:  # outside the domain box: no certificate is issued for it either
            continue
        kept.append(i)
    return queries, kept


def group_report(model: FixedPointModel, X: np.ndarray, y: Sequence[int], favourable: int,
                 bootstrap: int = 1000, seed: int = 0) -> GroupReport:
    if not 0 <= favourable < model.net.n_classes:
        raise ValueError(f"favourable class {favourable} is not a class of this model")
    queries, kept = decisions(model, np.asarray(X))
    slices = model.slices()
    y = np.asarray(y)[kept]
    if queries:
        logits = integer_logits(model.net, np.array(queries, dtype=object))
        top = np.array([max(range(len(z)), key=lambda j, z=z: (z[j], -j)) for z in logits])
    else:
        top = np.zeros(0, dtype=int)
    decided = top == favourable
    positive = y == favourable
    group_of = np.array([slices.index(tuple(q[c] for c in model.sensitive_columns)) for q in queries], dtype=int)
    groups = []
    for g, values in enumerate(slices):
        rows = group_of == g
        labels = tuple(f.labels[f.values.index(v)] for f, v in zip(model.sensitive, values))
        groups.append(GroupRates(values, labels, int(rows.sum()), int(decided[rows].sum()),
                                 int(positive[rows].sum()), int((decided & positive & rows).sum())))
    di, sp, eo = _metrics(group_of, decided, positive, len(slices))
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {"disparate_impact": [], "statistical_parity": [], "equal_opportunity": []}
    for _ in range(bootstrap if len(queries) else 0):
        pick = rng.integers(0, len(queries), len(queries))
        for name, value in zip(samples, _metrics(group_of[pick], decided[pick], positive[pick], len(slices))):
            if value is not None:
                samples[name].append(value)
    intervals = {name: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5)))
                 for name, v in samples.items() if v}
    present = [g for g in groups if g.n]
    most = max(present, key=lambda g: g.selection_rate).labels if present else None
    least = min(present, key=lambda g: g.selection_rate).labels if present else None
    return GroupReport(favourable, len(X), len(X) - len(kept), tuple(groups), di, sp, eo, intervals, most, least)
