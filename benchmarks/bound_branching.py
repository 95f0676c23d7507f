"""How much branching would close the gap between the bound radius and the exact radius: a float estimate.

The bound radius (`fairness.bound_radius`) propagates one linear relaxation per slice over the whole ball
around the query; where the relaxation is loose it falls short of the exact radius (`certify(...,
radius="exact")`). Branching splits the ball into K pieces, each bounded on its own, and passes when every
piece does. Two splits are compared:

- neuron: a first-layer ReLU is split into its active and inactive half-spaces; each branch enforces its
  half-space constraint by a Lagrange multiplier beta >= 0 on the pre-activation, with the relaxation slopes
  alpha and the betas optimised by projected Adam (every bound is a valid Lagrangian lower bound whatever the
  parameters);
- box: an input coordinate's range inside the ball is halved.

Per slice a greedy tree is grown (split the worst leaf on the candidate whose worse child is best) until every
leaf's margin lower bound is positive or K leaves are used. The branched radius at K is found by bisection
between the radius at the previous K and the exact radius (to 1% of it).

THIS IS A FLOAT ESTIMATE of what a branching statement would prove: computed in float64 with no rounding
control, neither proved nor confirmed in exact arithmetic. It is not a radius any card may state. The
soundness probe (no branched radius may pass at 1.01 x exact with the largest K) guards only against gross
errors; any violation is printed and fails the run.

Cost model: a statement proves one propagation per branch per slice, so a statement with K branches per slice
costs about K times the propagations of the bound statement (K x slices in all). "branches used" is the most
leaves any slice of the query needed at its radius.

Per model (dataset, hidden sizes, variant; trained or loaded by `fairness.training.load_or_train`) and per
query (the first N test rows inside the box): the exact radius (each query under a budget of --exact-budget
seconds; queries over budget and flips are skipped and reported), the optimised bound radius
(`fairness.bound_radius.bound_certificate`) and the branched radius per split and K. Printed per model, split
and K: median and quartiles of branched / exact, how many queries reach >= 0.95 of exact, branches used
(median, max).

    .venv/bin/python benchmarks/bound_branching.py [--models german:4x2:unfair,german:8x2:fair]
        [--queries 10] [--splits neuron,box] [--branches 1,2,4,8,16] [--exact-budget 120] [--out FILE]

Writes benchmarks/results/bound_branching.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "bound_branching.json"
DEFAULT_MODELS = "german:4x2:unfair,german:8x2:fair,german:8x2:unfair"
ROOT_ITERS, CHILD_ITERS = 60, 25  # Adam steps for a tree's root and for each candidate child
LR_ALPHA, LR_BETA = 0.1, 0.1
TOLERANCE = 0.01  # bisection stops within this fraction of the exact radius
PROBE = 1.01  # soundness probe: no branched bound may pass at this multiple of the exact radius
REACH = 0.95  # "reaches exact": branched / exact at least this


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def quartiles(values: list[float]) -> list[float] | None:
    """[q1, median, q3], inclusive (never outside the values: a ratio to exact above 1 would read as unsound)."""
    if not values:
        return None
    if len(values) == 1:
        return [values[0]] * 3
    q = statistics.quantiles(values, n=4, method="inclusive")
    return [q[0], statistics.median(values), q[2]]


def _exact_worker(args):
    model, query = args
    from fairness.certificate import EXACT, certify

    started = time.perf_counter()
    cert = certify(model, query, radius=EXACT)
    return cert.eps, cert.eps_bits, cert.status, time.perf_counter() - started


# --- float bounds over ball(eps) ∩ box ------------------------------------------------------------------------


def ball_box_dual(a, x, lo, hi, eps):
    """Per row: (p, mu) with p = argmin over the box of a.p + mu(||p - x||^2 - eps^2), mu the best ball
    multiplier (x may lie outside the box). The dual value at any mu >= 0 is a lower bound on
    min {a.p : p in box, ||p - x|| <= eps}."""
    corner = np.where(a > 0, lo, np.where(a < 0, hi, np.clip(x, lo, hi)))
    far = ((corner - x) ** 2).sum(1) > eps * eps
    mu = np.zeros(len(a))
    p = corner.copy()
    if far.any():
        af, xf, lf, hf = a[far], x[far], lo[far], hi[far]
        size = np.linalg.norm(af, axis=1) + 1e-300
        high = np.log(size / (2 * max(eps, 1e-12))) + 25.0
        low = high - 60.0
        for _ in range(45):
            mid = (low + high) / 2
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                step = np.clip(xf - af / (2 * np.exp(mid))[:, None], lf, hf)
            inside = ((step - xf) ** 2).sum(1) <= eps * eps
            high, low = np.where(inside, mid, high), np.where(inside, low, mid)
        m = np.exp(high)
        mu[far] = m
        p[far] = np.clip(xf - af / (2 * m)[:, None], lf, hf)
    return p, mu


class Net:
    """The fixed-point model's network in float64 (input units), with batched alpha/beta bound propagation.
    S (batch, first-layer width) holds each element's first-layer splits: +1 active, -1 inactive, 0 free."""

    def __init__(self, model):
        s = model.scale_bits
        self.W = [torch.tensor(np.array(w, dtype=float) / (1 << s)) for w in model.net.weights]
        self.b = [torch.tensor(np.array(b, dtype=float) / (1 << (s * (i + 2)))) for i, b in enumerate(model.net.biases)]
        self.free = np.array(model.free_columns, dtype=int)
        self.fixed = np.array(model.sensitive_columns, dtype=int)
        self.lo = np.array(model.box_lower, dtype=float)[self.free] / (1 << s)
        self.hi = np.array(model.box_upper, dtype=float)[self.free] / (1 << s)
        self.L = len(self.W) - 1
        self.H = [w.shape[0] for w in self.W[:-1]]
        self.y, self.others = 0, []

    def decide(self, y: int, n_classes: int) -> None:
        self.y, self.others = y, [c for c in range(n_classes) if c != y]

    def minimum(self, a, c, X, LO, HI, eps):
        """a: (B, R, n), c: (B, R): lower bounds of a.x + c over ball(eps) ∩ box per element."""
        B, R, n = a.shape
        af = a[:, :, self.free]
        fixed = c + (a[:, :, self.fixed] * torch.tensor(X[:, None, self.fixed])).sum(-1)
        flat = af.detach().reshape(B * R, -1).numpy()
        xf = np.repeat(X[:, self.free], R, 0)
        p, mu = ball_box_dual(flat, xf, np.repeat(LO, R, 0), np.repeat(HI, R, 0), eps)
        slack = torch.tensor((mu * (((p - xf) ** 2).sum(1) - eps * eps)).reshape(B, R))
        return fixed + (af * torch.tensor(p.reshape(B, R, -1))).sum(-1) + slack

    def back(self, rows, consts, top, bounds, S, alpha):
        """Back-substitute linear forms of layer `top`'s pre-activations down to the input."""
        for k in range(top - 1, -1, -1):
            l, u = bounds[k]
            if k == 0:
                on = (l >= 0) | (S == 1)
                dead = ((u <= 0) | (S == -1)) & ~on
            else:
                on, dead = l >= 0, (u <= 0) & ~(l >= 0)
            unstable = ~on & ~dead
            width = torch.where(unstable, u - l, torch.ones_like(l))
            upper = torch.where(on, torch.ones_like(l), torch.where(unstable, u / width, torch.zeros_like(l)))
            offset = torch.where(unstable, l, torch.zeros_like(l))
            lower = torch.where(on[:, None, :], torch.ones_like(alpha[k]),
                                torch.where(dead[:, None, :], torch.zeros_like(alpha[k]), alpha[k]))
            pos, neg = rows.clamp(min=0), rows.clamp(max=0)
            m = pos * lower + neg * upper[:, None, :]
            consts = consts - (neg * (upper * offset)[:, None, :]).sum(-1) + m @ self.b[k]
            rows = m @ self.W[k]
        return rows, consts

    def with_beta(self, rows, consts, S, beta):
        """Subtract sum_j beta_j s_j z0_j (>= 0 on the branch) from the input form."""
        bs = beta * S[:, None, :]
        return rows - bs @ self.W[0], consts - bs @ self.b[0]

    @staticmethod
    def crown_alpha(R, l, u):
        return ((l >= 0) | ((u > 0) & (u >= -l))).double()[:, None, :].expand(-1, R, -1).clone()

    def forward(self, X, LO, HI, S, eps, P, init=False):
        """Margin lower bounds (B, C-1) and layer-0 bounds; P: params dict (created when init)."""
        B = len(X)
        bounds = []
        for k in range(self.L):
            w, b = self.W[k], self.b[k]
            rows = torch.cat([w, -w])[None].expand(B, -1, -1)
            consts = torch.cat([b, -b])[None].expand(B, -1)
            if k:
                if init:
                    P[("a", k)] = [self.crown_alpha(2 * self.H[k], l, u) for l, u in bounds]
                rows, consts = self.back(rows, consts, k, bounds, S, P[("a", k)])
            if init:
                P[("b", k)] = torch.zeros(B, 2 * self.H[k], self.H[0], dtype=torch.float64)
            rows, consts = self.with_beta(rows, consts, S, P[("b", k)])
            low = self.minimum(rows, consts, X, LO, HI, eps)
            l, u = low[:, :self.H[k]], -low[:, self.H[k]:]
            if k == 0:
                l = torch.where(S == 1, l.clamp(min=0), l)
                u = torch.where(S == -1, u.clamp(max=0), u)
            bounds.append((l, u))
        w, b = self.W[-1], self.b[-1]
        rows = torch.stack([w[self.y] - w[c] for c in self.others])[None].expand(B, -1, -1)
        consts = torch.stack([b[self.y] - b[c] for c in self.others])[None].expand(B, -1)
        if init:
            P[("a", "m")] = [self.crown_alpha(len(self.others), l, u) for l, u in bounds]
            P[("b", "m")] = torch.zeros(B, len(self.others), self.H[0], dtype=torch.float64)
        rows, consts = self.back(rows, consts, self.L, bounds, S, P[("a", "m")])
        rows, consts = self.with_beta(rows, consts, S, P[("b", "m")])
        return self.minimum(rows, consts, X, LO, HI, eps), bounds[0]


