"""Linear regions of the integer network on one slice, exactly.

Semantics (all Python ints)
---------------------------
A *slice* fixes the sensitive columns of the input to one combination of
domain values (`FixedPointModel.slices()`); the remaining coordinates
u = x[free_columns] (integers at scale 2^s, order `FixedPointModel.free_columns`)
are the variables. For an activation code R (one on/off bit per hidden ReLU,
`fairness.codes.ActivationCode`, as `QuantisedMLP.activation_code` returns: on means z > 0),
the network is affine in u. Composing the layers under R:

    z^0(u) = W0[:, free] u + (W0[:, sens] . slice + b0)
    z^l(u) = W_l diag(R^{l-1}) z^{l-1}(u) + b_l

so every hidden pre-activation z_i(u) = a_i.u + c_i with integer a_i, c_i
(layer-l values at scale 2^(s(l+2))), and the logits likewise. Hidden neurons
are numbered *flat*, layer by layer (`neuron_ids`). The region is the closed
polyhedron

    P_R = {u in box : z_i(u) >= 0 if bit i is on, z_i(u) <= 0 if off}

written as integer rows n_i.u <= b_i (`Region.row`): on -> n = -a, b = c;
off -> n = a, b = -c. On P_R the true network equals the affine forms (ReLU(0)
= 0, so both closed sides agree on the hyperplane). The box is the model's
domain box restricted to the free columns (`free_box`).

Distances and eps
-----------------
The real-unit projection distance from u* to {a.u + c = 0} is
|a.u* + c| / (2^s ||a||). eps is published as an integer E at scale 2^t
(eps = E / 2^t). "distance >= eps" is the exact test (`distance_at_least`)

    ||a|| > 0  and  v^2 * 2^(2t) >= E^2 * 2^(2s) * ||a||^2,   v = a.u* + c

and a row with a = 0 is never DISTANCE-covered (it is never crossed, or it is
the whole slice). Minimality of E is `distance_below_next` (distance <
(E+1)/2^t). `max_eps` gives the largest E passing the test, and
`eps_cap` the published cap floor(2^t * diagonal of the free box in real units).

Oracle interface (for the offline precompute store)
---------------------------------------------------
GeoCert asks, per region, only two questions; both go through a `RegionOracle`:

- ``facet(region, k) -> FacetInfo(nonempty, farkas)``: does the facet
  {u in box : P_R rows, z_k(u) = 0} contain a point (LP; steers the search),
  and if not, an exact Farkas certificate of emptiness (EMPTY_FACET) or None.
- ``no_class(region, y, j) -> ClassInfo(reachable, farkas, tie_point)``: does
  P_R hold a point with z_j >= z_y (LP), an exact Farkas certificate that it
  does not (NO_CLASS) or None, and if reachable an exact `RationalPoint` on
  z_y = z_j inside P_R and the box (the boundary witness) when one can be found.

`LPRegionOracle` computes these with scipy's HiGHS and memoises them per
(slice, code, question); a store supplies the same answers from its tables.
Systems for the Farkas certificates: `facet_system(region, k)` and
`class_system(region, y, j)` return (rows, extra_row, extra_is_equality);
`fairness.farkas.verify(rows, extra, eq, free_box(model), cert)` checks them.
Codes serialise with `ActivationCode.key` / `ActivationCode.parse` ("1011.01": one group of
bits per hidden layer).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from math import isqrt
from typing import Protocol, Sequence

import numpy as np

from fairness import farkas as fk
from fairness.farkas import Box, FarkasCertificate, HalfSpace
from fairness.codes import ActivationCode
from fairness.fixed_point import FixedPointModel, IntVector

__all__ = [
    "AffineForm", "Region", "SliceGeometry", "RationalPoint", "FacetInfo", "ClassInfo",
    "RegionOracle", "LPRegionOracle", "neuron_ids", "free_box", "free_part", "distance_at_least",
    "distance_below_next", "max_eps", "eps_cap",
    "distance_sq", "facet_system", "class_system", "lp_representative", "counterexample_error", "exact_point",
]


# ---------------------------------------------------------------- codes

def neuron_ids(hidden_sizes: Sequence[int]) -> list[tuple[int, int]]:
    """(layer, index) of every hidden neuron, in the flat order used everywhere."""
    return [(l, i) for l, size in enumerate(hidden_sizes) for i in range(size)]


# ---------------------------------------------------------------- geometry

@dataclass(frozen=True)
class AffineForm:
    """z(u) = normal.u + offset, exact integers."""

    normal: IntVector
    offset: int

    def value(self, u: Sequence[int]) -> int:
        return sum(a * x for a, x in zip(self.normal, u)) + self.offset

    @property
    def norm_sq(self) -> int:
        return sum(a * a for a in self.normal)

    def __sub__(self, other: "AffineForm") -> "AffineForm":
        return AffineForm(tuple(a - b for a, b in zip(self.normal, other.normal)), self.offset - other.offset)


@dataclass(frozen=True)
class RationalPoint:
    """u = numerators / denominator (denominator > 0), in integer units of scale 2^s."""

    numerators: IntVector
    denominator: int

    def to_json(self) -> dict:
        return {"numerators": list(self.numerators), "denominator": self.denominator}

    @classmethod
    def from_json(cls, data: dict) -> "RationalPoint":
        nums, den = data["numerators"], data["denominator"]
        if not isinstance(nums, list) or not all(type(v) is int for v in nums) or type(den) is not int:
            raise ValueError("rational point must be integers")
        return cls(tuple(nums), den)

    def form_value(self, form: AffineForm) -> int:
        """denominator * form(u), an exact integer."""
        return sum(a * x for a, x in zip(form.normal, self.numerators)) + form.offset * self.denominator

    def in_box(self, box: Box) -> bool:
        d = self.denominator
        return d > 0 and all(lo * d <= x <= hi * d for x, lo, hi in zip(self.numerators, box.lower, box.upper))


@dataclass(frozen=True, eq=False)
class Region:
    """One activation region of one slice: affine forms of every hidden neuron
    (flat order) and of the logits, all derived from the weights."""

    slice_values: IntVector
    code: ActivationCode
    neurons: tuple[AffineForm, ...]
    logits: tuple[AffineForm, ...]

    @property
    def key(self) -> tuple[IntVector, str]:
        return (self.slice_values, self.code.key)

    @property
    def bits(self) -> tuple[bool, ...]:
        return self.code.bits

    def row(self, k: int) -> HalfSpace:
        """Neuron k's constraint as n.u <= b (on: z_k >= 0; off: z_k <= 0)."""
        f = self.neurons[k]
        if self.bits[k]:
            return HalfSpace(tuple(-a for a in f.normal), f.offset)
        return HalfSpace(f.normal, -f.offset)

    def rows(self) -> list[HalfSpace]:
        return [self.row(k) for k in range(len(self.neurons))]

    def decision_form(self, y: int, j: int) -> AffineForm:
        """z_y - z_j on this region."""
        return self.logits[y] - self.logits[j]

    def contains(self, u: Sequence[int]) -> bool:
        return all(sum(n * x for n, x in zip(r.normal, u)) <= r.bound for r in self.rows())

    def contains_rational(self, p: RationalPoint) -> bool:
        d = p.denominator
        return d > 0 and all(sum(n * x for n, x in zip(r.normal, p.numerators)) <= r.bound * d
                             for r in self.rows())


