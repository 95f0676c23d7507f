"""The exact GeoCert radius inside the explored regions: a tightness reference.

For a certified query and each slice, the true l2 distance from u* to the
nearest point of another class inside the covering set is

    min over R in S_s, j != y of  min { ||u - u*|| : u in box, u in P_R, z_j(u) >= z_y(u) }

(a convex QP per (region, class)). Every point of the covering union within
eps of u* is decided y (see `fairness.checker`), so the projection eps is at
most this radius; the gap measures how much the cheap projection distances
give away. Solved in float (scipy SLSQP, trust-constr as a fallback) from an
LP-feasible start; this number is information, never part of a certificate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fairness import farkas as fk
from fairness.certificate_data import CERTIFIED, Certificate
from fairness.fixed_point import FixedPointModel
from fairness.codes import ActivationCode
from fairness.regions import SliceGeometry, class_system, free_box, free_part

__all__ = ["ExactRadius", "exact_radius"]


@dataclass(frozen=True)
class ExactRadius:
    radius: float                  # real units; math.inf when no other class is reachable
    slice_index: int | None
    code: str | None
    cls: int | None
    qps: int                       # number of QPs solved


def _qp(rows, extra, box, scale_bits: int, u_star: np.ndarray) -> float | None:
    from scipy.optimize import LinearConstraint, minimize

    p1 = fk.solve_phase1(rows, extra, False, box, scale_bits)
    if p1.margin > fk.FEASIBILITY_TOLERANCE:
        return None
    a, b, _ = fk._lp_rows(rows, extra, False, scale_bits)
    lo = np.array(box.lower, dtype=float) / (1 << scale_bits)
    hi = np.array(box.upper, dtype=float) / (1 << scale_bits)
    target = u_star / (1 << scale_bits)
    x0 = np.clip(p1.point, lo, hi)

    def f(v):
        d = v - target
        return float(d @ d)

    def grad(v):
        return 2 * (v - target)

    bounds = list(zip(lo, hi))
    cons = [{"type": "ineq", "fun": lambda v: b - a @ v, "jac": lambda v: -a}]
    res = minimize(f, x0, jac=grad, bounds=bounds, constraints=cons, method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 500})
    ok = res.success and np.all(a @ res.x - b <= 1e-8)
    if not ok:
        res = minimize(f, x0, jac=grad, bounds=bounds, method="trust-constr",
                       constraints=[LinearConstraint(a, -np.inf, b)], options={"gtol": 1e-12, "maxiter": 3000})
    v = np.clip(res.x, lo, hi)
    return math.sqrt(f(v))


def exact_radius(model: FixedPointModel, cert: Certificate) -> ExactRadius:
    """The exact radius to another class within the certificate's covering sets."""
    if cert.status != CERTIFIED:
        return ExactRadius(0.0, cert.flip.slice_index if cert.flip else None, None, None, 0)
    box = free_box(model)
    u = np.array(free_part(model, cert.query), dtype=float)
    y = cert.decision
    best = ExactRadius(math.inf, None, None, None, 0)
    qps = 0
    for si, sc in enumerate(cert.slices):
        geom = SliceGeometry(model, sc.slice_values)
        for rc in sc.regions:
            region = geom.region(ActivationCode.parse(rc.code, model.net.hidden_sizes))
            for j in range(model.net.n_classes):
                if j == y:
                    continue
                rows, extra, _ = class_system(region, y, j)
                d = _qp(rows, extra, box, model.scale_bits, u)
                qps += 1
                if d is not None and d < best.radius:
                    best = ExactRadius(d, si, rc.code, j, 0)
    return ExactRadius(best.radius, best.slice_index, best.code, best.cls, qps)
