"""An independent exact-distance reference for the fairness radius of an integer ReLU model.

For a query x* with decision y, the fairness radius is the least Euclidean
distance (real units, free coordinates only) from the query's free part u* to
a point u of the free box at which, for some slice S of sensitive values, the
exact forward pass at (u, S) does not strictly decide y (some class j != y has
logit_j >= logit_y). It is 0 when a slice already fails to decide y strictly at
u*, and infinite when no such point exists in the box.

This module computes it with nothing but the model's integer parameters and
forward pass (`fairness.fixed_point`), numpy and scipy, so that it can check the
certifier rather than repeat it. The method is exact-distance GeoCert (Jordan et
al., 2019): per slice, a best-first search over activation regions. For a fixed
activation code every pre-activation is affine in u, and the region is the closed
polyhedron where the code's on/off signs hold. Two kinds of keys sit on a heap:

* a facet key: the least distance from u* to the region's points that also lie
  on one neuron's hyperplane z_k = 0 (inside the box); popping it enters the
  neighbouring region, the code with bit k flipped, which contains that facet;
* a class key: the least distance from u* to the region's points (in the box)
  with logit_j >= logit_y for one class j != y; popping it ends the slice.

Any point of the box is joined to u* by a segment; each code change along the
segment happens at a point that both codes' regions contain (and single-bit
flips connect all codes containing that point), so every region meeting the
ball of radius r around u* is reached through facets at distance <= r before a
key larger than r is popped. The first class key popped is the slice's radius.

Keys are computed lazily: a facet (class) key is first pushed with the distance
from u* to its hyperplane (half-space), which is a lower bound, together with the
distance at which its region was entered (a region is entered at its own
distance from u*, so nothing in it is nearer); the quadratic programme is solved
only when that provisional key reaches the top of the heap, and is then pushed
back with its value. Popping order is therefore the order of the true keys.

Every constraint is a row of Python ints in the integer coordinates of the
model (u at scale 2^s). Each least-distance programme is solved in floating
point on rows normalised to unit length (Lawson & Hanson's LDP through
non-negative least squares; an LP for a feasible start, SLSQP and trust-constr
as fallbacks, each result checked for feasibility and complementarity) and then
polished in rational arithmetic: from the float solution's active set a few
exact active-set steps find a point and multipliers satisfying the KKT
conditions exactly, which makes the key an exact rational squared distance.
If the exact polish does not succeed the float value is used and counted in
`unverified_qps`.

Finally the winning slice's minimiser is confirmed by the exact integer forward
pass: for a rational input P/D (P integers at scale 2^s, D > 0) the forward pass
with every bias multiplied by D yields D times the logits, because ReLU is
positively homogeneous, so a non-strict decision is decided with Python ints.
Both the exact minimiser itself and points pushed slightly from it towards the
interior of the class-j part of its region are checked.
"""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, minimize, nnls

from fairness.fixed_point import FixedPointModel, QuantisedMLP

FEAS_TOL = 1e-9        # float feasibility tolerance on unit-normalised rows, real units
_INFEAS_EPS = 1e-13    # LDP residual below which the constraints are treated as inconsistent
_PUSHES = (1e-9, 1e-7, 1e-5, 1e-3)


class ReferenceLimitError(RuntimeError):
    """The region search exceeded `max_regions`; no answer is given rather than a wrong one."""


@dataclass(frozen=True)
class ReferenceRadius:
    """The fairness radius of one query, with how it was found.

    radius: real units (math.inf when no point of the box fails to decide y strictly);
    slice_index: index into `model.slices()` of the slice that attains it (None when inf);
    point: the minimiser's free coordinates in real units (None when inf);
    cls: the class j != y with logit_j >= logit_y at the minimiser (None when inf);
    regions / qps: activation regions entered and least-distance programmes solved;
    confirmed_upper: the smallest real distance from u* of a point near the minimiser
      at which the exact integer forward pass does not strictly decide y (None if none);
    radius_sq: the exact squared radius (real units) when the winning programme's KKT
      conditions were verified in rationals, else None;
    confirmed_exact: whether the exact rational minimiser itself was confirmed;
    unverified_qps: programmes whose value is a float answer without exact verification;
    confirmed_pushed: like confirmed_upper, but only over the float minimiser pushed slightly
      towards the interior of the class-j part of its region (no use of the exact polish).
    """

    radius: float
    slice_index: int | None
    point: tuple[float, ...] | None
    cls: int | None
    regions: int
    qps: int
    confirmed_upper: float | None
    radius_sq: Fraction | None = None
    confirmed_exact: bool = False
    unverified_qps: int = 0
    confirmed_pushed: float | None = None