# --- optimisation and branching ---------------------------------------------------------------------------------


def _flat_params(P):
    out = []
    for key, v in P.items():
        if key[0] == "a":
            out += [("a", t) for t in v]
        else:
            out.append(("b", v))
    return out


def _stack_params(leaves):
    """The leaves' (inherited) parameters, stacked into one batch."""
    P = {}
    for key, first in leaves[0]["P"].items():
        if key[0] == "a":
            P[key] = [torch.stack([lf["P"][key][i] for lf in leaves]).clone() for i in range(len(first))]
        else:
            P[key] = torch.stack([lf["P"][key] for lf in leaves]).clone()
    return P


def _adam_step(params, m, v, t):
    """One projected Adam step (alphas to [0, 1], betas to >= 0)."""
    for (kind, p), mm, vv in zip(params, m, v):
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        mm.mul_(0.9).add_(g, alpha=0.1)
        vv.mul_(0.999).addcmul_(g, g, value=0.001)
        step = (mm / (1 - 0.9 ** t)) / ((vv / (1 - 0.999 ** t)).sqrt() + 1e-12)
        p.sub_((LR_ALPHA if kind == "a" else LR_BETA) * step)
        if kind == "a":
            p.clamp_(0, 1)
        else:
            p.clamp_(min=0)
        p.grad = None


