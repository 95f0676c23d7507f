"""The customer's check of one certificate: `verifier_client.verify.verify_bundle`, all checks included.

Builds a real German Credit (4,2) bank as tests/bank_fixtures.py does (train,
commit, precompute, prove with a single-party key setup), then times
`verify_bundle(bundle, card, backend)` on its first certificate, --runs times
per backend (mcl and reference), and reports the median and the spread. The
first call of a process (loading the backend, parsing the card's key) is
timed apart as "first". With --profile, a cProfile of --runs mcl calls is
printed (top functions by cumulative time).

    python benchmarks/verify_bundle.py [--runs 50] [--reference-runs 50] [--profile]

Writes benchmarks/results/verify_bundle.json. Target: median <= 10 ms with mcl.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bank_fixtures import Bank  # noqa: E402
from circuits.backends import get_backend  # noqa: E402
from verifier_client.verify import verify_bundle  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "verify_bundle.json"
TARGET_MS = 10.0


def time_backend(bank: Bank, name: str, runs: int) -> dict:
    backend = get_backend(name)
    bundle, card = bank.bundles[0], bank.card
    start = time.perf_counter()
    first = verify_bundle(bundle, card, backend)
    first_ms = (time.perf_counter() - start) * 1e3
    assert first.valid, first.reasons
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        verdict = verify_bundle(bundle, card, backend)
        samples.append((time.perf_counter() - start) * 1e3)
        assert verdict.valid, verdict.reasons
    return {"backend": name, "runs": runs, "first_ms": first_ms, "median_ms": statistics.median(samples),
            "min_ms": min(samples), "max_ms": max(samples)}


def profile(bank: Bank, runs: int) -> str:
    backend = get_backend("mcl")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        verify_bundle(bank.bundles[0], bank.card, backend)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="timed mcl calls")
    parser.add_argument("--reference-runs", type=int, default=50, help="timed reference calls (about 1 s each)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "fairproof-models",
                        help="where the trained model is cached between runs")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        print("building the German (4,2) bank (train, commit, precompute, prove)...", file=sys.stderr, flush=True)
        bank = Bank(Path(tmp), args.cache)
        rows = [time_backend(bank, "mcl", args.runs)]
        if args.reference_runs:
            rows.append(time_backend(bank, "reference", args.reference_runs))
        if args.profile:
            print(profile(bank, args.runs))
    print(f"{'backend':>10} {'runs':>5} {'first':>10} {'median':>10} {'min':>10} {'max':>10}")
    for r in rows:
        print(f"{r['backend']:>10} {r['runs']:>5} {r['first_ms']:>8.1f}ms {r['median_ms']:>8.1f}ms "
              f"{r['min_ms']:>8.1f}ms {r['max_ms']:>8.1f}ms")
    mcl_median = rows[0]["median_ms"]
    print(f"target: median <= {TARGET_MS:.0f} ms with mcl: {'met' if mcl_median <= TARGET_MS else 'NOT met'}")
    result = {"rows": rows, "target_ms": TARGET_MS, "load_average_before": load_before,
              "load_average_after": os.getloadavg(), "cpus": os.cpu_count(), "machine": platform.processor()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
