"""The two-copy program of the persistence lens: g = m(s, z) - m(s', z) over the box as an LP (Ehlers'
triangle relaxation, bounded by its exact dual) and as a MILP (big-M per unstable ReLU, exact on the box).

`lp_bounds` reports the weak-duality bound of the solver's multipliers recomputed in exact rationals, so
it is sound whatever the solver's tolerances; `exact_bounds` / `exact_extremes` re-evaluate the MILP's
points exactly. The integer model in real units (`_Net`) and g itself (`g_value`) live here too.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from .fixed_point import FixedPointModel
from .persistence_box import Bounds, Box, Flip, PersistenceError


class _Net:
    """The integer model in real units (Fractions): W_l / 2^s, b_l / 2^(s(l+2)), inputs / 2^s."""

    def __init__(self, model: FixedPointModel, favourable_class: int):
        net = model.net
        if net.n_classes != 2:
            raise PersistenceError("persistence is defined for two-class models (the favourable margin is linear)")
        if favourable_class not in (0, 1):
            raise PersistenceError(f"favourable class {favourable_class} is not a class of this model")
        s = net.scale_bits
        self.s = s
        self.weights = [[[Fraction(w, 1 << s) for w in row] for row in layer] for layer in net.weights]
        self.biases = [[Fraction(b, 1 << (s * (l + 2))) for b in layer] for l, layer in enumerate(net.biases)]
        f, o = favourable_class, 1 - favourable_class
        last_w, last_b = self.weights[-1], self.biases[-1]
        self.margin_row = [a - b for a, b in zip(last_w[f], last_w[o])]
        self.margin_bias = last_b[f] - last_b[o]
        self.hidden = self.weights[:-1]
        self.hidden_biases = self.biases[:-1]

    def margin(self, x: Sequence[Fraction]) -> Fraction:
        h = list(x)
        for w, b in zip(self.hidden, self.hidden_biases):
            h = [max(sum(wi * hi for wi, hi in zip(row, h)) + bi, Fraction(0)) for row, bi in zip(w, b)]
        return sum(a * v for a, v in zip(self.margin_row, h)) + self.margin_bias

    def interval_bounds(self, lo: Sequence[Fraction], hi: Sequence[Fraction]):
        """Pre-activation bounds [l, u] of every hidden neuron over the input box (interval arithmetic)."""
        bounds = []
        hl, hh = list(lo), list(hi)
        for w, b in zip(self.hidden, self.hidden_biases):
            zl = [bi + sum(wi * (hl[k] if wi > 0 else hh[k]) for k, wi in enumerate(row)) for row, bi in zip(w, b)]
            zh = [bi + sum(wi * (hh[k] if wi > 0 else hl[k]) for k, wi in enumerate(row)) for row, bi in zip(w, b)]
            bounds.append((zl, zh))
            hl = [max(v, Fraction(0)) for v in zl]
            hh = [max(v, Fraction(0)) for v in zh]
        return bounds


def g_value(model: FixedPointModel, favourable_class: int, flip: Flip, x: Sequence[Fraction]) -> Fraction:
    """g at the full input x (real units, any sensitive values: they are replaced by the flip's)."""
    net = _Net(model, favourable_class)
    slices = model.slices()
    return net.margin(_with(model, x, slices[flip.source])) - net.margin(_with(model, x, slices[flip.target]))


def _with(model: FixedPointModel, x: Sequence[Fraction], values: Sequence[int]) -> list[Fraction]:
    out = list(x)
    for c, v in zip(model.sensitive_columns, values):
        out[c] = Fraction(v, 1 << model.scale_bits)
    return out


# ----------------------------------------------------------------------------- the two-copy program


@dataclass
class _Program:
    """min c.x subject to A_ub x <= b_ub, A_eq x = b_eq, lower <= x <= upper, in Fractions."""

    n: int
    c: list[Fraction]
    ub: list[tuple[dict[int, Fraction], Fraction]]
    eq: list[tuple[dict[int, Fraction], Fraction]]
    lower: list[Fraction]
    upper: list[Fraction]
    unstable: list[tuple[int, int, Fraction, Fraction]]  # (pre var, post var, l, u) for the MILP
    free: list[int]  # the shared input variables, in column order
    free_columns: list[int]
    constant: Fraction  # g = c.x + constant
    neurons: list[tuple[int, int, int]]  # per unstable entry: (copy: 0 own, 1 target; hidden layer; neuron)


def _program(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box) -> _Program:
    net = _Net(model, favourable_class)
    one = 1 << model.scale_bits
    slices = model.slices()
    free_columns = [j for j in range(len(box.lower)) if box.lower[j] != box.upper[j]]
    lower: list[Fraction] = []
    upper: list[Fraction] = []

    def var(lo: Fraction, hi: Fraction) -> int:
        lower.append(lo)
        upper.append(hi)
        return len(lower) - 1

    free = [var(Fraction(box.lower[j], one), Fraction(box.upper[j], one)) for j in free_columns]
    ub: list = []
    eq: list = []
    unstable: list = []
    c_terms: dict[int, Fraction] = {}
    constant = Fraction(0)
    neurons: list = []
    for copy_index, (copy, sign) in enumerate(((slices[flip.source], 1), (slices[flip.target], -1))):
        base = [Fraction(v, one) for v in _fixed_input(model, box, copy)]
        lo_in = [Fraction(box.lower[j], one) if j in free_columns else base[j] for j in range(len(base))]
        hi_in = [Fraction(box.upper[j], one) if j in free_columns else base[j] for j in range(len(base))]
        bounds = net.interval_bounds(lo_in, hi_in)
        # inputs of the first layer: shared free variables, constants elsewhere
        prev: list[tuple[dict[int, Fraction], Fraction]] = []
        for j in range(len(base)):
            prev.append(({free[free_columns.index(j)]: Fraction(1)}, Fraction(0)) if j in free_columns
                        else ({}, base[j]))
        for layer_index, ((w, b), (zl, zh)) in enumerate(zip(zip(net.hidden, net.hidden_biases), bounds)):
            layer = []
            for neuron, (row, bi, l, u) in enumerate(zip(w, b, zl, zh)):
                terms: dict[int, Fraction] = {}
                const = bi
                for wi, (pt, pc) in zip(row, prev):
                    if wi == 0:
                        continue
                    const += wi * pc
                    for v, a in pt.items():
                        terms[v] = terms.get(v, Fraction(0)) + wi * a
                pre = var(l, u)
                # pre = sum terms + const
                eq.append(({**{v: -a for v, a in terms.items()}, pre: Fraction(1)}, const))
                if l >= 0:
                    layer.append(({pre: Fraction(1)}, Fraction(0)))
                elif u <= 0:
                    layer.append(({}, Fraction(0)))
                else:
                    post = var(Fraction(0), u)
                    ub.append(({pre: Fraction(1), post: Fraction(-1)}, Fraction(0)))  # post >= pre
                    slope = u / (u - l)
                    ub.append(({post: Fraction(1), pre: -slope}, -slope * l))  # post <= u (pre - l) / (u - l)
                    unstable.append((pre, post, l, u))
                    neurons.append((copy_index, layer_index, neuron))
                    layer.append(({post: Fraction(1)}, Fraction(0)))
            prev = layer
        for a, (pt, pc) in zip(net.margin_row, prev):
            constant += sign * a * pc
            for v, k in pt.items():
                c_terms[v] = c_terms.get(v, Fraction(0)) + sign * a * k
        constant += sign * net.margin_bias
    n = len(lower)
    c = [c_terms.get(v, Fraction(0)) for v in range(n)]
    return _Program(n, c, ub, eq, lower, upper, unstable, free, free_columns, constant, neurons)


def _fixed_input(model: FixedPointModel, box: Box, slice_values: Sequence[int]) -> list[int]:
    return list(model.with_slice(box.lower, slice_values))  # fixed columns have lower == upper


def _matrices(prog: _Program, rows):
    if not rows:
        return None, None
    a = np.zeros((len(rows), prog.n))
    b = np.zeros(len(rows))
    for i, (terms, rhs) in enumerate(rows):
        for v, k in terms.items():
            a[i, v] = float(k)
        b[i] = float(rhs)
    return a, b


def _dual_bound(prog: _Program, c: list[Fraction], lam: Sequence[float], nu: Sequence[float]) -> Fraction:
    """The weak-duality lower bound of min c.x from any multipliers, in exact rationals:
    c.x >= sum_j min(r_j l_j, r_j u_j) - lam.b_ub - nu.b_eq with r = c + A_ub^T lam + A_eq^T nu, lam >= 0."""
    r = list(c)
    total = Fraction(0)
    for (terms, rhs), y in zip(prog.ub, lam):
        y = max(Fraction(y), Fraction(0))
        if y == 0:
            continue
        for v, k in terms.items():
            r[v] += y * k
        total -= y * rhs
    for (terms, rhs), y in zip(prog.eq, nu):
        y = Fraction(y)
        for v, k in terms.items():
            r[v] += y * k
        total -= y * rhs
    for rj, lo, hi in zip(r, prog.lower, prog.upper):
        total += min(rj * lo, rj * hi)
    return total


def _lp_solve(prog: _Program, c: list[Fraction]):
    from scipy.optimize import linprog

    a_ub, b_ub = _matrices(prog, prog.ub)
    a_eq, b_eq = _matrices(prog, prog.eq)
    res = linprog([float(v) for v in c], A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                  bounds=list(zip(map(float, prog.lower), map(float, prog.upper))), method="highs")
    if res.status != 0:
        raise PersistenceError(f"the relaxation LP did not solve: {res.message}")
    return res


def _lp_min(prog: _Program, c: list[Fraction]) -> Fraction:
    res = _lp_solve(prog, c)
    lam = -res.ineqlin.marginals if prog.ub else []  # scipy: marginals <= 0 for <= rows
    nu = -res.eqlin.marginals if prog.eq else []
    return _dual_bound(prog, c, lam, nu)


def lp_bounds(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box) -> Bounds:
    """Sound bounds on min and max g over the box (triangle relaxation, exact dual bound)."""
    prog = _program(model, favourable_class, flip, box)
    low = _lp_min(prog, prog.c) + prog.constant
    high = -_lp_min(prog, [-v for v in prog.c]) + prog.constant
    return Bounds(low, high, "lp")


def exact_bounds(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box,
                 time_limit: float = 60.0) -> tuple[Fraction, Fraction]:
    """(g at the MILP minimiser, g at the MILP maximiser), each evaluated exactly at a point of the box."""
    low, high = exact_extremes(model, favourable_class, flip, box, time_limit)
    return low.attained, high.attained


@dataclass(frozen=True)
class Extreme:
    """min (or max) of g over the box by the MILP. `attained`: g at the solver's point, exactly (a value g
    takes in the box); `bound`: the solver's bound on the optimum (no point of the box goes beyond it, to
    the solver's feasibility tolerance); `optimal`: the solver closed the gap between them (relative
    1e-9, `fairness.milp`), so `attained` is the optimum. Stopped short (time limit): not optimal, and the
    gap says by how much at most."""

    attained: Fraction
    bound: float | None
    optimal: bool
    message: str = ""

    @property
    def gap(self) -> float | None:
        """|attained - bound| (logits), when the solver has a bound."""
        return None if self.bound is None else abs(float(self.attained) - self.bound)


def exact_extremes(model: FixedPointModel, favourable_class: int, flip: Flip, box: Box,
                   time_limit: float = 60.0) -> tuple[Extreme, Extreme]:
    """(min g, max g) over the box by the two-copy MILP, each with its bound and whether it is optimal."""
    prog = _program(model, favourable_class, flip, box)
    return (_milp_extreme(model, favourable_class, flip, box, prog, 1, time_limit),
            _milp_extreme(model, favourable_class, flip, box, prog, -1, time_limit))


def _milp_extreme(model, favourable_class, flip, box, prog: _Program, sign: int, time_limit: float) -> Extreme:
    """minimise sign * g: the minimum (sign 1) or the maximum (sign -1)."""
    from .milp import solve

    n, m = prog.n, len(prog.unstable)
    rows, lo_r, hi_r = [], [], []

    def add(terms: dict[int, float], lo: float, hi: float) -> None:
        row = np.zeros(n + m)
        for v, k in terms.items():
            row[v] = k
        rows.append(row)
        lo_r.append(lo)
        hi_r.append(hi)

    for terms, rhs in prog.eq:
        add({v: float(k) for v, k in terms.items()}, float(rhs), float(rhs))
    for i, (pre, post, l, u) in enumerate(prog.unstable):
        a = n + i
        add({post: 1.0, pre: -1.0}, 0.0, np.inf)  # post >= pre
        add({post: 1.0, pre: -1.0, a: float(-l)}, -np.inf, float(-l))  # post <= pre - l (1 - a)
        add({post: 1.0, a: float(-u)}, -np.inf, 0.0)  # post <= u a
    cost = np.concatenate([[float(sign * v) for v in prog.c], np.zeros(m)])
    lower = [float(v) for v in prog.lower] + [0.0] * m
    upper = [float(v) for v in prog.upper] + [1.0] * m
    res = solve(cost, np.array(rows).reshape(len(rows), n + m), lo_r, hi_r, lower, upper,
                [0] * n + [1] * m, time_limit)
    if res.x is None:
        raise PersistenceError(f"the MILP found no point: {res.message}")
    one = 1 << model.scale_bits
    x = [Fraction(v, one) for v in box.lower]
    for v, j in zip(prog.free, prog.free_columns):
        point = Fraction(float(res.x[v])).limit_denominator(1 << 40)
        x[j] = min(max(point, Fraction(box.lower[j], one)), Fraction(box.upper[j], one))
    bound = None if res.bound is None else sign * res.bound + float(prog.constant)
    return Extreme(g_value(model, favourable_class, flip, x), bound, res.optimal,
                   "" if res.optimal else res.message)

