"""The persistent-bias lens in the circuit (fairness.persistence's `crown_bounds` is its plaintext twin).

For a two-class model with favourable class f, margin m = z_f - z_other, and
every (sensitive attribute a, value v) of the shape, the target copy is the
query with attribute a set to v (all of its columns: v is a point, one integer
per column) and g(z) = m(query's own values, z) - m(target, z)
with the SAME non-sensitive part z in both copies, z ranging over the box

    lo_j = max(box_lo_j, x_j - d),  hi_j = min(box_hi_j, x_j + d)   (the lens's columns)
    lo_j = hi_j = x_j                                             (every other column)

for the public delta d (integer, at the input scale). The circuit computes,
never solving anything, the linear-bound-propagation (CROWN) bounds:

1. interval bounds [l, u] on every hidden pre-activation of every copy
   (the weights' signs are private bits, each checked by a range check);
2. per hidden neuron and copy, its relaxation: active (l >= 0: slope 1),
   dead (u <= 0: 0) or unstable (l < 0 < u): below, slope alpha = [u + l >= 0];
   above, the line through (l, 0) of slope T / 2^k with T = ceil(u 2^k / (u - l)),
   pinned by 0 <= T (u - l) - u 2^k < u - l and 0 <= T < 2^(k+1) (so the
   product cannot wrap). Any such line lies above ReLU on [l, u];
3. back-substitution of +-m through each copy: a coefficient's sign (a
   private bit, range-checked) picks the lower or the upper relaxation, so each
   step keeps a valid lower bound; each hidden layer scales the bound by 2^k;
4. the two copies' linear functions of the shared z are added and minimised
   over the box in closed form (sign bits again);
5. LB = floor(bound / 2^(k H)), UB = ceil(...) at the logit scale, equal to the
   public inputs.

Every choice is pinned (comparisons are exact, slopes are ceilings), so the
public bounds are a function of the committed weights, the query and d: the
value `crown_bounds` computes in exact rationals. Soundness: each step is a
valid relaxation, whatever the weights, so LB <= min g and UB >= max g over the box;
`persistence_widths` bounds every quantity from the shape so nothing can wrap.

A shape with `alpha_bits` (optimised slopes, `statement.relaxation`) keeps
steps 1, 4 and 5 and the upper lines, and gives every bound its own lower
slopes: per pair, per bound and per copy (the query's too, so its backward pass
runs per pair), one private alpha in [0, 1] per neuron, any of which is sound
(relu(z) >= alpha z everywhere). The public bounds are then those of the
witness's slopes (`fairness.persistence.proved_bounds` with alpha_bits: the
triangle LP's dual), never false, no longer pinned.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from circuits.field import MAX_SIGNED_BITS, to_signed
from fairness.multipliers import RELAXATION_SLOPE_BITS as SLOPE_BITS

from .checks import assert_nonnegative, floor_div
from .relaxation import persistence_layout, private_slopes
from .shape import StatementShape, StatementShapeError
from .widths import StatementWidths, bits


# ----------------------------------------------------------------------------- gadgets
# The hints are module functions (the prover's side of each choice), so a test can swap in a
# dishonest prover's and watch the constraints refuse it.


def sign_hint(v: int) -> list[int]:
    return [int(to_signed(v) >= 0)]


def slope_hint(slope_bits: int):
    def ceil_slope(lv: int, uv: int, flag: int) -> list[int]:
        lv, uv = to_signed(lv), to_signed(uv)
        return [-((-uv << slope_bits) // (uv - lv)) if flag == 1 and uv > lv else 0]
    return ceil_slope


def sign_split(cs, x, bound: int):
    """(x+, x-) with x = x+ + x-, x+ = max(x, 0), x- = min(x, 0), for |x| <= bound.

    A private bit b names the sign; x+ = b x, and b x - (1 - b) x = |x| is range-checked
    non-negative, which a wrong bit fails (unless x = 0, where both are right)."""
    (b,) = cs.hint("sign", sign_hint, [x], 1)
    cs.assert_is_bool(b)
    pos = cs.mul(b, x)
    assert_nonnegative(cs, 2 * pos - x, bound)
    return pos, x - pos


def relu_of(cs, x, bound: int):
    """max(x, 0) by an exact comparison (deterministic, also at x = 0)."""
    negative = cs.is_negative(x, bits(bound))
    return cs.mul(1 - negative, x)


def clamp_box(cs, x, d, lower: int, upper: int, bound: int):
    """(max(lower, x - d), min(upper, x + d)) for lower <= x <= upper and 0 <= d; |x|, d <= bound."""
    n = bits(2 * bound + abs(lower) + abs(upper))
    lo = cs.select(cs.is_less(x - d, lower, n), lower, x - d)
    hi = cs.select(cs.is_less(upper, x + d, n), upper, x + d)
    return lo, hi


@dataclass(frozen=True)
class Relaxation:
    """A hidden neuron's ReLU relaxation, slopes scaled by 2^k: relu(z) >= lower z / 2^k and
    relu(z) <= (upper z + intercept) / 2^k on [l, u]."""

    lower: object
    upper: object
    intercept: object


def relaxation(cs, l, u, bound: int, slope_bits: int, optimised: bool = False) -> Relaxation:
    """The neuron's CROWN relaxation from its pre-activation bounds l <= u, |l|, |u| <= bound. `optimised`:
    the lower slopes are each bound's own (`statement.relaxation`), so only the upper line is pinned here
    (`lower` is None)."""
    one = 1 << slope_bits
    active = 1 - cs.is_negative(l, bits(bound))  # l >= 0
    alive = cs.is_negative(-u, bits(bound))  # u > 0
    unstable = cs.mul(1 - active, alive)  # l < 0 < u
    if not optimised:
        alpha = 1 - cs.is_negative(u + l, bits(2 * bound))  # u >= -l: the lower line y = x

    (t,) = cs.hint("slope", slope_hint(slope_bits), [l, u, unstable], 1)
    cs.assert_range(t, slope_bits + 1)
    cs.assert_equal(cs.mul(1 - unstable, t), 0)
    excess = cs.mul(t, u - l) - u * one  # T (u - l) - u 2^k, in [0, u - l) when unstable
    wide = (2 * bound) << (slope_bits + 3)
    assert_nonnegative(cs, cs.mul(unstable, excess), wide)
    assert_nonnegative(cs, cs.mul(unstable, (u - l) - 1 - excess), wide)
    if optimised:
        return Relaxation(lower=None, upper=one * active + t, intercept=-cs.mul(t, l))
    return Relaxation(lower=one * (active + cs.mul(unstable, alpha)), upper=one * active + t,
                      intercept=-cs.mul(t, l))


# ----------------------------------------------------------------------------- widths


@dataclass(frozen=True)
class PersistenceWidths:
    delta_cap: int  # largest meaningful d: the widest lens column of the domain box
    pre_activation: tuple[int, ...]  # per hidden layer: |l|, |u|
    coefficient: tuple[int, ...]  # per hidden layer (input side of its ReLU): |mu|
    input_coefficient: int  # |a_j| on the inputs
    bound: int  # |the bound before division|
    published: int  # |LB|, |UB| at the logit scale
    quantities: tuple[tuple[str, int], ...]


def persistence_widths(shape: StatementShape, wd: StatementWidths, slope_bits: int = SLOPE_BITS) -> PersistenceWidths:
    k2 = 1 << (slope_bits + 1)  # T < 2^(k+1), and every scaled slope is at most that
    WB = [1 << b for b in shape.weight_bits]
    BB = [1 << b for b in shape.bias_bits]
    V = tuple(lw.value for lw in wd.layers)
    L = shape.n_layers
    coef = [0] * (L - 1)
    mu = 2 * WB[-1]
    const = 2 * BB[-1]
    for l in range(L - 2, -1, -1):
        coef[l] = mu
        lam = mu * k2
        const = (const << slope_bits) + shape.hidden_sizes[l] * (mu * k2 * V[l] + lam * BB[l])
        mu = shape.hidden_sizes[l] * WB[l] * lam
    cols = shape.persistence_columns
    width = max((shape.box_upper[j] - shape.box_lower[j] for j in cols), default=0)
    total = 2 * (shape.n_inputs * mu * max(wd.box) + const) + len(cols) * 2 * mu * width
    published = total // (1 << (slope_bits * (L - 1))) + 1
    q = [("persistence pre-activation", max(V)), ("persistence coefficient", max(coef)),
         ("persistence input coefficient", mu), ("persistence bound", total),
         ("persistence slope check", (2 * max(V)) << (slope_bits + 3))]
    bad = [(name, b) for name, b in q if bits(b) >= MAX_SIGNED_BITS]
    if bad:
        listing = "; ".join(f"{name}: {bits(b)} bits" for name, b in bad)
        raise StatementShapeError(f"the persistence lens could wrap around the field: {listing}")
    return PersistenceWidths(width, V, tuple(coef), mu, total, published, tuple(q))


# ----------------------------------------------------------------------------- the lens


@dataclass
class _Copy:
    lower: list  # the box's lower corner (full input vector of this copy)
    relaxations: list  # per hidden layer, per neuron


def _signed_weights(cs, weights, shape: StatementShape):
    """W+ for the lens columns of layer 0 and every weight of hidden layers 1..: what interval bounds need."""
    cols = shape.persistence_columns
    plus = [{(i, j): sign_split(cs, weights[0][i][j], 1 << shape.weight_bits[0])[0]
             for i in range(shape.hidden_sizes[0]) for j in cols}]
    for l in range(1, shape.n_layers - 1):
        plus.append({(i, j): sign_split(cs, weights[l][i][j], 1 << shape.weight_bits[l])[0]
                     for i in range(shape.hidden_sizes[l]) for j in range(shape.hidden_sizes[l - 1])})
    return plus


def _interval_copy(cs, shape, pw, weights, biases, plus, lower, first_spread, slope_bits,
                   optimised: bool = False) -> _Copy:
    """Interval bounds and relaxations of every hidden neuron of one copy."""
    rel_all = []
    H = shape.hidden_sizes
    lo_pre = hi_pre = None
    for l in range(shape.n_layers - 1):
        V = pw.pre_activation[l]
        with cs.scope(f"layer{l}"):
            if l == 0:
                base = [cs.sum([cs.mul(weights[0][i][j], lower[j]) for j in range(shape.n_inputs)]) + biases[0][i]
                        for i in range(H[0])]
                lo_pre = [base[i] + first_spread[i][0] for i in range(H[0])]
                hi_pre = [base[i] + first_spread[i][1] for i in range(H[0])]
            else:
                rl = [relu_of(cs, v, pw.pre_activation[l - 1]) for v in lo_pre]
                ru = [relu_of(cs, v, pw.pre_activation[l - 1]) for v in hi_pre]
                new_lo, new_hi = [], []
                for i in range(H[l]):
                    at_lo = cs.sum([cs.mul(weights[l][i][j], rl[j]) for j in range(H[l - 1])]) + biases[l][i]
                    width = [ru[j] - rl[j] for j in range(H[l - 1])]
                    total = cs.sum([cs.mul(weights[l][i][j], width[j]) for j in range(H[l - 1])])
                    up = cs.sum([cs.mul(plus[l][(i, j)], width[j]) for j in range(H[l - 1])])
                    new_lo.append(at_lo + total - up)  # + sum W- (ru - rl)
                    new_hi.append(at_lo + up)
                lo_pre, hi_pre = new_lo, new_hi
            rels = []
            for i in range(H[l]):
                with cs.scope(f"neuron{i}"):
                    rels.append(relaxation(cs, lo_pre[i], hi_pre[i], V, slope_bits, optimised))
            rel_all.append(rels)
    return _Copy(lower, rel_all)


def _backward(cs, shape, pw, weights, biases, copy: _Copy, sign: int, slope_bits: int, lower=None):
    """A lower bound on sign * margin * 2^(k H) as (coefficients on the inputs, constant). `lower`: this
    bound's own lower slopes (per hidden layer, one per neuron, at 2^k) in place of the copy's."""
    f = shape.favourable_class
    o = 1 - f
    last = shape.n_layers - 1
    mu = [sign * (weights[last][f][j] - weights[last][o][j]) for j in range(shape.hidden_sizes[-1])]
    const = sign * (biases[last][f] - biases[last][o])
    for l in range(last - 1, -1, -1):
        with cs.scope(f"layer{l}"):
            lam, extra = [], []
            for j, r in enumerate(copy.relaxations[l]):
                pos, neg = sign_split(cs, mu[j], pw.coefficient[l])
                lam.append(cs.mul(pos, r.lower if lower is None else lower[l][j]) + cs.mul(neg, r.upper))
                extra.append(cs.mul(neg, r.intercept))
            const = const * (1 << slope_bits) + cs.sum(extra) + cs.inner_product(lam, biases[l])
            n_in = shape.n_inputs if l == 0 else shape.hidden_sizes[l - 1]
            mu = [cs.sum([cs.mul(lam[i], weights[l][i][j]) for i in range(len(lam))]) for j in range(n_in)]
    return mu, const


def _slopes(cs, shape: StatementShape, values, slope_bits: int) -> list:
    """The private slopes (the witness's `persistence_slopes`) each checked to lie in [0, 1], at 2^k, cut by
    `persistence_layout`: per pair, per side (LB, UB), per copy (own, counterfactual), per hidden layer."""
    n = 4 * shape.n_hidden * len(shape.persistence_pairs)
    if values is not None and len(values) != n:
        raise StatementShapeError(f"the persistence lens takes {n} optimised slopes, the witness has {len(values)}")
    with cs.scope("slopes"):
        slopes = private_slopes(cs, "alpha", values, n, shape.alpha_bits, slope_bits)
    return persistence_layout(slopes, shape.hidden_sizes, len(shape.persistence_pairs))


def persistence_lens(cs, shape: StatementShape, wd: StatementWidths, weights, biases, query: Sequence, delta,
                     bounds: Sequence, slope_bits: int = SLOPE_BITS, slopes: Sequence[int] | None = None) -> None:
    """Assert the public (LB, UB) of every (attribute, value) of the shape, flat in `bounds`. `slopes`: the
    witness's optimised lower slopes (shapes with alpha_bits; None when building without values)."""
    pw = persistence_widths(shape, wd, slope_bits)
    optimised = bool(shape.alpha_bits)
    cols = shape.persistence_columns
    with cs.scope("delta"):
        assert_nonnegative(cs, delta, pw.delta_cap)
        assert_nonnegative(cs, pw.delta_cap - delta, pw.delta_cap)
    with cs.scope("box"):
        own_lower = list(query)
        width = {}
        for j in cols:
            lo, hi = clamp_box(cs, query[j], delta, shape.box_lower[j], shape.box_upper[j], max(wd.box[j], pw.delta_cap))
            own_lower[j] = lo
            width[j] = hi - lo
    with cs.scope("signs"):
        plus = _signed_weights(cs, weights, shape)
        first_spread = []
        for i in range(shape.hidden_sizes[0]):
            up = cs.sum([cs.mul(plus[0][(i, j)], width[j]) for j in cols])
            total = cs.sum([cs.mul(weights[0][i][j], width[j]) for j in cols])
            first_spread.append((total - up, up))  # (sum W- w, sum W+ w)
    copies = {}
    with cs.scope("own"):
        copies[None] = _interval_copy(cs, shape, pw, weights, biases, plus, own_lower, first_spread, slope_bits,
                                      optimised)
    for p, (a, point) in enumerate(shape.persistence_pairs):
        lower = list(own_lower)
        for c, v in zip(shape.attribute_columns(a), point):  # every column of the attribute: one of its values
            lower[c] = v
        with cs.scope(f"pair{p}"):
            copies[p] = _interval_copy(cs, shape, pw, weights, biases, plus, lower, first_spread, slope_bits,
                                       optimised)
    passes: dict[tuple, tuple] = {}
    if optimised:  # every bound its own slopes, the query's copy included: a backward pass per pair and side
        chosen = _slopes(cs, shape, slopes, slope_bits)
        for p in range(len(shape.persistence_pairs)):
            for side, own_sign in enumerate((1, -1)):
                for key, sign, at in ((None, own_sign, 0), (p, -own_sign, 1)):
                    copy = copies[key]
                    with cs.scope(f"pair{p}/{'own' if key is None else 'counterfactual'}/backward"
                                  f"{'+' if sign > 0 else '-'}"):
                        a, c = _backward(cs, shape, pw, weights, biases, copy, sign, slope_bits, chosen[p][side][at])
                        passes[p, key, sign] = (a, c + cs.inner_product(a, copy.lower))
    else:
        for key, copy in copies.items():
            for sign in (1, -1):
                with cs.scope(f"{'own' if key is None else f'pair{key}'}/backward{'+' if sign > 0 else '-'}"):
                    a, c = _backward(cs, shape, pw, weights, biases, copy, sign, slope_bits)
                    passes[key, sign] = (a, c + cs.inner_product(a, copy.lower))
    divisor = 1 << (slope_bits * (shape.n_layers - 1))
    for p in range(len(shape.persistence_pairs)):
        with cs.scope(f"pair{p}/bounds"):
            for own_sign, public in ((1, bounds[2 * p]), (-1, bounds[2 * p + 1])):
                a_own, at_own = passes[p, None, own_sign] if optimised else passes[None, own_sign]
                a_tgt, at_tgt = passes[p, p, -own_sign] if optimised else passes[p, -own_sign]
                corner = []
                for j in cols:
                    _, neg = sign_split(cs, a_own[j] + a_tgt[j], 2 * pw.input_coefficient)
                    corner.append(cs.mul(neg, width[j]))
                total = at_own + at_tgt + cs.sum(corner)
                q = floor_div(cs, total, divisor, pw.bound)
                cs.assert_equal(q if own_sign > 0 else -q, public)
