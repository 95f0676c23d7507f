"""Group fairness of the committed model over a data set (FVGM's and Justicia's metrics, empirical).

Every row is quantised as a customer's query is (rows outside the domain box are counted apart, as
no certificate is issued for them) and decided by the exact integer model. A group is a compound
sensitive group: one combination of every sensitive attribute's values. Per group: its size, the
share decided favourably (selection rate), among rows whose label is the favourable class the share
decided favourably (true positive rate, TPR), and among the other rows the share decided favourably
(false positive rate, FPR), each with a Wilson 95% interval. Across groups, each metric under the
name its paper gives it:

    disparate impact               DI = min selection rate / max selection rate      (1 is parity)
    statistical parity difference  SP = max selection rate - min selection rate      (0 is parity)
    equal opportunity difference      = max TPR - min TPR (groups with a positive)   (0 is parity)
                                        (Hardt, Price and Srebro's equal opportunity: the TPR gap alone)
    equalized odds                 EO = max(TPR gap, FPR gap)                         (0 is parity)
                                        (FVGM's and Justicia's EO: max over y of the gap of
                                        Pr[decided favourably | group, Y = y]; the FPR gap over the
                                        groups with a negative)

with percentile bootstrap intervals (resampling rows, fixed seed), and the most and least favoured
groups (highest and lowest selection rate). Groups with no row are listed with n = 0 and left out
of every gap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fairness.errors import DataError
from fairness.fixed_point import FixedPointModel, integer_logits, quantise_query

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
    false_positives: int = 0  # rows labelled otherwise, decided favourably

    @property
    def negatives(self) -> int:
        """Rows whose label is not the favourable class."""
        return self.n - self.positives

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

    @property
    def false_positive_rate(self) -> float | None:
        return self.false_positives / self.negatives if self.negatives else None

    @property
    def false_positive_interval(self) -> tuple[float, float]:
        return wilson(self.false_positives, self.negatives)


@dataclass(frozen=True)
class GroupReport:
    favourable_class: int
    rows: int
    outside_box: int
    groups: tuple[GroupRates, ...]
    disparate_impact: float | None
    statistical_parity: float | None
    equal_opportunity: float | None  # the TPR gap (equal opportunity difference)
    intervals: dict  # metric -> (low, high), bootstrap percentiles
    most_favoured: tuple[str, ...] | None
    least_favoured: tuple[str, ...] | None
    false_positive_gap: float | None = None  # max FPR - min FPR
    equalized_odds: float | None = None  # max(TPR gap, FPR gap): FVGM's and Justicia's EO


METRICS = ("disparate_impact", "statistical_parity", "equal_opportunity", "false_positive_gap", "equalized_odds")


def _gap(values: list[float]) -> float | None:
    return max(values) - min(values) if len(values) >= 2 else None


def equalized_odds(tpr_gap: float | None, fpr_gap: float | None) -> float | None:
    """FVGM's EO: the larger of the TPR and FPR gaps (whichever is defined)."""
    gaps = [g for g in (tpr_gap, fpr_gap) if g is not None]
    return max(gaps) if gaps else None


def _metrics(group_of: np.ndarray, decided: np.ndarray, positive: np.ndarray, n_groups: int):
    """(DI, SP, TPR gap, FPR gap, equalized odds) over the groups, in `METRICS` order."""
    rates, tprs, fprs = [], [], []
    for g in range(n_groups):
        rows = group_of == g
        if rows.any():
            rates.append(float(decided[rows].mean()))
        pos, neg = rows & positive, rows & ~positive
        if pos.any():
            tprs.append(float(decided[pos].mean()))
        if neg.any():
            fprs.append(float(decided[neg].mean()))
    di = (min(rates) / max(rates) if max(rates) > 0 else None) if len(rates) >= 2 else None
    tpr_gap, fpr_gap = _gap(tprs), _gap(fprs)
    return di, _gap(rates), tpr_gap, fpr_gap, equalized_odds(tpr_gap, fpr_gap)


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
    group_of = np.array([slices.index(model.query_slice(q)) for q in queries], dtype=int)
    groups = []
    for g, values in enumerate(slices):
        rows = group_of == g
        labels = model.slice_labels(values)
        groups.append(GroupRates(values, labels, int(rows.sum()), int(decided[rows].sum()),
                                 int(positive[rows].sum()), int((decided & positive & rows).sum()),
                                 int((decided & ~positive & rows).sum())))
    di, sp, eo, fpr_gap, eodds = _metrics(group_of, decided, positive, len(slices))
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {name: [] for name in METRICS}
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
    return GroupReport(favourable, len(X), len(X) - len(kept), tuple(groups), di, sp, eo, intervals, most, least,
                       fpr_gap, eodds)