def optimise(net, leaves, eps, iters):
    """Optimise every leaf's parameters (batched), keeping each leaf's best iterate; sets leaf['bound'],
    leaf['P'], leaf['l0'], leaf['u0']."""
    X = np.stack([lf["x"] for lf in leaves])
    LO = np.stack([lf["lo"] for lf in leaves])
    HI = np.stack([lf["hi"] for lf in leaves])
    S = torch.tensor(np.stack([lf["s"] for lf in leaves]), dtype=torch.float64)
    P = {}
    if leaves[0]["P"] is None:
        with torch.no_grad():
            net.forward(X, LO, HI, S, eps, P, init=True)
    else:
        P = _stack_params(leaves)
    params = _flat_params(P)
    for _, t in params:
        t.requires_grad_(True)
    m = [torch.zeros_like(t) for _, t in params]
    v = [torch.zeros_like(t) for _, t in params]
    best = torch.full((len(leaves),), -math.inf, dtype=torch.float64)
    best_P = {k: ([t.detach().clone() for t in val] if k[0] == "a" else val.detach().clone()) for k, val in P.items()}
    best_l0 = best_u0 = None
    for it in range(iters + 1):
        margins, (l0, u0) = net.forward(X, LO, HI, S, eps, P)
        value = margins.min(1).values
        with torch.no_grad():
            better = value > best
            if best_l0 is None:
                best_l0, best_u0 = l0.detach().clone(), u0.detach().clone()
            best = torch.where(better, value.detach(), best)
            best_l0[better], best_u0[better] = l0.detach()[better], u0.detach()[better]
            for k, val in P.items():
                if k[0] == "a":
                    for bt, t in zip(best_P[k], val):
                        bt[better] = t.detach()[better]
                else:
                    best_P[k][better] = val.detach()[better]
        if it == iters:
            break
        (-margins.sum()).backward()
        with torch.no_grad():
            _adam_step(params, m, v, it + 1)
    for i, lf in enumerate(leaves):
        lf["bound"] = float(best[i])
        lf["P"] = {k: ([t[i].clone() for t in val] if k[0] == "a" else val[i].clone()) for k, val in best_P.items()}
        lf["l0"], lf["u0"] = best_l0[i].numpy().copy(), best_u0[i].numpy().copy()


