"""The bound radius of a tree ensemble: a sound certified l2 radius in polynomial time.

The claim is the network certificate's (docs/STATEMENT.md): for the query x* with decision y, every
point that differs from x* only in its free (non-sensitive) columns, by l2 distance < eps = E / 2^t in
the model's input units, lies inside the domain box, and has its sensitive columns set to any slice,
is decided y strictly. As for networks, a slice that does not decide y strictly at x* itself is a
flip: eps = 0 and the slice is named.

Per slice and per tree, each leaf is its path's turns: x[f] >= t (right) or x[f] < t (left). A
sensitive column must hold the slice's value on every turn, else the leaf is unreachable in that
slice. On a free column f, per direction, the deepest turn that way counts with the query's violation
of it: max(0, t - x*_f) for a right turn, max(0, x*_f - t) for a left one. d2, the sum of those
violations squared (integers at 2^(2s)), decides reachability at E:

    reachable  <=>  d2 * 2^(2t)  <  E^2 * 2^(2s)

Soundness: a point p that reaches the leaf takes every turn. A counted right turn with a positive
violation has x*_f < t <= p_f, and a counted left one has p_f < t < x*_f, so on each column at most
one direction counts and its violation is at most |p_f - x*_f|: d2 <= |p - x*|^2, and a point closer
than eps reaches only reachable leaves. This holds for any tree, and needs no comparison between two
turns' thresholds. In a trained tree each deeper turn the same way is the tighter one, so the counted
violations are the query's distance to the closure of the leaf's interval (the largest violation on the
column). A tree whose deeper turn is looser (a redundant split), or whose turns contradict each other,
gets a smaller or different d2 for that leaf; it stays below the distance of every point the leaf
holds, so the bound stays sound. The statement (`statement.trees.reach`) computes the same bits with
one feature comparison per pair of turns on a path.

Every point closer than eps reaches, in every tree, one of that tree's reachable leaves; so each
margin score_y - score_c is at least the base margin plus, per tree, the worst reachable leaf's
contribution (a tree adds to one score only: a tree of class y contributes its smallest reachable
value, a tree of class c minus its largest, other trees nothing; binary: the score, signed towards y).
eps is certified when every such bound is > 0 in every slice; E is the largest such value in
[0, cap] (bisection; the bound is monotone in E). cap is the network code's: floor(2^t x the free
box's diagonal). All arithmetic is exact integers. The bound is never above the true radius
(`fairness.trees.exact`), and equals it for one tree without unreachable leaves.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from fairness.certificate_data import DEFAULT_EPS_BITS
from fairness.errors import CertificationError
from fairness.radius import largest_passing

from .ensemble import Tree, TreeModel, Turn, strict_decision_of

CERTIFIED, FLIP = "certified", "flip"

# A leaf reduced to what the certificate needs: (squared distance at 2^(2s), value at 2^v).
LeafReach = tuple[int, int]


@dataclass(frozen=True)
class TreeCertificate:
    """eps = E / 2^t certified for `query` (status CERTIFIED), or a flip (E = 0, `flip_slice` the index of
    the first slice that does not decide y strictly, `tie` when it ties)."""

    query: tuple[int, ...]
    decision: int
    eps: int
    eps_bits: int
    status: str
    capped: bool = False
    flip_slice: int | None = None
    tie: bool = False

    @property
    def eps_value(self) -> Fraction:
        return Fraction(self.eps, 1 << self.eps_bits)


def within(v: int, lo: int | None, hi: int | None) -> bool:
    """lo <= v < hi (a missing bound: no limit): v takes every turn of a path on its column."""
    return (lo is None or v >= lo) and (hi is None or v < hi)


def leaf_box(model: TreeModel, box: dict[int, tuple[int | None, int | None]],
             slice_values: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The closure of a leaf's set inside the domain box with the sensitive columns at the slice, as
    (lower, upper) integer bounds per input; None when the set is empty."""
    lower, upper = list(model.box_lower), list(model.box_upper)
    fixed = dict(zip(model.sensitive_columns, slice_values))
    for f, (lo, hi) in box.items():
        if f in fixed:
            if not within(fixed[f], lo, hi):
                return None
            continue
        low = lower[f] if lo is None else max(lower[f], lo)
        if low > upper[f] or (hi is not None and low >= hi):  # lo <= x < hi inside [box lo, box hi]: empty
            return None
        lower[f] = low
        if hi is not None:
            upper[f] = min(upper[f], hi)
    for c, v in fixed.items():
        lower[c] = upper[c] = v
    return tuple(lower), tuple(upper)


def distance_sq(query: Sequence[int], lower: Sequence[int], upper: Sequence[int], free: Sequence[int]) -> int:
    """Squared l2 distance (at 2^(2s)) from the query to the box, over the free columns."""
    total = 0
    for c in free:
        q = query[c]
        gap = lower[c] - q if q < lower[c] else q - upper[c] if q > upper[c] else 0
        total += gap * gap
    return total


