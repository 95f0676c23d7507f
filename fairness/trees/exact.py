"""The exact radius of a small tree ensemble, by enumerating consistent leaf combinations.

A point reaches exactly one leaf per tree, so the inputs split into the boxes of consistent leaf
combinations (one leaf per tree, their path boxes intersecting inside the domain box with the sensitive
columns at the slice); the decision is constant on each. The true radius rho is the smallest distance,
over the free columns, from the query to a combination that does not decide y strictly, in any slice
(Kantchelian et al. 2016 state the same as a mixed-integer program; for the small ensembles this module
serves, enumeration is exact and simpler). Distances are to the closure of each box, in exact integers
at 2^(2s); E = floor(rho 2^t) is the largest eps such that every point closer than eps is decided y,
the bound radius's claim (`fairness.trees.radius`).

The search is a depth-first product over trees, pruned when the partial box is empty, when it is already
no closer than the best combination found, or when no choice of the remaining trees' leaves can
change the decision. The minimiser is checked: a rational point inside the winning combination (the
nearest point of its closure, moved half a unit of 2^-s off every open upper bound it lies on) reaches
the chosen leaf in every tree and is not decided y strictly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from fairness.certificate_data import DEFAULT_EPS_BITS
from fairness.errors import CertificationError

from .ensemble import TreeModel, margins, strict_decision_of
from .radius import distance_sq, eps_cap, flip_check, leaf_box

PathBox = dict[int, tuple[int | None, int | None]]


@dataclass(frozen=True)
class ExactRadius:
    """E = floor(rho 2^t) (capped at the network code's cap), the squared distance rho^2 at 2^(2s) (None when
    no point of the box flips: capped), the slice, the chosen leaf per tree, the nearest point of the
    closure and the checked point inside the flipping combination."""

    eps: int
    eps_bits: int
    capped: bool
    flip_slice: int | None = None
    distance_sq: int | None = None
    slice_index: int | None = None
    leaves: tuple[int, ...] = ()
    nearest: tuple[int, ...] = ()
    witness: tuple[Fraction, ...] = ()


def _meet(a: PathBox, b: PathBox) -> PathBox:
    out = dict(a)
    for f, (lo, hi) in b.items():
        lo0, hi0 = out.get(f, (None, None))
        out[f] = (lo if lo0 is None else lo0 if lo is None else max(lo, lo0),
                  hi if hi0 is None else hi0 if hi is None else min(hi, hi0))
    return out


def exact_radius(model: TreeModel, query: Sequence[int], *, eps_bits: int = DEFAULT_EPS_BITS,
                 max_nodes: int = 2_000_000) -> ExactRadius:
    """The exact radius of `query` (a flip gives E = 0). `max_nodes` bounds the search (CertificationError
    beyond it: the ensemble is too large for enumeration)."""
    q = model.check_query(query)
    y, flip, _ = flip_check(model, q)
    if flip is not None:
        return ExactRadius(0, eps_bits, False, flip_slice=flip)
    ens = model.ensemble
    n_scores = ens.n_scores
    free = model.free_columns
    best: list[tuple[int, int, tuple[int, ...], PathBox] | None] = [None]
    visited = [0]
    base = {c: int(v) for c, v in margins(ens.base, y, ens.n_classes).items()}

    for slice_index, s in enumerate(model.slices()):
        options = []
        for tree in ens.trees:
            leaves = [(node, path, tree.value[node]) for node, path in tree.leaves()
                      if leaf_box(model, path, s) is not None]
            options.append(leaves)
        # The most a tree can lower each margin: used to prune branches that cannot change the decision.
        worst = []
        for i, leaves in enumerate(options):
            values = [v for _, _, v in leaves]
            worst.append({c: _contribution(i, n_scores, y, c, min(values), max(values)) for c in base})

        def search(i: int, path: PathBox, chosen: tuple[int, ...], margin: dict[int, int]) -> None:
            visited[0] += 1
            if visited[0] > max_nodes:
                raise CertificationError(f"the exact radius needs more than {max_nodes} search steps: the ensemble is "
                                         "too large for enumeration")
            box = leaf_box(model, path, s)
            if box is None:
                return
            d2 = distance_sq(q, box[0], box[1], free)
            if best[0] is not None and d2 >= best[0][0]:
                return
            if all(margin[c] + sum(w[c] for w in worst[i:]) > 0 for c in margin):
                return
            if i == len(options):
                best[0] = (d2, slice_index, chosen, path)
                return
            for node, leaf_path, value in options[i]:
                step = {c: margin[c] + _contribution(i, n_scores, y, c, value, value) for c in margin}
                search(i + 1, _meet(path, leaf_path), chosen + (node,), step)

        search(0, {}, (), dict(base))

    cap = eps_cap(model, eps_bits)
    if best[0] is None:
        return ExactRadius(cap, eps_bits, True)
    d2, slice_index, chosen, path = best[0]
    e = min(math.isqrt((d2 << (2 * eps_bits)) >> (2 * model.scale_bits)), cap)
    s = model.slices()[slice_index]
    nearest, witness = _check_minimiser(model, q, s, chosen, path, y)
    return ExactRadius(e, eps_bits, e == cap, distance_sq=d2, slice_index=slice_index, leaves=chosen,
                       nearest=nearest, witness=witness)


def _contribution(i: int, n_scores: int, y: int, c: int, low: int, high: int) -> int:
    """The least tree i can add to margin score_y - score_c, its value ranging over [low, high]."""
    if n_scores == 1:
        return low if y == 1 else -high
    k = i % n_scores
    return low if k == y else -high if k == c else 0


def _check_minimiser(model: TreeModel, q: Sequence[int], s: Sequence[int], chosen: Sequence[int], path: PathBox,
                     y: int) -> tuple[tuple[int, ...], tuple[Fraction, ...]]:
    box = leaf_box(model, path, s)
    assert box is not None
    nearest = tuple(min(max(int(v), lo), hi) for v, lo, hi in zip(model.with_slice(q, s), box[0], box[1]))
    witness = tuple(Fraction(v) - Fraction(1, 2) if path.get(c, (None, None))[1] == v else Fraction(v)
                    for c, v in enumerate(nearest))
    ens = model.ensemble
    if any(tree.leaf_of(witness) != node for tree, node in zip(ens.trees, chosen)) or not model.in_box(witness):
        raise CertificationError("internal error: the exact radius's minimiser is not in its leaf combination")
    if strict_decision_of(ens.scores(witness)) == y:
        raise CertificationError("internal error: the exact radius's minimiser keeps the decision")
    return nearest, witness
