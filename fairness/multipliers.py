"""Widths of the integer multipliers of Farkas and separation certificates, and the box multipliers of
the bound radius.

Shared by the certifier, which rounds multipliers to fit, and the statement,
whose range checks enforce the same widths (and whose prover takes the same
box multipliers as the plaintext bound). Plain rules, no solver.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

# Fast statements range-check every multiplier against this many bits; exact
# statements against this many on decision rows (see `exact_multiplier_bits`).
MAX_MULTIPLIER_BITS = 40


def exact_multiplier_bits(hidden_sizes: Sequence[int], scale_bits: int,
                          base_bits: int = MAX_MULTIPLIER_BITS) -> tuple[int, ...]:
    """Bit cap of each hidden neuron's multiplier (flat order) in exact-radius statements.

    Layer l's rows are at scale 2^(s(l+2)), about 2^s per layer below the next
    and 2^(s(L-l)) below the decision rows (L hidden layers), so the optimal
    multipliers grow by about as much from the decision row down. Each layer
    gets s (L - l) more bits than the decision row's `base_bits`: every
    multiplier keeps ~base_bits significant bits of its own."""
    n_layers = len(hidden_sizes)
    return tuple(base_bits + scale_bits * (n_layers - l) for l, h in enumerate(hidden_sizes) for _ in range(h))


# Linear bound propagation's ReLU relaxation slopes are dyadic at 2^-RELAXATION_SLOPE_BITS, rounded
# outward (fairness.persistence, and the persistence lens's circuit, which pins the same rounding).
RELAXATION_SLOPE_BITS = 16


# The bound radius rounds ||a'|| up to 2^-NORM_BITS (fairness.bound_radius, statement.bound_radius).
NORM_BITS = 16


def best_multiplier(a: np.ndarray, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, eps: float) -> np.ndarray:
    """Per row of `a` (free columns only), the mu >= 0 maximising the dual bound, in float: 0 when the
    box's minimising corner lies within eps, else the root of ||clip(x - a / (2 mu)) - x|| = eps, which is
    at most ||a|| / (2 eps) (found by bisection on log mu). Any mu is sound; this one is tight."""
    corner = np.where(a > 0, lo, np.where(a < 0, hi, x))  # where a.x is least (x itself where a_k = 0)
    mu = np.zeros(len(a))
    far = np.linalg.norm(corner - x, axis=1) > eps
    if eps <= 0 or not far.any():
        return mu
    high = np.log(np.linalg.norm(a[far], axis=1) / (2 * eps) + 1e-300)
    low = high - 60.0
    af, cf = a[far], corner[far]
    for _ in range(80):
        mid = (low + high) / 2
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # tiny mu: the step is the corner
            step = np.clip(x - af / (2 * np.exp(mid))[:, None], np.minimum(cf, x), np.maximum(cf, x))
        inside = np.linalg.norm(step - x, axis=1) <= eps
        high, low = np.where(inside, mid, high), np.where(inside, low, mid)
    mu[far] = np.exp(high)
    return mu


def box_multipliers(a: Sequence[int], q: Sequence[int], lo: Sequence[int], hi: Sequence[int],
                    eps: float) -> tuple[list[int], list[int]]:
    """Integer box multipliers (nu_lo, nu_hi >= 0) near the optimum's, from the best ball multiplier:
    where the ball's minimiser q - a / (2 mu) leaves [lo, hi], the multiplier that keeps it on the face."""
    if eps <= 0:  # the ball is the query: a'.x* is exact, no multiplier helps
        return [0] * len(a), [0] * len(a)
    af = np.array([a], dtype=float)
    qf, lf, hf = (np.array(v, dtype=float) for v in (q, lo, hi))
    mu = float(best_multiplier(af, qf, lf, hf, eps)[0])
    nu_lo, nu_hi = [], []
    for ak, qk, lk, hk in zip(a, q, lo, hi):
        if mu == 0:  # the box alone: a' = 0
            nu_lo.append(max(ak, 0))
            nu_hi.append(max(-ak, 0))
            continue
        below = float(ak) + 2 * mu * (lk - qk)  # > 0 when the minimiser lies below lo
        above = -(float(ak) + 2 * mu * (hk - qk))  # > 0 when it lies above hi
        nu_lo.append(max(0, int(round(below))))
        nu_hi.append(max(0, int(round(above))))
    return nu_lo, nu_hi