def free_part(model: FixedPointModel, x: Sequence[int]) -> IntVector:
    return tuple(int(x[c]) for c in model.free_columns)


def free_box(model: FixedPointModel) -> Box:
    cols = model.free_columns
    return Box(tuple(model.box_lower[c] for c in cols), tuple(model.box_upper[c] for c in cols))


@dataclass
class SliceGeometry:
    """Builds (and memoises) the regions of one slice from the committed weights."""

    model: FixedPointModel
    slice_values: IntVector
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.slice_values = tuple(int(v) for v in self.slice_values)
        if self.slice_values not in set(self.model.slices()):
            raise ValueError(f"{self.slice_values} is not a combination of sensitive domain values")
        net = self.model.net
        free = self.model.free_columns
        base = self.model.with_slice([0] * net.n_inputs, self.slice_values)
        w0, b0 = net.weights[0], net.biases[0]
        self._first = tuple(
            AffineForm(tuple(row[c] for c in free),
                       sum(row[c] * base[c] for c in self.model.sensitive_columns) + bias)
            for row, bias in zip(w0, b0))

    @property
    def box(self) -> Box:
        return free_box(self.model)

    def region(self, code: ActivationCode) -> Region:
        key = code.key
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        net = self.model.net
        if tuple(len(layer) for layer in code) != net.hidden_sizes:
            raise ValueError(f"activation code {key!r} does not match hidden sizes {net.hidden_sizes}")
        neurons: list[AffineForm] = list(self._first)
        layer_forms = list(self._first)
        for l in range(1, net.n_layers):
            on = code[l - 1]
            active = [f for f, b in zip(layer_forms, on) if b]
            w_active = [[w for w, b in zip(row, on) if b] for row in net.weights[l]]
            dim = len(self._first[0].normal)
            new = []
            for row, bias in zip(w_active, net.biases[l]):
                normal = [0] * dim
                offset = bias
                for w, f in zip(row, active):
                    if w:
                        for j in range(dim):
                            normal[j] += w * f.normal[j]
                        offset += w * f.offset
                new.append(AffineForm(tuple(normal), offset))
            layer_forms = new
            if l < net.n_layers - 1:
                neurons.extend(new)
        region = Region(self.slice_values, code,
                        tuple(neurons), tuple(layer_forms))
        self._cache[key] = region
        return region

    def code_of(self, u: Sequence[int]) -> ActivationCode:
        """Activation code (on = z > 0) of the integer point u on this slice."""
        x = list(self.model.with_slice([0] * self.model.net.n_inputs, self.slice_values))
        for c, v in zip(self.model.free_columns, u):
            x[c] = int(v)
        return self.model.net.activation_code(x)


