"""The counterfactual spread over a data set: how many outcomes the sensitive combinations split into.

For every individual, `fairness.spread` on the committed model; over the set,
the distribution of k (distinct margin buckets), of the distinct decisions,
and the individuals with the largest k (ties broken by the largest margin
gap). Plaintext, for the bank or an auditor with the model.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

from fairness.fixed_point import FixedPointModel
from fairness.spread import Spread, SpreadLens, spread


@dataclass(frozen=True)
class SpreadRow:
    index: int
    spread: Spread


@dataclass
class SpreadAudit:
    n_slices: int
    rows: list[SpreadRow] = field(default_factory=list)

    @property
    def k_distribution(self) -> dict[int, int]:
        counts = Counter(r.spread.distinct_buckets for r in self.rows)
        return {k: counts.get(k, 0) for k in range(1, self.n_slices + 1)}

    @property
    def decision_distribution(self) -> dict[int, int]:
        counts = Counter(r.spread.distinct_decisions for r in self.rows)
        return {k: counts.get(k, 0) for k in range(1, self.n_slices + 1)}

    @property
    def flipped(self) -> int:
        """Individuals whose decision depends on the sensitive combination alone."""
        return sum(1 for r in self.rows if r.spread.distinct_decisions > 1)

    def largest(self, n: int) -> list[SpreadRow]:
        return sorted(self.rows, key=lambda r: (-r.spread.distinct_buckets, -r.spread.largest_margin_gap,
                                                r.index))[:n]

    def mean_gap(self) -> Fraction:
        return sum((r.spread.largest_margin_gap for r in self.rows), Fraction(0)) / max(len(self.rows), 1)


def audit_spread(model: FixedPointModel, queries: Sequence[Sequence[int]], lens: SpreadLens,
                 progress: Callable[[int, int], None] | None = None) -> SpreadAudit:
    out = SpreadAudit(n_slices=len(model.slices()))
    for i, q in enumerate(queries):
        out.rows.append(SpreadRow(i, spread(model, q, lens)))
        if progress is not None:
            progress(i + 1, len(queries))
    return out
