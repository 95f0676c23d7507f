"""Worst-case bit widths of every in-circuit quantity, from the shape alone.

"x has b bits" means |x| <= bound < 2^b. Bounds come only from public
constants: the box (X_j = max(|lo_j|, |hi_j|)), the declared parameter bounds
(|W_l| <= WB_l = 2^weight_bits[l], |b_l| <= BB_l = 2^bias_bits[l], which the
circuit enforces by range checks), eps_cap, the Farkas multiplier bits and
the boundary denominator bits. They hold for EVERY activation code, because
diag(code) has 0/1 entries (absolute-value products):

    A_0 = WB_0                       A_l = h_{l-1} WB_l A_{l-1}          normal entries
    C_0 = sum_sens WB_0 X_j + BB_0   C_l = h_{l-1} WB_l C_{l-1} + BB_l   offsets
    V_0 = sum_all  WB_0 X_j + BB_0   V_l = h_{l-1} WB_l V_{l-1} + BB_l   values a.u + c
                                                                          (= pre-activations)
    decision rows (z_y - z_j): the same with 2 WB_L and 2 BB_L.
    ||a||^2 <= n_free A^2; distance sides V^2 2^(2t) and (E_cap+1)^2 2^(2s) ||a||^2;
    Farkas: r_j <= 2^fb sum_neuron_rows A_row + 2^(fb+1) max_rows A_row (lambda on
    every neuron row, mu on the one extra row), g0 likewise with C_row,
    lower bound <= g0 + sum_j r X_j; box multipliers |nu_j| < 2^bits(r),
    h(u*) <= g0 + sum_j (r + 2^(bits(r)+1)) X_j; on neuron-row entries (the
    only ones squared) the same with neuron rows only and |nu_j| below
    2^(bits(r_neuron)+1): h^2 2^(2t) and (E_cap+1)^2 2^(2s) n_free r'^2;
    boundary: a.P + c D <= V 2^db (P/D lies in the box).

Partial sums are bounded by the full sums (every term is bounded by its
absolute value). `widths(shape)` raises StatementShapeError if any bound
reaches 2^MAX_SIGNED_BITS: then nothing in the circuit can wrap around the
field, and every comparison gadget gets a width from here.
"""
from __future__ import annotations

from dataclasses import dataclass

from circuits.field import MAX_SIGNED_BITS

from .shape import BOUND_RADIUS, StatementShape, StatementShapeError


# Exact statements keep this many bits of a separation value h(u*) when
# truncating it for the squared comparison (relative loss below 2^-90 for an
# h near its bound; the prover scales multipliers up to their caps).
SEPARATION_KEPT_BITS = 100


def bits(bound: int) -> int:
    """Smallest b with |x| <= bound  =>  -2^b <= x < 2^b (comparison gadget width)."""
    return max(int(bound).bit_length(), 1)


@dataclass(frozen=True)
class LayerWidths:
    normal: int  # bound on normal entries
    offset: int
    value: int
    norm_sq: int


@dataclass(frozen=True)
class StatementWidths:
    box: tuple[int, ...]  # X_j per input
    layers: tuple[LayerWidths, ...]  # hidden layers
    decision: LayerWidths
    eps_sq_scaled: int  # (E_cap + 1)^2 2^(2s)
    distance: tuple[int, ...]  # per hidden layer: bound of both distance sides (and of their difference)
    distance_decision: int
    farkas_coef: int
    farkas_residual: int
    farkas_offset: int
    farkas_lower: int
    nu_bits: int  # box multipliers: |nu_j| < 2^nu_bits
    nu_neuron_bits: int  # on neuron-row entries: |nu_j| < 2^nu_neuron_bits
    separation_value: int  # bound on h(u*)
    separation_comparison: int  # bound on both sides of the squared comparison (neuron rows; exact: all rows)
    boundary_point: int  # |P_j| bound
    boundary_value: int  # |a.P + c D| bound over all rows
    quantities: tuple[tuple[str, int], ...]
    # Exact statements compare truncated separation values: h >> shift and the
    # ceilings of |r'_j| >> shift (0 in fast statements, which square h itself).
    separation_shift: int = 0
    separation_high: int = 0  # bound on h >> shift
    separation_residual_high: int = 0  # bound on ceil(||r'||^2 / 2^(2 shift))
    counterexample_distance: int = 0  # bound on both sides of the counterexample's distance test

    @property
    def max_bits(self) -> int:
        return max(bits(b) for _, b in self.quantities)

    def table(self) -> list[tuple[str, int]]:
        return [(name, bits(b)) for name, b in self.quantities]


def _forward_quantity(name: str) -> bool:
    """The quantities of the exact forward pass (inputs, parameters, pre-activations and logit differences)."""
    return name == "input" or name == "decision value" or name.endswith((" weight", " bias", " value"))


