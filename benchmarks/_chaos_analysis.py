"""After the load of benchmarks/chaos.py: what the service holds, and what the scenario measured.

The database's jobs and certificates, the transparency log's leaves, every
bundle verified as a customer verifies it, the events in the processes' logs,
and `analyse`, which turns them with the customers' tallies into the
scenario's figures (lost and duplicated decisions, 5xx answers, readiness and
the first certificate after the fault).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from _chaos_customers import Customer, Tally
from _chaos_common import ROOT
from _chaos_deployment import Deployment, _engine

# ------------------------------------------------------------------ after the load: what the service holds
def _db_facts(db_url: str, job_ids: list[str]) -> dict:
    from sqlalchemy import text

    engine = _engine(db_url)
    try:
        with engine.connect() as conn:
            jobs = conn.execute(text("SELECT id, status, attempts, idempotency_hash FROM service_jobs "
                                     "WHERE kind = 'certificate'")).all()
            certs = conn.execute(text("SELECT job_id, created_at FROM service_certificates")).all()
            queue = dict(conn.execute(text("SELECT status::text, count(*) FROM procrastinate_jobs "
                                           "GROUP BY status")).all())
    finally:
        engine.dispose()
    per_job = Counter(job_id for job_id, _ in certs)
    return {
        "jobs": {j: (s, a) for j, s, a, _ in jobs},
        "certificate_rows": per_job,
        "certificate_times": {job_id: at.timestamp() for job_id, at in certs},
        "queue": queue,
    }


def _log_leaves(url: str) -> list:
    from commitments.log import parse_leaf
    from verifier_client.service_client import ServiceClient

    with ServiceClient(url) as client:
        size = int(client.checkpoint().checkpoint.splitlines()[1])
        leaves, start = [], 0
        while start < size:
            page = client.entries(start, size).entries
            leaves.extend(parse_leaf(e.data.encode()) for e in page if e.data is not None)
            start += len(page)
    return leaves


def _verify(url: str, model_id: str, customers: list[Customer]) -> tuple[int, list[str]]:
    import httpx

    from commitments.bundle import CertificateBundle
    from commitments.card import ModelCard
    from verifier_client.verify import verify_bundle

    card = ModelCard.from_json(httpx.get(f"{url}/v1/models/{model_id}/card", timeout=30).text)
    verified, refused = 0, []
    for c in customers:
        if c.bundle is None:
            continue
        bundle = CertificateBundle.model_validate_json(c.bundle)
        verdict = verify_bundle(bundle, card)
        if verdict.valid and bundle.decision == c.decision and bundle.request_id == c.job_id:
            verified += 1
        else:
            refused.append(f"customer {c.index}: {verdict.reasons or 'decision or request id differs'}")
    return verified, refused


def _log_lines(path: Path) -> dict:
    counts = Counter()
    samples: list[str] = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            if line.startswith("Traceback"):
                counts["traceback (not JSON)"] += 1
            continue
        level = entry.get("level", "")
        counts[level] += 1
        if level in ("error", "critical") and len(samples) < 5:
            samples.append(f"{entry.get('msg', '')[:160]}" + (f" | {entry['exc'].splitlines()[-1][:200]}"
                                                                 if entry.get("exc") else ""))
    return {"levels": dict(counts), "error_samples": samples}


def _log_events(path: Path, since_wall: float, words: str) -> list[tuple[float, str]]:
    """(seconds after `since_wall`, message) of the process's log lines at or after it whose line holds `words`."""
    found = []
    for line in path.read_text(errors="replace").splitlines():
        if words not in line:
            continue
        try:
            entry = json.loads(line)
            at = datetime.fromisoformat(entry["ts"]).timestamp()
        except (ValueError, KeyError):
            continue
        if at >= since_wall:
            found.append((round(at - since_wall, 2), entry.get("msg", "")[:140]))
    return found


def _first_after(times: list[float], at: float | None) -> float | None:
    if at is None:
        return None
    later = [t for t in times if t >= at]
    return round(min(later) - at, 2) if later else None


