"""An independent implementation of the FairProof paper's fairness radius: GeoCert with projection distances.

FairProof (Yadav et al., 2024) certifies a query x* with decision y by running
GeoCert (Jordan et al., 2019) on every slice (one combination of sensitive
values), keyed not by exact distances but by projection distances to the
hyperplanes that bound the activation regions. The certified radius is the
minimum over slices. This is a lower bound on the true fairness radius; we call
it "the paper's projection bound".

This module recomputes that bound from nothing but the model's integer
parameters (`fairness.fixed_point`), numpy and scipy, so that it can check the
certifier's fast mode rather than repeat it. Per slice, in the free (non-
sensitive) coordinates u (integers at scale 2^s):

* every hidden pre-activation and every logit is affine in u for a fixed
  activation code: z = a.u + c with integer a, c; the code's region is the
  closed polyhedron {z_k >= 0 for an 'on' neuron, z_k <= 0 for an 'off' one};
* start in the region of u* (on means z_k > 0 at u*), and push every row of
  the region on a priority queue keyed by its exact squared projection distance
  (a Fraction): (a.u* + c)^2 / (||a||^2 2^(2s)) in real units;
* pop the nearest row:
  - a decision row (z_j = z_y for a class j != y): if the region holds a point
    of the box with z_j >= z_y (an LP), the slice stops with this row's
    distance; otherwise the row is skipped;
  - a neuron row k: if the neighbour (bit k flipped) was visited, skip it;
    if the facet {region rows, z_k = 0} meets the box (an LP), enter the
    neighbour and push its rows; an empty facet is skipped;
* if the queue empties, the slice's value is the box diagonal (the cap).

eps_paper = min over slices, also capped at the box diagonal. If some slice
does not strictly decide y at x* (another class wins or ties), the radius is 0.

Rows with a zero normal have no hyperplane: a row that holds nowhere (a neuron
that never vanishes in the region, a class that never reaches y there) is never
pushed; a row that holds everywhere (a neuron identically 0, a class that ties
or beats y on the whole region) is keyed by the distance at which its region was
entered (0 for the start region), the closest a hyperplane of the region can
honestly claim.

LP tolerance. The LPs are solved in floating point by HiGHS on rows normalised
to unit normals, in real units and offsets from u*, with primal feasibility
tolerance `LP_FEAS_TOL` (1e-9 real units). A borderline system (a facet or a
class part that only touches the region, or misses it by less than the
tolerance) is therefore called non-empty. That is the conservative direction:
an extra crossing or an earlier stop can only lower the bound. An LP that HiGHS
does not settle (neither optimal nor infeasible) is also treated as non-empty.
"""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
from scipy.optimize import linprog

from fairness.fixed_point import FixedPointModel, QuantisedMLP

LP_FEAS_TOL = 1e-9          # HiGHS primal feasibility tolerance (unit-normal rows, real units)
DEFAULT_MAX_REGIONS = 20000


class ProjectionLimitError(RuntimeError):
    """A slice's search entered more than `max_regions` regions; no answer is given rather than a wrong one."""


@dataclass(frozen=True)
class SliceProjection:
    """One slice's projection bound.

    radius / radius_sq: real units (radius_sq exact); reason: 'decision' (stopped at a decision row),
    'cap' (queue emptied: the box diagonal) or 'flip' (the slice does not strictly decide y at x*);
    regions: activation regions entered; lps: feasibility programmes solved;
    code / cls: region code and class of the stopping decision row (None otherwise)."""

    radius: float
    radius_sq: Fraction
    reason: str
    regions: int
    lps: int
    code: tuple[tuple[bool, ...], ...] | None = None
    cls: int | None = None


