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

With `exact`, every pair is also solved by the two-copy MILP (`fairness.persistence.exact_extremes`,
to a relative gap of 1e-9): favoured when the solver's bound on min g is > 0, disfavoured when its
bound on max g is < 0, neither when both solves are optimal otherwise (min g <= 0 <= max g, to the
solver's tolerance) or the points it found show g <= 0 and g >= 0 (exact values), and unresolved
when a solve stopped short (time limit) without deciding; so the LP's inconclusive
pairs are split into the persistent ones the relaxation missed and the truly mixed ones. The
largest gap of a MILP that stopped short is kept beside the counts: nothing is called exact unless
the solver closed its gap.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

from fairness.fixed_point import FixedPointModel
from fairness.persistence_box import DISFAVOURED, FAVOURED, PersistenceError, perturbation_box, single_attribute_flips
from fairness.persistence_lp import Extreme, exact_extremes, lp_bounds

OBSERVED, FLIPPED = "observed", "flipped"
NEITHER, UNRESOLVED = "neither", "unresolved"


@dataclass(frozen=True)
class ExactCounts:
    """The MILP's verdicts on a group's pairs (`exact_status`), and how far the solves that stopped short
    were from optimal."""

    favoured: int = 0
    disfavoured: int = 0
    neither: int = 0
    unresolved: int = 0
    stopped_short: int = 0  # pairs whose MILP (min or max) did not close its gap, or found no point in time
    largest_gap: float = 0.0  # logits, over those with a point and a bound


def exact_status(low: Extreme, high: Extreme) -> str:
    """The pair's status from the MILP's min and max of g (see the module docstring)."""
    if low.bound is not None and low.bound > 0:
        return FAVOURED
    if high.bound is not None and high.bound < 0:
        return DISFAVOURED
    if (low.optimal and high.optimal) or low.attained <= 0 <= high.attained:
        return NEITHER
    return UNRESOLVED


@dataclass(frozen=True)
class GroupScore:
    attribute: str
    group: str
    setting: str
    delta: Fraction
    pairs: int
    favoured: int
    disfavoured: int
    exact: ExactCounts | None = None  # with `exact`: the MILP's verdicts

    @property
    def inconclusive(self) -> int:
        return self.pairs - self.favoured - self.disfavoured

    def share(self, count: int) -> float:
        return count / self.pairs if self.pairs else 0.0


def audit_persistence(model: FixedPointModel, queries: Sequence[Sequence[int]], favourable_class: int,
                      numeric_columns: Sequence[int], deltas: Sequence[Fraction],
                      progress: Callable[[int, int], None] | None = None, *, exact: bool = False,
                      time_limit: float = 60.0) -> list[GroupScore]:
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])  # pairs, favoured, disfavoured
    exact_counts: dict[tuple, ExactCounts] = defaultdict(ExactCounts)
    slices = model.slices()
    for i, query in enumerate(queries):
        for delta in deltas:
            box = perturbation_box(model, query, numeric_columns, delta)
            for flip in single_attribute_flips(model, query):
                feature = model.sensitive[flip.attribute]
                own = model.slice_labels(slices[flip.source])[flip.attribute]
                other = model.slice_labels(slices[flip.target])[flip.attribute]
                status = lp_bounds(model, favourable_class, flip, box).status
                extremes = _extremes(model, favourable_class, flip, box, time_limit) if exact else None
                for setting, group, favoured in ((OBSERVED, own, FAVOURED), (FLIPPED, other, DISFAVOURED)):
                    key = (feature.name, group, setting, delta)
                    c = counts[key]
                    c[0] += 1
                    if status == favoured:
                        c[1] += 1
                    elif status in (FAVOURED, DISFAVOURED):
                        c[2] += 1
                    if exact:
                        exact_counts[key] = _count_exact(exact_counts[key], extremes, favoured)
        if progress is not None:
            progress(i + 1, len(queries))
    out = []
    for key in sorted(counts, key=_order):
        pairs, certified_favoured, certified_disfavoured = counts[key]
        out.append(GroupScore(*key, pairs, certified_favoured, certified_disfavoured,
                              exact_counts.get(key) if exact else None))
    return out


def _extremes(model: FixedPointModel, favourable_class: int, flip, box, time_limit: float):
    """(min, max) by the MILP, or None when the solver found no point within the time limit."""
    try:
        return exact_extremes(model, favourable_class, flip, box, time_limit)
    except PersistenceError:
        return None


def _count_exact(c: ExactCounts, extremes: tuple[Extreme, Extreme] | None, favoured: str) -> ExactCounts:
    """`c` with one more pair, seen from the side for which `favoured` is the favoured status."""
    if extremes is None:
        return ExactCounts(c.favoured, c.disfavoured, c.neither, c.unresolved + 1, c.stopped_short + 1,
                           c.largest_gap)
    low, high = extremes
    status = exact_status(low, high)
    if status in (FAVOURED, DISFAVOURED):
        status = FAVOURED if status == favoured else DISFAVOURED
    short = [e.gap or 0.0 for e in (low, high) if not e.optimal]
    return ExactCounts(c.favoured + (status == FAVOURED), c.disfavoured + (status == DISFAVOURED),
                       c.neither + (status == NEITHER), c.unresolved + (status == UNRESOLVED),
                       c.stopped_short + bool(short), max([c.largest_gap, *short]))


def _order(key: tuple) -> tuple:
    attribute, group, setting, delta = key
    return attribute, setting != OBSERVED, group, delta
