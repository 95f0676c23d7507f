"""Persistent bias (ceteris paribus, PBA): does the model favour the customer's own group over a
counterfactual one everywhere in a box around them?

For a two-class model with favourable class f, a query x* and a single-attribute
flip s -> s' of its sensitive values, with the SAME non-sensitive part z in both
copies:

    m(s, z) = logit_f(s, z) - logit_other(s, z)            (the favourable margin)
    g(z)    = m(s, z) - m(s', z)
            = log( [p_f / p_o](s, z) / [p_f / p_o](s', z) )  (PBA's Lemma 1: softmax normalisers cancel)

over the box B = {z : |z_j - z*_j| <= delta on numeric columns, categorical
columns fixed, inside the domain box}. Status: "favoured" if min_B g > 0 (the
customer's own group gets a larger favourable margin everywhere in B),
"disfavoured" if max_B g < 0, "inconclusive" otherwise.

Three ways to bound min/max g:

- `lp_bounds`: one LP over both copies with shared z (Ehlers' triangle relaxation
  of unstable ReLUs, pre-activation bounds by interval propagation), solved by
  HiGHS; the bound reported is NOT the solver's float optimum but the weak-duality
  bound of its dual multipliers recomputed in exact rationals (negative
  inequality multipliers clipped to 0), so it is sound whatever the solver's
  tolerances. Sound and incomplete.
- `crown_bounds`: linear bound propagation (CROWN) back through both copies into
  one linear function of the shared inputs, minimised over the box in closed
  form, every relaxation slope a dyadic rounded outward; exact rationals, no
  solver, never tighter than the LP (it is one dual-feasible point of it). The
  form a proof in integers would check.
- `optimised_bounds`: the same propagation with a lower slope alpha in [0, 1]
  per (bound, copy, neuron) instead of CROWN's rule (relu(z) >= alpha z holds
  everywhere, so any is sound), read off the LP's dual (`lp_slopes`; polished by
  gradient ascent where that dual is not one back-substitution can express):
  the LP's bound to within the slopes' rounding, in exact rationals, no solver
  needed to check it. What a proof with optimised slopes states.
- `exact_bounds` / `exact_extremes`: the same two-copy network as a MILP (big-M
  per unstable ReLU, exact on the box), solved by HiGHS to a relative gap of
  1e-9 (`fairness.milp`; its default 1e-4 stops a thousandth of a logit short
  on a margin of ten); its minimiser is re-evaluated exactly, so the value
  reported is attained by a point of B (an upper bound on min g that equals it
  when the solver is optimal), and `exact_extremes` says beside it whether the
  solver closed the gap, with its bound. Small models only.

delta is in the card's standardised units (the model's inputs); it is rounded
up to the input scale 2^s, so the box certified contains the one asked for.

The question (flips, the box, bounds and their status) is `fairness.persistence_box`; the two-copy LP
and MILP are `fairness.persistence_lp`; this module holds the linear bound propagation and what a proof
of the lens states, and offers the other two's names as well.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from .fixed_point import FixedPointModel, join_points
from .multipliers import RELAXATION_SLOPE_BITS
from .persistence_box import (DISFAVOURED, FAVOURED, INCONCLUSIVE, Bounds, Box, Flip,  # noqa: F401
                              PersistenceError, PersistenceResult, _changed, box_samples, perturbation_box,
                              single_attribute_flips)
from .persistence_lp import (Extreme, _dual_bound, _fixed_input, _lp_solve, _Net, _program,  # noqa: F401
                             exact_bounds, exact_extremes, g_value, lp_bounds)

# ----------------------------------------------------------------------------- linear bound propagation

SLOPE_BITS = RELAXATION_SLOPE_BITS  # slopes are dyadic at 2^-SLOPE_BITS, rounded so that every relaxation stays valid


def _ceil_dyadic(x: Fraction, bits: int) -> Fraction:
    scaled = x * (1 << bits)
    return Fraction(-((-scaled.numerator) // scaled.denominator), 1 << bits)


def _floor_dyadic(x: Fraction, bits: int) -> Fraction:
    scaled = x * (1 << bits)
    return Fraction(scaled.numerator // scaled.denominator, 1 << bits)


def _backward_lower(model: FixedPointModel, net: "_Net", flip: Flip, box: Box, sign: int,
                    slope_bits: int, slopes: "PairSlopes | None" = None) -> Fraction:
    """A lower bound on sign * g over the box by back-substitution (CROWN), both copies into one
    linear function of the shared inputs, minimised over the box in closed form.

    Per unstable neuron (l < 0 < u) with coefficient a on its output y: a >= 0 takes y >= alpha x
    (alpha = 1 if u >= -l else 0), a < 0 takes y <= t (x - l) with t >= u / (u - l) rounded up to
    2^-slope_bits (a line through (l, 0) at least that steep lies above ReLU on [l, u]). `slopes`: every
    neuron's alpha instead (a / 2^bits, per copy, any neuron: y >= alpha x holds for every alpha in
    [0, 1]). Every relaxation is valid, so the bound is, in exact rationals, whatever the slopes."""
    one = 1 << model.scale_bits
    slices = model.slices()
    free = [j for j in range(len(box.lower)) if box.lower[j] != box.upper[j]]
    shared = {j: Fraction(0) for j in free}
    constant = Fraction(0)
    for copy, (values, copy_sign) in enumerate(((slices[flip.source], sign), (slices[flip.target], -sign))):
        own_slopes, bits = (None, 0) if slopes is None else (slopes.copies[copy], slopes.bits)
        x_fixed = [Fraction(v, one) for v in _fixed_input(model, box, values)]
        lo_in = [Fraction(box.lower[j], one) if j in free else x_fixed[j] for j in range(len(x_fixed))]
        hi_in = [Fraction(box.upper[j], one) if j in free else x_fixed[j] for j in range(len(x_fixed))]
        bounds = net.interval_bounds(lo_in, hi_in)
        coef = [copy_sign * a for a in net.margin_row]  # on the last hidden layer's outputs
        constant += copy_sign * net.margin_bias
        for layer in range(len(net.hidden) - 1, -1, -1):
            zl, zh = bounds[layer]
            pre = []
            for neuron, (a, l, u) in enumerate(zip(coef, zl, zh)):
                if a >= 0 and own_slopes is not None:
                    pre.append(a * Fraction(own_slopes[layer][neuron], 1 << bits))
                elif l >= 0:
                    pre.append(a)
                elif u <= 0:
                    pre.append(Fraction(0))
                elif a >= 0:
                    pre.append(a if u >= -l else Fraction(0))
                else:
                    t = _ceil_dyadic(u / (u - l), slope_bits)
                    pre.append(a * t)
                    constant -= a * t * l
            w, b = net.hidden[layer], net.hidden_biases[layer]
            constant += sum(p * bi for p, bi in zip(pre, b))
            coef = [sum(p * w[i][k] for i, p in enumerate(pre)) for k in range(len(w[0]))]
        for j, c in enumerate(coef):
            if j in shared:
                shared[j] += c
            else:
                constant += c * x_fixed[j]
    return constant + sum(min(c * Fraction(box.lower[j], one), c * Fraction(box.upper[j], one))
                          for j, c in shared.items())


def crown_bounds(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box,
                 slope_bits: int = SLOPE_BITS) -> Bounds:
    """Sound bounds on min and max g by linear bound propagation through both copies (no solver):
    exact rationals, the reference for a proof in integers."""
    net = _Net(model, favourable_class)
    low = _backward_lower(model, net, flip, box, 1, slope_bits)
    high = -_backward_lower(model, net, flip, box, -1, slope_bits)
    return Bounds(low, high, "crown")


@dataclass(frozen=True)
class PairSlopes:
    """Lower relaxation slopes a / 2^bits of one bound (one sign) of one pair: per copy (0: the query's own
    values, 1: the counterfactual's), per hidden layer, one per neuron."""

    bits: int
    copies: tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]

    def flat(self) -> list[int]:
        """Own copy then counterfactual, layer by layer: the circuit's order."""
        return [a for copy in self.copies for layer in copy for a in layer]


