"""Exact Farkas certificates of emptiness over the public domain box.

A system is a list of integer rows ``n.u <= b`` (``HalfSpace``), optionally one
extra row that is either another inequality or an equality ``n.u = b``, over
the integer box ``lo <= u <= hi`` (coordinates at scale 2^s).

Certificate (exact integer residual form): integer multipliers ``lam_k >= 0``
on the inequality rows and ``mu`` on the extra row (``mu >= 0`` if the extra
row is an inequality, any sign if it is an equality). With

    r = sum_k lam_k n_k + mu n_extra          (integer vector)
    B = sum_k lam_k b_k + mu b_extra          (integer)

every feasible u satisfies r.u <= B. Every u in the box satisfies
r.u >= min_box r.u = -support(-r), with support(v) = sum_j max(v_j lo_j, v_j hi_j).
So ``B + support(-r) < 0`` proves that no point of the box satisfies the
system. `verify` checks exactly this with Python ints; nothing else about the
multipliers needs to be trusted.

Multipliers are found with a phase-1 LP solved by HiGHS (scipy): minimise t
subject to n̂_k.v - t <= b̂_k over the box (rows normalised, v in real units).
Its optimal duals y >= 0, sum y = 1, satisfy min_box(y.N̂ v) - y.b̂ = t* > 0 when
the system is empty; scaling y_k / ||n_k|| by a power of two and rounding gives
integer multipliers, which are then verified exactly. If no scale verifies,
`find_certificate` returns None and the caller must treat the hyperplane as
uncovered — always sound.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from fairness.multipliers import MAX_MULTIPLIER_BITS, exact_multiplier_bits  # noqa: F401 (re-exported)

IntVector = tuple[int, ...]

# Below this phase-1 value (real units) the system is treated as non-empty by the
# LP. It only steers the search (which region to visit next); never decides a cover.
FEASIBILITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class HalfSpace:
    """The integer row ``normal.u <= bound`` (or ``=`` when used as an equality)."""

    normal: IntVector
    bound: int


@dataclass(frozen=True)
class Box:
    """The integer box ``lower <= u <= upper`` (inclusive)."""

    lower: IntVector
    upper: IntVector

    def __post_init__(self) -> None:
        if len(self.lower) != len(self.upper):
            raise ValueError("box bounds of different lengths")
        if any(lo > hi for lo, hi in zip(self.lower, self.upper)):
            raise ValueError("box has a lower bound above its upper bound")

    @property
    def dim(self) -> int:
        return len(self.lower)

    def support(self, v: Sequence[int]) -> int:
        """max over the box of v.u, exactly."""
        return sum(max(vj * lo, vj * hi) for vj, lo, hi in zip(v, self.lower, self.upper))

    def contains(self, u: Sequence[int]) -> bool:
        return all(lo <= x <= hi for x, lo, hi in zip(u, self.lower, self.upper))


@dataclass(frozen=True)
class FarkasCertificate:
    """Integer multipliers: one per region row, plus one on the extra row.

    `box` is None for an emptiness certificate; for a separation certificate
    (`separation`) it holds one signed integer per box coordinate."""

    multipliers: IntVector
    extra: int
    box: IntVector | None = None

    def to_json(self) -> dict:
        out: dict = {"multipliers": list(self.multipliers), "extra": self.extra}
        if self.box is not None:
            out["box"] = list(self.box)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "FarkasCertificate":
        mult = data["multipliers"]
        extra = data["extra"]
        box = data.get("box")
        if not isinstance(mult, list) or not all(type(v) is int for v in mult) or type(extra) is not int:
            raise ValueError("Farkas multipliers must be integers")
        if box is not None and (not isinstance(box, list) or not all(type(v) is int for v in box)):
            raise ValueError("box multipliers must be integers")
        return cls(tuple(mult), extra, None if box is None else tuple(box))


def combine(rows: Sequence[HalfSpace], extra: HalfSpace, cert: FarkasCertificate) -> tuple[IntVector, int]:
    """(r, B): the integer combination of the rows' normals and bounds."""
    dim = len(extra.normal)
    r = [cert.extra * v for v in extra.normal]
    big_b = cert.extra * extra.bound
    for lam, row in zip(cert.multipliers, rows):
        if lam:
            for j in range(dim):
                r[j] += lam * row.normal[j]
            big_b += lam * row.bound
    return tuple(r), big_b