def candidates(net, leaf, split, eps):
    """Candidate splits of a leaf (pairs of children): first-layer neuron splits or box halvings."""
    out = []
    if split == "neuron":
        for j in range(net.H[0]):
            if leaf["s"][j] == 0 and leaf["l0"][j] < 0 < leaf["u0"][j]:
                kids = []
                for sign in (1, -1):
                    s = leaf["s"].copy()
                    s[j] = sign
                    kids.append(dict(leaf, s=s, bound=None))
                out.append(kids)
    else:
        xf = leaf["x"][net.free]
        for k in range(len(net.free)):
            a, b = max(leaf["lo"][k], xf[k] - eps), min(leaf["hi"][k], xf[k] + eps)
            if b - a > 1e-6 * max(eps, 1e-9):
                mid = (a + b) / 2
                hi1 = leaf["hi"].copy()
                hi1[k] = mid
                lo2 = leaf["lo"].copy()
                lo2[k] = mid
                out.append([dict(leaf, hi=hi1, bound=None), dict(leaf, lo=lo2, bound=None)])
    return out


class Query:
    """Greedy branching trees, per slice, per eps (grown incrementally as K rises)."""

    def __init__(self, net, points, split):
        self.net, self.points, self.split = net, points, split
        self.trees = {}  # (eps, slice) -> dict(leaves, stuck)

    def tree(self, eps, s):
        key = (eps, s)
        if key not in self.trees:
            root = dict(x=self.points[s], lo=self.net.lo.copy(), hi=self.net.hi.copy(),
                        s=np.zeros(self.net.H[0]), P=None, bound=None)
            optimise(self.net, [root], eps, ROOT_ITERS)
            self.trees[key] = dict(leaves=[root], stuck=False)
        return self.trees[key]

    def grow(self, eps, s, kmax):
        """Leaves used if slice s's tree proves eps within kmax leaves, else None."""
        t = self.tree(eps, s)
        while True:
            leaves = t["leaves"]
            if min(lf["bound"] for lf in leaves) > 0:
                return len(leaves)
            if len(leaves) >= kmax or t["stuck"]:
                return None
            worst = min(range(len(leaves)), key=lambda i: leaves[i]["bound"])
            cands = candidates(self.net, leaves[worst], self.split, eps)
            if not cands:
                t["stuck"] = True
                return None
            kids = [k for pair in cands for k in pair]
            optimise(self.net, kids, eps, CHILD_ITERS)
            best = max(cands, key=lambda pair: min(k["bound"] for k in pair))
            t["leaves"] = leaves[:worst] + best + leaves[worst + 1:]

    def passes(self, eps, kmax):
        """Leaves used (max over slices) if every slice's tree proves eps within kmax leaves, else None."""
        used = 0
        for s in range(len(self.points)):
            n = self.grow(eps, s, kmax)
            if n is None:
                return None
            used = max(used, n)
        return used


