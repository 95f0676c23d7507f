"""Zero-knowledge fairness certificates per model, beside the FairProof paper's Table 1, in every radius mode.

Per model (dataset, hidden sizes, fair/unfair): train or load it, commit,
precompute its regions into a fresh SQLite store. Then, per radius mode
(`--radius hybrid,fast,exact`; default hybrid, the product's), a copy of that committed model is a
deployment of its own (its card publishes that mode's buckets only) and for
the first N test customers the benchmark proves a certificate and verifies
it as a customer does. Reported per mode, side by side: online prove time
(everything after the query arrives: plaintext certification from the warm
store, witness, Groth16 proof) median and mean, key setup time per circuit
bucket (offline), constraints per query, peak memory of the key setup and of
the proving (each phase in a process of its own), verify time, proof size,
and whether every proved eps equals the eps of a separate plaintext
certification in the same mode. In exact mode every bundle must verify as
exact (the verified bucket's radius) with the plaintext exact eps; a
customer whose exact certification falls back to a fast certificate is
listed (an exact-only card does not prove it). In hybrid mode, the default,
each customer gets the exact radius when region enumeration finishes within
`--exact-budget` seconds (online time), else the bound radius: the table says
how many got which, and each eps equals a separate plaintext certification
of the radius it got. A sample of bundles is also
checked with snarkjs. Key setups of every mode come first; then the proving
runs in `--rounds` rounds with the modes alternating, each customer's time
the smallest over the rounds, so that load coming and going on the machine
does not fall on one mode only. ezkl's inference-only proof is measured when the
`ezkl` package is importable (it is not a dependency).

    .venv/bin/python benchmarks/paper_table1.py [--models german:4x2,adult:8x2] [--variants fair,unfair] [--imported DIR]
                                                [--radius hybrid,fast,exact] [--exact-budget S] [--queries 20]
                                                [--rounds 1]
                                                [--snarkjs-sample 2] [--workdir DIR] [--max-constraints N]

Writes benchmarks/results/paper_table1.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measures import p95, peak_rss_mib  # noqa: E402
from fairness.radius import REGION_RADII, Radius
from prover_service.commands.radius_option import DEFAULT_EXACT_BUDGET

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = "german:2x4,german:4x2,credit:4x2,credit:2x4,adult:4x2,adult:8x2"
# the radii this table proves: the two region enumeration certifies, and hybrid (exact within a budget, else bound)
RADIUS_MODES = (Radius.HYBRID, *REGION_RADII)
# FairProof (Yadav et al., ICML 2024), Table 1: online proof generation, minutes; proof size 43.5 KB.
PAPER_ONLINE_MINUTES = {("german", (4, 2)): 4.90, ("german", (2, 4)): 1.17, ("credit", (4, 2)): 3.52,
                        ("credit", (2, 4)): 2.08, ("adult", (4, 2)): 3.94, ("adult", (8, 2)): 3.94}
PAPER_PROOF_KB = 43.5


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def isolated(fn, *args):
    """fn(*args) in a fresh process (spawned): its peak memory is its own, and is freed afterwards."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def snarkjs_verifies(bundle, card, tmp: Path, public: list | None = None) -> bool | None:
    """snarkjs's verdict on the bundle's proof, against `public` if given (a tampered twin)."""
    exe = ROOT / "node_modules" / ".bin" / "snarkjs"
    if not exe.exists():
        return None
    from circuits.snarkjs.json_formats import dump_json

    dump_json(tmp / "vk.json", card.bucket(bundle.bucket).verifying_key.model_dump(mode="json"))
    dump_json(tmp / "proof.json", bundle.proof.model_dump(mode="json"))
    dump_json(tmp / "public.json", list(bundle.public_signals) if public is None else public)
    run = subprocess.run([str(exe), "groth16", "verify", str(tmp / "vk.json"), str(tmp / "public.json"),
                          str(tmp / "proof.json")], capture_output=True, text=True, timeout=300)
    return run.returncode == 0 and "OK" in run.stdout


def ezkl_available() -> bool:
    try:
        import ezkl  # noqa: F401
    except ImportError:
        return False
    return True