def verify(rows: Sequence[HalfSpace], extra: HalfSpace, extra_is_equality: bool, box: Box,
           cert: FarkasCertificate) -> bool:
    """True iff `cert` proves {u in box : rows, extra} empty (exact integers)."""
    if len(cert.multipliers) != len(rows) or cert.box is not None:
        return False
    if any(lam < 0 for lam in cert.multipliers):
        return False
    if not extra_is_equality and cert.extra < 0:
        return False
    r, big_b = combine(rows, extra, cert)
    return big_b + box.support(tuple(-v for v in r)) < 0


@dataclass(frozen=True)
class Phase1:
    """Result of the phase-1 LP: margin t* (real units; > 0 means empty), an
    optimal point v (real units) and the duals y (>= 0, one per LP row)."""

    margin: float
    point: np.ndarray
    duals: np.ndarray


def _lp_rows(rows: Sequence[HalfSpace], extra: HalfSpace | None, extra_is_equality: bool,
             scale_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalised float rows n̂ v <= b̂ in real units v = u / 2^s; zero rows kept as 0 <= b."""
    all_rows = list(rows)
    if extra is not None:
        all_rows.append(extra)
        if extra_is_equality:
            all_rows.append(HalfSpace(tuple(-v for v in extra.normal), -extra.bound))
    m, dim = len(all_rows), (len(all_rows[0].normal) if all_rows else 0)
    a = np.zeros((m, dim))
    b = np.zeros(m)
    norms = np.ones(m)
    for k, row in enumerate(all_rows):
        nsq = sum(v * v for v in row.normal)
        norm = math.sqrt(nsq) if nsq else 1.0
        norms[k] = norm
        a[k] = [v / norm for v in row.normal]
        # b / (norm 2^s), computed from the exact int in float.
        b[k] = float(row.bound) / norm / float(1 << scale_bits)
    return a, b, norms


def solve_phase1(rows: Sequence[HalfSpace], extra: HalfSpace | None, extra_is_equality: bool,
                 box: Box, scale_bits: int) -> Phase1:
    """min t s.t. n̂_k.v - t <= b̂_k, box (real units). Uses scipy's HiGHS."""
    from scipy.optimize import linprog

    a, b, _ = _lp_rows(rows, extra, extra_is_equality, scale_bits)
    dim = box.dim
    scale = float(1 << scale_bits)
    bounds = [(lo / scale, hi / scale) for lo, hi in zip(box.lower, box.upper)] + [(None, None)]
    cost = np.zeros(dim + 1)
    cost[-1] = 1.0
    if len(b) == 0:
        centre = np.array([(lo + hi) / 2 / scale for lo, hi in zip(box.lower, box.upper)])
        return Phase1(-math.inf, centre, np.zeros(0))
    a_ub = np.hstack([a, -np.ones((len(b), 1))])
    res = linprog(cost, A_ub=a_ub, b_ub=b, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"phase-1 LP failed: {res.message}")
    duals = -np.asarray(res.ineqlin.marginals)
    return Phase1(float(res.x[-1]), np.asarray(res.x[:-1]), np.maximum(duals, 0.0))


# Every multiplier is at most 2^precision; the statement circuit range-checks
# them against MAX_MULTIPLIER_BITS, so a certificate that would need more is
# not issued (the facet is then crossed or left to the distance test: sound).
MULTIPLIER_PRECISIONS = (24, 32, MAX_MULTIPLIER_BITS - 1)


def find_certificate(rows: Sequence[HalfSpace], extra: HalfSpace, extra_is_equality: bool, box: Box,
                     scale_bits: int, phase1: Phase1 | None = None,
                     caps: Sequence[int] | None = None) -> FarkasCertificate | None:
    """Integer Farkas multipliers proving emptiness, verified exactly, or None.

    Multipliers are rounded with the largest one at each of
    MULTIPLIER_PRECISIONS bits. With `caps` (bits, one per row and one for
    the extra row; `multipliers.exact_multiplier_bits`) the scale may also
    grow until some multiplier meets its own cap: rows of deeper layers are
    at larger scales, so their multipliers are smaller, and a certificate
    whose multipliers span more than the uniform precision can hold still
    rounds exactly."""
    if phase1 is None:
        phase1 = solve_phase1(rows, extra, extra_is_equality, box, scale_bits)
    if not phase1.margin > 0:
        return None
    _, _, norms = _lp_rows(rows, extra, extra_is_equality, scale_bits)
    y = np.asarray(phase1.duals, dtype=float)
    # Multiplier of integer row k is proportional to y_k / ||n_k||.
    weights = [y[k] / norms[k] for k in range(len(y))]
    top = max(weights) if weights else 0.0
    if not top > 0:
        return None
    m = len(rows)
    shifts = [precision - math.frexp(top)[1] for precision in MULTIPLIER_PRECISIONS]
    if caps is not None:
        if len(caps) != m + 1:
            raise ValueError(f"need {m + 1} multiplier caps, got {len(caps)}")
        row_caps = list(caps) + [caps[m]] * (len(weights) - m - 1)
        limit = min(cap - 1 - math.frexp(w)[1] for w, cap in zip(weights, row_caps) if w > 0)
        shifts += [shift for shift in (limit - 16, limit - 8, limit) if shift > shifts[-1]]
    for shift in shifts:
        lam = [_scaled_int(w, shift) for w in weights]
        if extra_is_equality:
            mu = lam[m] - lam[m + 1]
        else:
            mu = lam[m]
        cert = FarkasCertificate(tuple(lam[:m]), mu)
        if verify(rows, extra, extra_is_equality, box, cert):
            return cert
    return None


def _scaled_int(w: float, shift: int) -> int:
    """round(w * 2^shift) for w >= 0, exactly from the float."""
    if w <= 0:
        return 0
    mant, exp = math.frexp(w)
    q = int(mant * (1 << 53))  # exact
    e = exp - 53 + shift
    if e >= 0:
        return q << e
    return (q + (1 << (-e - 1))) >> -e


# ---------------------------------------------------------------- separation

def separation(rows: Sequence[HalfSpace], extra: HalfSpace, box: Box, cert: FarkasCertificate,
               u: Sequence[int]) -> tuple[int, IntVector] | None:
    """(h(u), r') of a separation certificate, or None if it is malformed.

    With r, B from `combine` (so r.v <= B on the system) and the box
    multipliers nu (nu.v <= support(nu) on the box), the affine function

        h(v) = r'.v - B - support(nu),   r' = r + nu,

    is <= 0 on every point of the system inside the box, whatever the
    (non-negative on inequality rows) multipliers are. So when h(u) > 0,
    every such point lies at integer-unit distance >= h(u) / ||r'|| from u
    (|h(u) - h(v)| <= ||r'|| ||u - v||); r' = 0 and h(u) > 0 is emptiness."""
    if cert.box is None or len(cert.box) != box.dim or len(cert.multipliers) != len(rows):
        return None
    if any(lam < 0 for lam in cert.multipliers):
        return None
    r, big_b = combine(rows, extra, cert)
    r2 = tuple(a + b for a, b in zip(r, cert.box))
    h = sum(a * x for a, x in zip(r2, u)) - big_b - box.support(cert.box)
    return h, r2


def separation_distance_sq(rows: Sequence[HalfSpace], extra: HalfSpace, box: Box, cert: FarkasCertificate,
                           u: Sequence[int], scale_bits: int) -> Fraction | None:
    """Squared real-unit distance the certificate proves between u and the
    system ({r' = 0}: infinite, returned as None with h > 0 checked); None also
    when it proves nothing (malformed or h(u) <= 0). Use `separation_proves`
    for the exact test against eps."""
    out = separation(rows, extra, box, cert, u)
    if out is None or out[0] <= 0:
        return None
    h, r2 = out
    nsq = sum(v * v for v in r2)
    if nsq == 0:
        return None
    return Fraction(h * h, nsq << (2 * scale_bits))


def separation_proves(rows: Sequence[HalfSpace], extra: HalfSpace, box: Box, cert: FarkasCertificate,
                      u: Sequence[int], eps: int, eps_bits: int, scale_bits: int) -> bool:
    """Exact test: h(u) > 0 and h(u)^2 2^(2t) >= E^2 2^(2s) ||r'||^2 (the system,
    inside the box, is at real distance >= E / 2^t from u)."""
    out = separation(rows, extra, box, cert, u)
    if out is None:
        return False
    h, r2 = out
    nsq = sum(v * v for v in r2)
    return h > 0 and (h * h) << (2 * eps_bits) >= (eps * eps * nsq) << (2 * scale_bits)


# Separation multipliers are rounded at this precision (the top one is ~2^p);
# they only need to approximate the nearest-point direction, whose quality
# the exact distance they prove accounts for.
SEPARATION_PRECISIONS = (20, 28)
# Exact radii need certificates whose proved distance matches the nearest
# point's to well below 2^-t. Rows of different layers differ in scale by
# about 2^s per layer, and so do their multipliers: the smallest needs ~20
# significant bits of its own, hence the wide top precisions (the best
# certificate found is kept).
EXACT_SEPARATION_PRECISIONS = (28, 39, 56, 72, 88)


def _least_distance(rows: Sequence[HalfSpace], extra: HalfSpace, extra_is_equality: bool, box: Box,
                    u: Sequence[int], scale_bits: int):
    """The least-distance program min ||x|| s.t. G x >= g (x = v - u in real units,
    every row and box bound a row of G), solved by NNLS as Lawson and Hanson do.

    With z >= 0 minimising ||[G^T; g^T] z - e_last|| and rho = [G^T; g^T] z - e_last,
    the nearest point is x = -rho[:n] / rho[n], and z / (1 - g.z) are the
    optimal duals. Returns (duals, x, normalised rows' norms) or None when
    the system is empty or degenerate."""
    from scipy.optimize import nnls

    a, b, norms = _lp_rows(rows, extra, extra_is_equality, scale_bits)
    dim = box.dim
    scale = float(1 << scale_bits)
    eye = np.eye(dim)
    full_a = np.vstack([a, eye, -eye])
    full_b = np.concatenate([b, np.array(box.upper, dtype=float) / scale, -np.array(box.lower, dtype=float) / scale])
    u0 = np.array(u, dtype=float) / scale
    g_mat, g_vec = -full_a, full_a @ u0 - full_b  # G x >= g  <=>  A (u0 + x) <= b
    e_mat = np.vstack([g_mat.T, g_vec[None, :]])
    f_vec = np.zeros(dim + 1)
    f_vec[-1] = 1.0
    try:
        z, _ = nnls(e_mat, f_vec, maxiter=50 * e_mat.shape[1])
    except (RuntimeError, ValueError):
        return None
    denom = 1.0 - float(g_vec @ z)
    if not denom > 1e-12:
        return None  # infeasible (empty: a Farkas certificate's job) or degenerate
    rho = e_mat @ z - f_vec
    return z / denom, -rho[:dim] / rho[dim], norms


def nearest_point(rows: Sequence[HalfSpace], extra: HalfSpace, extra_is_equality: bool, box: Box,
                  u: Sequence[int], scale_bits: int) -> np.ndarray | None:
    """The point of {v in box : rows, extra} nearest to u, in real units (float), or None."""
    out = _least_distance(rows, extra, extra_is_equality, box, u, scale_bits)
    if out is None:
        return None
    return np.array(u, dtype=float) / float(1 << scale_bits) + out[1]


def find_separation(rows: Sequence[HalfSpace], extra: HalfSpace, extra_is_equality: bool, box: Box,
                    u: Sequence[int], scale_bits: int, precisions: Sequence[int] = SEPARATION_PRECISIONS,
                    caps: Sequence[int] | None = None) -> tuple[FarkasCertificate, Fraction] | None:
    """A separation certificate for {v in box : rows, extra} against u and the
    squared real distance it proves, or None (nothing found).

    The optimal duals of the least-distance program (`_least_distance`) are
    the weights of the combination whose normal points from the nearest point
    to u. They are scaled and rounded to integers at each of `precisions`
    (bits of the largest); the returned distance is recomputed exactly
    (rounding only loses quality), and the best is kept. `caps` (bits, one
    per row and one for the extra row) bounds each multiplier's magnitude
    below 2^cap: the scale is lowered until every multiplier fits."""
    out = _least_distance(rows, extra, extra_is_equality, box, u, scale_bits)
    if out is None:
        return None
    duals, _, norms = out
    n_rows = len(norms)
    dim = box.dim
    m = len(rows)
    lam_w = [duals[k] / norms[k] for k in range(m)]
    if extra_is_equality:
        mu_w = duals[m] / norms[m] - duals[m + 1] / norms[m + 1]
    else:
        mu_w = duals[m] / norms[m]
    nu_w = duals[n_rows:n_rows + dim] - duals[n_rows + dim:]
    top = max([abs(v) for v in lam_w] + [abs(mu_w)] + [abs(float(v)) for v in nu_w])
    if not top > 0:
        return None
    shifts = [precision - math.frexp(top)[1] for precision in precisions]
    if caps is not None:
        if len(caps) != m + 1:
            raise ValueError(f"need {m + 1} multiplier caps, got {len(caps)}")
        limit = min(cap - 1 - math.frexp(w)[1] for w, cap in zip([*lam_w, mu_w], caps) if w != 0)
        shifts = sorted({min(shift, limit) for shift in shifts})
    found: list[tuple[FarkasCertificate, Fraction]] = []
    for shift in shifts:
        cert = FarkasCertificate(tuple(_scaled_int(v, shift) for v in lam_w), _signed_scaled_int(mu_w, shift),
                                 tuple(_signed_scaled_int(float(v), shift) for v in nu_w))
        d = separation_distance_sq(rows, extra, box, cert, u, scale_bits)
        if d is not None:
            found.append((cert, d))
    if not found:
        return None
    # The smallest multipliers that prove (almost) as much as the best: smaller
    # certificates are cheaper to prove, and 2^-40 of the distance is far below 2^-t.
    best = max(d for _, d in found)
    return next((c, d) for c, d in found if d >= best * (1 - Fraction(1, 1 << 40)))


def no_row(dim: int) -> HalfSpace:
    """The trivial extra row 0.u <= 0, for a separation from a whole region
    (its multiplier must be 0)."""
    return HalfSpace((0,) * dim, 0)


def find_region_separation(rows: Sequence[HalfSpace], box: Box, u: Sequence[int], scale_bits: int,
                           precisions: Sequence[int] = SEPARATION_PRECISIONS, caps: Sequence[int] | None = None
                           ) -> tuple[FarkasCertificate, Fraction] | None:
    """`find_separation` for the region {v in box : rows} itself (extra row `no_row`, multiplier 0)."""
    extra = no_row(box.dim)
    found = find_separation(rows, extra, False, box, u, scale_bits, precisions, caps)
    if found is None:
        return None
    cert = FarkasCertificate(found[0].multipliers, 0, found[0].box)
    d = separation_distance_sq(rows, extra, box, cert, u, scale_bits)
    return None if d is None else (cert, d)


def _signed_scaled_int(w: float, shift: int) -> int:
    return _scaled_int(w, shift) if w >= 0 else -_scaled_int(-w, shift)