def _copy_boxes(model: FixedPointModel, net: "_Net", flip: Flip, box: Box):
    """Per copy (own, counterfactual): its input box (Fractions, sensitive columns at the copy's values) and the
    interval pre-activation bounds of its hidden layers."""
    one = 1 << model.scale_bits
    slices = model.slices()
    free = {j for j in range(len(box.lower)) if box.lower[j] != box.upper[j]}
    out = []
    for values in (slices[flip.source], slices[flip.target]):
        x_fixed = [Fraction(v, one) for v in _fixed_input(model, box, values)]
        lo_in = [Fraction(box.lower[j], one) if j in free else x_fixed[j] for j in range(len(x_fixed))]
        hi_in = [Fraction(box.upper[j], one) if j in free else x_fixed[j] for j in range(len(x_fixed))]
        out.append((lo_in, hi_in, net.interval_bounds(lo_in, hi_in)))
    return out


def crown_slopes(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box, bits: int) -> PairSlopes:
    """CROWN's slopes as a / 2^bits: 1 for active neurons and unstable ones with u >= -l, else 0."""
    top = 1 << bits
    copies = [tuple(tuple(top if l >= 0 or (u > 0 and u >= -l) else 0 for l, u in zip(zl, zh)) for zl, zh in bounds)
              for _, _, bounds in _copy_boxes(model, _Net(model, favourable_class), flip, box)]
    return PairSlopes(bits, (copies[0], copies[1]))