def constraint_model(prover) -> tuple[int, int, int]:
    """(fixed, per region slot, per pool entry) constraints of this model's statement in the prover's
    radius, all slices together: its family's size line (`statement.size`), as the prover reads it."""
    from statement.size import size_line

    line = size_line(prover.shape_for(4, 4, per_slice=prover.per_slice))
    per_k, per_f = int(line.per_slot), int(line.per_entry)
    return line.at_4_4 - 4 * per_k - 4 * per_f, per_k, per_f


# ---------------------------------------------------------------------------- the committed model
def prepare_model(dataset: str, hidden: tuple[int, ...], variant: str, workdir: Path,
                  imported: Path | None = None, persistence: float | None = None) -> dict:
    """Train or load (or take an imported artifact), commit and precompute the model once: the template
    every radius mode copies. An imported model's customers are the rows of the CSV it was checked on."""
    from fairness.model import load_artifact, save_artifact
    from fairness.training import load_or_train
    from offline_precompute.db import open_database, resolve_store_url
    from offline_precompute.enumerate import precompute
    from prover_service.publishing import commit_model
    from prover_service.workspace import ModelWorkspace

    if imported is not None:
        artifact = load_artifact(imported)
        name, dataset, hidden, variant = f"{imported.name}-imported", artifact.dataset, artifact.hidden_sizes, "imported"
    else:
        artifact = load_or_train(dataset, hidden, variant)
        name = f"{dataset}-{'x'.join(map(str, hidden))}-{variant}"
    root = workdir / name
    if root.exists():
        shutil.rmtree(root)
    save_artifact(artifact, root)
    workspace = ModelWorkspace.open(root)
    commit_model(workspace, model_id=name, persistence_delta=persistence)
    db = open_database(resolve_store_url(None, root))
    try:
        t0 = time.perf_counter()
        summary = precompute(db, workspace.fixed_point())
        seconds = time.perf_counter() - t0
    finally:
        db.dispose()
    return {"model": name, "root": str(root), "dataset": dataset, "hidden": list(hidden), "variant": variant,
            "precompute_s": seconds, "regions": summary.regions}


# ---------------------------------------------------------------------------- one radius mode, two processes
def reference_certificate(db, prover, query, certificate, radius: str):
    """A separate plaintext certification of `query` in the radius `certificate` was given in, with its own
    oracle (not the prover's memo), so the comparison is not the prover against itself. A hybrid prover's
    certificate is exact (region enumeration finished within the budget) or the bound radius, searched again
    here without the search's memory (the prover's came from its search child)."""
    from types import SimpleNamespace

    from fairness.bound_radius import searched_radius
    from offline_precompute.certify import certify as certify_plaintext

    if radius == Radius.HYBRID and not certificate.slices:  # the bound radius, or a flip the bound statement proves
        found = searched_radius(prover.model, query, prover.card.eps_scale_bits,
                                prover.buckets.bound_shape().alpha_bits)
        return SimpleNamespace(eps=found.eps, radius_is_exact=False)
    plain = Radius.EXACT if radius == Radius.HYBRID else radius
    return certify_plaintext(db, prover.model, query, eps_bits=prover.card.eps_scale_bits, radius=plain).certificate