def path_distance(model: TreeModel, turns: Sequence[Turn], slice_values: Sequence[int],
                  query: Sequence[int]) -> int | None:
    """The squared distance (at 2^(2s)) from the query to a leaf's turns over the free columns, the
    sensitive columns at the slice; None when the slice's values do not take every turn. Per free column
    and direction, the deepest turn that way counts, with the query's violation of it (see the module
    docstring)."""
    fixed = dict(zip(model.sensitive_columns, slice_values))
    deepest: dict[tuple[int, bool], int] = {}
    for f, t, right in turns:
        if f in fixed:
            if (fixed[f] >= t) != right:
                return None
            continue
        deepest[f, right] = t  # a deeper turn the same way replaces the one above it
    d2 = 0
    for (f, right), t in deepest.items():
        gap = max(0, t - query[f]) if right else max(0, query[f] - t)
        d2 += gap * gap
    return d2


def reach_table(model: TreeModel, tree: Tree, query: Sequence[int], slice_values: Sequence[int]) -> list[LeafReach]:
    """Every leaf of the tree the slice's values take, as (squared distance, value), nearest first."""
    out = []
    for node, turns in tree.leaf_turns():
        d2 = path_distance(model, turns, slice_values, query)
        if d2 is not None:
            out.append((d2, tree.value[node]))
    return sorted(out)


def reachable(d2: int, eps: int, eps_bits: int, scale_bits: int) -> bool:
    """Some point at squared distance d2 (at 2^(2s)) is closer than E / 2^t."""
    return d2 << (2 * eps_bits) < (eps * eps) << (2 * scale_bits)


def margin_bounds(model: TreeModel, tables: Sequence[Sequence[LeafReach]], y: int, eps: int,
                  eps_bits: int) -> dict[int, int]:
    """Per class c != y, a lower bound on score_y - score_c over every point of the slice closer than eps
    (the tables of one slice, one per tree). eps must be > 0 (every tree then reaches the query's leaf)."""
    ens = model.ensemble
    n = ens.n_scores
    lowest = [0] * len(tables)
    highest = [0] * len(tables)
    for i, table in enumerate(tables):
        values = [v for d2, v in table if reachable(d2, eps, eps_bits, ens.scale_bits)]
        if not values:
            raise CertificationError("no reachable leaf: eps must be positive and the query inside the box")
        lowest[i], highest[i] = min(values), max(values)
    if n == 1:
        if y == 1:
            return {0: ens.base[0] + sum(lowest)}
        return {1: -(ens.base[0] + sum(highest))}
    out = {}
    for c in range(n):
        if c == y:
            continue
        bound = ens.base[y] - ens.base[c]
        bound += sum(lowest[i] for i in range(len(tables)) if i % n == y)
        bound -= sum(highest[i] for i in range(len(tables)) if i % n == c)
        out[c] = bound
    return out


def eps_cap(model: TreeModel, eps_bits: int) -> int:
    """floor(2^t x the real-unit diagonal of the free box), as for networks."""
    diag_sq = sum((model.box_upper[c] - model.box_lower[c]) ** 2 for c in model.free_columns)
    return math.isqrt((diag_sq << (2 * eps_bits)) >> (2 * model.scale_bits))


def flip_check(model: TreeModel, query: Sequence[int]) -> tuple[int, int | None, bool]:
    """(decision, index of the first slice not deciding it strictly or None, whether that slice ties)."""
    y = model.ensemble.decision(query)
    for index, s in enumerate(model.slices()):
        d = strict_decision_of(model.ensemble.scores(model.with_slice(query, s)))
        if d != y:
            return y, index, d is None
    return y, None, False


def certify_trees(model: TreeModel, query: Sequence[int], *, eps_bits: int = DEFAULT_EPS_BITS) -> TreeCertificate:
    """The bound-radius certificate of `query` (integers at the model's scale)."""
    if not isinstance(eps_bits, int) or eps_bits < 0:
        raise CertificationError("eps_bits must be a non-negative integer")
    q = model.check_query(query)
    y, flip, tie = flip_check(model, q)
    if flip is not None:
        return TreeCertificate(q, y, 0, eps_bits, FLIP, flip_slice=flip, tie=tie)
    slices = [[reach_table(model, t, q, s) for t in model.ensemble.trees] for s in model.slices()]

    def passes(e: int) -> bool:
        return e == 0 or all(m > 0 for tables in slices for m in margin_bounds(model, tables, y, e, eps_bits).values())

    cap = eps_cap(model, eps_bits)
    e = largest_passing(passes, 0, cap)
    return TreeCertificate(q, y, e, eps_bits, CERTIFIED, capped=e == cap)


def certifies(model: TreeModel, query: Sequence[int], eps: int, eps_bits: int) -> bool:
    """Whether the bound proves eps = E / 2^t for the query without a flip (E = 0 always, unless a slice flips)."""
    q = model.check_query(query)
    y, flip, _ = flip_check(model, q)
    if flip is not None:
        return False
    if eps == 0:
        return True
    return all(m > 0 for s in model.slices()
               for m in margin_bounds(model, [reach_table(model, t, q, s) for t in model.ensemble.trees],
                                      y, eps, eps_bits).values())