# --------------------------------------------------------------------------- exact forward pass


def scaled_logits(net: QuantisedMLP, numerators: Sequence[int], denominator: int) -> tuple[int, ...]:
    """D times the logits at the rational input P/D (P at scale 2^s): every bias is multiplied by D."""
    if denominator <= 0:
        raise ValueError("the denominator must be positive")
    h = [int(v) for v in numerators]
    out: tuple[int, ...] = ()
    for l, (w, b) in enumerate(zip(net.weights, net.biases)):
        z = tuple(sum(wi * hi for wi, hi in zip(row, h)) + bi * denominator for row, bi in zip(w, b))
        out = z
        h = [v if v > 0 else 0 for v in z]
    return out


def strictly_decides(logits: Sequence[int], y: int) -> bool:
    return all(logits[y] > v for j, v in enumerate(logits) if j != y)


def _rival(logits: Sequence[int], y: int) -> int | None:
    """The class j != y with the largest logit (lowest index on ties) if it reaches logit_y."""
    others = [j for j in range(len(logits)) if j != y]
    j = max(others, key=lambda k: (logits[k], -k))
    return j if logits[j] >= logits[y] else None


# --------------------------------------------------------------------------- constraint rows


@dataclass(frozen=True)
class _Row:
    """a . w + g >= 0 (or == 0), with w = u - u* in integer coordinates (scale 2^s)."""

    a: tuple[int, ...]
    g: int
    eq: bool
    norm: float          # Euclidean norm of a
    an: np.ndarray       # a / norm
    gn: float            # g / (norm * 2^s): the row in real units, unit normal


def _make_row(a: Sequence[int], g: int, eq: bool, scale: int) -> _Row | bool:
    """A row, or True when it holds everywhere (zero normal, satisfied), False when nowhere."""
    a = tuple(int(v) for v in a)
    sq = sum(v * v for v in a)
    if sq == 0:
        return (g == 0) if eq else (g >= 0)
    norm = _sqrt_fraction(Fraction(sq))
    an = np.array([v / norm for v in a], dtype=float)
    return _Row(a, int(g), eq, norm, an, float(Fraction(g, 1 << scale)) / norm)


@dataclass
class _QPResult:
    d2: Fraction | None              # exact squared distance, integer units, when verified
    w: tuple[Fraction, ...] | None   # exact minimiser offset, integer units, when verified
    v: np.ndarray                    # float minimiser offset, real units
    dist: float                      # real-unit distance (exact when d2 is set)