# ---------------------------------------------------------------- distances

def distance_sq(form: AffineForm, u: Sequence[int], scale_bits: int) -> Fraction | None:
    """Squared real-unit projection distance from u to {form = 0}; None if the
    hyperplane is empty (zero normal, non-zero offset): infinitely far."""
    v = form.value(u)
    nsq = form.norm_sq
    if nsq == 0:
        return Fraction(0) if v == 0 else None
    return Fraction(v * v, nsq << (2 * scale_bits))


def distance_at_least(value: int, norm_sq: int, eps: int, eps_bits: int, scale_bits: int) -> bool:
    """Exact DISTANCE test: |value| / (2^s sqrt(norm_sq)) >= eps / 2^t, i.e.
    value^2 * 2^(2t) >= eps^2 * 2^(2s) * norm_sq. A zero normal has no finite
    distance (the row is never crossed, or is the whole slice): always refused."""
    if norm_sq == 0:
        return False
    return (value * value) << (2 * eps_bits) >= (eps * eps * norm_sq) << (2 * scale_bits)


def distance_below_next(value: int, norm_sq: int, eps: int, eps_bits: int, scale_bits: int) -> bool:
    """Exact minimality test: distance < (eps + 1) / 2^t, i.e.
    value^2 * 2^(2t) < (eps+1)^2 * 2^(2s) * norm_sq."""
    return (value * value) << (2 * eps_bits) < ((eps + 1) ** 2 * norm_sq) << (2 * scale_bits)