def analyse(scenario: str, dep: Deployment, customers: list[Customer], tally: Tally, events: dict,
            ready_samples: list, warm_job_ids: set[str], model_id: str, logs: Path) -> dict:
    accepted = [c for c in customers if c.job_id is not None]
    succeeded = [c for c in customers if c.status == "succeeded"]
    facts = _db_facts(dep.db_url, [c.job_id for c in accepted])
    leaves = _log_leaves(dep.url)
    requested = Counter(leaf.request_id for leaf in leaves if leaf.kind == "decision_requested")
    committed = Counter(leaf.request_id for leaf in leaves if leaf.kind == "certificate_committed")
    duplicated: dict[str, list[int]] = {"jobs per request": [], "decision_requested leaves": [],
                                        "certificate_committed leaves": [], "stored certificates": []}
    for c in accepted:
        if len(c.job_ids) > 1:
            duplicated["jobs per request"].append(c.index)
        if requested[c.job_id] > 1:
            duplicated["decision_requested leaves"].append(c.index)
        if committed[c.job_id] > 1:
            duplicated["certificate_committed leaves"].append(c.index)
        if facts["certificate_rows"][c.job_id] > 1:
            duplicated["stored certificates"].append(c.index)
    dup_customers = sorted({i for v in duplicated.values() for i in v})
    known = {j for c in accepted for j in c.job_ids} | warm_job_ids
    stray_jobs = sorted(set(facts["jobs"]) - known)  # jobs nobody was answered: a request recorded twice
    stray_leaves = sorted(set(requested) - known)
    verified, refused = _verify(dep.url, model_id, customers)
    # Lost: accepted, and not succeeded within the deadline (as the ledger says at the end, too).
    lost = [c.index for c in accepted if c.status != "succeeded"]
    unfinished_in_db = sorted(j for c in accepted for j in [c.job_id] if facts["jobs"].get(j, ("?",))[0] != "succeeded")

    fault = events.get("fault")
    recovered = events.get("recovered")
    cert_times = [facts["certificate_times"][c.job_id] for c in accepted if c.job_id in facts["certificate_times"]]
    result: dict[str, Any] = {
        "customers": len(customers), "accepted": len(accepted), "completed": len(succeeded),
        "requests": tally.requests, "answers": {str(k): v for k, v in sorted(tally.codes.items())},
        "answered_503_with_retry_after": len(tally.r503), "answered_429": tally.r429,
        "answered_5xx_other": len(tally.s5xx), "s5xx_samples": [list(s) for s in tally.s5xx[:5]],
        "no_answer": len(tally.transport), "no_answer_samples": [list(t) for t in tally.transport[:5]],
        "answered_4xx_other": len(tally.other_4xx), "other_4xx_samples": [list(s) for s in tally.other_4xx[:5]],
        "lost": len(lost), "lost_customers": lost, "unfinished_in_ledger": unfinished_in_db,
        "customer_errors": [f"{c.index}: {c.error}" for c in customers if c.error][:10],
        "duplicated": len(dup_customers) + len(stray_jobs), "duplicated_detail": duplicated,
        "stray_jobs": stray_jobs, "stray_decision_leaves": stray_leaves,
        "verified": verified, "bundles": sum(c.bundle is not None for c in customers), "refused": refused,
        "jobs_retried": sum((c.attempts or 0) > 1 for c in customers),
        "queue_rows_at_end": facts["queue"],
        "load_seconds": round(events["load_end"]["mono"] - events["load_start"]["mono"], 1),
    }
    if fault is not None:
        t_fault = fault["mono"]
        result["fault_at_seconds_into_load"] = round(t_fault - events["load_start"]["mono"], 1)
        result["completed_before_fault"] = sum(1 for c in succeeded if c.completed_at < t_fault)
        if "fault_done" in events:
            result["fault_applied_seconds"] = round(events["fault_done"]["mono"] - t_fault, 2)
        if scenario != "kill-worker":
            result["outage_seconds"] = round(recovered["mono"] - events.get("fault_done", fault)["mono"], 1)
        # 503s inside the outage (from the fault until readiness is back) and outside it.
        back = [s for s in ready_samples if s[0] >= recovered["mono"] and s[2] == 200]
        ready_back_mono = back[0][1] if back else None
        end = ready_back_mono if ready_back_mono is not None else float("inf")
        result["answered_503_outside_outage"] = sum(1 for t, _, _ in tally.r503 if not t_fault <= t <= end + 1.0)
        during = [s for s in ready_samples if t_fault <= s[0] <= (recovered["mono"] if recovered else end)]
        not_ready = [s for s in ready_samples if s[2] != 200 and s[0] >= t_fault]
        result["ready_during_fault"] = dict(Counter(str(s[2]) for s in during))
        result["ready_first_not_200_after_fault"] = round(not_ready[0][1] - t_fault, 2) if not_ready else None
        result["ready_checks_during_fault"] = sorted({json.dumps(s[3], sort_keys=True) for s in not_ready})[:4]
        if scenario == "kill-worker":
            result["ready_after_seconds"] = None
            result["ready_not_200_samples"] = len(not_ready)
            result["first_completion_after_seconds"] = _first_after(cert_times, fault["wall"])
            killed = events.get("killed", {})
            job = killed.get("job_id")
            result["killed"] = killed
            if job is not None:
                result["killed_job_completed_after_seconds"] = (
                    round(facts["certificate_times"][job] - fault["wall"], 2) if job in facts["certificate_times"]
                    else None)
                result["killed_job_status"] = facts["jobs"].get(job)
                # What the surviving worker did with it (seconds after the kill): the queue's redelivery, the
                # ledger's claim.
                result["killed_job_log"] = [e for w in dep.workers[1:] for e in _log_events(w.log_path, fault["wall"], job)]
        else:
            result["ready_after_seconds"] = round(ready_back_mono - recovered["mono"], 2) if ready_back_mono else None
            result["first_completion_after_seconds"] = _first_after(cert_times, recovered["wall"])
            result["completed_during_fault"] = sum(1 for t in cert_times
                                                   if fault["wall"] <= t < recovered["wall"])
            # Per worker, from its log: its first job claimed after the recovery (seconds), and the job it had
            # interrupted, if any, handed back ("ended with status" of the queue job that held it).
            result["worker_first_claim_after_recovery_seconds"] = {
                f"worker{i}": next((t for t, _ in _log_events(w.log_path, recovered["wall"], '"job claimed"')), None)
                for i, w in enumerate(dep.workers, 1)}
    else:
        result["answered_503_outside_outage"] = len(tally.r503)
        result["ready_not_200_samples"] = sum(1 for s in ready_samples if s[2] != 200)
    # No process restarted: which are still running, and compose's healthcheck of each worker.
    alive = {}
    for name, p in [("api", dep.api), *[(f"worker{i}", w) for i, w in enumerate(dep.workers, 1)]]:
        alive[name] = p.process.poll() is None
    result["processes_running_at_end"] = alive
    health = {}
    for i, (w, hb) in enumerate(zip(dep.workers, dep.heartbeats), 1):
        done = subprocess.run([sys.executable, "-m", "prover_service.cli", "worker-alive", str(hb), "--max-age", "60"],
                              cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        health[f"worker{i}"] = "healthy" if done.returncode == 0 else f"unhealthy: {done.stderr.strip()[:120]}"
        try:  # a worker killed less than --max-age ago still passes: its file has not aged enough yet
            health[f"worker{i}_heartbeat_age_seconds"] = round(time.time() - hb.stat().st_mtime, 1)
        except OSError:
            health[f"worker{i}_heartbeat_age_seconds"] = None
    result["worker_healthcheck_at_end"] = health
    result["process_logs"] = {p.log_path.name: _log_lines(p.log_path) for p in dep.processes}
    result["events"] = {k: v for k, v in events.items()}
    return result