def best_slopes(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box, sign: int, bits: int,
                slope_bits: int = SLOPE_BITS) -> tuple[PairSlopes, Fraction]:
    """The slopes that bound sign * g best, with that bound (exact rationals): the LP's dual (`lp_slopes`),
    which reaches the LP's optimum wherever its dual is in back-substitution's form; where it is not (a
    neuron at a corner of its triangle, priced on both its lower and its upper side), gradient ascent from
    the better of the dual's and CROWN's slopes (`fairness.alpha_crown.polish_pair_slopes`). Every candidate
    is bounded exactly and the best kept."""
    net = _Net(model, favourable_class)
    dual, optimum = lp_slopes(model, favourable_class, flip, box, sign, bits)
    found = [(_backward_lower(model, net, flip, box, sign, slope_bits, dual), dual)]
    if float(found[0][0]) < optimum - POLISH_BELOW:
        crown = crown_slopes(model, favourable_class, flip, box, bits)
        found.append((_backward_lower(model, net, flip, box, sign, slope_bits, crown), crown))
        start = max(found, key=lambda f: f[0])[1]
        found.append(_polished(model, net, flip, box, sign, start, slope_bits))
    bound, slopes = max(found, key=lambda f: f[0])
    return slopes, bound


POLISH_BELOW = 1e-4  # logits: a dual bound this close to the LP's optimum (rounding costs ~1e-5) needs no polish


def _polished(model: FixedPointModel, net: "_Net", flip: Flip, box: Box, sign: int, start: PairSlopes,
              slope_bits: int) -> tuple[Fraction, PairSlopes]:
    from .alpha_crown import polish_pair_slopes

    copies = _copy_boxes(model, net, flip, box)
    shared = np.array([lo != hi for lo, hi in zip(box.lower, box.upper)])
    top = 1 << start.bits
    alphas, _ = polish_pair_slopes(
        [np.array(w, dtype=float) for w in net.hidden], [np.array(b, dtype=float) for b in net.hidden_biases],
        np.array(net.margin_row, dtype=float), float(net.margin_bias),
        [(np.array(lo, dtype=float), np.array(hi, dtype=float),
          [(np.array(zl, dtype=float), np.array(zh, dtype=float)) for zl, zh in bounds]) for lo, hi, bounds in copies],
        shared, sign, [[[a / top for a in layer] for layer in copy] for copy in start.copies])
    own, other = (tuple(tuple(min(top, max(0, round(a * top))) for a in layer) for layer in copy) for copy in alphas)
    slopes = PairSlopes(start.bits, (own, other))
    return _backward_lower(model, net, flip, box, sign, slope_bits, slopes), slopes


def lp_slopes(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box, sign: int,
              bits: int) -> tuple[PairSlopes, float]:
    """The slopes that make linear bound propagation reach the triangle LP's optimum of min sign * g, read off
    the LP's dual, rounded to a / 2^bits.

    The LP is the same relaxation (interval pre-activation bounds, the triangle per unstable ReLU), and its
    Lagrangian dual, with the layers' equalities priced by their multipliers, is back-substitution in which
    an unstable neuron whose output has a coefficient >= 0 is bounded below by a convex combination of its
    two lower constraints, y >= x (dual lambda) and y >= 0 (the reduced cost rho of y's lower bound):
    alpha = lambda / (lambda + rho). Stable neurons take their exact slope (1 active, 0 dead) and a neuron
    the dual leaves unpriced takes CROWN's. Any rounding is sound; the bound is recomputed exactly. With the
    LP's optimum of min sign * g (float)."""
    prog = _program(model, favourable_class, flip, box)
    res = _lp_solve(prog, [sign * v for v in prog.c])
    top = 1 << bits
    copies = [[list(layer) for layer in copy] for copy in crown_slopes(model, favourable_class, flip, box, bits).copies]
    below = -res.ineqlin.marginals if prog.ub else []  # rows 2i: y >= x of unstable entry i (scipy's sign: <= 0)
    for i, ((pre, post, l, u), (copy, layer, neuron)) in enumerate(zip(prog.unstable, prog.neurons)):
        lam, rho = max(float(below[2 * i]), 0.0), max(float(res.lower.marginals[post]), 0.0)
        if lam + rho > 0:
            copies[copy][layer][neuron] = min(top, max(0, round(top * lam / (lam + rho))))
    own, other = (tuple(tuple(layer) for layer in copy) for copy in copies)
    return PairSlopes(bits, (own, other)), float(res.fun) + float(sign * prog.constant)


