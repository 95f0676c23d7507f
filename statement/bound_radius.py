"""The bound radius in the circuit (fairness.bound_radius is its plaintext twin, value for value).

The statement of a bucket whose shape says radius "bound" (`k1-f1-bound`). Its public inputs are the
certificate statement's, in the same order (commitment C, decision y, E, status, flip slice, query x*,
then the card's lenses), so a bundle, the claims and every verifier read it as they read the others.
The circuit proves, from the committed weights:

- y is the model's decision at x* (exact forward pass, lowest index on a tie);
- status 0 (certified): for every sensitive slice s and every input x with x's sensitive columns at s,
  its free columns within l2 distance eps = E / 2^t of x*'s and x in the domain box, every class
  j != y has z_j(x) < z_y(x): eps is a certified radius, a lower bound on the true one;
- status 1 (a counterfactual flip): E = 0 and at slice f another class at least ties y;
- the lenses the shape has, by the certificate statement's own gadgets.

It never runs a solver; it checks CROWN's linear bound propagation, every choice a private input
checked only in the direction that keeps the bound sound, so any accepted witness gives a valid bound:

1. per hidden neuron and slice, bounds l <= z <= u: l 2^sc <= LB and u 2^sc >= UB for the back-
   substituted lower bounds LB of z and of -z (below); a wrong rounding direction fails the check;
2. per neuron a relaxation the bounds allow: on (l >= 0: h = z), off (u <= 0: h = 0) or unstable
   (l <= 0), below h >= alpha z with a private bit alpha, above h <= (T / 2^16)(z - l) with private
   0 <= T < 2^17 and T (u - l) >= 2^16 u (the line through (l, 0) lies above ReLU on [l, u]);
3. back-substitution of a form through each layer: a coefficient's sign (a private bit, range-checked)
   takes the lower relaxation when >= 0, the upper when < 0; each layer multiplies by 2^16;
4. the form a.x + c on the input set minimised by weak duality with private box multipliers
   nu_lo, nu_hi >= 0: LB 2^t = (c + nu_lo.lo - nu_hi.hi + a'.x*) 2^t - R, a' = a - nu_lo + nu_hi,
   with private N, R: N^2 >= 2^32 |a'|^2 (N >= 2^16 |a'|) and R 2^16 >= E N 2^s (R >= eps |a'| 2^t);
5. for every slice and class j != y: LB(z_y - z_j) > 0.

A shape with `alpha_bits` (optimised slopes, `statement.relaxation`) has no lower mode: every bounded
quantity (a neuron's lower or upper bound of layers >= 1, a margin) takes its own private slope alpha in
[0, 1] per neuron below it, h >= alpha z whatever the neuron's bounds (relu(z) >= alpha z everywhere); the
upper line and the modes stay as in 2. The slopes are the witness's `radius_slopes`, those the plaintext
search `fairness.bound_radius.radius_search` proved eps with.

Minimality: none is stated. The bound depends on the prover's choices (alpha, T, nu), so "the bound
fails at eps + 2^-t" would only say that one choice fails; eps is a certified lower bound, as the
fast statement's radius is. The honest prover takes fairness.bound_radius's choices, so the
proved eps is the plaintext's.

Widths (`bound_widths`): every private value is range-checked against a bound derived from the shape
(declared weight and bias bits, the box, eps's cap), so no product or sum can wrap the field.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from circuits.errors import CircuitError
from circuits.field import MAX_SIGNED_BITS, to_signed
from fairness.multipliers import NORM_BITS, RELAXATION_SLOPE_BITS as SLOPE_BITS, box_multipliers

from .checks import assert_nonnegative
from .commitment import committed_parameters
from .lenses.persistence import add_persistence
from .lenses.spread import add_spread
from .persistence import relu_of, sign_split
from .public_inputs import PublicInputs, declare_public_inputs, query_in_domain
from .relaxation import private_slopes, radius_layout, radius_plan_size
from .shape import BOUND_RADIUS, StatementShape
from .spread import argmax
from .widths import StatementWidths, bits, widths as shape_widths
from .witness import StatementPublic, StatementWitness

SLOPE_ONE = 1 << SLOPE_BITS


class BoundRadiusError(CircuitError):
    """A bound-radius shape or witness that cannot be proved."""


# ----------------------------------------------------------------------------- widths


@dataclass(frozen=True)
class FormWidths:
    """Bounds of a back-substituted form that starts at some layer: |coefficient| per layer on its way
    down (index k: on h_k's pre-activation side), then on the input, and its constant."""

    coefficient: tuple[int, ...]
    input_coefficient: int
    constant: int


@dataclass(frozen=True)
class BoundWidths:
    box: int  # |x_j|
    neuron: tuple[FormWidths, ...]  # per hidden layer: the forms of its neurons' bounds
    margin: FormWidths
    pre_activation: tuple[int, ...]  # per hidden layer: |l|, |u|
    quantities: tuple[tuple[str, int], ...]


def _form_widths(shape: StatementShape, top: int, start_coef: int, start_const: int, bound_l: Sequence[int]) -> FormWidths:
    WB = [1 << b for b in shape.weight_bits]
    BB = [1 << b for b in shape.bias_bits]
    lam, const = start_coef, start_const
    coef = [0] * top
    for k in range(top - 1, -1, -1):
        coef[k] = lam
        mu = lam * 2 * SLOPE_ONE
        const = const * SLOPE_ONE + shape.hidden_sizes[k] * (mu * bound_l[k] + mu * BB[k])
        lam = shape.hidden_sizes[k] * mu * WB[k]
    return FormWidths(tuple(coef), lam, const)


def _minimum_width(shape: StatementShape, form: FormWidths, box: int) -> int:
    """|LB 2^t| of the set minimum of a form with these widths."""
    a = form.input_coefficient
    d = shape.n_inputs
    reduced = 3 * a + 2
    norm = math.isqrt(d * reduced * reduced << (2 * NORM_BITS)) + 2
    value = form.constant + d * a * box + d * (reduced + 2 * (a + 1)) * box
    radius = ((shape.eps_cap * norm) << shape.scale_bits >> NORM_BITS) + 1
    return (value << shape.eps_bits) + radius


def bound_widths(shape: StatementShape) -> BoundWidths:
    WB = [1 << b for b in shape.weight_bits]
    BB = [1 << b for b in shape.bias_bits]
    box = max(max(abs(v) for v in shape.box_lower), max(abs(v) for v in shape.box_upper))
    neuron, pre = [], []
    for k in range(len(shape.hidden_sizes)):
        form = _form_widths(shape, k, WB[k], BB[k], pre)
        neuron.append(form)
        scale = shape.eps_bits + SLOPE_BITS * k
        pre.append((_minimum_width(shape, form, box) >> scale) + 1)
    margin = _form_widths(shape, len(shape.hidden_sizes), 2 * WB[-1], 2 * BB[-1], pre)
    q = [("bound pre-activation", max(pre)), ("bound margin", _minimum_width(shape, margin, box)),
         ("bound input coefficient", margin.input_coefficient),
         ("bound norm check", (3 * margin.input_coefficient + 2) ** 2 * shape.n_inputs << (2 * NORM_BITS))]
    q += [(f"bound layer {k} minimum", _minimum_width(shape, f, box)) for k, f in enumerate(neuron)]
    q += [("bound slope check", (4 * max(pre)) << (SLOPE_BITS + 2))]
    bad = [(name, b) for name, b in q if bits(b) >= MAX_SIGNED_BITS]
    if bad:
        raise BoundRadiusError("the bound radius could wrap around the field: "
                               + "; ".join(f"{name}: {bits(b)} bits" for name, b in bad))
    return BoundWidths(box, tuple(neuron), margin, tuple(pre), tuple(q))


# ----------------------------------------------------------------------------- hints
# The prover's choices, as module functions (a test swaps in a dishonest prover's and watches the
# constraints refuse it). Each returns what fairness.bound_radius chooses.


def floor_hint(scale: int):
    def floor_scaled(v: int) -> list[int]:
        return [to_signed(v) >> scale]
    return floor_scaled


def mode_hint(l: int, u: int) -> list[int]:
    """(on, off, alpha, T): the relaxation fairness.bound_radius.LayerBounds.slopes takes."""
    l, u = to_signed(l), to_signed(u)
    if l >= 0:
        return [1, 0, 0, 0]
    if u <= 0:
        return [0, 1, 0, 0]
    return [0, 0, int(u >= -l), -((-u * SLOPE_ONE) // (u - l))]


def upper_hint(l: int, u: int) -> list[int]:
    """(on, off, T): the upper relaxation of a shape with optimised lower slopes (which need no mode)."""
    on, off, _, t = mode_hint(l, u)
    return [on, off, t]



def multiplier_hint(q: Sequence[int], lo: Sequence[int], hi: Sequence[int], eps: float):
    def multipliers(*a: int) -> list[int]:
        nu_lo, nu_hi = box_multipliers([to_signed(v) for v in a], q, lo, hi, eps)
        return [*nu_lo, *nu_hi]
    return multipliers


def norm_hint(*reduced: int) -> list[int]:
    total = sum(to_signed(v) ** 2 for v in reduced) << (2 * NORM_BITS)
    r = math.isqrt(total)
    return [r if r * r == total else r + 1]


def radius_hint(scale_bits: int):
    def radius(eps: int, norm: int) -> list[int]:
        return [-((-(to_signed(eps) * to_signed(norm)) << scale_bits) >> NORM_BITS)]
    return radius


# ----------------------------------------------------------------------------- gadgets


@dataclass(frozen=True)
class Relaxation:
    """A neuron's relaxation, slopes at 2^16: h >= lower z / 2^16 and h <= upper (z - offset) / 2^16."""

    lower: object
    upper: object
    offset: object


def neuron_relaxation(cs, lower_bound, upper_bound_neg, scale: int, bound: int, optimised: bool = False) -> Relaxation:
    """Bounds l, u from the scaled lower bounds of z and of -z (both * 2^scale), then the relaxation.
    |l|, |u| <= bound; the scaled inputs are at most `wide` in absolute value. `optimised`: the lower slopes
    are each quantity's own (`statement.relaxation`), so only the upper line is chosen here."""
    wide = (bound + 1) << scale
    (l,) = cs.hint("floor", floor_hint(scale), [lower_bound], 1)
    (minus_u,) = cs.hint("floor", floor_hint(scale), [upper_bound_neg], 1)
    u = -minus_u
    for v in (l, u):
        cs.assert_range(v + bound, bits(2 * bound))  # |l|, |u| bounded: nothing below can wrap
    assert_nonnegative(cs, lower_bound - l * (1 << scale), 2 * wide)  # l 2^sc <= LB(z)
    assert_nonnegative(cs, upper_bound_neg + u * (1 << scale), 2 * wide)  # u 2^sc >= -LB(-z)
    if optimised:
        on, off, t = cs.hint("upper", upper_hint, [l, u], 3)
        alpha = None
    else:
        on, off, alpha, t = cs.hint("mode", mode_hint, [l, u], 4)
    for b in (on, off, alpha) if alpha is not None else (on, off):
        cs.assert_is_bool(b)
    unstable = 1 - on - off
    cs.assert_is_bool(unstable)  # not both
    assert_nonnegative(cs, cs.mul(on, l), bound)  # on => l >= 0
    assert_nonnegative(cs, cs.mul(off, -u), bound)  # off => u <= 0
    assert_nonnegative(cs, cs.mul(unstable, -l), bound)  # unstable => l <= 0
    cs.assert_range(t, SLOPE_BITS + 1)
    cs.assert_equal(cs.mul(1 - unstable, t), 0)
    excess = cs.mul(t, u - l) - u * SLOPE_ONE  # T (u - l) - 2^16 u >= 0: the line lies above ReLU
    assert_nonnegative(cs, cs.mul(unstable, excess), (4 * bound) << (SLOPE_BITS + 2))
    lower = None if alpha is None else SLOPE_ONE * on + SLOPE_ONE * cs.mul(unstable, alpha)
    upper = SLOPE_ONE * on + t
    return Relaxation(lower, upper, cs.mul(unstable, l))


def back_substitute(cs, shape: StatementShape, form: FormWidths, weights, biases, row, const, top: int,
                    layers: Sequence[Sequence[Relaxation]], lower: Sequence[Sequence] | None = None):
    """A form on h_{top-1} to a form on the input, each layer's inequality scaled by 2^16. `lower`: this
    form's own lower slopes (one list per layer below, at 2^16), in place of the relaxations'."""
    for k in range(top - 1, -1, -1):
        mu, extra = [], []
        for j, r in enumerate(layers[k]):
            pos, neg = sign_split(cs, row[j], form.coefficient[k])
            mu.append(cs.mul(pos, r.lower if lower is None else lower[k][j]) + cs.mul(neg, r.upper))
            extra.append(cs.mul(cs.mul(neg, r.upper), r.offset))
        const = const * SLOPE_ONE - cs.sum(extra) + cs.inner_product(mu, biases[k])
        n_in = shape.n_inputs if k == 0 else shape.hidden_sizes[k - 1]
        row = [cs.sum([cs.mul(mu[i], weights[k][i][j]) for i in range(len(mu))]) for j in range(n_in)]
    return row, const


def free_minimum(cs, shape: StatementShape, form: FormWidths, a, query, eps, eps_float: float,
                 query_free: Sequence[int] | None):
    """2^t * a lower bound of sum over the free columns of a_k x_k on the ball around the query inside the
    box, by the box multipliers; a form's constant and sensitive columns are added by the caller
    (`fixed_part`), so one free minimum serves every slice whose form has these free coefficients."""
    free = shape.free_columns
    lo = [shape.box_lower[k] for k in free]
    hi = [shape.box_upper[k] for k in free]
    A = form.input_coefficient + 1
    hint = multiplier_hint(query_free or [0] * len(free), lo, hi, eps_float)
    nus = cs.hint("multipliers", hint, [a[k] for k in free], 2 * len(free))
    nu_lo, nu_hi = nus[:len(free)], nus[len(free):]
    for v in nus:
        cs.assert_range(v, bits(A))  # 0 <= nu < 2^bits(A)
    reduced = [a[k] - nl + nh for k, nl, nh in zip(free, nu_lo, nu_hi)]
    (norm,) = cs.hint("norm", norm_hint, reduced, 1)
    norm_bound = math.isqrt(len(free) * (3 * A) ** 2 << (2 * NORM_BITS)) + 2
    cs.assert_range(norm, bits(norm_bound))
    square = cs.sum([cs.square(v) for v in reduced])
    assert_nonnegative(cs, cs.square(norm) - square * (1 << (2 * NORM_BITS)), 4 * norm_bound ** 2)
    (radius,) = cs.hint("radius", radius_hint(shape.scale_bits), [eps, norm], 1)
    radius_bound = ((shape.eps_cap << bits(norm_bound)) << shape.scale_bits >> NORM_BITS) + 2
    cs.assert_range(radius, bits(radius_bound))
    assert_nonnegative(cs, radius * (1 << NORM_BITS) - cs.mul(eps, norm) * (1 << shape.scale_bits),
                       radius_bound << (NORM_BITS + 2))
    value = cs.sum([cs.mul(r, query[k]) for r, k in zip(reduced, free)]) + \
        cs.sum([nl * l - nh * h for nl, l, nh, h in zip(nu_lo, lo, nu_hi, hi)])
    return value * (1 << shape.eps_bits) - radius


def fixed_part(cs, shape: StatementShape, a, const, x):
    """2^t * (the form's constant and its sensitive columns at the slice's values)."""
    return (const + cs.sum([cs.mul(a[k], x[k]) for k in shape.sensitive_columns])) * (1 << shape.eps_bits)


def flip_class_hint(*values: int) -> list[int]:
    """A class other than y that at least ties it at the flip slice (values: y's one-hot, then z_f)."""
    n = len(values) // 2
    y = max(range(n), key=lambda j: values[j])
    z = [to_signed(v) for v in values[n:]]
    others = [j for j in range(n) if j != y]
    best = max(others, key=lambda j: (z[j], -j))
    return [int(j == best) for j in range(n)]


def _slice_logits(cs, shape: StatementShape, wd: StatementWidths, weights, biases, x):
    """The committed model's logits at x, exactly (each ReLU by an exact sign comparison)."""
    a = x
    for l in range(len(shape.hidden_sizes)):
        z = [cs.inner_product(w_row, a) + b for w_row, b in zip(weights[l], biases[l])]
        a = [relu_of(cs, v, wd.layers[l].value) for v in z]
    return [cs.inner_product(w_row, a) + b for w_row, b in zip(weights[-1], biases[-1])]


def _slopes(cs, shape: StatementShape, witness: StatementWitness | None) -> list[tuple[list, list]]:
    """Every slice's private lower slopes (the witness's `radius_slopes`, slice after slice), each checked to
    lie in [0, 1], as slopes at 2^16 cut by `radius_layout`: (neurons, margins) per slice."""
    size = radius_plan_size(shape.hidden_sizes, shape.n_classes)
    values = None if witness is None else witness.radius_slopes
    if values is not None and len(values) != size * shape.n_slices:
        raise BoundRadiusError(f"the statement takes {size * shape.n_slices} optimised slopes ({size} per slice), "
                               f"the witness has {len(values)}")
    plans = []
    for s in range(shape.n_slices):
        with cs.scope(f"slice{s}/slopes"):
            part = None if values is None else values[s * size:(s + 1) * size]
            slopes = private_slopes(cs, "alpha", part, size, shape.alpha_bits)
        plans.append(radius_layout(slopes, shape.hidden_sizes, shape.n_classes))
    return plans


def build_bound_statement(cs, shape: StatementShape, public: StatementPublic | None = None,
                          witness: StatementWitness | None = None) -> None:
    """Declare the statement's public inputs, witness and constraints (values when cs.with_values)."""
    if shape.radius != BOUND_RADIUS or shape.per_slice:
        raise BoundRadiusError("the bound statement is for whole bound-radius shapes")
    if cs.with_values and (public is None or witness is None):
        raise BoundRadiusError("building with values needs both the public inputs and the witness")
    if not cs.with_values:
        public = witness = None
    pub = public.field_elements() if public is not None else [None] * shape.n_public
    wd, widths = shape_widths(shape), bound_widths(shape)

    inputs = declare_public_inputs(cs, shape, pub)
    weights, biases = committed_parameters(cs, shape, inputs.commitment, *(
        (None, None, None) if witness is None else (witness.weights, witness.biases, witness.salt)))
    with cs.scope("query"):
        own = query_in_domain(cs, shape, inputs.query)  # free columns in the box, sensitive values a slice
    points = []
    for values in shape.slices:
        x = list(inputs.query)
        for c, v in zip(shape.sensitive_columns, values):
            x[c] = cs.constant(v)
        points.append(x)
    with cs.scope("logits"):
        logits = [_slice_logits(cs, shape, wd, weights, biases, x) for x in points]
    with cs.scope("decision"):
        y_bits = _decision(cs, shape, wd, inputs.decision, own, logits)
    with cs.scope("status"):
        _status(cs, shape, wd, inputs, y_bits, logits)

    plans = _slopes(cs, shape, witness) if shape.alpha_bits else None
    ball = _Ball(inputs.query, inputs.eps, 0.0 if public is None else (public.eps << shape.scale_bits) / (1 << shape.eps_bits),
                 None if public is None else [public.query[k] for k in shape.free_columns])
    # Layer 0's forms are the weights themselves: their free minima are the same on every slice.
    with cs.scope("layer0/free"):
        first = [[ball.minimum(cs, shape, widths.neuron[0], [sign * w for w in weights[0][i]]) for sign in (1, -1)]
                 for i in range(shape.hidden_sizes[0])]
    for s, x in enumerate(points):
        plan = plans[s] if plans is not None else None
        layers = _slice_relaxations(cs, shape, widths, weights, biases, ball, first, plan, x, s)
        with cs.scope(f"slice{s}/margins"):
            _margins(cs, shape, widths, weights, biases, ball, plan, x, layers, y_bits, inputs.status)

    if shape.spread:
        add_spread(cs, shape, wd, inputs, lambda: logits)
    if shape.persistence:
        add_persistence(cs, shape, wd, weights, biases, inputs, None if witness is None else witness.persistence_slopes)


@dataclass(frozen=True)
class _Ball:
    """The input set every bound is minimised over: free columns within eps of the query's (and in the box)."""

    query: list  # circuit values
    eps: Any  # circuit value E
    eps_float: float  # eps at the input scale, for the multipliers' hint (0 without values)
    query_free: list[int] | None  # the query's free columns (None without values)

    def minimum(self, cs, shape: StatementShape, form: FormWidths, a):
        return free_minimum(cs, shape, form, a, self.query, self.eps, self.eps_float, self.query_free)


def _decision(cs, shape: StatementShape, wd: StatementWidths, y, own: list, logits: list) -> list:
    """The decision's one-hot bits, asserted to be the model's decision at the query (its own slice)."""
    S, C = shape.n_slices, shape.n_classes
    y_bits = cs.hint("decision", lambda v: [int(v == c) for c in range(C)], [y], C)
    for b in y_bits:
        cs.assert_is_bool(b)
    cs.assert_equal(cs.sum(y_bits), 1)
    cs.assert_equal(cs.lin_comb([(c, b) for c, b in enumerate(y_bits)]), y)
    at_query = [cs.sum([cs.mul(own[s], logits[s][j]) for s in range(S)]) for j in range(C)]
    chosen, _ = argmax(cs, at_query, wd.decision.value)
    for a, b in zip(chosen, y_bits):
        cs.assert_equal(a, b)  # y is the model's decision at the query
    return y_bits


def _status(cs, shape: StatementShape, wd: StatementWidths, inputs: PublicInputs, y_bits: list, logits: list) -> None:
    """0 <= E <= E_cap; status 1 (a flip) has E = 0 and another class at least tying y at the flip slice."""
    S, C = shape.n_slices, shape.n_classes
    eps, status, flip_index = inputs.eps, inputs.status, inputs.flip_index
    cs.assert_is_bool(status)
    assert_nonnegative(cs, eps, shape.eps_cap)
    assert_nonnegative(cs, shape.eps_cap - eps, shape.eps_cap)
    cs.assert_equal(cs.mul(status, eps), 0)  # a flip certifies radius 0
    cs.assert_equal(cs.mul(1 - status, flip_index), 0)
    f_bits = cs.hint("flip", lambda st, f: [int(st == 1 and f == s) for s in range(S)], [status, flip_index], S)
    for b in f_bits:
        cs.assert_is_bool(b)
    cs.assert_equal(cs.sum(f_bits), status)
    cs.assert_equal(cs.lin_comb([(s, b) for s, b in enumerate(f_bits)]), flip_index)
    at_flip = [cs.sum([cs.mul(f_bits[s], logits[s][j]) for s in range(S)]) for j in range(C)]
    j_bits = cs.hint("flip_class", flip_class_hint, [*y_bits, *at_flip], C)
    for b in j_bits:
        cs.assert_is_bool(b)
    cs.assert_equal(cs.sum(j_bits), 1)
    cs.assert_equal(cs.sum([cs.mul(a, b) for a, b in zip(j_bits, y_bits)]), 0)  # another class than y
    tie = cs.sum([cs.mul(b, v) for b, v in zip(j_bits, at_flip)]) - cs.sum([cs.mul(b, v) for b, v in zip(y_bits, at_flip)])
    assert_nonnegative(cs, tie, wd.decision.value)  # z_j >= z_y at the flip slice (0 >= 0 when certified)


def _slice_relaxations(cs, shape: StatementShape, widths: BoundWidths, weights, biases, ball: _Ball, first: list,
                       plan, x: list, s: int) -> list[list[Relaxation]]:
    """Slice s's relaxation of every hidden neuron, layer by layer: each neuron's bounds from the
    back-substituted bounds of +z and -z on the ball (layer 0's free minima `first` are shared)."""
    layers: list[list[Relaxation]] = []
    for k in range(len(shape.hidden_sizes)):
        with cs.scope(f"slice{s}/layer{k}"):
            form, rels = widths.neuron[k], []
            for i in range(shape.hidden_sizes[k]):
                with cs.scope(f"neuron{i}"):
                    scaled = []
                    for n_sign, sign in enumerate((1, -1)):
                        lower = plan[0][k - 1][i][n_sign] if plan is not None and k else None
                        row, const = back_substitute(cs, shape, form, weights, biases,
                                                     [sign * w for w in weights[k][i]], sign * biases[k][i], k, layers,
                                                     lower)
                        free = first[i][n_sign] if k == 0 else ball.minimum(cs, shape, form, row)
                        scaled.append(fixed_part(cs, shape, row, const, x) + free)
                    rels.append(neuron_relaxation(cs, scaled[0], scaled[1], shape.eps_bits + SLOPE_BITS * k,
                                                  widths.pre_activation[k], plan is not None))
            layers.append(rels)
    return layers


def _margins(cs, shape: StatementShape, widths: BoundWidths, weights, biases, ball: _Ball, plan, x: list,
             layers: list[list[Relaxation]], y_bits: list, status) -> None:
    """On one slice, every class's margin z_y - z_c has a positive lower bound on the ball (excused for
    c = y and under status 1)."""
    C, L = shape.n_classes, len(shape.hidden_sizes)
    margin_bound = _minimum_width(shape, widths.margin, widths.box)
    for c in range(C):
        # The margin against class c for the public decision: sum over y of [y = decision] (...).
        row = [cs.sum([cs.mul(y_bits[d], weights[L][d][j] - weights[L][c][j]) for d in range(C)])
               for j in range(shape.hidden_sizes[-1])]
        const = cs.sum([cs.mul(y_bits[d], biases[L][d] - biases[L][c]) for d in range(C)])
        row, const = back_substitute(cs, shape, widths.margin, weights, biases, row, const, L, layers,
                                     plan[1][c] if plan is not None else None)
        low = fixed_part(cs, shape, row, const, x) + ball.minimum(cs, shape, widths.margin, row)
        # positive, unless c is the decision itself (its margin is 0) or the status is a flip
        excuse = (margin_bound + 1) * (y_bits[c] + status)
        assert_nonnegative(cs, low - 1 + excuse, 3 * margin_bound + 3)
