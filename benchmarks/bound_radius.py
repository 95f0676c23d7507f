"""The bound radius beside the exact radius and an attack, per model: soundness and tightness, with CROWN's
fixed slopes and with optimised ones, and what the optimised statement costs to prove.

Per model (dataset, hidden sizes, variant; trained or loaded by `fairness.training.load_or_train`) and
per query (the first N test rows inside the box), `fairness.bound_radius.bound_certificate` gives eps twice
(timed): with CROWN's slopes (`alpha_bits=0`, the statement of cards made before optimised slopes) and with
the optimised ones (`fairness.alpha_crown`, the default). Beside them, where region enumeration is affordable,
the exact radius (`certify(radius="exact")`, timed, each query under a budget of --exact-budget seconds: a
query over budget is reported, not compared), and on every model the closest counterexample
`fairness.counterexample.find_counterexample` (sampling, DeepFool walks, bisection; each point confirmed in
exact arithmetic) finds. Soundness: no bound exceeds either (any violation is printed and fails the run).
Tightness: bound / exact and bound / attack distance (medians and quartiles), for both.

With --prove N, the `k1-f1-bound` statement of both slopes (no lenses) is built for the first N certified
queries: constraints of each, keys set up once per statement (in-process Groth16, one party), every proof
timed and verified; median prove time of each and the ratio.

    .venv/bin/python benchmarks/bound_radius.py [--models german:4x2,adult:32x16] [--variants fair,unfair]
        [--queries 20] [--exact-up-to 64] [--exact-budget 120] [--attack-queries 100] [--prove 5]

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


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def _violations(row: dict, eps: int, eps_bits: int, which: str) -> None:
    if row.get("exact_eps") is not None and row["exact_eps"] < eps:
        row.setdefault("violations", []).append(f"{which} bound {eps} above exact {row['exact_eps']}")
    if row.get("attack_distance_sq") is not None and Fraction(eps, 1 << eps_bits) ** 2 > row["attack_distance_sq"]:
        row.setdefault("violations", []).append(f"{which} bound {eps} beyond a counterexample at "
                                                f"{row['attack_distance']}")


def bench_model(dataset: str, hidden: tuple[int, ...], variant: str, n_queries: int, attack_queries: int,
                exact: bool, exact_budget: float, prove: int = 0) -> dict:
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
            crown = bound_certificate(model, q, alpha_bits=0)
            middle = time.perf_counter()
            cert = bound_certificate(model, q)
            row = {"index": i, "status": cert.status, "eps": cert.eps, "eps_bits": cert.eps_bits,
                   "capped": cert.capped, "bound_seconds": time.perf_counter() - middle,
                   "crown_eps": crown.eps, "crown_seconds": middle - started}
            if exact and i < n_queries:
                job = pool.apply_async(_exact_worker, ((model, q),))
                try:
                    e, status, is_exact, seconds = job.get(timeout=exact_budget)
                    row.update(exact_eps=e, exact_status=status, exact_is_true_radius=is_exact, exact_seconds=seconds)
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
                    row["attack_distance_sq"] = counter.distance_sq
            _violations(row, cert.eps, cert.eps_bits, "optimised")
            _violations(row, crown.eps, crown.eps_bits, "CROWN")
            row.pop("attack_distance_sq", None)  # a Fraction: not JSON
            rows.append(row)
            if (i + 1) % 10 == 0:
                log(f"  {dataset} {hidden} {variant}: {i + 1}/{len(queries)} queries")
    finally:
        if pool is not None:
            pool.terminate()
    certified = [r for r in rows if r["status"] == CERTIFIED]

    def ratios(key: str) -> tuple[list[float], list[float]]:
        to_exact = [r[key] / r["exact_eps"] for r in certified if r.get("exact_eps")]
        to_attack = [r[key] / (1 << r["eps_bits"]) / r["attack_distance"] for r in certified if r.get("attack_distance")]
        return to_exact, to_attack

    to_exact, to_attack = ratios("eps")
    crown_exact, crown_attack = ratios("crown_eps")
    bound_times = [r["bound_seconds"] for r in rows]
    exact_times = [r["exact_seconds"] for r in rows if "exact_seconds" in r]
    result = {
        "dataset": dataset, "hidden": list(hidden), "variant": variant, "queries": len(rows),
        "certified": len(certified), "flips": len(rows) - len(certified),
        "violations": [v for r in rows for v in r.get("violations", [])],
        "bound_over_exact": quartiles(to_exact), "crown_over_exact": quartiles(crown_exact),
        "compared_with_exact": len(to_exact),
        "exact_over_budget": sum(1 for r in rows if r.get("exact_over_budget")),
        "bound_over_attack": quartiles(to_attack), "crown_over_attack": quartiles(crown_attack),
        "compared_with_attack": len(to_attack),
        "optimised_above_crown": sum(1 for r in certified if r["eps"] > r["crown_eps"]),
        "bound_seconds_median": statistics.median(bound_times), "bound_seconds_p95": _p95(bound_times),
        "crown_seconds_median": statistics.median(r["crown_seconds"] for r in rows),
        "exact_seconds_median": statistics.median(exact_times) if exact_times else None,
        "rows": rows,
    }
    if prove:
        result["prove"] = prove_both(model, [q for q, r in zip(queries, rows) if r["status"] == CERTIFIED][:prove])
    return result


def prove_both(model, queries) -> dict:
    """Constraints and prove time of the bound statement with CROWN's slopes and with optimised ones (no lenses),
    keys set up once per statement, every proof verified."""
    from circuits.backends import get_backend
    from circuits.builder import ConstraintSystem
    from fairness.bound_radius import bound_certificate
    from statement import build_statement, statement_relation
    from statement.adapter import statement_inputs, statement_shape
    from statement.proof_system import Groth16

    system = Groth16(get_backend())
    out = {}
    for label, alpha_bits in (("crown", 0), ("optimised", None)):
        shape = statement_shape(model, region_slots=1, farkas_slots=1, eps_bits=16, radius="bound", alpha_bits=alpha_bits)
        relation = statement_relation(shape)
        log(f"  setting up the bound statement ({label} slopes, {relation.n_constraints} constraints)")
        started = time.perf_counter()
        pk, vk = system.setup(relation)
        setup_s = time.perf_counter() - started
        prepared = system.prepare(vk)
        times, verified = [], 0
        for q in queries:
            cert = bound_certificate(model, q, alpha_bits=shape.alpha_bits).certificate(model)
            public, witness = statement_inputs(model, 0x5EED, cert, shape)
            cs = ConstraintSystem(with_values=True, keep_constraints=False)
            build_statement(cs, shape, public, witness)
            started = time.perf_counter()
            proof = system.prove(pk, public.field_elements(), cs.witness())
            times.append(time.perf_counter() - started)
            verified += bool(system.verify(prepared, public.field_elements(), proof))
        out[label] = {"alpha_bits": shape.alpha_bits, "constraints": relation.n_constraints, "setup_s": setup_s,
                      "prove_s_median": statistics.median(times), "prove_s": times, "verified": verified}
    out["constraint_ratio"] = out["optimised"]["constraints"] / out["crown"]["constraints"]
    out["prove_ratio"] = out["optimised"]["prove_s_median"] / out["crown"]["prove_s_median"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--variants", default="fair,unfair")
    parser.add_argument("--queries", type=int, default=20, help="queries compared with the exact radius")
    parser.add_argument("--attack-queries", type=int, default=100, help="queries compared with the attack")
    parser.add_argument("--exact-up-to", type=int, default=24, help="hidden units up to which to enumerate")
    parser.add_argument("--exact-budget", type=float, default=120.0, help="seconds per exact query")
    parser.add_argument("--prove", type=int, default=0, help="queries proved with both statements (0: none)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args()
    results = []
    for item in args.models.split(","):
        dataset, _, shape = item.strip().partition(":")
        hidden = tuple(int(h) for h in shape.split("x"))
        for variant in args.variants.split(","):
            log(f"{dataset} {hidden} {variant} ...")
            results.append(bench_model(dataset, hidden, variant, args.queries, args.attack_queries,
                                       sum(hidden) <= args.exact_up_to, args.exact_budget, args.prove))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))

    def fmt(q):
        return "-" if q is None else f"{q[1]:.2f} [{q[0]:.2f}, {q[2]:.2f}]"
    print(f"\n{'model':<24} {'n':>4} {'cert':>5} {'CROWN/exact':>19} {'optimised/exact':>19} {'n':>4} "
          f"{'CROWN/attack':>19} {'optimised/attack':>19} {'n':>4} {'s CROWN':>8} {'s opt':>6} {'p95':>6} "
          f"{'exact s':>8} {'viol':>5}")
    for r in results:
        name = f"{r['dataset']} {'x'.join(map(str, r['hidden']))} {r['variant']}"
        exact_s = "-" if r["exact_seconds_median"] is None else f"{r['exact_seconds_median']:.2f}"
        print(f"{name:<24} {r['queries']:>4} {r['certified']:>5} {fmt(r['crown_over_exact']):>19} "
              f"{fmt(r['bound_over_exact']):>19} {r['compared_with_exact']:>4} {fmt(r['crown_over_attack']):>19} "
              f"{fmt(r['bound_over_attack']):>19} {r['compared_with_attack']:>4} {r['crown_seconds_median']:>8.2f} "
              f"{r['bound_seconds_median']:>6.2f} {r['bound_seconds_p95']:>6.2f} {exact_s:>8} "
              f"{len(r['violations']):>5}")
    proved = [r for r in results if r.get("prove")]
    if proved:
        print(f"\n{'model':<24} {'constraints CROWN':>17} {'optimised':>10} {'ratio':>6} {'prove s CROWN':>13} "
              f"{'optimised':>10} {'ratio':>6} {'verified':>9}")
        for r in proved:
            p = r["prove"]
            name = f"{r['dataset']} {'x'.join(map(str, r['hidden']))} {r['variant']}"
            print(f"{name:<24} {p['crown']['constraints']:>17,} {p['optimised']['constraints']:>10,} "
                  f"{p['constraint_ratio']:>6.3f} {p['crown']['prove_s_median']:>13.2f} "
                  f"{p['optimised']['prove_s_median']:>10.2f} {p['prove_ratio']:>6.3f} "
                  f"{p['crown']['verified'] + p['optimised']['verified']:>4}/{2 * len(p['crown']['prove_s'])}")
    print(f"\nwrote {args.out}")
    violations = [v for r in results for v in r["violations"]]
    for v in violations:
        print("VIOLATION:", v)
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