def widths(shape: StatementShape, limit_bits: int = MAX_SIGNED_BITS) -> StatementWidths:
    """Every quantity's bound for `shape` (the module docstring derives them); raises StatementShapeError
    if one reaches 2^limit_bits."""
    X = tuple(max(abs(lo), abs(hi)) for lo, hi in zip(shape.box_lower, shape.box_upper))
    q: list[tuple[str, int]] = [("input", max(X))]
    for l in range(shape.n_layers):
        q.append((f"layer {l} weight", 1 << shape.weight_bits[l]))
        q.append((f"layer {l} bias", 1 << shape.bias_bits[l]))
    layers, dec = _layer_widths(shape, X)
    e2 = (shape.eps_cap + 1) ** 2 << (2 * shape.scale_bits)

    def dist(lw: LayerWidths) -> int:
        return max((lw.value ** 2) << (2 * shape.eps_bits), e2 * lw.norm_sq)

    for l, lw in enumerate(layers):
        q += [(f"layer {l} normal entry", lw.normal), (f"layer {l} offset", lw.offset),
              (f"layer {l} value", lw.value), (f"layer {l} |normal|^2", lw.norm_sq),
              (f"layer {l} distance comparison", dist(lw))]
    q += [("decision normal entry", dec.normal), ("decision offset", dec.offset), ("decision value", dec.value),
          ("decision |normal|^2", dec.norm_sq), ("decision distance comparison", dist(dec)),
          ("(E_cap+1)^2 2^(2s)", e2)]
    farkas = _farkas_widths(shape, layers, dec, X)
    q += farkas.quantities
    separation = _separation_widths(shape, layers, farkas, X, e2)
    q += separation.quantities

    den = 1 << shape.boundary_bits
    point = max(X) * den
    bval = max(max(lw.value for lw in layers), dec.value) * den
    q += [("boundary point", point), ("boundary denominator", den), ("boundary row value", bval)]
    cx_dist = 0
    if shape.exact:
        # ||P - D u*||^2 2^(2t) < (E+1)^2 2^(2s) D^2 with P, D u* in the box scaled by D.
        cx_dist = max((shape.n_free * (2 * max(X) * den) ** 2) << (2 * shape.eps_bits), e2 * den * den)
        q += [("counterexample distance comparison", cx_dist)]
    _check_limit(shape, q, limit_bits)
    return StatementWidths(
        box=X, layers=tuple(layers), decision=dec, eps_sq_scaled=e2,
        distance=tuple(dist(lw) for lw in layers), distance_decision=dist(dec),
        farkas_coef=farkas.coef, farkas_residual=farkas.residual, farkas_offset=farkas.offset,
        farkas_lower=farkas.lower, nu_bits=separation.nu_bits, nu_neuron_bits=separation.nu_neuron_bits,
        separation_value=separation.value, separation_comparison=separation.comparison,
        boundary_point=point, boundary_value=bval, quantities=tuple(q),
        separation_shift=separation.shift, separation_high=separation.high,
        separation_residual_high=separation.residual_high, counterexample_distance=cx_dist,
    )


def _check_limit(shape: StatementShape, q: list[tuple[str, int]], limit_bits: int) -> None:
    # A bound-radius statement uses the forward pass's widths only (statement.bound_radius checks its own).
    checked = q if shape.radius != BOUND_RADIUS else [(name, b) for name, b in q if _forward_quantity(name)]
    bad = [(name, b) for name, b in checked if bits(b) >= limit_bits]
    if bad:
        listing = "; ".join(f"{name}: {bits(b)} bits" for name, b in bad)
        raise StatementShapeError(f"shape could wrap around the field (limit {limit_bits} bits): {listing}")


def _layer_widths(shape: StatementShape, X: tuple[int, ...]) -> tuple[list[LayerWidths], LayerWidths]:
    """Normal, offset, value and |normal|^2 bounds per hidden layer (A_l, C_l, V_l), and the decision rows'."""
    WB = [1 << b for b in shape.weight_bits]
    BB = [1 << b for b in shape.bias_bits]
    nf = shape.n_free
    a = WB[0]
    c = sum(WB[0] * X[j] for j in shape.sensitive_columns) + BB[0]
    v = sum(WB[0] * X[j] for j in range(shape.n_inputs)) + BB[0]
    layers = []
    for l, h in enumerate(shape.hidden_sizes):
        if l:
            prev = shape.hidden_sizes[l - 1]
            a, c, v = prev * WB[l] * a, prev * WB[l] * c + BB[l], prev * WB[l] * v + BB[l]
        layers.append(LayerWidths(a, c, v, nf * a * a))
    h_last = shape.hidden_sizes[-1]
    wd, bd = 2 * WB[-1], 2 * BB[-1]
    dec = LayerWidths(h_last * wd * a, h_last * wd * c + bd, h_last * wd * v + bd, nf * (h_last * wd * a) ** 2)
    return layers, dec