def setup_phase(root: str, radius: str, n_queries: int, max_constraints: int | None, growth: int = 4,
                per_slice: bool = False, exact_budget: float = DEFAULT_EXACT_BUDGET) -> dict:
    """Offline: certify the customers, the plaintext reference eps, and the keys of every bucket they need,
    timed per bucket. Each bucket is set up by a prover of its own, dropped afterwards."""
    from circuits.backends import get_backend
    from fairness.errors import CertificationError
    from offline_precompute.certify import query_from_index, test_inputs
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import ExactRadiusUnavailable, Prover
    from prover_service.workspace import ModelWorkspace

    workspace = ModelWorkspace.open(root)
    name = workspace.card().model_id
    backend = get_backend()
    db = open_database(resolve_store_url(None, root))
    out: dict = {"uncertifiable": [], "not_exact": [], "beyond_cap": [], "indices": [], "plaintext_eps": [],
                 "plaintext_exact": [], "bucket_of": [], "buckets": {}}
    try:
        prover = Prover(workspace, db, backend, key_setup=SinglePartyKeySetup(), radius=radius, bucket_growth=growth,
                        per_slice=per_slice, exact_budget=exact_budget)
        X, _ = test_inputs(workspace.artifact)
        fixed, per_k, per_f = constraint_model(prover) if max_constraints else (0, 0, 0)
        for shape in prover.buckets.sized_families():  # offline, as `precompute --key-queries` does
            prover.statement_sizes.line(shape)
        for i in range(min(n_queries, len(X))):
            q = query_from_index(workspace.artifact, prover.model, i)
            try:
                cert = prover.certify(q)
                shapes = prover.shapes_for_certificate(cert)
            except ExactRadiusUnavailable as exc:  # a fast fallback an exact-only card does not prove
                out["not_exact"].append({"index": i, "reason": str(exc)})
                log(f"  {name} [{radius}]: customer {i}: no exact certificate: {exc}")
                continue
            except CertificationError as exc:  # reported, never silently dropped
                out["uncertifiable"].append({"index": i, "reason": str(exc)})
                log(f"  {name} [{radius}]: customer {i}: not certifiable: {exc}")
                continue
            # Per-slice certificates are several proofs: the cap applies to the largest.
            estimate = max(fixed + per_k * s.region_slots + per_f * s.farkas_slots for s in shapes)
            names = "+".join(dict.fromkeys(s.bucket for s in shapes))
            if max_constraints and estimate > max_constraints:  # reported with its size, never silently dropped
                out["beyond_cap"].append({"index": i, "bucket": names, "estimated_constraints": estimate,
                                          "regions_per_slice": list(cert.regions_per_slice),
                                          "eps": float(cert.eps_value)})
                log(f"  {name} [{radius}]: customer {i}: bucket {names} ~{estimate} constraints exceeds "
                    "the cap: not proved")
                continue
            reference = reference_certificate(db, prover, q, cert, radius)
            out["indices"].append(i)
            out["plaintext_eps"].append(reference.eps)
            out["plaintext_exact"].append(reference.radius_is_exact)
            out["bucket_of"].append(names)
            for shape in shapes:
                if shape.bucket in out["buckets"]:
                    continue
                t0 = time.perf_counter()
                keys = Prover(workspace, db, backend, key_setup=SinglePartyKeySetup(), radius=radius,
                              bucket_growth=growth, per_slice=per_slice, exact_budget=exact_budget).keys(shape)
                out["buckets"][shape.bucket] = {"seconds": time.perf_counter() - t0,
                                                "constraints": keys.r1cs.n_constraints}
                log(f"  {name} [{radius}]: bucket {shape.bucket} {keys.r1cs.n_constraints} constraints, "
                    f"setup {out['buckets'][shape.bucket]['seconds']:.1f} s")
                del keys
    finally:
        db.dispose()
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def prove_phase(root: str, radius: str, indices: list[int], bucket_of: list[str], plaintext_eps: list[int],
                n_snarkjs: int, growth: int = 4, per_slice: bool = False,
                exact_budget: float = DEFAULT_EXACT_BUDGET) -> dict:
    """Online: prove and verify each customer. Customers are grouped by bucket (first-seen order), each
    group by a fresh prover holding only that bucket's keys; loading them is not online time
    (Prover.prove times around it), and the certifier is opened before the first timed query."""
    from circuits.backends import get_backend
    from circuits.errors import CircuitError
    from fairness.errors import CertificationError
    from fairness.fixed_point import quantise_query
    from offline_precompute.certify import test_inputs
    from offline_precompute.db import open_database, resolve_store_url
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace
    from fairness.persistence import proved_bounds
    from fairness.spread import SpreadLens, spread
    from verifier_client.verify import verify_bundle

    workspace = ModelWorkspace.open(root)
    X, _ = test_inputs(workspace.artifact)
    model = workspace.fixed_point()
    queries = [quantise_query(model, [float(v) for v in X[i]]) for i in indices]
    name = workspace.card().model_id
    backend = get_backend()
    db = open_database(resolve_store_url(None, root))
    order, online, certifies, proves, witnesses, constraints, verify_ms, statuses = [], [], [], [], [], [], [], {}
    got: dict[str, int] = {}  # verified bundles per radius they were verified as (a flip counted apart)
    proof_bytes: list[int] = []
    failed: list[dict] = []
    valid = eps_equal = labelled_exact = spread_equal = 0
    card = workspace.card()
    lens = SpreadLens(card.spread.favourable_class, card.spread.bucket_width) if card.spread else None
    persistence_equal = 0
    snark_ok = snark_checked = snark_tamper_refused = 0
    try:
        first_seen = {b: n for n, b in reversed(list(enumerate(bucket_of)))}
        current, prover = None, None
        for j in sorted(range(len(indices)), key=lambda j: (first_seen[bucket_of[j]], j)):
            if bucket_of[j] != current:
                current = bucket_of[j]
                prover = Prover(workspace, db, backend, radius=radius, bucket_growth=growth,
                                per_slice=per_slice, exact_budget=exact_budget)  # keys set up offline
                prover.certifier  # noqa: B018
            try:
                result = prover.prove(queries[j])
            except (CertificationError, CircuitError) as exc:  # reported with the customer, never dropped
                failed.append({"index": indices[j], "bucket": bucket_of[j], "error": f"{type(exc).__name__}: {exc}"})
                log(f"  {name} [{radius}]: customer {indices[j]}: NOT PROVED: {type(exc).__name__}: {exc}")
                continue
            bundle = result.bundle
            order.append(j)
            online.append(result.timings.online)
            certifies.append(result.timings.certify)
            proves.append(result.timings.prove)
            witnesses.append(result.timings.witness)
            constraints.append(result.n_constraints)
            proof_bytes.append(128 * (1 + len(bundle.parts)))  # one proof per slice when proved slice by slice
            t0 = time.perf_counter()
            verdict = verify_bundle(bundle, prover.card, backend)  # binds eps and its radius to the proof
            verify_ms.append((time.perf_counter() - t0) * 1000)
            valid += bool(verdict)
            eps_equal += bool(verdict) and verdict.claims.eps_numerator == plaintext_eps[j]
            labelled_exact += bool(verdict) and verdict.radius == "exact"
            if verdict:
                kind = "flip" if verdict.claims.status == "counterfactual_flip" else str(verdict.radius)
                got[kind] = got.get(kind, 0) + 1
            if lens is not None and verdict:  # the proved spread against the plaintext one
                plain = spread(model, queries[j], lens)
                proved = verdict.claims.spread
                spread_equal += (proved.decisions, proved.score_buckets) == (plain.decisions, plain.distinct_buckets)
            if card.persistence is not None and verdict:  # the proved bounds against the plaintext CROWN bounds
                ps = card.persistence
                plain_bounds = proved_bounds(model, queries[j], ps.favourable_class, ps.columns, ps.default_delta,
                                             alpha_bits=prover.card.bucket(bundle.bucket).shape.alpha_bits)
                persistence_equal += list(verdict.claims.persistence.bounds) == plain_bounds
            statuses[bundle.status] = statuses.get(bundle.status, 0) + 1
            if snark_checked < n_snarkjs:
                with tempfile.TemporaryDirectory() as tmp:
                    ok = snarkjs_verifies(bundle, prover.card, Path(tmp))
                    tampered = list(bundle.public_signals)
                    tampered[-1] = str(int(tampered[-1]) + 1)
                    tamper_ok = snarkjs_verifies(bundle, prover.card, Path(tmp), public=tampered)
                if ok is not None:
                    snark_checked += 1
                    snark_ok += ok
                    snark_tamper_refused += not tamper_ok
            label = "" if not verdict else f" ({verdict.radius})"
            log(f"  {name} [{radius}]: customer {indices[j]}: {bundle.status} eps {bundle.eps.decimal}{label} online "
                f"{result.timings.online:.2f} s ({result.n_constraints} constraints) "
                f"{'VALID' if verdict else 'INVALID: ' + '; '.join(verdict.reasons)}")
    finally:
        db.dispose()
    return {"order": order, "failed": failed, "online": online, "got": got, "certify": certifies, "prove": proves, "witness": witnesses, "constraints": constraints,
            "verify_ms": verify_ms, "statuses": statuses, "valid": valid, "eps_equal_plaintext": eps_equal,
            "labelled_exact": labelled_exact, "spread_equal_plaintext": spread_equal if lens else None,
            "persistence_equal_plaintext": persistence_equal if card.persistence is not None else None,
            "snarkjs_checked": snark_checked, "snarkjs_ok": snark_ok,
            "proof_bytes": max(proof_bytes, default=128),
            "snarkjs_tampered_refused": snark_tamper_refused, "peak_rss_mib": peak_rss_mib()}