def radius_for_ks(q: Query, exact: float, ks: list[int]):
    """Per K: (radius, leaves used at it), bisection between the previous K's radius and the exact radius
    (above which no sound bound passes); soundness probe at PROBE x exact with the largest K."""
    out, lo_eps, lo_used = {}, 0.0, 1
    for K in ks:
        lo, hi = lo_eps, exact
        while hi - lo > TOLERANCE * exact:
            mid = (lo + hi) / 2
            used = q.passes(mid, K)
            if used is not None:
                lo, lo_used = mid, used
            else:
                hi = mid
        if lo == 0.0:
            lo_used = 0
        out[K] = (lo, lo_used)
        lo_eps = lo
    violations = []
    used = q.passes(exact * PROBE, ks[-1])
    if used is not None:
        violations.append({"K": ks[-1], "eps": exact * PROBE, "used": used})
    return out, violations


# --- the benchmark ---------------------------------------------------------------------------------------------


def _reference(model, q, pool, budget):
    """(row, pool): exact and optimised bound radius of a query, or the reason it is skipped."""
    from fairness.bound_radius import CERTIFIED, bound_certificate

    started = time.perf_counter()
    cert = bound_certificate(model, q)
    row = {"bound_status": cert.status, "bound": cert.eps / (1 << cert.eps_bits),
           "bound_seconds": time.perf_counter() - started}
    job = pool.apply_async(_exact_worker, ((model, q),))
    try:
        e, e_bits, status, seconds = job.get(timeout=budget)
    except multiprocessing.TimeoutError:
        pool.terminate()
        row["skipped"] = "exact over budget"
        return row, multiprocessing.get_context("fork").Pool(1)
    row.update(exact=e / (1 << e_bits), exact_status=status, exact_seconds=seconds)
    if status != CERTIFIED or cert.status != CERTIFIED:
        row["skipped"] = "flip"
    elif e == 0:
        row["skipped"] = "zero exact radius"
    return row, pool


def _branch_query(net, model, q, row, splits, ks):
    """Adds the branched radius per split and K to the row; returns the soundness violations."""
    y = model.net.decision(q)
    net.decide(y, model.net.n_classes)
    points = [np.array(model.with_slice(q, sv), dtype=float) / (1 << model.scale_bits) for sv in model.slices()]
    row["slices"] = len(points)
    exact, found = row["exact"], []
    for split in splits:
        started = time.perf_counter()
        per_k, violations = radius_for_ks(Query(net, points, split), exact, ks)
        row[split] = {"per_k": {str(K): {"radius": e, "ratio": e / exact, "used": u} for K, (e, u) in per_k.items()},
                      "violations": violations, "seconds": time.perf_counter() - started}
        found += [dict(v, split=split, index=row["index"]) for v in violations]
    return found


def _summary(rows, splits, ks):
    compared = [r for r in rows if "skipped" not in r]
    out = {"bound_over_exact": quartiles([r["bound"] / r["exact"] for r in compared]), "compared": len(compared)}
    for split in splits:
        per_k = {}
        for K in ks:
            ratios = [r[split]["per_k"][str(K)]["ratio"] for r in compared]
            used = [r[split]["per_k"][str(K)]["used"] for r in compared]
            per_k[str(K)] = {"ratio": quartiles(ratios), "reach": sum(x >= REACH for x in ratios),
                             "used_median": statistics.median(used) if used else None,
                             "used_max": max(used) if used else None}
        seconds = [r[split]["seconds"] for r in compared]
        out[split] = {"per_k": per_k, "seconds_median": statistics.median(seconds) if seconds else None}
    return out