@dataclass(frozen=True)
class _FarkasWidths:
    coef: int
    residual: int  # r_j
    offset: int  # g0
    lower: int
    neuron_rows: list[tuple[int, int]]  # (normal, offset) bound of every neuron row
    quantities: list[tuple[str, int]]


def _farkas_widths(shape: StatementShape, layers: list[LayerWidths], dec: LayerWidths,
                   X: tuple[int, ...]) -> _FarkasWidths:
    # coef_k = lambda_k sigma_k + mu [row = k]: |lambda_k| < 2^lambda_bits[k] on neuron
    # row k (2^farkas_bits on fast statements' neuron-row entries, `neuron_entry_lambda_bits`),
    # and |mu| <= 2^(bits+1) on the single extra row (decision rows: farkas_bits).
    neuron_rows = [(lw.normal, lw.offset) for lw, h in zip(layers, shape.hidden_sizes) for _ in range(h)]
    all_rows = neuron_rows + [(dec.normal, dec.offset)]
    lam_bits, narrow = shape.lambda_bits, shape.neuron_entry_lambda_bits
    coef = 3 << max(lam_bits)
    mu_bits = list(narrow) + [shape.farkas_bits]
    r = sum(x << b for (x, _), b in zip(neuron_rows, lam_bits)) + max(x << (b + 1) for (x, _), b in zip(all_rows, mu_bits))
    g0 = sum(y << b for (_, y), b in zip(neuron_rows, lam_bits)) + max(y << (b + 1) for (_, y), b in zip(all_rows, mu_bits))
    lower = g0 + sum(r * X[j] for j in shape.free_columns)
    return _FarkasWidths(coef, r, g0, lower, neuron_rows,
                         [("Farkas coefficient", coef), ("Farkas residual r_j", r), ("Farkas offset g0", g0),
                          ("Farkas lower bound", lower)])


@dataclass(frozen=True)
class _SeparationWidths:
    nu_bits: int
    nu_neuron_bits: int
    value: int  # h(u*)
    comparison: int
    shift: int
    high: int
    residual_high: int
    quantities: list[tuple[str, int]]


def _separation_widths(shape: StatementShape, layers: list[LayerWidths], farkas: _FarkasWidths,
                       X: tuple[int, ...], e2: int) -> _SeparationWidths:
    # Separation form: box multipliers |nu_j| < 2^nu_bits (room for nu = -r),
    # r' = r + nu, h(u*) = r'.u* + g0 - support(nu). Neuron-row entries have
    # |nu_j| < 2^nu_neuron_bits and are the only ones squared.
    t, nf, free = shape.eps_bits, shape.n_free, shape.free_columns
    r, g0, neuron_rows = farkas.residual, farkas.offset, farkas.neuron_rows
    nu_bits = bits(r)
    h_all = g0 + sum((r + (2 << nu_bits)) * X[j] for j in free)
    q = [("separation box multiplier", 1 << nu_bits), ("separation value h(u*)", h_all)]
    shift = high = residual_high = 0
    if not shape.exact:
        narrow = shape.neuron_entry_lambda_bits
        r_n = sum(x << b for (x, _), b in zip(neuron_rows, narrow)) + max(x << (b + 1) for (x, _), b in zip(neuron_rows, narrow))
        g0_n = sum(y << b for (_, y), b in zip(neuron_rows, narrow)) + max(y << (b + 1) for (_, y), b in zip(neuron_rows, narrow))
        nu_neuron_bits = min(bits(r_n) + 1, nu_bits)
        r2_n = r_n + (1 << nu_neuron_bits)
        h_n = g0_n + sum((r2_n + (1 << nu_neuron_bits)) * X[j] for j in free)
        sep_cmp = max((h_n ** 2) << (2 * t), e2 * nf * r2_n ** 2)
        q += [("separation neuron-row r'_j", r2_n), ("separation neuron-row h(u*)", h_n),
              ("separation distance comparison", sep_cmp)]
    else:
        # Every entry (decision rows too) is compared on truncated values: h >= 2^shift H and
        # ||r'||^2 <= 2^(2 shift) N, so H^2 2^(2t) >= E^2 2^(2s) N implies the exact comparison;
        # shift keeps SEPARATION_KEPT_BITS of h. ||r'||^2 itself must fit.
        nu_neuron_bits = nu_bits
        r2 = r + (1 << nu_bits)
        norm_sq = nf * r2 ** 2
        shift = max(0, bits(h_all) - SEPARATION_KEPT_BITS)
        high = h_all >> shift
        residual_high = (norm_sq >> (2 * shift)) + 1
        sep_cmp = max((high ** 2) << (2 * t), e2 * residual_high)
        q += [("separation r'_j", r2), ("separation ||r'||^2", norm_sq), ("separation truncated h", high),
              ("separation truncated ||r'||^2", residual_high), ("separation distance comparison", sep_cmp)]
    return _SeparationWidths(nu_bits, nu_neuron_bits, h_all, sep_cmp, shift, high, residual_high, q)