def setup_radius(model: dict, radius: str, n_queries: int, workdir: Path, max_constraints: int | None,
                 growth: int = 4, per_slice: bool = False, exact_budget: float = DEFAULT_EXACT_BUDGET) -> dict:
    """A copy of the committed model as a deployment of its own (its card lists this mode's buckets only),
    certified and keyed for the customers in a process of its own."""
    root = workdir / f"{model['model']}-{radius}"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(model["root"], root)
    setup = isolated(setup_phase, str(root), radius, n_queries, max_constraints, growth,
                     per_slice and radius == "exact", exact_budget)
    setup["root"] = str(root)
    return setup


def by_customer(rounds: list[dict], key: str) -> list[float]:
    """Per customer (setup order), the smallest value over the rounds: the least disturbed measurement."""
    best: dict[int, float] = {}
    for r in rounds:
        for j, v in zip(r["order"], r[key]):
            best[j] = min(v, best.get(j, v))
    return [best[j] for j in sorted(best)]


def summarize(model: dict, radius: str, setup: dict, rounds: list[dict], loads: list, max_constraints) -> dict:
    n = len(setup["indices"])
    first = rounds[0]
    row = {
        "radius": radius, "queries": n, "rounds": len(rounds), "buckets": setup["buckets"],
        "uncertifiable": setup["uncertifiable"], "not_exact": setup["not_exact"], "beyond_cap": setup["beyond_cap"],
        "max_constraints": max_constraints, "plaintext_exact": sum(setup["plaintext_exact"]),
        "proof_bytes": max(r.get("proof_bytes", 128) for r in rounds),
        "peak_rss_setup_mib": setup["peak_rss_mib"], "peak_rss_prove_mib": max(r["peak_rss_mib"] for r in rounds),
        "loadavg": loads,
        "not_proved": first["failed"],  # certified and checked in plaintext, but the statement refused the witness
        # every round must verify every bundle with the plaintext eps (and, in exact mode, as exact)
        "valid": min(r["valid"] for r in rounds), "eps_equal_plaintext": min(r["eps_equal_plaintext"] for r in rounds),
        "labelled_exact": min(r["labelled_exact"] for r in rounds), "statuses": first["statuses"],
        "got": first["got"],  # verified bundles per radius (hybrid: how many customers got which)
        "spread_equal_plaintext": (None if first.get("spread_equal_plaintext") is None
                                   else min(r["spread_equal_plaintext"] for r in rounds)),
        "persistence_equal_plaintext": (None if first.get("persistence_equal_plaintext") is None
                                        else min(r["persistence_equal_plaintext"] for r in rounds)),
        **{k: first[k] for k in ("snarkjs_checked", "snarkjs_ok", "snarkjs_tampered_refused")},
    }
    if first["order"]:
        online, prove = by_customer(rounds, "online"), by_customer(rounds, "prove")
        verify_ms, constraints = by_customer(rounds, "verify_ms"), by_customer(rounds, "constraints")
        row.update({
            "online_median_s": statistics.median(online), "online_mean_s": statistics.mean(online),
            "online_p95_s": p95(online),
            "prove_median_s": statistics.median(prove), "prove_mean_s": statistics.mean(prove),
            "certify_median_s": statistics.median(by_customer(rounds, "certify")),
            "certify_mean_s": statistics.mean(by_customer(rounds, "certify")),
            "witness_median_s": statistics.median(by_customer(rounds, "witness")),
            "constraints_median": statistics.median(constraints), "constraints_max": max(constraints),
            "verify_median_ms": statistics.median(verify_ms), "verify_max_ms": max(verify_ms),
            "customers": [setup["indices"][j] for j in sorted({j for r in rounds for j in r["order"]})],
            "online_s": online, "constraints": constraints,
            "online_s_per_round": [sorted(r["online"]) for r in rounds],
        })
        paper = PAPER_ONLINE_MINUTES.get((model["dataset"], tuple(model["hidden"])))
        if paper is not None:
            row["paper_online_s"] = paper * 60
            row["speedup_vs_paper"] = paper * 60 / row["online_median_s"]
    return row


