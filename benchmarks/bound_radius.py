"""The bound radius beside the exact radius and an attack, per model: soundness and tightness.

Per model (dataset, hidden sizes, variant; trained or loaded by `fairness.training.load_or_train`) and
per query (the first N test rows inside the box), `fairness.bound_radius.bound_certificate` gives eps
(timed). Beside it, where region enumeration is affordable, the exact radius (`certify(radius="exact")`,
timed, each query under a budget of --exact-budget seconds: a query over budget is reported, not
compared), and on every model the closest counterexample `fairness.counterexample.find_counterexample`
(sampling, DeepFool walks, bisection; each point confirmed in exact arithmetic) finds. Soundness: the
bound never exceeds either (any violation is printed and fails the run). Tightness: bound / exact and
bound / attack distance (medians and quartiles).

    .venv/bin/python benchmarks/bound_radius.py [--models german:4x2,adult:32x16] [--variants fair,unfair]
        [--queries 20] [--exact-up-to 64] [--exact-budget 120] [--attack-queries 100]

--exact-up-to: enumerate only models with at most this many hidden units. Writes
benchmarks/results/bound_radius.json.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "bound_radius.json"
DEFAULT_MODELS = "german:4x2,german:8x2,german:16x8,adult:4x2,adult:8x2,adult:16x8,credit:32x16,credit:64x32," \
                 "adult:32x16,adult:64x32"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _exact_worker(args):
    model, query = args
    from fairness.certificate import EXACT, certify

    started = time.perf_counter()
    cert = certify(model, query, radius=EXACT)
    return cert.eps, cert.status, cert.radius_is_exact, time.perf_counter() - started


def quartiles(values: list[float]) -> list[float] | None:
    if not values:
        return None
    if len(values) == 1:
        return [values[0]] * 3
    q = statistics.quantiles(values, n=4)
    return [q[0], statistics.median(values), q[2]]


def bench_model(dataset: str, hidden: tuple[int, ...], variant: str, n_queries: int, attack_queries: int,
                exact: bool, exact_budget: float) -> dict:
    from fairness.bound_radius import CERTIFIED, bound_certificate
    from fairness.counterexample import find_counterexample
    from fairness.fixed_point import queries_in_box, to_fixed_point
    from fairness.training import load_or_train
    from offline_precompute.certify import test_inputs

    artifact = load_or_train(dataset, hidden, variant)
    model = to_fixed_point(artifact)
    X, _ = test_inputs(artifact)
    queries = queries_in_box(model, [list(map(float, row)) for row in X], max(n_queries, attack_queries))
    rows = []
    pool = multiprocessing.get_context("fork").Pool(1) if exact else None
    try:
        for i, q in enumerate(queries):
            started = time.perf_counter()
            cert = bound_certificate(model, q)
            row = {"index": i, "status": cert.status, "eps": cert.eps, "eps_bits": cert.eps_bits,
                   "capped": cert.capped, "bound_seconds": time.perf_counter() - started}
            if exact and i < n_queries:
                job = pool.apply_async(_exact_worker, ((model, q),))
                try:
                    e, status, is_exact, seconds = job.get(timeout=exact_budget)
                    row.update(exact_eps=e, exact_status=status, exact_is_true_radius=is_exact, exact_seconds=seconds)
                    if e < cert.eps:
                        row["violation"] = f"bound {cert.eps} above exact {e}"
                except multiprocessing.TimeoutError:
                    row["exact_over_budget"] = True
                    pool.terminate()
                    pool = multiprocessing.get_context("fork").Pool(1)
            if cert.status == CERTIFIED and i < attack_queries:
                started = time.perf_counter()
                counter = find_counterexample(model, q, seed=i, samples_per_radius=64, n_radii=12, walks=4)
                row["attack_seconds"] = time.perf_counter() - started
                if counter is not None:
                    row["attack_distance"] = counter.distance
                    if Fraction(cert.eps, 1 << cert.eps_bits) ** 2 > counter.distance_sq:
                        row["violation"] = f"bound {cert.eps} beyond a counterexample at {counter.distance}"
            rows.append(row)
            if (i + 1) % 10 == 0:
                log(f"  {dataset} {hidden} {variant}: {i + 1}/{len(queries)} queries")
    finally:
        if pool is not None:
            pool.terminate()
    certified = [r for r in rows if r["status"] == CERTIFIED]
    to_exact = [r["eps"] / r["exact_eps"] for r in certified if r.get("exact_eps")]
    to_attack = [r["eps"] / (1 << r["eps_bits"]) / r["attack_distance"] for r in certified if r.get("attack_distance")]
    bound_times = sorted(r["bound_seconds"] for r in rows)
    exact_times = [r["exact_seconds"] for r in rows if "exact_seconds" in r]
    return {
        "dataset": dataset, "hidden": list(hidden), "variant": variant, "queries": len(rows),
        "certified": len(certified), "flips": len(rows) - len(certified),
        "violations": [r["violation"] for r in rows if "violation" in r],
        "bound_over_exact": quartiles(to_exact), "compared_with_exact": len(to_exact),
        "exact_over_budget": sum(1 for r in rows if r.get("exact_over_budget")),
        "bound_over_attack": quartiles(to_attack), "compared_with_attack": len(to_attack),
        "bound_seconds_median": statistics.median(bound_times),
        "bound_seconds_p95": bound_times[min(len(bound_times) - 1, math.ceil(0.95 * len(bound_times)) - 1)],
        "exact_seconds_median": statistics.median(exact_times) if exact_times else None,
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--variants", default="fair,unfair")
    parser.add_argument("--queries", type=int, default=20, help="queries compared with the exact radius")
    parser.add_argument("--attack-queries", type=int, default=100, help="queries compared with the attack")
    parser.add_argument("--exact-up-to", type=int, default=24, help="hidden units up to which to enumerate")
    parser.add_argument("--exact-budget", type=float, default=120.0, help="seconds per exact query")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args()
    results = []
    for item in args.models.split(","):
        dataset, _, shape = item.strip().partition(":")
        hidden = tuple(int(h) for h in shape.split("x"))
        for variant in args.variants.split(","):
            log(f"{dataset} {hidden} {variant} ...")
            results.append(bench_model(dataset, hidden, variant, args.queries, args.attack_queries,
                                       sum(hidden) <= args.exact_up_to, args.exact_budget))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))

    def fmt(q):
        return "-" if q is None else f"{q[1]:.2f} [{q[0]:.2f}, {q[2]:.2f}]"
    print(f"\n{'model':<26} {'n':>4} {'cert':>5} {'bound/exact (median [q1,q3])':>30} {'n':>4} "
          f"{'bound/attack':>24} {'n':>4} {'bound s med':>11} {'p95':>7} {'exact s med':>11} {'viol':>5}")
    for r in results:
        name = f"{r['dataset']} {'x'.join(map(str, r['hidden']))} {r['variant']}"
        exact_s = "-" if r["exact_seconds_median"] is None else f"{r['exact_seconds_median']:.2f}"
        print(f"{name:<26} {r['queries']:>4} {r['certified']:>5} {fmt(r['bound_over_exact']):>30} "
              f"{r['compared_with_exact']:>4} {fmt(r['bound_over_attack']):>24} {r['compared_with_attack']:>4} "
              f"{r['bound_seconds_median']:>11.2f} {r['bound_seconds_p95']:>7.2f} {exact_s:>11} "
              f"{len(r['violations']):>5}")
    print(f"\nwrote {args.out}")
    violations = [v for r in results for v in r["violations"]]
    for v in violations:
        print("VIOLATION:", v)
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