class _LDP:
    """min ||w|| subject to rows and the box blo <= w <= bhi (integer offsets from u*)."""

    def __init__(self, blo: Sequence[int], bhi: Sequence[int], scale: int):
        self.blo = [int(v) for v in blo]
        self.bhi = [int(v) for v in bhi]
        self.n = len(self.blo)
        self.scale = scale
        self.one = float(1 << scale)
        self.vlo = np.array([float(Fraction(v, 1 << scale)) for v in self.blo])
        self.vhi = np.array([float(Fraction(v, 1 << scale)) for v in self.bhi])
        self.unverified = 0
        self.solved = 0

    # ---- float stage

    def _stack(self, rows: list[_Row]):
        """Inequalities G v >= h over real offsets v, with the origin of each row."""
        n = self.n
        G, h, origin = [], [], []
        for p, r in enumerate(rows):
            G.append(r.an)
            h.append(-r.gn)
            origin.append(("row", p, 1))
            if r.eq:
                G.append(-r.an)
                h.append(r.gn)
                origin.append(("row", p, -1))
        eye = np.eye(n)
        for i in range(n):
            G.append(eye[i])
            h.append(self.vlo[i])
            origin.append(("lo", i, 1))
            G.append(-eye[i])
            h.append(-self.vhi[i])
            origin.append(("hi", i, 1))
        return np.array(G, dtype=float).reshape(len(G), n), np.array(h, dtype=float), origin

    @staticmethod
    def _violation(G, h, v) -> float:
        return float(np.max(h - G @ v, initial=0.0))

    def _nnls(self, G, h):
        """Lawson & Hanson LDP: NNLS on [G^T; h^T] u ~ e_{n+1}. None means 'looks inconsistent'."""
        m, n = G.shape
        E = np.vstack([G.T, h[None, :]])
        f = np.zeros(n + 1)
        f[n] = 1.0
        try:
            u, _ = nnls(E, f, maxiter=50 * (m + n + 1))
        except RuntimeError:
            return "failed"
        r = E @ u - f
        if -r[n] <= _INFEAS_EPS:
            return None
        v = -r[:n] / r[n]
        lam = u / (-r[n])
        return v, lam

    def _lp_point(self, rows: list[_Row]):
        """A feasible point from HiGHS, or None if the LP is infeasible."""
        n = self.n
        ineq = [r for r in rows if not r.eq]
        eqs = [r for r in rows if r.eq]
        kw = {}
        if ineq:
            kw["A_ub"] = -np.array([r.an for r in ineq])
            kw["b_ub"] = np.array([r.gn for r in ineq])
        if eqs:
            kw["A_eq"] = np.array([r.an for r in eqs])
            kw["b_eq"] = -np.array([r.gn for r in eqs])
        res = linprog(np.zeros(n), bounds=list(zip(self.vlo, self.vhi)), method="highs", **kw)
        if res.status == 2:
            return None
        if res.status != 0 or res.x is None:
            return "failed"
        return np.asarray(res.x, dtype=float)

    def _slsqp(self, rows: list[_Row], x0):
        ineq = [r for r in rows if not r.eq]
        eqs = [r for r in rows if r.eq]
        cons = []
        if ineq:
            A = np.array([r.an for r in ineq])
            b = np.array([r.gn for r in ineq])
            cons.append({"type": "ineq", "fun": lambda v, A=A, b=b: A @ v + b, "jac": lambda v, A=A: A})
        if eqs:
            A = np.array([r.an for r in eqs])
            b = np.array([r.gn for r in eqs])
            cons.append({"type": "eq", "fun": lambda v, A=A, b=b: A @ v + b, "jac": lambda v, A=A: A})
        res = minimize(lambda v: 0.5 * float(v @ v), x0, jac=lambda v: v, method="SLSQP",
                       bounds=list(zip(self.vlo, self.vhi)), constraints=cons,
                       options={"ftol": 1e-16, "maxiter": 1000})
        return np.asarray(res.x, dtype=float)

    def _trust(self, rows: list[_Row], x0):
        ineq = [r for r in rows if not r.eq]
        eqs = [r for r in rows if r.eq]
        cons = []
        if ineq:
            A = np.array([r.an for r in ineq])
            cons.append(LinearConstraint(A, -np.array([r.gn for r in ineq]), np.inf))
        if eqs:
            A = np.array([r.an for r in eqs])
            b = -np.array([r.gn for r in eqs])
            cons.append(LinearConstraint(A, b, b))
        n = self.n
        res = minimize(lambda v: 0.5 * float(v @ v), x0, jac=lambda v: v, hess=lambda v: np.eye(n),
                       method="trust-constr", bounds=Bounds(self.vlo, self.vhi), constraints=cons,
                       options={"gtol": 1e-13, "xtol": 1e-15, "maxiter": 3000})
        return np.asarray(res.x, dtype=float)

    def _guess_from_multipliers(self, lam, origin, rows):
        top = max(1.0, float(np.max(lam, initial=0.0)))
        active, fixed = [], {}
        for (kind, idx, _), l in zip(origin, lam):
            if l <= 1e-12 * top:
                continue
            if kind == "row":
                if idx not in active:
                    active.append(idx)
            elif idx not in fixed:
                fixed[idx] = -1 if kind == "lo" else 1
        return active, fixed

    def _guess_from_slack(self, v, rows):
        active = [p for p, r in enumerate(rows) if r.eq or abs(float(r.an @ v) + r.gn) <= 1e-8]
        fixed = {}
        for i in range(self.n):
            if v[i] - self.vlo[i] <= 1e-8:
                fixed[i] = -1
            elif self.vhi[i] - v[i] <= 1e-8:
                fixed[i] = 1
        return active, fixed

    def _float_candidates(self, rows: list[_Row], G, h, origin):
        """Float minimisers with active-set guesses, most reliable first; None first if infeasible."""
        out = self._nnls(G, h)
        if isinstance(out, tuple):
            v, lam = out
            vv = float(v @ v)
            if self._violation(G, h, v) <= FEAS_TOL and abs(vv - float(lam @ h)) <= 1e-9 * max(1.0, vv):
                yield (v,) + self._guess_from_multipliers(lam, origin, rows)
                yield (v,) + self._guess_from_slack(v, rows)
                return
        x0 = self._lp_point(rows)
        if x0 is None:
            yield None
            return
        lp_ok = not isinstance(x0, str)
        if not lp_ok:
            x0 = np.clip(np.zeros(self.n), self.vlo, self.vhi)
        for method in (self._slsqp, self._trust):
            try:
                v = method(rows, x0)
            except (ValueError, np.linalg.LinAlgError):
                continue
            if self._violation(G, h, v) <= FEAS_TOL:
                yield (v,) + self._guess_from_slack(v, rows)
        if lp_ok and self._violation(G, h, x0) <= FEAS_TOL:
            yield (x0,) + self._guess_from_slack(x0, rows)

    def solve(self, rows: list[_Row]) -> _QPResult | None:
        """The least distance, or None when the constraints (with the box) are infeasible.

        Each float candidate is checked (feasibility, and complementarity for the LDP multipliers)
        and then polished exactly; the first exact success is returned. If none succeeds the
        smallest feasible float answer is returned and counted as unverified."""
        self.solved += 1
        G, h, origin = self._stack(rows)
        seen = []
        for cand in self._float_candidates(rows, G, h, origin):
            if cand is None:
                return None
            v, active, fixed = cand
            seen.append(v)
            exact = self._exact(rows, active, fixed)
            if exact is not None:
                w, d2 = exact
                vx = np.array([float(x / (1 << self.scale)) for x in w])
                return _QPResult(d2, w, vx, _sqrt_fraction(d2) / self.one)
        if not seen:
            raise RuntimeError("no float solver found a feasible point of a feasible programme")
        self.unverified += 1
        v = min(seen, key=lambda c: float(c @ c))
        return _QPResult(None, None, v, float(np.linalg.norm(v)))

    # ---- exact stage

    def _exact(self, rows: list[_Row], active: list[int], fixed: dict[int, int]):
        """A few exact active-set steps from a guess; (w, ||w||^2) when the KKT conditions hold exactly."""
        n = self.n
        eq_rows = [p for p, r in enumerate(rows) if r.eq]
        active = eq_rows + [p for p in dict.fromkeys(active) if not rows[p].eq]
        fixed = dict(fixed)
        for _ in range(2 * (len(rows) + n) + 10):
            free = [i for i in range(n) if i not in fixed]
            wfix = {i: (self.blo[i] if side < 0 else self.bhi[i]) for i, side in fixed.items()}
            chosen, mu = _gram_solve(rows, active, free, wfix)
            if chosen is None:
                return None
            # w = sum mu_p a_p on free coordinates, the bound on fixed ones; as integers over D
            D = 1
            for m in mu:
                D = D * m.denominator // math.gcd(D, m.denominator)
            mun = [int(m * D) for m in mu]
            W = [0] * n
            for p, m in zip(chosen, mun):
                a = rows[p].a
                for i in free:
                    W[i] += m * a[i]
            for i, val in wfix.items():
                W[i] = val * D
            # dual feasibility
            worst = None
            for p, m in zip(chosen, mu):
                if not rows[p].eq and m < 0:
                    score = float(m) * rows[p].norm
                    if worst is None or score < worst[0]:
                        worst = (score, "row", p)
            for i, side in fixed.items():
                atmu = sum(m * rows[p].a[i] for p, m in zip(chosen, mun))   # times D
                lam = (W[i] - atmu) if side < 0 else (atmu - W[i])
                if lam < 0:
                    score = lam / D
                    if worst is None or score < worst[0]:
                        worst = (score, "box", i)
            if worst is not None:
                if worst[1] == "row":
                    active = [p for p in chosen if p != worst[2]]
                else:
                    active = list(chosen)
                    del fixed[worst[2]]
                continue
            # primal feasibility
            worst = None
            for p, r in enumerate(rows):
                val = sum(ai * wi for ai, wi in zip(r.a, W) if ai) + r.g * D
                bad = (val != 0) if r.eq else (val < 0)
                if bad:
                    score = -abs(val) / D / r.norm
                    if worst is None or score < worst[0]:
                        worst = (score, "row", p)
            for i in free:
                if W[i] < self.blo[i] * D:
                    score = (W[i] - self.blo[i] * D) / D
                    if worst is None or score < worst[0]:
                        worst = (score, "lo", i)
                elif W[i] > self.bhi[i] * D:
                    score = (self.bhi[i] * D - W[i]) / D
                    if worst is None or score < worst[0]:
                        worst = (score, "hi", i)
            if worst is not None:
                active = list(chosen)
                if worst[1] == "row":
                    if worst[2] in active:
                        return None        # a dependent row that is not satisfied: give up
                    active.append(worst[2])
                else:
                    fixed[worst[2]] = -1 if worst[1] == "lo" else 1
                continue
            w = tuple(Fraction(x, D) for x in W)
            return w, Fraction(sum(x * x for x in W), D * D)
        return None


