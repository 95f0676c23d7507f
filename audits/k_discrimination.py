"""k-discrimination over the whole domain (HyFair): the most outcome buckets one individual's sensitive
combinations can reach.

For a two-class model with favourable class f, margin m(x) = z_f(x) - z_other(x) and bucket width W
(logits; the spread lens's buckets b = floor(m / W)), k(z) is the number of distinct buckets among the
slices (every combination of sensitive values) at the shared non-sensitive inputs z. One MILP over S
exact copies of the network sharing z (the global search's encoding: a binary per unstable ReLU, big-M
from interval bounds):

    maximise sum_s u_s  subject to  W b_s + e <= m_s <= W b_s + W - e   (b_s integer)
                                    b_s != b_t for counted s, t          (an order binary per pair)

with u_s binary (slice s counted) and e = MARGIN_SLACK logits, ten times the solver's feasibility
tolerance, so that a margin the solver places in a bucket is in it exactly (without it, one margin on
a boundary could count in two buckets). The optimum is max k(z) over the points whose margins lie at
least e inside their buckets. The solver's point is re-checked with the exact forward pass at
rationals: the k reported is the exact one there ("found"), "optimal" when the solver proved no such
point reaches more and the exact k equals its optimum; the solver's dual bound is the upper bound. A sampling search (HyFair's fallback for large S) gives a lower bound beside it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

from fairness.fixed_point import FixedPointModel
from .global_search import (DEFAULT_TIME_LIMIT, Block, GlobalSearchError, MilpProgram, add_network_copy,
                            exact_margin, exact_solver_point, interval_bounds, margin_form, real_network,
                            restrict_to_encodings)

OPTIMAL, FOUND, UNKNOWN = "optimal", "found (not proved maximal)", "unknown"
MARGIN_SLACK = 1e-5  # logits: ten times HiGHS's MIP feasibility tolerance


@dataclass(frozen=True)
class KResult:
    status: str
    k: int  # the exact k at the point found (1 when nothing better was found)
    upper_bound: int | None  # no point reaches more buckets (the solver's dual bound)
    point: tuple[Fraction, ...] | None  # the non-sensitive inputs (real units), the first slice's sensitive values
    buckets: tuple[int, ...]  # per slice, floor(m / W) at the point, exactly
    seconds: float
    message: str = ""


def exact_buckets(model: FixedPointModel, x: Sequence[Fraction], favourable: int, width: Fraction) -> tuple[int, ...]:
    """floor(m_s / W) for every slice at the non-sensitive inputs of x (real units), exactly."""
    one = 1 << model.scale_bits
    out = []
    for values in model.slices():
        point = list(x)
        for c, v in zip(model.sensitive_columns, values):
            point[c] = Fraction(v, one)
        out.append(math.floor(exact_margin(model, point, favourable) / width))
    return tuple(out)


def max_buckets(model: FixedPointModel, favourable: int, width: float, time_limit: float = DEFAULT_TIME_LIMIT,
                choices: Mapping[int, Sequence[int]] | None = None, blocks: Sequence[Block] = ()) -> KResult:
    """The MILP of the module docstring. `width`: W in logits; `choices` and `blocks` as in the global
    search (`restrict_to_encodings`): categorical inputs at real records' encodings, never between them."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    if model.net.n_classes != 2 or favourable not in (0, 1):
        raise GlobalSearchError("k-discrimination compares one class's margin: two-class models only")
    if not width > 0 or not time_limit > 0:
        raise GlobalSearchError("the bucket width and the time limit must be positive")
    t0 = time.perf_counter()
    weights, biases = real_network(model)
    one = 1 << model.scale_bits
    sens, slices, n = model.sensitive_columns, model.slices(), model.net.n_inputs
    box_lo = np.array([v / one for v in model.box_lower])
    box_hi = np.array([v / one for v in model.box_upper])
    prog = MilpProgram()
    free = {j: prog.var(float(box_lo[j]), float(box_hi[j])) for j in range(n) if j not in sens}
    restrict_to_encodings(prog, free, one, box_lo, box_hi, choices or {}, blocks)
    counted, buckets, spans = [], [], []
    if width <= 4 * MARGIN_SLACK:
        raise GlobalSearchError(f"the bucket width must exceed {4 * MARGIN_SLACK:g} logits")
    for values in slices:
        fixed, lo, hi = box_lo.copy(), box_lo.copy(), box_hi.copy()
        for c, v in zip(sens, values):
            fixed[c] = lo[c] = hi[c] = v / one
        form = margin_form(weights, biases, add_network_copy(prog, weights, biases, free, fixed, lo, hi), favourable)
        m_lo, m_hi = _margin_range(weights, biases, favourable, lo, hi)
        b_lo, b_hi = math.floor(m_lo / width) - 1, math.ceil(m_hi / width) + 1
        b = prog.var(float(b_lo), float(b_hi), integer=True)
        terms = {v: a for v, a in form.items() if v >= 0}
        c0 = form.get(-1, 0.0)
        prog.row({**terms, b: -width}, MARGIN_SLACK - c0, np.inf)  # m - W b >= e
        prog.row({**terms, b: -width}, -np.inf, width - MARGIN_SLACK - c0)  # m - W b <= W - e
        counted.append(prog.var(0.0, 1.0, integer=True))
        buckets.append(b)
        spans.append((b_lo, b_hi))
    for s in range(len(slices)):
        for t in range(s + 1, len(slices)):
            big = max(spans[s][1], spans[t][1]) - min(spans[s][0], spans[t][0]) + 2
            order = prog.var(0.0, 1.0, integer=True)  # 1: b_t above b_s
            # counted s and t => b_t - b_s >= 1 (order 1) or b_s - b_t >= 1 (order 0)
            prog.row({buckets[t]: 1.0, buckets[s]: -1.0, order: -big, counted[s]: -big, counted[t]: -big},
                     1.0 - 3 * big, np.inf)
            prog.row({buckets[s]: 1.0, buckets[t]: -1.0, order: big, counted[s]: -big, counted[t]: -big},
                     1.0 - 2 * big, np.inf)
    nvar = len(prog.lower)
    a = np.zeros((len(prog.rows), nvar))
    for i, (terms, _, _) in enumerate(prog.rows):
        for v, k in terms.items():
            a[i, v] += k
    cost = np.zeros(nvar)
    cost[counted] = -1.0
    res = milp(cost, constraints=LinearConstraint(a, [r[1] for r in prog.rows], [r[2] for r in prog.rows]),
               integrality=np.array(prog.integer), bounds=Bounds(prog.lower, prog.upper),
               options={"time_limit": float(time_limit)})
    seconds = time.perf_counter() - t0
    dual = getattr(res, "mip_dual_bound", None)
    upper = None if dual is None or not math.isfinite(dual) else int(math.floor(-float(dual) + 1e-6))
    if res.x is None:
        return KResult(UNKNOWN, 1, upper, None, (), seconds, str(res.message))
    x = exact_solver_point(model, [float(res.x[free[j]]) if j in free else 0.0 for j in range(n)], box_lo, box_hi,
                           choices or {}, blocks)
    for c, v in zip(sens, slices[0]):
        x[c] = Fraction(v, one)
    exact = exact_buckets(model, x, favourable, Fraction(width))
    k = len(set(exact))
    solver_k = int(round(-float(res.fun)))
    if res.status == 0 and k == solver_k:
        return KResult(OPTIMAL, k, solver_k, tuple(x), exact, seconds)
    message = "" if res.status != 0 else f"the solver's optimum {solver_k} re-checks as {k} exactly"
    return KResult(FOUND, k, upper, tuple(x), exact, seconds, message or str(res.message))