def bench_model(dataset: str, hidden: tuple[int, ...], variant: str, radii: list[str], n_queries: int,
                n_snarkjs: int, workdir: Path, max_constraints: int | None = None, n_rounds: int = 1,
                imported: Path | None = None, growth: int = 4, per_slice: bool = False,
                persistence: float | None = None, exact_budget: float = DEFAULT_EXACT_BUDGET) -> dict:
    """Setups of every mode first, then `n_rounds` rounds of proving, the modes alternating in order
    (fast, exact, then exact, fast, ...): load that comes and goes on the machine falls on both."""
    model = prepare_model(dataset, hidden, variant, workdir, imported, persistence)
    row = {k: model[k] for k in ("model", "dataset", "hidden", "variant", "precompute_s", "regions")}
    row["bucket_growth"] = growth
    row["exact_budget_s"] = exact_budget
    row["per_slice"] = per_slice
    setups, rounds, loads = {}, {r: [] for r in radii}, {r: [] for r in radii}
    for radius in radii:
        log(f"== {model['model']}: {radius} radius, key setup")
        setups[radius] = setup_radius(model, radius, n_queries, workdir, max_constraints, growth, per_slice,
                                      exact_budget)
    for n in range(n_rounds):
        for radius in (radii if n % 2 == 0 else radii[::-1]):
            log(f"== {model['model']}: {radius} radius, proving (round {n + 1}/{n_rounds})")
            setup = setups[radius]
            before = list(os.getloadavg())
            rounds[radius].append(isolated(prove_phase, setup["root"], radius, setup["indices"], setup["bucket_of"],
                                           setup["plaintext_eps"], n_snarkjs if n == 0 else 0, growth,
                                           per_slice and radius == "exact", exact_budget))
            loads[radius].append([before, list(os.getloadavg())])
    row["modes"] = {r: summarize(model, r, setups[r], rounds[r], loads[r], max_constraints) for r in radii}
    fast, exact = row["modes"].get("fast"), row["modes"].get("exact")
    if fast and exact and fast.get("online_median_s") and exact.get("online_median_s"):
        row["exact_over_fast"] = {
            "online_median": exact["online_median_s"] / fast["online_median_s"],
            "online_mean": exact["online_mean_s"] / fast["online_mean_s"],
            "prove_median": exact["prove_median_s"] / fast["prove_median_s"],
            "certify_median": exact["certify_median_s"] / fast["certify_median_s"],
            "constraints_median": exact["constraints_median"] / fast["constraints_median"],
        }
        # Customer by customer, over those proved in both modes: the median ratio, the total time's ratio,
        # and the median ratio among customers whose exact bucket is no larger than their fast one.
        f = dict(zip(fast["customers"], zip(fast["online_s"], fast["constraints"])))
        e = dict(zip(exact["customers"], zip(exact["online_s"], exact["constraints"])))
        both = sorted(set(f) & set(e))
        same = [e[i][0] / f[i][0] for i in both if e[i][1] <= 1.05 * f[i][1]]
        row["exact_over_fast"].update({
            "paired_online_median": statistics.median(e[i][0] / f[i][0] for i in both),
            "paired_online_total": sum(e[i][0] for i in both) / sum(f[i][0] for i in both),
            "same_bucket_online_median": statistics.median(same) if same else None,
            "customers_in_larger_buckets": len(both) - len(same),
        })
    return row