def optimised_bounds(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box, bits: int,
                     slope_bits: int = SLOPE_BITS) -> tuple[Bounds, PairSlopes, PairSlopes]:
    """Linear bound propagation with the best slopes found (`best_slopes`): the triangle LP's bounds to within
    the rounding of the slopes wherever its dual reads off, in exact rationals, with the slopes of the lower
    and of the upper bound."""
    low_slopes, low = best_slopes(model, favourable_class, flip, box, 1, bits, slope_bits)
    high_slopes, high = best_slopes(model, favourable_class, flip, box, -1, bits, slope_bits)
    return Bounds(low, -high, "optimised"), low_slopes, high_slopes


def counterfactual_pairs(model: FixedPointModel) -> list[tuple[int, tuple[int, ...]]]:
    """(sensitive attribute index, value's point) for every value of every sensitive attribute, points in
    lexicographic order: the order a proof of the lens lists its bounds (the query's own value among
    them: its g is 0)."""
    return [(a, p) for a, f in enumerate(model.sensitive) for p in sorted(f.points)]


def proved_bounds(model: FixedPointModel, query: Sequence[int], favourable_class: int,
                  numeric_columns: Sequence[int], delta: int,
                  slope_bits: int = SLOPE_BITS, alpha_bits: int = 0) -> list[tuple[int, int]]:
    """What a proof of the persistence lens states: per `counterfactual_pairs` entry, the bounds of the
    query against that counterfactual over the box of half-width `delta` (an integer at the input scale),
    rounded outward to integers at the logit scale: (floor(LB 2^L), ceil(UB 2^L)). alpha_bits 0: CROWN's
    (the fixed slopes); else with the LP's slopes at a / 2^alpha_bits (`optimised_bounds`)."""
    return [bounds for bounds, _ in _proved(model, tuple(query), favourable_class, tuple(numeric_columns), delta,
                                            slope_bits, alpha_bits)]


def proved_slopes(model: FixedPointModel, query: Sequence[int], favourable_class: int,
                  numeric_columns: Sequence[int], delta: int, alpha_bits: int,
                  slope_bits: int = SLOPE_BITS) -> list[tuple[PairSlopes, PairSlopes]]:
    """The slopes behind `proved_bounds` with alpha_bits > 0: per pair, those of LB and of UB (what the
    circuit's prover takes)."""
    return [slopes for _, slopes in _proved(model, tuple(query), favourable_class, tuple(numeric_columns), delta,
                                            slope_bits, alpha_bits)]


_PROVED: dict = {}
_PROVED_LOCK = threading.Lock()  # a service may prove in several threads
_KEPT = 32


def _proved(model: FixedPointModel, query: tuple[int, ...], favourable_class: int, numeric_columns: tuple[int, ...],
            delta: int, slope_bits: int, alpha_bits: int) -> list:
    """[((LB, UB), slopes)] per pair, kept in memory: a prover computes the bounds for the public inputs, then
    the circuit asks for the slopes (a deterministic computation, so a fresh one gives the same)."""
    if type(delta) is not int or delta < 0:
        raise PersistenceError(f"delta must be a non-negative integer at the input scale, not {delta!r}")
    from .slope_plans import model_key

    key = (model_key(model), query, favourable_class, numeric_columns, delta, slope_bits, alpha_bits)
    with _PROVED_LOCK:
        if key in _PROVED:
            return _PROVED[key]
    box = perturbation_box(model, query, numeric_columns, Fraction(delta, 1 << model.scale_bits))
    slices = model.slices()
    own = model.slice_points(model.query_slice(query))
    source = slices.index(join_points(own))
    scale = 1 << model.net.logit_scale_bits
    out = []
    for a, p in counterfactual_pairs(model):
        flip = Flip(a, source, slices.index(_changed(own, a, p)))
        if alpha_bits:
            b, low, high = optimised_bounds(model, favourable_class, flip, box, alpha_bits, slope_bits)
            slopes = (low, high)
        else:
            b, slopes = crown_bounds(model, favourable_class, flip, box, slope_bits), None
        out.append(((math.floor(b.lower * scale), math.ceil(b.upper * scale)), slopes))
    with _PROVED_LOCK:
        if len(_PROVED) >= _KEPT:
            _PROVED.pop(next(iter(_PROVED)))
        _PROVED[key] = out
    return out


def persistence(model: FixedPointModel, query: Sequence[int], favourable_class: int, numeric_columns: Sequence[int],
                delta: float | Fraction, *, exact: bool = False) -> list[PersistenceResult]:
    """Every single-attribute flip of the query, bounded by the LP (and the MILP's attained values)."""
    box = perturbation_box(model, query, numeric_columns, delta)
    out = []
    for flip in single_attribute_flips(model, query):
        bounds = lp_bounds(model, favourable_class, flip, box)
        attained = exact_bounds(model, favourable_class, flip, box) if exact else None
        out.append(PersistenceResult(flip, box, bounds, attained))
    return out
