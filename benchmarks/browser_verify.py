"""The customer's check of one certificate in the browser, beside the verifiers it stands in for.

Builds a real German Credit (4,2) bank as tests/bank_fixtures.py does, then checks its first certificate
--runs times on each path, in one run on this machine:

- page (Chromium): the page `fairproof export-page --card` writes, opened from disk in headless Chromium,
  the bundle and record pasted and Verify pressed: every check of the page (shapes, card digest, claims,
  record, key and proof checks, snarkjs's pairing), as the page times itself with performance.now(). The
  first check of a page load includes building snarkjs's curve (WebAssembly); it is reported apart.
- page (node): the same modules and snarkjs's node build in one node process (no browser).
- fairproof-verify (Python): `verify_bundle` with the record's query, mcl backend, as shipped.
- snarkjs CLI: `snarkjs groth16 verify` on the exported files (the pairing only, one process per call).

    python benchmarks/browser_verify.py [--runs 20]

Writes benchmarks/results/browser_verify.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bank_fixtures import Bank  # noqa: E402
from browser_fixtures import chromium, verify_in_page  # noqa: E402
from page_cases import PageCase, node_verdicts  # noqa: E402
from circuits.backends import get_backend  # noqa: E402
from commitments.record import encode_record  # noqa: E402
from verifier_client.page import build_page  # noqa: E402
from verifier_client.verify import verify_bundle  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "browser_verify.json"

def summary(samples: list[float]) -> dict:
    return {"median_ms": statistics.median(samples), "min_ms": min(samples), "max_ms": max(samples),
            "runs": len(samples)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="browser-verify-"))
    print("building the bank (train, commit, precompute, prove) ...", flush=True)
    bank = Bank(work / "bank", work / "models")
    bundle, card, record = bank.bundles[0], bank.card, bank.records[0]
    bundle_text, card_text, record_text = bundle.model_dump_json(), card.canonical_json(), json.dumps(record)
    results: dict[str, dict] = {}

    print("page in Chromium ...", flush=True)
    page = work / "verify.html"
    page.write_text(build_page(card).html)
    driver = chromium()
    firsts, warm = [], []
    try:
        for load in range(3):
            driver.get(page.as_uri())
            case = PageCase("honest", bundle_text, "", record_text)
            for i in range(args.runs if load == 0 else 1):
                result = verify_in_page(driver, case)
                assert result["verdict"] == "VALID", result["text"]
                (firsts if i == 0 else warm).append(result["ms"])
    finally:
        driver.quit()
    results["page (Chromium), first check of a load"] = summary(firsts)
    results["page (Chromium)"] = summary(warm)

    print("page in node ...", flush=True)
    verdicts = node_verdicts([PageCase("honest", bundle_text, card_text, record_text)] * (args.runs + 1))
    assert all(v["verdict"] == "VALID" for v in verdicts), verdicts[0]["reason"]
    node = [v["ms"] for v in verdicts]
    results["page (node), first"] = summary(node[:1])
    results["page (node)"] = summary(node[1:])

    print("fairproof-verify (Python, mcl) ...", flush=True)
    backend = get_backend()
    query = encode_record(card, record)
    python = []
    for _ in range(args.runs + 1):
        t = time.perf_counter()
        assert verify_bundle(bundle, card, backend, query=query)
        python.append((time.perf_counter() - t) * 1000)
    results["fairproof-verify (Python)"] = summary(python[1:])

    print("snarkjs groth16 verify (CLI) ...", flush=True)
    from prover_service.cli import main as fairproof

    (work / "card.json").write_text(card_text)
    (work / "bundle.json").write_text(bundle_text)
    assert fairproof(["export-snarkjs", str(work / "bundle.json"), str(work / "snarkjs"), "--card",
                      str(work / "card.json")]) == 0
    cli = ROOT / "node_modules" / ".bin" / "snarkjs"
    snark = []
    for _ in range(max(3, args.runs // 4)):
        t = time.perf_counter()
        subprocess.run([str(cli), "groth16", "verify", *(str(work / "snarkjs" / f) for f in (
            "verification_key.json", "public.json", "proof.json"))], check=True, capture_output=True)
        snark.append((time.perf_counter() - t) * 1000)
    results["snarkjs CLI (pairing only)"] = summary(snark)

    base = results["fairproof-verify (Python)"]["median_ms"]
    print(f"\n{'path':<42} {'median ms':>10} {'min':>8} {'max':>8} {'runs':>5} {'x Python':>9}")
    for name, r in results.items():
        print(f"{name:<42} {r['median_ms']:>10.1f} {r['min_ms']:>8.1f} {r['max_ms']:>8.1f} {r['runs']:>5} "
              f"{r['median_ms'] / base:>9.1f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": platform.platform(), "model": card.model_id,
                                   "page_bytes": len(page.read_bytes()), "results": results}, indent=1))
    print(f"\nwrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
