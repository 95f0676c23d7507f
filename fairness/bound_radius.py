"""The bound radius: a certified l2 radius by linear bound propagation (CROWN), for networks too wide
to enumerate.

For a query x* with decision y, eps is certified when for every sensitive slice s and every input x
with x's sensitive columns set to s, its other (free) columns within l2 distance eps of x*'s and x
inside the domain box, every other class j has a logit strictly below y's. Region enumeration finds
the exact radius; here a sound lower bound on every margin z_y - z_j over that set is computed in
polynomial time, and eps is the largest E / 2^t (bisection) at which every bound is positive.

The bound, on the integer network of `QuantisedMLP` (z_0 = W_0 x + b_0, h = relu(z), ...), is
CROWN's back-substitution: a linear form in h_k is bounded below through the ReLU of layer k by
relaxations, per neuron with pre-activation bounds l <= z <= u,

    stable on (l >= 0):   h = z                          stable off (u <= 0):  h = 0
    unstable, lower:      h >= (A / 2^16) z,  A in {0, 2^16} (A = 2^16 when u >= -l, CROWN's choice)
    unstable, upper:      h <= (T / 2^16)(z - l),  T = ceil(2^16 u / (u - l))  (any T >= that is valid)

(a coefficient >= 0 takes the lower relaxation, < 0 the upper), then through the affine layer below,
down to a linear form a.x + c in the input, which is minimised over the set (ball and box together)
by weak duality: for any box multipliers nu_lo, nu_hi >= 0 (per free column),

    min over the set of a.x  >=  nu_lo.lo - nu_hi.hi + a'.x* - eps ||a'||,   a' = a - nu_lo + nu_hi

(the box constraints moved into the objective, then the ball alone, exactly), with ||a'|| rounded up
to N / 2^16 (N^2 >= 2^32 sum a'^2). Every choice of nu is sound, so a proof can take them as private
inputs: nu = 0 is the ball alone, nu = (a+, a-) the box alone (a' = 0), and the multipliers of the
optimum (from the best ball multiplier mu, found in float: nu_lo = a + 2 mu (lo - x*) where the
minimiser sits on lo, likewise on hi) are at least as good as both. Each layer multiplies the whole
inequality by 2^16, so every quantity is an exact integer; the pre-activation bounds l, u of each
hidden layer come from the same procedure on its neurons (both signs) and are rounded outward to
integers. Every step is a valid inequality whatever the slopes in their families, so the radius is
sound in exact arithmetic; it is never above the exact radius, and usually below it.

The search runs the same propagation in float64 (numpy, all neurons of a layer at once) and confirms
its answer exactly; the certificate's eps is always one the exact bound proves.

Optimised slopes (alpha_bits > 0, the default): relu(z) >= alpha z holds for every real z and every alpha
in [0, 1], so each bounded quantity (every neuron's lower and upper bound of layers >= 1, every margin) may
take a slope of its own for every neuron below it, whatever that neuron's bounds. `radius_search` starts
from CROWN's radius and slopes, optimises the slopes (`fairness.alpha_crown`, dyadic at 2^-alpha_bits),
moves eps to the largest they prove, and repeats; every candidate is confirmed in exact integers. Its slopes
are what a proof's witness holds.
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from .slope_plans import DEFAULT_ALPHA_BITS, SlicePlan, Slopes, model_key
from .certificate import Certificate
from .errors import CertificationError
from .fixed_point import FixedPointModel
from .radius import largest_passing
from .multipliers import NORM_BITS, RELAXATION_SLOPE_BITS, best_multiplier, box_multipliers
from .regions import eps_cap

SLOPE_ONE = 1 << RELAXATION_SLOPE_BITS
CERTIFIED, FLIP = "certified", "counterfactual_flip"


@dataclass(frozen=True)
class LayerBounds:
    """Pre-activation bounds of one hidden layer (integers at its own scale) and the slopes they give."""

    lower: tuple[int, ...]
    upper: tuple[int, ...]

    def slopes(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(A, T, offset) per neuron: lower slope, upper slope (both at 2^16) and the upper line's l."""
        a, t, off = [], [], []
        for l, u in zip(self.lower, self.upper):
            if l >= 0:  # active: h = z
                slopes = (SLOPE_ONE, SLOPE_ONE, 0)
            elif u <= 0:  # dead: h = 0
                slopes = (0, 0, 0)
            else:  # unstable: CROWN's lower line, the tightest upper line at 2^-16, ceil(2^16 u / (u - l))
                slopes = (SLOPE_ONE if u >= -l else 0, -((-u * SLOPE_ONE) // (u - l)), l)
            a.append(slopes[0])
            t.append(slopes[1])
            off.append(slopes[2])
        return tuple(a), tuple(t), tuple(off)


@dataclass(frozen=True)
class BoundCertificate:
    """A query's bound-radius certificate: eps / 2^eps_bits (or a flip: eps 0)."""

    query: tuple[int, ...]
    decision: int
    eps: int
    eps_bits: int
    status: str
    capped: bool = False
    flip_slice: int | None = None

    @property
    def eps_value(self) -> float:
        return self.eps / (1 << self.eps_bits)

    def certificate(self, model: FixedPointModel) -> Certificate:
        """The same claims as a `fairness.certificate.Certificate` with no covering sets (what a proof of
        the bound statement states; the region checker does not apply to it)."""
        from .certificate import CERTIFIED as REGION_CERTIFIED, FLIP as REGION_FLIP, Flip

        if self.status == FLIP:
            assert self.flip_slice is not None
            values = tuple(model.slices()[self.flip_slice])
            z = model.net.logits(model.with_slice(self.query, values))
            tie = sum(1 for v in z if v == max(z)) > 1
            return Certificate(query=self.query, decision=self.decision, eps=0, eps_bits=self.eps_bits,
                               status=REGION_FLIP, flip=Flip(self.flip_slice, values, tie))
        return Certificate(query=self.query, decision=self.decision, eps=self.eps, eps_bits=self.eps_bits,
                           status=REGION_CERTIFIED)


# ------------------------------------------------------------------------------------ exact propagation


def _isqrt_ceil(n: int) -> int:
    r = math.isqrt(n)
    return r if r * r == n else r + 1


class _InputSet:
    """The free columns within l2 distance E / 2^t of the query's (at the input scale 2^s), inside the box,
    the sensitive columns fixed at one slice: the set a bound is taken over."""

    def __init__(self, model: FixedPointModel, x: Sequence[int], eps: int, eps_bits: int):
        self.x = tuple(x)
        self.free = model.free_columns
        self.fixed = model.sensitive_columns
        self.lower, self.upper = model.box_lower, model.box_upper
        self.eps, self.eps_bits, self.scale_bits = eps, eps_bits, model.scale_bits
        self._eps_float = float(Fraction(eps << model.scale_bits, 1 << eps_bits))  # in input units

    def minimum_scaled(self, a: Sequence[int], c: int) -> int:
        """An integer <= 2^t * min (a.x + c) over the set (x real), by the box multipliers of
        `box_multipliers` (any would be sound)."""
        fixed = c + sum(a[k] * self.x[k] for k in self.fixed)
        free = [a[k] for k in self.free]
        q = [self.x[k] for k in self.free]
        lo = [self.lower[k] for k in self.free]
        hi = [self.upper[k] for k in self.free]
        nu_lo, nu_hi = box_multipliers(free, q, lo, hi, self._eps_float)
        reduced = [ak - nl + nh for ak, nl, nh in zip(free, nu_lo, nu_hi)]
        norm = _isqrt_ceil(sum(v * v for v in reduced) << (2 * NORM_BITS))  # >= 2^NORM_BITS ||a'||
        value = fixed + sum(r * qk + nl * lk - nh * hk for r, qk, nl, lk, nh, hk in zip(reduced, q, nu_lo, lo, nu_hi, hi))
        radius_term = -((-(self.eps * norm) << self.scale_bits) >> NORM_BITS)  # ceil(eps ||a'|| 2^t)
        return (value << self.eps_bits) - radius_term


def _back_substitute(model: FixedPointModel, rows: list[list[int]], consts: list[int], top: int,
                     layers: Sequence[LayerBounds], slopes: Slopes | None = None,
                     bits: int = 0) -> tuple[list[list[int]], list[int]]:
    """Linear forms on h_{top-1} (the output of hidden layer top-1; `rows` . h + consts) to forms on the
    input whose values, for every x of the set, are <= 2^(16 top) times theirs. `slopes` (one tuple per layer
    below, a / 2^bits each): the lower slopes of every neuron, whatever its bounds (relu(z) >= alpha z for
    any alpha in [0, 1]); None: CROWN's."""
    net = model.net
    for k in range(top - 1, -1, -1):
        a_slope, t_slope, offset = layers[k].slopes()
        if slopes is not None:
            a_slope = tuple(a << (RELAXATION_SLOPE_BITS - bits) for a in slopes[k])
        w, b = net.weights[k], net.biases[k]
        mapped, new_consts = [], []
        for row, c in zip(rows, consts):
            m = [lam * (a_slope[j] if lam >= 0 else t_slope[j]) for j, lam in enumerate(row)]
            d = sum(-lam * t_slope[j] * offset[j] for j, lam in enumerate(row) if lam < 0)
            mapped.append([sum(m[j] * w[j][i] for j in range(len(m)) if m[j]) for i in range(len(w[0]))])
            new_consts.append(c * SLOPE_ONE + d + sum(mj * bj for mj, bj in zip(m, b)))
        rows, consts = mapped, new_consts
    return rows, consts


def _form_of_layer(model: FixedPointModel, k: int, i: int, sign: int) -> tuple[list[int], int]:
    """sign * z_k[i] as a form on h_{k-1} (or on x when k = 0)."""
    return [sign * v for v in model.net.weights[k][i]], sign * model.net.biases[k][i]


def layer_bounds(model: FixedPointModel, inputs: _InputSet, plan: SlicePlan | None = None) -> list[LayerBounds]:
    """Pre-activation bounds of every hidden layer over the input set, layer by layer (with the plan's
    slopes for layers >= 1, else CROWN's)."""
    out: list[LayerBounds] = []
    for k in range(len(model.net.hidden_sizes)):
        lower, upper = [], []
        scale = (inputs.eps_bits + RELAXATION_SLOPE_BITS * k)
        for i in range(model.net.hidden_sizes[k]):
            bounds = []
            for side, sign in enumerate((1, -1)):
                row, c = _form_of_layer(model, k, i, sign)
                slopes = plan.neurons[k - 1][i][side] if plan is not None and k else None
                rows, consts = _back_substitute(model, [row], [c], k, out, slopes, plan.bits if plan else 0)
                bounds.append(inputs.minimum_scaled(rows[0], consts[0]))
            lower.append(bounds[0] >> scale)  # floor
            upper.append(-((bounds[1]) >> scale))  # -floor(-UB) = ceil(UB)
        out.append(LayerBounds(tuple(lower), tuple(upper)))
    return out


def margin_lower_bounds(model: FixedPointModel, x: Sequence[int], decision: int, eps: int,
                        eps_bits: int, plan: SlicePlan | None = None) -> dict[int, int]:
    """Per class j != decision, an integer <= 2^(t + 16 L) min (z_y - z_j) over the set around x (x's own
    sensitive values fix the slice): positive for every j means eps = E / 2^t is certified on this slice.
    `plan`: the slice's optimised lower slopes (None: CROWN's)."""
    inputs = _InputSet(model, x, eps, eps_bits)
    layers = layer_bounds(model, inputs, plan)
    w, b = model.net.weights[-1], model.net.biases[-1]
    out = {}
    for j in range(len(w)):
        if j == decision:
            continue
        row = [wy - wj for wy, wj in zip(w[decision], w[j])]
        slopes = plan.margins[j] if plan is not None else None
        rows, consts = _back_substitute(model, [row], [b[decision] - b[j]], len(layers), layers, slopes,
                                        plan.bits if plan else 0)
        out[j] = inputs.minimum_scaled(rows[0], consts[0])
    return out


def plans_certify(model: FixedPointModel, query: Sequence[int], decision: int, eps: int, eps_bits: int,
                  plans: Sequence[SlicePlan] | None) -> bool:
    """Exactly: every margin bound of every slice is positive at eps = E / 2^t with these slopes (one plan
    per slice; None: CROWN's)."""
    slices = model.slices()
    return all(v > 0 for i, s in enumerate(slices)
               for v in margin_lower_bounds(model, model.with_slice(query, s), decision, eps, eps_bits,
                                            plans[i] if plans is not None else None).values())


def certifies(model: FixedPointModel, query: Sequence[int], decision: int, eps: int, eps_bits: int,
              alpha_bits: int = DEFAULT_ALPHA_BITS) -> bool:
    """Exactly: every margin bound of every slice is positive at eps = E / 2^t, with the slopes a proof of a
    statement with `alpha_bits` takes (those `radius_search` found for the query; 0: CROWN's)."""
    plans = radius_search(model, query, eps_bits, alpha_bits).plans if alpha_bits else None
    return plans_certify(model, query, decision, eps, eps_bits, plans)


# ------------------------------------------------------------------------------------ float propagation


class _FloatNet:
    """The same propagation in float64 on real units, every neuron of a layer at once: the search's."""

    def __init__(self, model: FixedPointModel):
        s = model.scale_bits
        self.weights = [np.array(w, dtype=float) / (1 << s) for w in model.net.weights]
        self.biases = [np.array(b, dtype=float) / (1 << (s * (l + 2))) for l, b in enumerate(model.net.biases)]
        self.free = np.array(model.free_columns, dtype=int)
        self.fixed = np.array(model.sensitive_columns, dtype=int)
        self.lo = np.array(model.box_lower, dtype=float) / (1 << s)
        self.hi = np.array(model.box_upper, dtype=float) / (1 << s)

    def _minimum(self, a: np.ndarray, c: np.ndarray, x: np.ndarray, eps: float) -> np.ndarray:
        """min (a.x + c) over the set, by the dual bound at its best multiplier (float)."""
        af, xf, lo, hi = a[:, self.free], x[self.free], self.lo[self.free], self.hi[self.free]
        fixed = c + a[:, self.fixed] @ x[self.fixed]
        if eps <= 0:
            return fixed + af @ xf
        mu = best_multiplier(af, xf, lo, hi, eps)
        with np.errstate(divide="ignore", invalid="ignore"):
            point = np.where(mu[:, None] > 0, np.clip(xf - af / (2 * mu[:, None]), lo, hi), np.where(af > 0, lo, hi))
        return fixed + (af * point).sum(1) + mu * (((point - xf) ** 2).sum(1) - eps * eps)

    def _back(self, rows: np.ndarray, consts: np.ndarray, top: int, layers) -> tuple[np.ndarray, np.ndarray]:
        for k in range(top - 1, -1, -1):
            l, u = layers[k]
            unstable = (l < 0) & (u > 0)
            on = l >= 0
            lower = np.where(on, 1.0, np.where(unstable & (u >= -l), 1.0, 0.0))
            with np.errstate(divide="ignore", invalid="ignore"):
                upper = np.where(on, 1.0, np.where(unstable, u / (u - l), 0.0))
            offset = np.where(unstable, l, 0.0)
            m = np.where(rows >= 0, rows * lower, rows * upper)
            consts = consts - (np.minimum(rows, 0) * upper * offset).sum(1) + m @ self.biases[k]
            rows = m @ self.weights[k]
        return rows, consts

    def margins(self, x: np.ndarray, decision: int, eps: float) -> np.ndarray:
        layers: list[tuple[np.ndarray, np.ndarray]] = []
        for k, w in enumerate(self.weights[:-1]):
            rows = np.vstack([w, -w])
            consts = np.concatenate([self.biases[k], -self.biases[k]])
            rows, consts = self._back(rows, consts, k, layers)
            low = self._minimum(rows, consts, x, eps)
            n = len(w)
            layers.append((low[:n], -low[n:]))
        w, b = self.weights[-1], self.biases[-1]
        others = [j for j in range(len(w)) if j != decision]
        rows, consts = self._back(w[decision] - w[others], b[decision] - b[others], len(layers), layers)
        return self._minimum(rows, consts, x, eps)


# ------------------------------------------------------------------------------------ the radius




@dataclass(frozen=True)
class RadiusSearch:
    """What the search finds for a query: eps = E / 2^eps_bits (0 for a flip) and the slopes that prove it (one
    plan per slice; None: CROWN's, or a flip)."""

    decision: int
    eps: int
    status: str
    flip_slice: int | None = None
    plans: tuple[SlicePlan, ...] | None = None


_SEARCHES: OrderedDict = OrderedDict()
_SEARCHES_LOCK = threading.Lock()  # a service may prove in several threads
_KEPT = 32


def radius_search(model: FixedPointModel, query: Sequence[int], eps_bits: int = 16,
                  alpha_bits: int = DEFAULT_ALPHA_BITS) -> RadiusSearch:
    """The bound radius of `query` and the slopes that prove it (`alpha_bits` bits; 0: CROWN's).

    Deterministic: a prover's circuit runs it again for the query it proves and takes its slopes (kept in
    memory, as the certificate and then its proof ask for the same search)."""
    query = tuple(int(v) for v in query)
    key = (model_key(model), query, eps_bits, alpha_bits)
    with _SEARCHES_LOCK:
        if key in _SEARCHES:
            _SEARCHES.move_to_end(key)
            return _SEARCHES[key]
    found = _search(model, query, eps_bits, alpha_bits)
    remember_search(model, query, eps_bits, alpha_bits, found)
    return found


def searched_radius(model: FixedPointModel, query: Sequence[int], eps_bits: int, alpha_bits: int) -> RadiusSearch:
    """`radius_search` without its memory (what a forked child computes for its parent, which remembers it with
    `remember_search`: the child takes no lock its parent's threads might have held across the fork)."""
    return _search(model, tuple(int(v) for v in query), eps_bits, alpha_bits)


def remember_search(model: FixedPointModel, query: Sequence[int], eps_bits: int, alpha_bits: int,
                    found: RadiusSearch) -> None:
    """Keep `found` as the search of `query`, so that `radius_search` (the certificate, then the proof's
    slopes) returns it. Only for a search made by `searched_radius` with these arguments: the statement checks
    the slopes either way, so a wrong one is refused, never proved."""
    key = (model_key(model), tuple(int(v) for v in query), eps_bits, alpha_bits)
    with _SEARCHES_LOCK:
        _SEARCHES[key] = found
        _SEARCHES.move_to_end(key)
        while len(_SEARCHES) > _KEPT:
            _SEARCHES.popitem(last=False)


def bound_certificate(model: FixedPointModel, query: Sequence[int], *, eps_bits: int = 16,
                      alpha_bits: int = DEFAULT_ALPHA_BITS) -> BoundCertificate:
    """The bound-radius certificate of `query` (integers at the model's scale, inside the box), with the
    optimised slopes of `alpha_bits` bits (`fairness.alpha_crown`; 0: CROWN's, what statements without
    optimised slopes prove)."""
    query = tuple(int(v) for v in query)
    if len(query) != model.net.n_inputs or not model.in_box(query):
        raise CertificationError("the query must have one value per input, inside the domain box")
    found = radius_search(model, query, eps_bits, alpha_bits)
    cap = eps_cap(model, eps_bits)
    return BoundCertificate(query, found.decision, found.eps, eps_bits, found.status,
                            capped=found.status == CERTIFIED and found.eps == cap, flip_slice=found.flip_slice)


def _search(model: FixedPointModel, query: tuple[int, ...], eps_bits: int, alpha_bits: int) -> RadiusSearch:
    net = model.net
    y = net.decision(query)
    slices = model.slices()
    for index, s in enumerate(slices):
        z = net.logits(model.with_slice(query, s))
        if any(z[j] >= z[y] for j in range(len(z)) if j != y):  # another decision, or a tie, at eps 0
            return RadiusSearch(y, 0, FLIP, flip_slice=index)
    cap = eps_cap(model, eps_bits)
    fnet = _FloatNet(model)
    points = [np.array(model.with_slice(query, s), dtype=float) / (1 << model.scale_bits) for s in slices]

    def float_passes(e: int) -> bool:
        eps = e / (1 << eps_bits)
        return all(bool(np.all(fnet.margins(p, y, eps) > 0)) for p in points)

    def exact_passes(e: int) -> bool:
        return plans_certify(model, query, y, e, eps_bits, None)

    guess = cap if float_passes(cap) else largest_passing(float_passes, 0, cap)
    if exact_passes(guess):
        eps = guess
    else:  # float was optimistic: the exact bound decides, by bisection below the guess
        eps = largest_passing(exact_passes, 0, guess - 1) if guess > 0 else 0
    if not alpha_bits:
        return RadiusSearch(y, eps, CERTIFIED)
    eps, plans = _optimised_radius(model, query, y, eps, eps_bits, alpha_bits, cap)
    return RadiusSearch(y, eps, CERTIFIED, plans=plans)


SEARCH_ROUNDS = 6  # slopes optimised at E carry the bound to some E' > E, where they are optimised again


def _optimised_radius(model: FixedPointModel, query: Sequence[int], y: int, crown_eps: int, eps_bits: int,
                      bits: int, cap: int) -> tuple[int, tuple[SlicePlan, ...]]:
    """(E, slopes) with E as large as found at which the slopes prove every margin positive in exact
    integers; never below CROWN's radius `crown_eps`.

    Slopes stay sound at every eps, and with slopes fixed the bound falls as eps grows, so the largest eps
    some slopes prove (float bisection) is where to optimise next, from those slopes: each round moves E up
    until the slopes found there carry it no further. Candidates are checked exactly, largest first; the
    slopes optimised at CROWN's radius start from CROWN's own and keep the best, so they prove it too
    (down to the largest eps they prove exactly, if rounding cost the last step)."""

    from .alpha_crown import float_margins, optimise_plans  # torch: only where slopes are searched

    def passes(e: int, plans: Sequence[SlicePlan]) -> bool:
        return all(bool(np.all(m > 0)) for m in float_margins(model, query, y, e / (1 << eps_bits), plans))

    first = optimise_plans(model, query, y, crown_eps, eps_bits, bits)
    candidates, e, plans = [], crown_eps, first
    for round in range(SEARCH_ROUNDS):
        if not passes(e, plans):
            break
        reach = cap if passes(cap, plans) else largest_passing(lambda v: passes(v, plans), e, cap)
        if reach <= e:
            break
        candidates.append((e, reach, plans))  # from where the slopes were found to the largest eps they prove
        if round + 1 < SEARCH_ROUNDS and reach < cap:
            e, plans = reach, optimise_plans(model, query, y, reach, eps_bits, bits, warm=plans)
    for start, reach, plans in reversed(candidates):
        found = _largest_below(lambda v: plans_certify(model, query, y, v, eps_bits, plans), start, reach)
        if found is not None and found > crown_eps:
            return found, plans
    own = lambda v: plans_certify(model, query, y, v, eps_bits, first)  # noqa: E731  (monotone in eps)
    if own(crown_eps):
        return crown_eps, first
    crown = crown_plans(model, query, y, crown_eps, eps_bits, bits)  # CROWN's own choices: they prove crown_eps
    if plans_certify(model, query, y, crown_eps, eps_bits, crown):
        return crown_eps, crown
    return (largest_passing(own, 0, crown_eps - 1) if crown_eps > 0 else 0), first


def crown_plans(model: FixedPointModel, query: Sequence[int], y: int, eps: int, eps_bits: int,
                bits: int) -> tuple[SlicePlan, ...]:
    """CROWN's fixed slopes at eps = E / 2^t as plans of `bits` bits, exactly: per slice, the lower slope
    `LayerBounds.slopes` gives every neuron (1 on, 0 off, CROWN's rule when unstable; all in {0, 1}, so any
    `bits` holds them), for every bounded quantity. A proof taking them states what CROWN's rule proves."""
    if not 0 <= bits <= RELAXATION_SLOPE_BITS:
        raise ValueError(f"slopes of {bits} bits: at most {RELAXATION_SLOPE_BITS}")
    shift = RELAXATION_SLOPE_BITS - bits
    sizes, n_classes = model.net.hidden_sizes, model.net.n_classes
    plans = []
    for values in model.slices():
        layers = layer_bounds(model, _InputSet(model, model.with_slice(query, values), eps, eps_bits))
        lower = tuple(tuple(a >> shift for a in bounds.slopes()[0]) for bounds in layers)
        neurons = tuple(tuple((lower[:k], lower[:k]) for _ in range(size)) for k, size in enumerate(sizes) if k)
        unused = tuple(tuple(0 for _ in layer) for layer in lower)
        plans.append(SlicePlan(bits, neurons, tuple(unused if c == y else lower for c in range(n_classes))))
    return tuple(plans)


def _largest_below(passes: Callable[[int], bool], low: int, high: int) -> int | None:
    """The largest E in [low, high] with passes(E) (monotone), None if none: galloping down from high (the
    float search's reach, which the exact bound misses by a hair when it misses it), then bisection."""
    step, failed = 1, high + 1
    probe = high
    while not passes(probe):
        failed = probe
        if probe == low:
            return None
        probe = max(low, high - step)
        step *= 2
    return largest_passing(passes, probe, failed - 1)