def _sqrt_fraction(q: Fraction) -> float:
    """sqrt of a non-negative rational, to float accuracy even for huge numerators and denominators."""
    if q <= 0:
        return 0.0
    num, den = q.numerator, q.denominator
    k = max(0, (130 - (num.bit_length() - den.bit_length())) // 2)
    return math.ldexp(float(math.isqrt((num << (2 * k)) // den)), -k)


def _bareiss_nonsingular(M: list[list[int]]) -> bool:
    k = len(M)
    A = [row[:] for row in M]
    prev = 1
    for i in range(k):
        if A[i][i] == 0:
            swap = next((r for r in range(i + 1, k) if A[r][i] != 0), None)
            if swap is None:
                return False
            A[i], A[swap] = A[swap], A[i]
        for r in range(i + 1, k):
            for c in range(i + 1, k):
                A[r][c] = (A[r][c] * A[i][i] - A[r][i] * A[i][c]) // prev
        prev = A[i][i]
    return True


def _gram_solve(rows, active, free, wfix):
    """Drop rows dependent on earlier ones (on the free coordinates), then solve the Gram system exactly."""
    chosen: list[int] = []
    for p in active:
        trial = chosen + [p]
        M = [[sum(rows[q].a[i] * rows[r].a[i] for i in free) for r in trial] for q in trial]
        if _bareiss_nonsingular(M):
            chosen = trial
    if not chosen:
        return [], []
    k = len(chosen)
    M = [[Fraction(sum(rows[q].a[i] * rows[r].a[i] for i in free)) for r in chosen] for q in chosen]
    rhs = [Fraction(-(rows[q].g + sum(rows[q].a[i] * val for i, val in wfix.items()))) for q in chosen]
    # Gaussian elimination, exact
    for c in range(k):
        piv = next((r for r in range(c, k) if M[r][c] != 0), None)
        if piv is None:
            return None, None
        M[c], M[piv] = M[piv], M[c]
        rhs[c], rhs[piv] = rhs[piv], rhs[c]
        for r in range(c + 1, k):
            if M[r][c] != 0:
                f = M[r][c] / M[c][c]
                for cc in range(c, k):
                    M[r][cc] -= f * M[c][cc]
                rhs[r] -= f * rhs[c]
    mu = [Fraction(0)] * k
    for r in range(k - 1, -1, -1):
        mu[r] = (rhs[r] - sum(M[r][c] * mu[c] for c in range(r + 1, k))) / M[r][r]
    return chosen, mu


# --------------------------------------------------------------------------- one slice


@dataclass
class _SliceResult:
    dist: float                      # real units, math.inf when unreachable, a lower bound when pruned
    pruned: bool
    cls: int | None
    qp: _QPResult | None
    rows: list[_Row] | None          # the winning programme's constraints (for confirmation)
    regions: int
    qps: int


class _Slice:
    def __init__(self, model: FixedPointModel, slice_values: Sequence[int], u_star: Sequence[int], y: int,
                 ldp: _LDP):
        net = model.net
        self.net = net
        self.s = net.scale_bits
        self.free = model.free_columns
        self.y = y
        self.ldp = ldp
        self.u_star = [int(v) for v in u_star]
        sens_point = list(model.with_slice([0] * net.n_inputs, slice_values))
        self.sens_point = sens_point
        self._memo: dict[tuple, tuple[list[list[int]], list[int], list[int]]] = {}
        self.n_hidden_layers = len(net.hidden_sizes)

    def layer(self, prefix: tuple) -> tuple[list[list[int]], list[int], list[int]]:
        """(A, c, g) of layer len(prefix): pre-activation = A u + c for integer u, g = A u* + c."""
        hit = self._memo.get(prefix)
        if hit is not None:
            return hit
        l = len(prefix)
        W, b = self.net.weights[l], self.net.biases[l]
        if l == 0:
            free = set(self.free)
            A = [[row[i] for i in self.free] for row in W]
            c = [sum(row[i] * self.sens_point[i] for i in range(len(row)) if i not in free) + bi
                 for row, bi in zip(W, b)]
        else:
            Ap, cp, _ = self.layer(prefix[:-1])
            bits = prefix[-1]
            on = [m for m, bit in enumerate(bits) if bit]
            n = len(self.free)
            A = [[sum(row[m] * Ap[m][i] for m in on) for i in range(n)] for row in W]
            c = [sum(row[m] * cp[m] for m in on) + bi for row, bi in zip(W, b)]
        g = [sum(ai * ui for ai, ui in zip(arow, self.u_star)) + ci for arow, ci in zip(A, c)]
        out = (A, c, g)
        self._memo[prefix] = out
        return out

    def start_codes(self, max_regions: int) -> list[tuple]:
        x = [0] * self.net.n_inputs
        for i, v in zip(self.free, self.u_star):
            x[i] = v
        for i, v in enumerate(self.sens_point):
            if i not in self.free:
                x[i] = v
        pre = self.net.pre_activations(x)[:-1]
        choices = [[(True,) if v > 0 else (False,) if v < 0 else (False, True) for v in z] for z in pre]
        flat = [opt for layer in choices for opt in layer]
        sizes = [len(z) for z in pre]
        if math.prod(len(opt) for opt in flat) > max_regions:
            raise ReferenceLimitError(f"more than {max_regions} start regions")
        codes = []
        for combo in itertools.product(*flat):
            code, k = [], 0
            for size in sizes:
                code.append(tuple(combo[k:k + size]))
                k += size
            codes.append(tuple(code))
        return codes

    def region_rows(self, code: tuple) -> list[_Row] | None:
        rows = []
        for l, bits in enumerate(code):
            A, _, g = self.layer(code[:l])
            for k, bit in enumerate(bits):
                sign = 1 if bit else -1
                r = _make_row([sign * v for v in A[k]], sign * g[k], False, self.s)
                if r is False:
                    return None
                if r is not True:
                    rows.append(r)
        return rows

    def search(self, max_regions: int, cutoff: float, region_budget: list[int]) -> _SliceResult:
        s = self.s
        scale = float(1 << s)
        L = self.n_hidden_layers
        y = self.y
        visited: set[tuple] = set()
        heap: list = []
        counter = itertools.count()
        regions = 0
        qps0 = self.ldp.solved
        region_cache: dict[tuple, list[_Row]] = {}

        def enter(code: tuple, entry: float) -> None:
            nonlocal regions
            if region_budget[0] >= max_regions:
                raise ReferenceLimitError(f"more than {max_regions} regions")
            region_budget[0] += 1
            regions += 1
            visited.add(code)
            rows = self.region_rows(code)
            if rows is None:       # an empty region (can only arise from an inconsistent start code)
                return
            region_cache[code] = rows
            for l in range(L):
                A, _, g = self.layer(code[:l])
                for k in range(len(code[l])):
                    nb = _flip(code, l, k)
                    if nb in visited:
                        continue
                    sq = sum(v * v for v in A[k])
                    if sq == 0:
                        if g[k] != 0:
                            continue       # the hyperplane misses the region entirely
                        lb = entry
                    else:
                        lb = max(entry, abs(g[k]) / math.sqrt(float(sq)) / scale)
                    heapq.heappush(heap, (lb, 1, next(counter), "facet?", (code, l, k, lb)))
            A, _, g = self.layer(code)
            for j in range(len(A)):
                if j == y:
                    continue
                a = [aj - ay for aj, ay in zip(A[j], A[y])]
                gg = g[j] - g[y]
                sq = sum(v * v for v in a)
                if sq == 0:
                    if gg < 0:
                        continue
                    lb = entry
                else:
                    lb = max(entry, max(0, -gg) / math.sqrt(float(sq)) / scale)
                heapq.heappush(heap, (lb, 1, next(counter), "class?", (code, j, lb)))

        for code in self.start_codes(max_regions):
            if code not in visited:
                enter(code, 0.0)

        while heap:
            key, _, _, kind, data = heapq.heappop(heap)
            if key > cutoff:
                return _SliceResult(key, True, None, None, None, regions, self.ldp.solved - qps0)
            if kind == "facet?":
                code, l, k, lb = data
                if _flip(code, l, k) in visited:
                    continue
                A, _, g = self.layer(code[:l])
                eqrow = _make_row(A[k], g[k], True, s)
                if eqrow is False:
                    continue
                rows = [r for r in region_cache[code]]
                # replace neuron k's inequality by the equality z_k = 0 (a zero-normal row was never stored)
                rows = _without_row(rows, A[k], g[k], code[l][k])
                if eqrow is not True:
                    rows.append(eqrow)
                res = self.ldp.solve(rows)
                if res is None:
                    continue
                heapq.heappush(heap, (max(res.dist, lb), 2, next(counter), "facet", (code, l, k)))
            elif kind == "facet":
                code, l, k = data
                nb = _flip(code, l, k)
                if nb not in visited:
                    enter(nb, key)
            elif kind == "class?":
                code, j, lb = data
                A, _, g = self.layer(code)
                crow = _make_row([aj - ay for aj, ay in zip(A[j], A[y])], g[j] - g[y], False, s)
                if crow is False:
                    continue
                rows = list(region_cache[code]) + ([] if crow is True else [crow])
                res = self.ldp.solve(rows)
                if res is None:
                    continue
                heapq.heappush(heap, (max(res.dist, lb), 0, next(counter), "class", (code, j, res, rows)))
            else:  # a class key: the slice's radius
                code, j, res, rows = data
                return _SliceResult(res.dist, False, j, res, rows, regions, self.ldp.solved - qps0)
        return _SliceResult(math.inf, False, None, None, None, regions, self.ldp.solved - qps0)


def _flip(code: tuple, l: int, k: int) -> tuple:
    layer = list(code[l])
    layer[k] = not layer[k]
    return code[:l] + (tuple(layer),) + code[l + 1:]


def _without_row(rows: list[_Row], a: Sequence[int], g: int, bit: bool) -> list[_Row]:
    sign = 1 if bit else -1
    target = (tuple(sign * v for v in a), sign * g)
    out, dropped = [], False
    for r in rows:
        if not dropped and (r.a, r.g) == target:
            dropped = True
            continue
        out.append(r)
    return out


# --------------------------------------------------------------------------- public API


def _context(model: FixedPointModel, query: Sequence[int]):
    net = model.net
    x = tuple(int(v) for v in query)
    if len(x) != net.n_inputs:
        raise ValueError(f"expected {net.n_inputs} input features, got {len(x)}")
    if not model.in_box(x):
        raise ValueError("the query lies outside the model's domain box")
    if net.n_classes < 2:
        raise ValueError("a decision needs at least two classes")
    free = model.free_columns
    u_star = [x[i] for i in free]
    blo = [model.box_lower[i] - x[i] for i in free]
    bhi = [model.box_upper[i] - x[i] for i in free]
    return x, net.decision(x), u_star, blo, bhi


def _confirm(model: FixedPointModel, sl: _Slice, res: _SliceResult, u_star, y, ldp: _LDP):
    """Confirmed counterexamples near the minimiser.

    Returns (smallest confirmed real distance or None, whether the exact minimiser was confirmed,
    smallest confirmed real distance among the pushed float points or None)."""
    net = model.net
    s = model.scale_bits
    free = model.free_columns
    box_lo = [model.box_lower[i] for i in free]
    box_hi = [model.box_upper[i] for i in free]
    cands: list[tuple[Fraction, ...]] = []
    if res.qp.w is not None:
        cands.append(tuple(Fraction(u) + w for u, w in zip(u_star, res.qp.w)))
    p = res.qp.v
    centre = _interior_point(res.rows, ldp)
    if centre is not None:
        for t in _PUSHES:
            q = p + t * (centre - p)
            cands.append(tuple(Fraction(u) + Fraction(float(qi)) * (1 << s) for u, qi in zip(u_star, q)))
    best, exact_ok, pushed = None, False, None
    n_exact = 1 if res.qp.w is not None else 0
    for n_c, cand in enumerate(cands):
        cand = tuple(min(max(c, lo), hi) for c, lo, hi in zip(cand, box_lo, box_hi))
        D = 1
        for c in cand:
            D = D * c.denominator // math.gcd(D, c.denominator)
        P = [0] * net.n_inputs
        for i, c in zip(free, cand):
            P[i] = int(c * D)
        for i, v in enumerate(sl.sens_point):
            if i not in free:
                P[i] = v * D
        if strictly_decides(scaled_logits(net, P, D), y):
            continue
        d = _sqrt_fraction(sum((c - u) ** 2 for c, u in zip(cand, u_star))) / (1 << s)
        if n_c < n_exact:
            exact_ok = True
        else:
            pushed = d if pushed is None else min(pushed, d)
        best = d if best is None else min(best, d)
    return best, exact_ok, pushed


def _interior_point(rows: list[_Row], ldp: _LDP):
    """A point deep inside {rows >= 0} within the box (Chebyshev-like centre), in real offsets; None if none."""
    n = ldp.n
    ineq = [r for r in rows if not r.eq]
    # variables (v, t): maximise t subject to an.v + gn >= t, box margins >= t, t <= 1
    A_ub, b_ub = [], []
    for r in ineq:
        A_ub.append(np.concatenate([-r.an, [1.0]]))
        b_ub.append(r.gn)
    for i in range(n):
        e = np.zeros(n + 1)
        e[i], e[n] = -1.0, 1.0
        A_ub.append(e.copy())
        b_ub.append(-ldp.vlo[i])
        e[i] = 1.0
        A_ub.append(e)
        b_ub.append(ldp.vhi[i])
    c = np.zeros(n + 1)
    c[n] = -1.0
    bounds = [(None, None)] * n + [(None, 1.0)]
    res = linprog(c, A_ub=np.array(A_ub), b_ub=np.array(b_ub), bounds=bounds, method="highs")
    if res.status != 0 or res.x is None:
        return None
    return np.asarray(res.x[:n], dtype=float)


def _point(u_star, qp: _QPResult, s: int) -> tuple[float, ...]:
    """The minimiser's free coordinates in real units."""
    if qp.w is not None:
        return tuple(float((u + w) / (1 << s)) for u, w in zip(u_star, qp.w))
    return tuple(float(Fraction(u, 1 << s) + Fraction(float(v))) for u, v in zip(u_star, qp.v))


def _zero_result(idx: int, j: int, u_star, s: int) -> ReferenceRadius:
    """Slice idx already fails to decide y strictly at u* (class j reaches logit_y there)."""
    point = tuple(float(Fraction(u, 1 << s)) for u in u_star)
    return ReferenceRadius(0.0, idx, point, j, 0, 0, 0.0, Fraction(0), True, 0, None)


def _found_result(model, idx: int, sl: _Slice, res: _SliceResult, u_star, y, ldp: _LDP,
                  regions: int, qps: int, unverified: int) -> ReferenceRadius:
    s = model.scale_bits
    confirmed, exact_ok, pushed = _confirm(model, sl, res, u_star, y, ldp)
    radius_sq = res.qp.d2 / (1 << (2 * s)) if res.qp.d2 is not None else None
    return ReferenceRadius(res.dist, idx, _point(u_star, res.qp, s), res.cls, regions, qps, confirmed,
                           radius_sq, exact_ok, unverified, pushed)


def reference_radius(model: FixedPointModel, query: Sequence[int], *, max_regions: int = 20000) -> ReferenceRadius:
    """The exact fairness radius of `query` (integers at scale 2^s, inside the box), found independently
    of the certifier. Slices are searched in order; a later slice's search stops as soon as its keys exceed
    the best radius so far. Raises ReferenceLimitError beyond max_regions regions (all slices together)."""
    x, y, u_star, blo, bhi = _context(model, query)
    for idx, sv in enumerate(model.slices()):
        j = _rival(model.net.logits(model.with_slice(x, sv)), y)
        if j is not None:
            return _zero_result(idx, j, u_star, model.scale_bits)
    ldp = _LDP(blo, bhi, model.scale_bits)
    budget = [0]
    best: tuple[float, int, _Slice, _SliceResult] | None = None
    regions = 0
    for idx, sv in enumerate(model.slices()):
        sl = _Slice(model, sv, u_star, y, ldp)
        res = sl.search(max_regions, best[0] if best else math.inf, budget)
        regions += res.regions
        if not res.pruned and res.cls is not None and (best is None or res.dist < best[0]):
            best = (res.dist, idx, sl, res)
    if best is None:
        return ReferenceRadius(math.inf, None, None, None, regions, ldp.solved, None, None, False, ldp.unverified)
    _, idx, sl, res = best
    return _found_result(model, idx, sl, res, u_star, y, ldp, regions, ldp.solved, ldp.unverified)


def reference_slice_results(model: FixedPointModel, query: Sequence[int], *,
                            max_regions: int = 20000) -> tuple[ReferenceRadius, ...]:
    """One full (unpruned) search per slice, in the order of `model.slices()`: each result's slice_index is
    its slice (also when its radius is inf); a slice deciding y non-strictly at u* has radius 0.
    regions, qps and unverified_qps count that slice's search only."""
    x, y, u_star, blo, bhi = _context(model, query)
    ldp = _LDP(blo, bhi, model.scale_bits)
    budget = [0]
    out = []
    for idx, sv in enumerate(model.slices()):
        j = _rival(model.net.logits(model.with_slice(x, sv)), y)
        if j is not None:
            out.append(_zero_result(idx, j, u_star, model.scale_bits))
            continue
        before, unv = ldp.solved, ldp.unverified
        sl = _Slice(model, sv, u_star, y, ldp)
        res = sl.search(max_regions, math.inf, budget)
        if res.cls is None:
            out.append(ReferenceRadius(math.inf, idx, None, None, res.regions, ldp.solved - before, None, None,
                                       False, ldp.unverified - unv))
        else:
            out.append(_found_result(model, idx, sl, res, u_star, y, ldp, res.regions, ldp.solved - before,
                                     ldp.unverified - unv))
    return tuple(out)


def reference_slice_radii(model: FixedPointModel, query: Sequence[int], *, max_regions: int = 20000) -> tuple[float, ...]:
    """The radius of every slice separately (real units), in the order of `model.slices()`."""
    return tuple(r.radius for r in reference_slice_results(model, query, max_regions=max_regions))
