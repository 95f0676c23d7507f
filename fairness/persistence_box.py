"""The persistence question: which flips of the query's sensitive values are asked, over which box, and
what the answer's bounds on g say (`fairness.persistence` states the lens and bounds g).

A `Flip` changes one sensitive attribute of the query to another value of its domain; the `Box` moves the
numeric columns within delta of the query (rounded up to the input scale), every other column fixed;
`Bounds` on min and max g give the status: favoured, disfavoured or inconclusive.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from .fixed_point import FixedPointModel, join_points

FAVOURED, DISFAVOURED, INCONCLUSIVE = "favoured", "disfavoured", "inconclusive"


class PersistenceError(ValueError):
    """A persistence question that cannot be asked of this model or query."""


@dataclass(frozen=True)
class Flip:
    """A single-attribute intervention: sensitive attribute `attribute` from slice `source` to `target`."""

    attribute: int
    source: int  # slice indices (the model's slice order)
    target: int


@dataclass(frozen=True)
class Box:
    """The shared perturbation box, in integers at the input scale 2^s (full input vectors)."""

    lower: tuple[int, ...]
    upper: tuple[int, ...]
    delta: int  # at 2^s, rounded up


@dataclass(frozen=True)
class Bounds:
    lower: Fraction  # <= min_B g
    upper: Fraction  # >= max_B g
    method: str

    @property
    def status(self) -> str:
        if self.lower > 0:
            return FAVOURED
        if self.upper < 0:
            return DISFAVOURED
        return INCONCLUSIVE


@dataclass(frozen=True)
class PersistenceResult:
    flip: Flip
    box: Box
    bounds: Bounds
    attained: tuple[Fraction, Fraction] | None = None  # exact g at the MILP's minimiser and maximiser


def single_attribute_flips(model: FixedPointModel, query: Sequence[int]) -> list[Flip]:
    """Every change of one sensitive attribute of the query to another value of its domain (all of the
    attribute's columns at once: a one-hot attribute moves from one point to another)."""
    slices = model.slices()
    own = model.slice_points(model.query_slice(query))
    source = slices.index(join_points(own))
    flips = []
    for a, f in enumerate(model.sensitive):
        for p in f.points:
            if p != own[a]:
                flips.append(Flip(a, source, slices.index(_changed(own, a, p))))
    return flips


def _changed(own: Sequence[tuple[int, ...]], attribute: int, point: tuple[int, ...]) -> tuple[int, ...]:
    """The slice of the query's own points with one attribute's point replaced."""
    return join_points((*own[:attribute], point, *own[attribute + 1:]))


def perturbation_box(model: FixedPointModel, query: Sequence[int], numeric_columns: Sequence[int],
                     delta: float | Fraction) -> Box:
    """Numeric columns within delta (rounded up to 2^-s) of the query inside the domain box; every other
    column (categorical, sensitive) fixed at the query's value."""
    if not delta >= 0 or not math.isfinite(float(delta)):
        raise PersistenceError(f"delta must be a non-negative number, not {delta}")
    scaled = Fraction(delta) * (1 << model.scale_bits)
    d = -((-scaled.numerator) // scaled.denominator)  # ceil
    numeric = set(numeric_columns)
    if numeric & set(model.sensitive_columns):
        raise PersistenceError("a sensitive column cannot be perturbed")
    lo, hi = [], []
    for j, (v, blo, bhi) in enumerate(zip(query, model.box_lower, model.box_upper)):
        if j in numeric:
            lo.append(max(blo, v - d))
            hi.append(min(bhi, v + d))
        else:
            lo.append(v)
            hi.append(v)
    return Box(tuple(lo), tuple(hi), d)



def box_samples(box: Box, scale_bits: int, n: int, rng) -> list[list[Fraction]]:
    """The box's corners (up to 2^10) and n uniform points, exact rationals: the dense-sampling reference."""
    one = 1 << scale_bits
    free = [j for j in range(len(box.lower)) if box.lower[j] != box.upper[j]]
    base = [Fraction(v, one) for v in box.lower]
    points = []
    for corner in itertools.islice(itertools.product((0, 1), repeat=len(free)), 1024):
        x = list(base)
        for bit, j in zip(corner, free):
            x[j] = Fraction(box.upper[j] if bit else box.lower[j], one)
        points.append(x)
    for _ in range(n):
        x = list(base)
        for j in free:
            x[j] = Fraction(rng.randint(box.lower[j], box.upper[j]), one)
        points.append(x)
    return points