@dataclass(frozen=True)
class ProjectionResult:
    """The paper's projection bound of one query: the minimum over slices, capped at the box diagonal."""

    radius: float
    radius_sq: Fraction
    slices: tuple[SliceProjection, ...]
    cap_sq: Fraction

    @property
    def slice_radii(self) -> tuple[float, ...]:
        return tuple(s.radius for s in self.slices)

    @property
    def regions(self) -> int:
        return sum(s.regions for s in self.slices)

    def eps(self, eps_bits: int = 16) -> int:
        """floor(radius * 2^t), exactly: the largest E with E^2 <= radius_sq * 2^(2t)."""
        return floor_scaled_sqrt(self.radius_sq, eps_bits)


def floor_scaled_sqrt(q: Fraction, bits: int) -> int:
    """The largest integer E >= 0 with E^2 <= q * 2^(2 bits) (q >= 0 rational)."""
    if q <= 0:
        return 0
    scaled = q * (1 << (2 * bits))
    return math.isqrt(scaled.numerator // scaled.denominator)


def fraction_sqrt(q: Fraction) -> float:
    """sqrt of a non-negative rational, to float accuracy even for huge numerators and denominators."""
    if q <= 0:
        return 0.0
    num, den = q.numerator, q.denominator
    k = max(0, (130 - (num.bit_length() - den.bit_length())) // 2)
    return math.ldexp(float(math.isqrt((num << (2 * k)) // den)), -k)


# --------------------------------------------------------------------------- affine forms per region


class _SliceForms:
    """The affine forms (integer normal over the free coordinates, integer offset) of one slice."""

    def __init__(self, model: FixedPointModel, slice_values: Sequence[int]):
        net: QuantisedMLP = model.net
        self.net = net
        self.free = list(model.free_columns)
        fixed = model.with_slice([0] * net.n_inputs, slice_values)
        free_set = set(self.free)
        w0, b0 = net.weights[0], net.biases[0]
        self.first = [([row[i] for i in self.free],
                       sum(row[i] * fixed[i] for i in range(net.n_inputs) if i not in free_set) + b)
                      for row, b in zip(w0, b0)]
        self._memo: dict[tuple, tuple[list, list]] = {}

    def forms(self, code: tuple[tuple[bool, ...], ...]) -> tuple[list, list]:
        """(hidden neuron forms in flat order, logit forms) of the region with activation code `code`."""
        hit = self._memo.get(code)
        if hit is not None:
            return hit
        dim = len(self.free)
        layer = self.first
        hidden = list(layer)
        for l in range(1, self.net.n_layers):
            bits = code[l - 1]
            new = []
            for row, b in zip(self.net.weights[l], self.net.biases[l]):
                normal = [0] * dim
                offset = b
                for w, (a, c), on in zip(row, layer, bits):
                    if on and w:
                        for i in range(dim):
                            normal[i] += w * a[i]
                        offset += w * c
                new.append((normal, offset))
            layer = new
            if l < self.net.n_layers - 1:
                hidden.extend(new)
        out = (hidden, layer)
        self._memo[code] = out
        return out


def _value(form, u: Sequence[int]) -> int:
    a, c = form
    return sum(ai * ui for ai, ui in zip(a, u)) + c


def _flip(code: tuple, k: int) -> tuple:
    out = [list(layer) for layer in code]
    for layer in out:
        if k < len(layer):
            layer[k] = not layer[k]
            break
        k -= len(layer)
    return tuple(tuple(layer) for layer in out)


def _bits(code: tuple) -> list[bool]:
    return [b for layer in code for b in layer]


# --------------------------------------------------------------------------- feasibility LPs


class _Feasibility:
    """Is {rows >= 0 (or == 0), lo <= u <= hi} non-empty? Rows are (a, c) over integer u; solved in real
    offsets v = (u - u*) / 2^s on unit-normalised rows."""

    def __init__(self, u_star: Sequence[int], lo: Sequence[int], hi: Sequence[int], scale_bits: int):
        self.u = [int(v) for v in u_star]
        self.s = scale_bits
        one = float(1 << scale_bits)
        self.bounds = [(float(Fraction(l - u, 1 << scale_bits)), float(Fraction(h - u, 1 << scale_bits)))
                       for u, l, h in zip(self.u, lo, hi)]
        self.one = one
        self.solved = 0

    def _row(self, form) -> tuple[np.ndarray, float] | bool:
        a, c = form
        sq = sum(v * v for v in a)
        g = _value(form, self.u)
        if sq == 0:
            return None if g == 0 else g  # type: ignore[return-value]
        norm = fraction_sqrt(Fraction(sq))
        return np.array([v / norm for v in a], dtype=float), float(Fraction(g, 1 << self.s)) / norm

    def nonempty(self, ineq: list, eqs: list) -> bool:
        """ineq: forms that must be >= 0; eqs: forms that must be == 0."""
        A_ub, b_ub, A_eq, b_eq = [], [], [], []
        for form in ineq:
            r = self._row(form)
            if r is None:
                continue            # zero form: 0 >= 0 holds
            if not isinstance(r, tuple):
                if r < 0:
                    return False    # a negative constant >= 0: impossible
                continue
            an, gn = r
            A_ub.append(-an)        # an.v + gn >= 0  <=>  -an.v <= gn
            b_ub.append(gn)
        for form in eqs:
            r = self._row(form)
            if r is None:
                continue
            if not isinstance(r, tuple):
                return False        # a non-zero constant == 0: impossible
            an, gn = r
            A_eq.append(an)
            b_eq.append(-gn)
        n = len(self.u)
        kw = {}
        if A_ub:
            kw["A_ub"], kw["b_ub"] = np.array(A_ub), np.array(b_ub)
        if A_eq:
            kw["A_eq"], kw["b_eq"] = np.array(A_eq), np.array(b_eq)
        self.solved += 1
        res = linprog(np.zeros(n), bounds=self.bounds, method="highs",
                      options={"primal_feasibility_tolerance": LP_FEAS_TOL}, **kw)
        return res.status != 2   # 2: infeasible; anything else (optimal, or unsettled) counts as non-empty


# --------------------------------------------------------------------------- one slice


def _squared_key(form, u: Sequence[int], s: int) -> Fraction | None:
    """Exact squared real projection distance from u to {form = 0}; None for a zero normal."""
    a, _ = form
    sq = sum(v * v for v in a)
    if sq == 0:
        return None
    g = _value(form, u)
    return Fraction(g * g, sq << (2 * s))


def _slice_search(model: FixedPointModel, slice_values: Sequence[int], u_star: Sequence[int], y: int,
                  lp: _Feasibility, cap_sq: Fraction, max_regions: int) -> SliceProjection:
    s = model.scale_bits
    forms = _SliceForms(model, slice_values)
    x = list(model.with_slice([0] * model.net.n_inputs, slice_values))
    for i, v in zip(model.free_columns, u_star):
        x[i] = v
    # plain per-layer bool tuples (on means z > 0), the spelling every code of this search uses
    start = tuple(tuple(v > 0 for v in z) for z in model.net.pre_activations(x)[:-1])
    n_classes = model.net.n_classes
    visited: set[tuple] = set()
    heap: list = []
    counter = itertools.count()
    lps0 = lp.solved

    def region_rows(code) -> list:
        hidden, _ = forms.forms(code)
        return [(a, c) if on else ([-v for v in a], -c) for (a, c), on in zip(hidden, _bits(code))]

    def enter(code, entry: Fraction) -> None:
        if len(visited) >= max_regions:
            raise ProjectionLimitError(f"more than {max_regions} regions in one slice")
        visited.add(code)
        hidden, logits = forms.forms(code)
        for k, form in enumerate(hidden):
            key = _squared_key(form, u_star, s)
            if key is None:
                if form[1] != 0:
                    continue        # the neuron never vanishes in this region: no facet
                key = entry
            heapq.heappush(heap, (key, next(counter), "neuron", code, k))
        for j in range(n_classes):
            if j == y:
                continue
            diff = ([aj - ay for aj, ay in zip(logits[j][0], logits[y][0])], logits[j][1] - logits[y][1])
            key = _squared_key(diff, u_star, s)
            if key is None:
                if diff[1] < 0:
                    continue        # class j stays below y on the whole region
                key = entry
            heapq.heappush(heap, (key, next(counter), "decision", code, j))

    enter(start, Fraction(0))
    while heap:
        key, _, kind, code, idx = heapq.heappop(heap)
        rows = region_rows(code)
        if kind == "decision":
            _, logits = forms.forms(code)
            diff = ([aj - ay for aj, ay in zip(logits[idx][0], logits[y][0])], logits[idx][1] - logits[y][1])
            if lp.nonempty(rows + [diff], []):
                d2 = min(key, cap_sq)
                return SliceProjection(fraction_sqrt(d2), d2, "decision", len(visited), lp.solved - lps0,
                                       code, idx)
            continue
        nb = _flip(code, idx)
        if nb in visited:
            continue
        hidden, _ = forms.forms(code)
        facet_rows = [r for k, r in enumerate(rows) if k != idx]
        if lp.nonempty(facet_rows, [hidden[idx]]):
            enter(nb, key)
    return SliceProjection(fraction_sqrt(cap_sq), cap_sq, "cap", len(visited), lp.solved - lps0)


# --------------------------------------------------------------------------- public API


def _strict_winner(logits: Sequence[int]) -> int | None:
    top = max(logits)
    winners = [j for j, v in enumerate(logits) if v == top]
    return winners[0] if len(winners) == 1 else None


def box_diagonal_sq(model: FixedPointModel) -> Fraction:
    """Squared real-unit diagonal of the free box."""
    s = model.scale_bits
    return Fraction(sum((model.box_upper[i] - model.box_lower[i]) ** 2 for i in model.free_columns), 1 << (2 * s))


def projection_search(model: FixedPointModel, query: Sequence[int], *,
                      max_regions: int = DEFAULT_MAX_REGIONS) -> ProjectionResult:
    """The paper's projection bound of `query` (integers at scale 2^s inside the box), with every slice's
    own value (each slice searched in full, in the order of `model.slices()`)."""
    net = model.net
    x = tuple(int(v) for v in query)
    if len(x) != net.n_inputs:
        raise ValueError(f"expected {net.n_inputs} input features, got {len(x)}")
    if not model.in_box(x):
        raise ValueError("the query lies outside the model's domain box")
    y = net.decision(x)
    free = model.free_columns
    u_star = [x[i] for i in free]
    cap_sq = box_diagonal_sq(model)
    lp = _Feasibility(u_star, [model.box_lower[i] for i in free], [model.box_upper[i] for i in free],
                      model.scale_bits)
    out = []
    for sv in model.slices():
        if _strict_winner(net.logits(model.with_slice(x, sv))) != y:
            out.append(SliceProjection(0.0, Fraction(0), "flip", 0, 0))
            continue
        out.append(_slice_search(model, sv, u_star, y, lp, cap_sq, max_regions))
    best = min([cap_sq] + [sl.radius_sq for sl in out])
    return ProjectionResult(fraction_sqrt(best), best, tuple(out), cap_sq)


def projection_radius(model: FixedPointModel, query: Sequence[int], *,
                      max_regions: int = DEFAULT_MAX_REGIONS) -> float:
    """The paper's projection bound eps_paper of `query`, in real units."""
    return projection_search(model, query, max_regions=max_regions).radius


def projection_slice_radii(model: FixedPointModel, query: Sequence[int], *,
                           max_regions: int = DEFAULT_MAX_REGIONS) -> tuple[float, ...]:
    """Every slice's projection bound (real units), in the order of `model.slices()`."""
    return projection_search(model, query, max_regions=max_regions).slice_radii