def max_eps(value: int, norm_sq: int, eps_bits: int, scale_bits: int) -> int | None:
    """Largest E with distance_at_least(...) true; None for a zero normal (never a DISTANCE row)."""
    if norm_sq == 0:
        return None
    return isqrt(((value * value) << (2 * eps_bits)) // (norm_sq << (2 * scale_bits)))


def eps_cap(model: FixedPointModel, eps_bits: int) -> int:
    """Published cap: floor(2^t * real-unit diagonal of the free box)."""
    box = free_box(model)
    diag_sq = sum((hi - lo) ** 2 for lo, hi in zip(box.lower, box.upper))
    return isqrt((diag_sq << (2 * eps_bits)) >> (2 * model.scale_bits))


def counterexample_error(model: FixedPointModel, slice_values: Sequence[int], y: int, cls: int,
                         point: RationalPoint, u: Sequence[int], eps: int, eps_bits: int) -> str | None:
    """Why `point` (free coordinates P / D on slice `slice_values`) does not
    prove eps minimal, or None when it does: it lies in the box, class `cls`
    (!= y) at least ties y there in the exact forward pass (D * logits from
    `QuantisedMLP.scaled_logits`), and it is closer to u than (E+1)/2^t:

        ||P - D u||^2 2^(2t)  <  (E+1)^2 2^(2s) D^2 .

    Such a point is an input the certificate's radius does not cover, so the
    true radius is below (E+1)/2^t."""
    nums, den = point.numerators, point.denominator
    if type(den) is not int or den <= 0 or not all(type(v) is int for v in nums):
        return "the counterexample must be integers over a positive integer denominator"
    if len(nums) != len(u):
        return f"the counterexample needs {len(u)} free coordinates"
    if not point.in_box(free_box(model)):
        return "the counterexample lies outside the box"
    if type(cls) is not int or not 0 <= cls < model.net.n_classes or cls == y:
        return f"the counterexample names class {cls!r}, not another class of the model"
    full = [den * v for v in model.with_slice([0] * model.net.n_inputs, slice_values)]
    for c, v in zip(model.free_columns, nums):
        full[c] = v
    logits = model.net.scaled_logits(full, den)
    if logits[cls] < logits[y]:
        return f"class {cls} does not reach the decision {y} at the counterexample"
    dist_sq = sum((p - den * x) ** 2 for p, x in zip(nums, u))
    if not (dist_sq << (2 * eps_bits)) < ((eps + 1) ** 2 * den * den) << (2 * model.scale_bits):
        return "the counterexample is not closer than (E+1)/2^t: eps is not maximal"
    return None


# ---------------------------------------------------------------- systems

def facet_system(region: Region, k: int) -> tuple[list[HalfSpace], HalfSpace, bool]:
    """Rows of P_R plus the equality z_k(u) = 0, i.e. a_k.u = -c_k."""
    f = region.neurons[k]
    return region.rows(), HalfSpace(f.normal, -f.offset), True


def class_system(region: Region, y: int, j: int) -> tuple[list[HalfSpace], HalfSpace, bool]:
    """Rows of P_R plus z_j >= z_y, i.e. (a_y - a_j).u <= -(c_y - c_j)."""
    d = region.decision_form(y, j)
    return region.rows(), HalfSpace(d.normal, -d.offset), False


# ---------------------------------------------------------------- oracle

@dataclass(frozen=True)
class FacetInfo:
    nonempty: bool
    farkas: FarkasCertificate | None


@dataclass(frozen=True)
class ClassInfo:
    reachable: bool
    farkas: FarkasCertificate | None
    tie_point: RationalPoint | None


class RegionOracle(Protocol):
    def facet(self, region: Region, k: int) -> FacetInfo: ...

    def no_class(self, region: Region, y: int, j: int) -> ClassInfo: ...


def _round_point(v: np.ndarray, scale_bits: int, extra_bits: int, box: Box) -> RationalPoint:
    """v (real units) as a rational with denominator 2^extra_bits, clipped into the box."""
    den = 1 << extra_bits
    nums = []
    for x, lo, hi in zip(v, box.lower, box.upper):
        n = int(round(float(x) * (1 << scale_bits) * den))
        nums.append(min(max(n, lo * den), hi * den))
    return RationalPoint(tuple(nums), den)


def _exact_point(rows: list[HalfSpace], extra: HalfSpace | None, box: Box, scale_bits: int,
                 phase1: fk.Phase1) -> RationalPoint | None:
    """Round the phase-1 point to a rational that satisfies every row exactly."""
    if phase1.margin > 0:
        return None
    check = rows + ([extra] if extra is not None else [])
    for extra_bits in (0, 8, 16, 24, 32, 48):
        p = _round_point(phase1.point, scale_bits, extra_bits, box)
        if all(sum(n * x for n, x in zip(r.normal, p.numerators)) <= r.bound * p.denominator for r in check):
            return p
    return None


def exact_point(rows: list[HalfSpace], extra: HalfSpace | None, box: Box, scale_bits: int) -> RationalPoint | None:
    """An exact point of {u in box : rows, extra} (as deep inside as the LP finds), or None."""
    return _exact_point(rows, extra, box, scale_bits, fk.solve_phase1(rows, extra, False, box, scale_bits))


def lp_representative(region: Region, box: Box, scale_bits: int) -> RationalPoint | None:
    """An exact point of P_R (as deep inside as the LP finds), or None."""
    rows = region.rows()
    return _exact_point(rows, None, box, scale_bits, fk.solve_phase1(rows, None, False, box, scale_bits))


def tie_point(plus: RationalPoint, minus: RationalPoint, form: AffineForm) -> RationalPoint | None:
    """The point on the segment plus..minus where form = 0 (form(plus) >= 0 >= form(minus))."""
    vp, vm = plus.form_value(form), minus.form_value(form)  # den_p*f(p), den_m*f(m)
    if vp < 0 or vm > 0:
        return None
    if vp == 0:
        return plus
    dp, dm = plus.denominator, minus.denominator
    # q = (f(p) m - f(m) p) / (f(p) - f(m)) with f(p) = vp/dp, p = P/dp, f(m) = vm/dm, m = M/dm:
    # q = (vp M - vm P) / (vp dm - vm dp).
    nums = tuple(vp * xm - vm * xp for xp, xm in zip(plus.numerators, minus.numerators))
    den = vp * dm - vm * dp
    g = math.gcd(den, *nums)
    return RationalPoint(tuple(x // g for x in nums), den // g)


class LPRegionOracle:
    """Answers the oracle questions with HiGHS + exact Farkas rounding, memoised."""

    def __init__(self, model: FixedPointModel):
        self.model = model
        self.box = free_box(model)
        self.scale_bits = model.scale_bits
        self._facets: dict = {}
        self._classes: dict = {}
        self.lp_calls = 0

    def facet(self, region: Region, k: int) -> FacetInfo:
        key = (region.key, k)
        hit = self._facets.get(key)
        if hit is None:
            rows, extra, eq = facet_system(region, k)
            p1 = fk.solve_phase1(rows, extra, eq, self.box, self.scale_bits)
            self.lp_calls += 1
            if p1.margin <= fk.FEASIBILITY_TOLERANCE:
                hit = FacetInfo(True, None)
            else:
                hit = FacetInfo(False, fk.find_certificate(rows, extra, eq, self.box, self.scale_bits, p1))
            self._facets[key] = hit
        return hit

    def no_class(self, region: Region, y: int, j: int) -> ClassInfo:
        key = (region.key, y, j)
        hit = self._classes.get(key)
        if hit is None:
            hit = self._compute_class(region, y, j)
            self._classes[key] = hit
        return hit

    def _compute_class(self, region: Region, y: int, j: int) -> ClassInfo:
        rows, extra, eq = class_system(region, y, j)
        p1 = fk.solve_phase1(rows, extra, eq, self.box, self.scale_bits)
        self.lp_calls += 1
        if p1.margin > fk.FEASIBILITY_TOLERANCE:
            # Logit rows sit at a far larger scale than first-layer rows: per-layer multiplier widths.
            caps = fk.exact_multiplier_bits(self.model.net.hidden_sizes, self.scale_bits) + (fk.MAX_MULTIPLIER_BITS,)
            return ClassInfo(False, fk.find_certificate(rows, extra, eq, self.box, self.scale_bits, p1, caps), None)
        minus = _exact_point(rows, extra, self.box, self.scale_bits, p1)
        form = region.decision_form(y, j)
        plus_row = HalfSpace(tuple(-a for a in form.normal), form.offset)  # z_y - z_j >= 0
        p2 = fk.solve_phase1(rows, plus_row, False, self.box, self.scale_bits)
        self.lp_calls += 1
        plus = _exact_point(rows, plus_row, self.box, self.scale_bits, p2)
        tie = tie_point(plus, minus, form) if plus is not None and minus is not None else None
        return ClassInfo(True, None, tie)
