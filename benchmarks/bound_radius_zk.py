"""Bound-radius certificates in zero knowledge on models too wide to enumerate.

Per model (dataset, hidden sizes, variant; trained or loaded by `fairness.training.load_or_train`):
commit it (the card's default lenses: the counterfactual spread; no persistence), set up the
`k1-f1-bound` bucket's keys (single party: the figure is the circuit's, not a ceremony's), then prove
--customers certificates of the first test rows with `Prover(radius="bound")` and verify each with
`verifier_client.verify.verify_bundle`. Reported: constraints, setup time, plaintext bound time,
witness and prove time (median and p95 of the whole online step), verification time, peak RSS of the
process, and, beside it, whether region enumeration finishes one query within --exact-budget seconds.

Each model runs in its own child process, so the peak RSS is that model's.

    .venv/bin/python benchmarks/bound_radius_zk.py [--models adult:32x16,credit:32x16,adult:64x32,credit:64x32]
        [--variants fair,unfair] [--customers 20] [--exact-budget 120]

Writes benchmarks/results/bound_radius_zk.json. Target: p95 prove <= 10 s at (32,16).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measures import p95  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "bound_radius_zk.json"
DEFAULT_MODELS = "credit:32x16,adult:32x16,credit:64x32,adult:64x32"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _exact_one(model, query) -> None:
    from fairness.certificate import EXACT, certify

    certify(model, query, radius=EXACT)


def exact_within(model, query, budget: float) -> float | None:
    """Seconds region enumeration takes for one query, or None past the budget (the child is stopped)."""
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_exact_one, args=(model, query), daemon=True)
    started = time.perf_counter()
    child.start()
    child.join(budget)
    if child.is_alive():
        child.terminate()
        child.join()
        return None
    return time.perf_counter() - started


def bench_model(dataset: str, hidden: tuple[int, ...], variant: str, customers: int, exact_budget: float) -> dict:
    from circuits.backends import get_backend
    from fairness.fixed_point import queries_in_box
    from fairness.model import save_artifact
    from fairness.training import load_or_train
    from offline_precompute.certify import test_inputs
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace
    from verifier_client.verify import verify_bundle

    artifact = load_or_train(dataset, hidden, variant)
    root = Path(tempfile.mkdtemp(prefix="bound-zk-")) / "model"
    save_artifact(artifact, root)
    workspace = ModelWorkspace.open(root)
    commit_model(workspace, model_id=f"{dataset}-{'x'.join(map(str, hidden))}-{variant}")
    db = open_database(resolve_store_url(None, root))
    backend = get_backend()
    prover = Prover(workspace, db, backend, key_setup=SinglePartyKeySetup(), radius="bound")
    X, _ = test_inputs(artifact)
    queries = queries_in_box(prover.model, [list(map(float, r)) for r in X], customers)
    started = time.perf_counter()
    keys = prover.keys(prover.shape_for(1, 1, "bound"))
    setup_s = time.perf_counter() - started
    rows = []
    for i, q in enumerate(queries):
        started = time.perf_counter()
        result = prover.prove(q)
        online = time.perf_counter() - started
        started = time.perf_counter()
        verdict = verify_bundle(result.bundle, prover.card, backend)
        verify_s = time.perf_counter() - started
        if not verdict:
            raise AssertionError(f"customer {i}: {verdict.reasons}")
        t = result.timings
        rows.append({"customer": i, "status": result.bundle.status, "eps": result.bundle.eps.numerator,
                     "capped": result.bundle.eps.capped, "online_s": online, "certify_s": t.certify,
                     "witness_s": t.witness, "prove_s": t.prove, "verify_s": verify_s})
        log(f"  {dataset} {hidden} {variant}: customer {i + 1}/{len(queries)} "
            f"({result.bundle.status}, online {online:.1f} s)")
    db.dispose()
    exact_s = exact_within(prover.model, queries[0], exact_budget) if exact_budget > 0 else None
    online = [r["online_s"] for r in rows]
    prove_s = [r["prove_s"] for r in rows]
    return {
        "dataset": dataset, "hidden": list(hidden), "variant": variant, "customers": len(rows),
        "slices": len(prover.model.slices()), "n_inputs": prover.model.net.n_inputs,
        "constraints": keys.r1cs.n_constraints, "setup_s": setup_s,
        "certified": sum(r["status"] == "certified" for r in rows),
        "bound_plaintext_s_median": statistics.median(r["certify_s"] for r in rows),
        "witness_s_median": statistics.median(r["witness_s"] for r in rows),
        "prove_s_median": statistics.median(prove_s), "prove_s_p95": p95(prove_s),
        "online_s_median": statistics.median(online), "online_s_p95": p95(online),
        "verify_s_median": statistics.median(r["verify_s"] for r in rows),
        "region_enumeration_s": exact_s, "exact_budget_s": exact_budget,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rows": rows,
    }


def _child(conn, *args) -> None:
    try:
        conn.send(("ok", bench_model(*args)))
    except BaseException as exc:  # reported, not raised: the next model still runs
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--variants", default="fair,unfair")
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--exact-budget", type=float, default=120.0)
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"JSON results (default {RESULTS})")
    args = parser.parse_args()
    results, failures = [], []
    ctx = multiprocessing.get_context("spawn")
    for item in args.models.split(","):
        dataset, _, shape = item.strip().partition(":")
        hidden = tuple(int(h) for h in shape.split("x"))
        for variant in args.variants.split(","):
            log(f"{dataset} {hidden} {variant} ...")
            receiver, sender = ctx.Pipe(duplex=False)
            child = ctx.Process(target=_child, args=(sender, dataset, hidden, variant, args.customers,
                                                     args.exact_budget))
            child.start()
            sender.close()
            kind, value = receiver.recv()
            child.join()
            if kind == "ok":
                results.append(value)
            else:
                failures.append(f"{dataset} {hidden} {variant}: {value}")
                log(f"  FAILED: {value}")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"results": results, "failures": failures}, indent=1))
    print(f"\n{'model':<24} {'S':>3} {'constraints':>11} {'setup s':>8} {'bound s':>8} {'prove s med':>11} "
          f"{'p95':>6} {'online p95':>10} {'verify ms':>9} {'RSS MB':>7} {'regions (1 query)':>18}")
    for r in results:
        name = f"{r['dataset']} {'x'.join(map(str, r['hidden']))} {r['variant']}"
        regions = f"{r['region_enumeration_s']:.1f} s" if r["region_enumeration_s"] is not None \
            else f"> {r['exact_budget_s']:.0f} s"
        print(f"{name:<24} {r['slices']:>3} {r['constraints']:>11,} {r['setup_s']:>8.1f} "
              f"{r['bound_plaintext_s_median']:>8.2f} {r['prove_s_median']:>11.2f} {r['prove_s_p95']:>6.2f} "
              f"{r['online_s_p95']:>10.2f} {r['verify_s_median'] * 1000:>9.1f} {r['peak_rss_mb']:>7.0f} {regions:>18}")
    for f in failures:
        print("FAILED:", f)
    print(f"\nwrote {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
