"""PBA's group scores: per sensitive group, the share of inputs certified persistently favoured or
disfavoured, observed and flipped, inconclusive counted separately.

Every input and every single-attribute flip s -> s' of it gives one LP bound
pair (`fairness.persistence.lp_bounds`) per delta. Observed setting: the input
as it is, counted in its own group (the flipped attribute's value in s):
favoured if min g > 0, disfavoured if max g < 0. Flipped setting: the same
pair seen from s' (g for s' -> s is -g), counted in the group of s'. The
denominator is every (input, flip) pair of the group; PBA's paper leaves it
open whether inputs whose decision differs from the label are counted (here
they are), and its confidence is in the true class, where this module uses
the favourable class.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

from .fixed_point import FixedPointModel
from .persistence import DISFAVOURED, FAVOURED, lp_bounds, perturbation_box, single_attribute_flips

OBSERVED, FLIPPED = "observed", "flipped"


@dataclass(frozen=True)
class GroupScore:
    attribute: str
    group: str
    setting: str
    delta: Fraction
    pairs: int
    favoured: int
    disfavoured: int

    @property
    def inconclusive(self) -> int:
        return self.pairs - self.favoured - self.disfavoured

    def share(self, count: int) -> float:
        return count / self.pairs if self.pairs else 0.0


def audit_persistence(model: FixedPointModel, queries: Sequence[Sequence[int]], favourable_class: int,
                      numeric_columns: Sequence[int], deltas: Sequence[Fraction],
                      progress: Callable[[int, int], None] | None = None) -> list[GroupScore]:
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])  # pairs, favoured, disfavoured
    slices = model.slices()
    for i, query in enumerate(queries):
        for delta in deltas:
            box = perturbation_box(model, query, numeric_columns, delta)
            for flip in single_attribute_flips(model, query):
                feature = model.sensitive[flip.attribute]
                own = feature.labels[feature.values.index(slices[flip.source][flip.attribute])]
                other = feature.labels[feature.values.index(slices[flip.target][flip.attribute])]
                status = lp_bounds(model, favourable_class, flip, box).status
                for setting, group, favoured in ((OBSERVED, own, FAVOURED), (FLIPPED, other, DISFAVOURED)):
                    c = counts[(feature.name, group, setting, delta)]
                    c[0] += 1
                    if status == favoured:
                        c[1] += 1
                    elif status in (FAVOURED, DISFAVOURED):
                        c[2] += 1
        if progress is not None:
            progress(i + 1, len(queries))
    return [GroupScore(a, g, s, d, *counts[(a, g, s, d)]) for (a, g, s, d) in sorted(counts, key=_order)]


def _order(key: tuple) -> tuple:
    attribute, group, setting, delta = key
    return attribute, setting != OBSERVED, group, delta