def mode_ok(mode: dict) -> bool:
    """Every customer proved verifies with the plaintext eps; in exact mode every one verifies as exact."""
    n = mode["queries"]
    ok = mode["valid"] == n and mode["eps_equal_plaintext"] == n
    ok = ok and mode.get("spread_equal_plaintext") in (None, n)  # the spread lens, when the card proves it
    ok = ok and mode.get("persistence_equal_plaintext") in (None, n)  # and the persistence lens
    return ok and (mode["radius"] != "exact" or mode["labelled_exact"] == n)


def print_table(rows: list[dict]) -> None:
    head = (f"{'model':<22} {'radius':<6} {'proved':>6} {'online med':>10} {'mean':>6} {'p95':>6} {'prove med':>9} "
            f"{'paper':>6} {'constraints med (max)':>21} {'setup/bucket':>12} {'peak MiB setup/prove':>20} "
            f"{'proof':>6} {'verify ms':>9} {'eps=plain':>9} {'exact':>5} {'snarkjs':>7} {'spread=plain':>12} "
            f"{'persist=plain':>13}")
    print(head)
    print("-" * len(head))
    for r in rows:
        for radius, m in r["modes"].items():
            if not m["queries"]:
                print(f"{r['model']:<22} {radius:<6} {0:>6}  (nothing proved)")
                continue
            setup = statistics.median(b["seconds"] for b in m["buckets"].values()) if m["buckets"] else 0.0
            paper = f"{m['paper_online_s']:.0f}s" if "paper_online_s" in m else "-"
            cons = f"{int(m['constraints_median'])} ({m['constraints_max']})"
            peak = f"{m['peak_rss_setup_mib']:.0f}/{m['peak_rss_prove_mib']:.0f}"
            print(f"{r['model']:<22} {radius:<6} {len(m['online_s']):>6} {m['online_median_s']:>9.2f}s "
                  f"{m['online_mean_s']:>6.2f} {m['online_p95_s']:>6.2f} {m['prove_median_s']:>8.2f}s {paper:>6} {cons:>21} {setup:>11.1f}s "
                  f"{peak:>20} {m['proof_bytes']:>5}B {m['verify_median_ms']:>9.1f} "
                  f"{m['eps_equal_plaintext']:>4}/{m['queries']:<4} {m['labelled_exact']:>5} "
                  f"{m['snarkjs_ok']:>3}/{m['snarkjs_checked']:<3} "
                  f"{'-' if m.get('spread_equal_plaintext') is None else m['spread_equal_plaintext']:>12} "
                  f"{'-' if m.get('persistence_equal_plaintext') is None else m['persistence_equal_plaintext']:>13}")
            if radius == Radius.HYBRID:
                print(f"{'':<22} hybrid: " + ", ".join(f"{n} {kind}" for kind, n in sorted(m["got"].items()))
                      + f" (exact budget {r['exact_budget_s']:g} s)")
        ratio = r.get("exact_over_fast")
        if ratio:
            print(f"{'':<22} exact/fast: online median {ratio['online_median']:.2f}x, mean {ratio['online_mean']:.2f}x, "
                  f"prove {ratio['prove_median']:.2f}x, constraints {ratio['constraints_median']:.2f}x; per customer "
                  f"{ratio['paired_online_median']:.2f}x, total {ratio['paired_online_total']:.2f}x, "
                  f"{ratio['customers_in_larger_buckets']} in larger exact buckets")
    print(f"paper: proof size {PAPER_PROOF_KB} KB (ours 128 B); ezkl inference-only proof: "
          + ("measured separately" if ezkl_available() else "not installed, not measured"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--variants", default="fair,unfair")
    parser.add_argument("--radius", default=str(Radius.HYBRID),
                        help="radius modes to measure, comma-separated, side by side: hybrid, fast, exact (default "
                             "hybrid, the product's default)")
    parser.add_argument("--exact-budget", type=float, default=DEFAULT_EXACT_BUDGET, metavar="S",
                        help="hybrid: seconds region enumeration may take online before the bound radius is proved "
                             f"instead (default {DEFAULT_EXACT_BUDGET:g}, the product's)")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--snarkjs-sample", type=int, default=2, help="bundles per model and mode also checked "
                                                                      "with snarkjs")
    parser.add_argument("--workdir", default=None, help="where models, keys and stores go (default: a temp dir)")
    parser.add_argument("--max-constraints", type=int, default=None,
                        help="do not set up or prove buckets estimated above this many constraints; such customers "
                             "are listed (bucket, estimated size) under beyond_cap")
    parser.add_argument("--rounds", type=int, default=1,
                        help="proving rounds per mode, the modes alternating; each customer's time is its smallest "
                             "over the rounds (default 1)")
    parser.add_argument("--imported", default="", metavar="DIR[,DIR]",
                        help="also (or, with --models '', only) measure models imported with `fairproof import-model "
                             "--schema --check`: their customers are the rows of the CSV they were checked on")
    parser.add_argument("--bucket-growth", type=int, choices=(2, 4), default=4,
                        help="bucket ladder: each size 2 or 4 times the last (default 4)")
    parser.add_argument("--per-slice", action="store_true",
                        help="exact certificates proved slice by slice (one proof per slice, each in its own bucket)")
    parser.add_argument("--persistence", type=float, default=None, metavar="DELTA",
                        help="commit with the persistence lens at DELTA (standardised units; two-class models) and "
                             "check every proved bound against the plaintext CROWN bounds")
    parser.add_argument("--out", default=str(RESULTS / "paper_table1.json"), help="results JSON")
    args = parser.parse_args()
    radii = [r.strip() for r in args.radius.split(",") if r.strip()]
    if not radii or any(r not in RADIUS_MODES for r in radii) or len(set(radii)) != len(radii):
        parser.error(f"--radius takes distinct modes among {', '.join(RADIUS_MODES)}")

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="fairproof-table1-"))
    out = Path(args.out)
    rows = []

    def save(row: dict) -> None:
        rows.append(row)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"radius_modes": radii, "queries": args.queries, "rounds": args.rounds,
                                   "rows": rows}, indent=1))

    for directory in filter(None, (d.strip() for d in args.imported.split(","))):
        log(f"== imported {directory}")
        save(bench_model("", (), "imported", radii, args.queries, args.snarkjs_sample, workdir,
                         args.max_constraints, args.rounds, imported=Path(directory), growth=args.bucket_growth,
                         per_slice=args.per_slice, persistence=args.persistence, exact_budget=args.exact_budget))
    for item in filter(None, (m.strip() for m in args.models.split(","))):
        dataset, _, shape = item.strip().partition(":")
        hidden = tuple(int(h) for h in shape.split("x"))
        for variant in args.variants.split(","):
            log(f"== {dataset} {hidden} {variant}")
            save(bench_model(dataset, hidden, variant, radii, args.queries, args.snarkjs_sample, workdir,
                             args.max_constraints, args.rounds, growth=args.bucket_growth,
                             per_slice=args.per_slice, persistence=args.persistence,
                             exact_budget=args.exact_budget))
    print_table(rows)
    log(f"results: {out}; artifacts: {workdir}")
    for r in rows:
        for radius, m in r["modes"].items():
            if m.get("beyond_cap"):
                log(f"{r['model']} [{radius}]: {len(m['beyond_cap'])} customers beyond the {m['max_constraints']}-"
                    "constraint cap: " + ", ".join(f"#{c['index']} {c['bucket']} ~{c['estimated_constraints']}"
                                                  for c in m["beyond_cap"]))
            if m.get("not_proved"):
                log(f"{r['model']} [{radius}]: {len(m['not_proved'])} certified customers whose witness the statement "
                    "refused: " + "; ".join(f"#{c['index']} {c['bucket']}: {c['error']}" for c in m["not_proved"]))
            if m.get("not_exact"):
                log(f"{r['model']} [{radius}]: {len(m['not_exact'])} customers without an exact certificate: "
                    + ", ".join(f"#{c['index']}" for c in m["not_exact"]))
    return 0 if all(mode_ok(m) for r in rows for m in r["modes"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