def _margin_range(weights, biases, favourable: int, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """Interval bounds of the margin over the box (with the copy's sensitive values fixed)."""
    zl, zh = interval_bounds(weights, biases, lo, hi)[-1]
    hl, hh = np.clip(zl, 0, None), np.clip(zh, 0, None)
    row = weights[-1][favourable] - weights[-1][1 - favourable]
    c = float(biases[-1][favourable] - biases[-1][1 - favourable])
    return (float(np.clip(row, 0, None) @ hl + np.clip(row, None, 0) @ hh) + c,
            float(np.clip(row, 0, None) @ hh + np.clip(row, None, 0) @ hl) + c)


def sampled_max_buckets(model: FixedPointModel, favourable: int, width: float, samples: int = 20_000,
                        seed: int = 0, choices: Mapping[int, Sequence[int]] | None = None,
                        blocks: Sequence[Block] = ()) -> tuple[int, np.ndarray]:
    """(the largest k among uniform samples of the box, exact integer model on the input grid; per-sample k):
    a lower bound, HyFair's search when the MILP is out of reach. Categorical inputs are drawn among their
    encodings (`choices`, `blocks`)."""
    from .explain import draw_encodings, logits_per_slice

    rng = np.random.default_rng(seed)
    lo, hi = np.array(model.box_lower), np.array(model.box_upper)
    q = rng.integers(lo, hi + 1, size=(samples, len(lo)))
    draw_encodings(q, choices or {}, blocks, rng)
    w = Fraction(width).limit_denominator(1 << 40)
    scale = 1 << model.net.logit_scale_bits
    per_slice = [[math.floor(Fraction(int(r[favourable]) - int(r[1 - favourable]), scale) / w) for r in z]
                 for z in logits_per_slice(model, q)]
    k = np.array([len(set(col)) for col in zip(*per_slice)])
    return int(k.max()), k