def bench_model(dataset, hidden, variant, n_queries, splits, ks, budget) -> dict:
    from fairness.fixed_point import queries_in_box, to_fixed_point
    from fairness.training import load_or_train
    from offline_precompute.certify import test_inputs

    artifact = load_or_train(dataset, hidden, variant)
    model = to_fixed_point(artifact)
    X, _ = test_inputs(artifact)
    queries = queries_in_box(model, [list(map(float, row)) for row in X], n_queries)
    net = Net(model)
    rows, violations = [], []
    pool = multiprocessing.get_context("fork").Pool(1)
    try:
        for i, q in enumerate(queries):
            row, pool = _reference(model, q, pool, budget)
            row["index"] = i
            if "skipped" not in row:
                violations += _branch_query(net, model, q, row, splits, ks)
            rows.append(row)
            log(f"  {dataset} {hidden} {variant}: query {i + 1}/{len(queries)} " + (
                f"skipped ({row['skipped']})" if "skipped" in row else
                " ".join(f"{s} K={ks[-1]}: {row[s]['per_k'][str(ks[-1])]['ratio']:.3f} ({row[s]['seconds']:.0f} s)"
                         for s in splits)))
    finally:
        pool.terminate()
    skipped = {}
    for r in rows:
        if "skipped" in r:
            skipped[r["skipped"]] = skipped.get(r["skipped"], 0) + 1
    return {"dataset": dataset, "hidden": list(hidden), "variant": variant, "queries": len(rows),
            "skipped": skipped, "violations": violations, "summary": _summary(rows, splits, ks), "rows": rows}


def print_table(results, splits, ks) -> None:
    def fmt(q):
        return "-" if q is None else f"{q[1]:.3f} [{q[0]:.3f}, {q[2]:.3f}]"

    print(f"\n{'model':<20} {'split':<7} {'n':>3} {'K':>4} {'branched/exact':>22} {'>=' + str(REACH):>7} "
          f"{'used med':>8} {'max':>4} {'s med':>6}")
    for r in results:
        name = f"{r['dataset']} {'x'.join(map(str, r['hidden']))} {r['variant']}"
        s = r["summary"]
        skipped = ", ".join(f"{v} {k}" for k, v in r["skipped"].items()) or "none"
        print(f"{name:<20} {'':<7} {s['compared']:>3} {'opt':>4} {fmt(s['bound_over_exact']):>22}   "
              f"(optimised bound radius / exact; of {r['queries']} queries, skipped: {skipped})")
        for split in splits:
            seconds = s[split]["seconds_median"]
            for K in ks:
                k = s[split]["per_k"][str(K)]
                used = "-" if k["used_median"] is None else f"{k['used_median']:g}"
                print(f"{'':<20} {split:<7} {s['compared']:>3} {K:>4} {fmt(k['ratio']):>22} "
                      f"{k['reach']:>3}/{s['compared']:<3} {used:>8} {k['used_max'] or 0:>4} "
                      f"{'-' if seconds is None else f'{seconds:.0f}':>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=DEFAULT_MODELS, help="dataset:hidden:variant, comma-separated")
    parser.add_argument("--queries", type=int, default=10, help="test queries per model")
    parser.add_argument("--splits", default="neuron,box", help="neuron and/or box")
    parser.add_argument("--branches", default="1,2,4,8,16", help="K values (branches per slice), increasing")
    parser.add_argument("--exact-budget", type=float, default=120.0, help="seconds per exact query")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args()
    splits = [s.strip() for s in args.splits.split(",")]
    if any(s not in ("neuron", "box") for s in splits):
        parser.error("--splits: neuron and/or box")
    ks = sorted({int(k) for k in args.branches.split(",")})
    if ks[0] < 1:
        parser.error("--branches: K >= 1")
    torch.set_num_threads(1)
    results = []
    for item in args.models.split(","):
        dataset, shape, variant = item.strip().split(":")
        hidden = tuple(int(h) for h in shape.split("x"))
        log(f"{dataset} {hidden} {variant} ...")
        results.append(bench_model(dataset, hidden, variant, args.queries, splits, ks, args.exact_budget))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"splits": splits, "branches": ks, "tolerance": TOLERANCE, "probe": PROBE,
                                        "exact_budget": args.exact_budget, "models": results}, indent=1))
    print_table(results, splits, ks)
    print(f"\nfloat estimate (not a proved radius); cost: one propagation per branch per slice\nwrote {args.out}")
    violations = [dict(v, model=f"{r['dataset']} {r['hidden']} {r['variant']}") for r in results
                  for v in r["violations"]]
    for v in violations:
        print(f"VIOLATION: {v['model']} query {v['index']} {v['split']}: passes at {v['eps']:.6g} "
              f"({PROBE} x exact) with {v['used']} branches (K={v['K']})")
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
