"""Run one job to its end: claim it, keep its lease alive, store the outcome.

Failures split in two. A request the model cannot serve (a record outside the
domain, a certification the checker refuses) fails the job with its reason.
Anything else (a lost database connection, a killed process) leaves the job
to be claimed again, up to the ledger's attempt limit.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass

from circuits.errors import CircuitError
from fairness.errors import CertificationError, DataError, FairnessError

from .errors import ServiceError
from .jobs import CERTIFICATE, PRECOMPUTE, JobLedger, JobRecord, LeaseLost
from .registry import ModelRegistry

log = logging.getLogger("fairproof.worker")

PERMANENT_ERRORS: tuple[type[Exception], ...] = (FairnessError, CircuitError, ServiceError)


def public_reason(exc: Exception, job_id: str) -> str:
    """What the customer reads. Problems with their record are explained; anything about the
    bank's side (paths, keys, stores) stays in the bank's logs."""
    from prover_service.proving import ExactRadiusUnavailable  # loaded already wherever jobs are proved

    if isinstance(exc, DataError):
        return f"the record cannot be certified: {exc}"
    if isinstance(exc, ExactRadiusUnavailable):
        return ("no exact-radius certificate could be computed for this record (no decision-changing point could "
                "be exhibited to make its radius exact), and this model issues exact radii only")
    if isinstance(exc, CertificationError):
        return "no fairness certificate could be computed for this record; the bank has been notified"
    return f"internal error while proving (job {job_id}); the bank has been notified"


def worker_name(role: str) -> str:
    return f"{role}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class _Heartbeat:
    """Renews a job's lease in the background and carries the latest stage to the ledger."""

    def __init__(self, ledger: JobLedger, job_id: str, owner: str, interval: float):
        self.ledger, self.job_id, self.owner, self.interval = ledger, job_id, owner, interval
        self.stage: tuple[str, float] | None = None
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{job_id[:8]}", daemon=True)

    def __enter__(self) -> "_Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def report(self, stage: str, progress: float) -> None:
        """Record the stage now (customers poll for it); LeaseLost stops the work early."""
        self.stage = (stage, progress)
        self.ledger.renew(self.job_id, self.owner, stage=stage, progress=progress)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            stage, progress = self.stage or (None, None)
            try:
                self.ledger.renew(self.job_id, self.owner, stage=stage, progress=progress)
            except LeaseLost:
                self.lost = True
                return
            except Exception:  # a database hiccup: try again at the next beat
                log.warning("lease renewal failed", extra={"job_id": self.job_id}, exc_info=True)


@dataclass
class JobRunner:
    ledger: JobLedger
    registry: ModelRegistry
    owner: str
    data_dir: str | None = None

    def run(self, job_id: str) -> str | None:
        """Run the job if it is free; returns its final status, or None if someone else has it."""
        job = self.ledger.claim(job_id, self.owner)
        if job is None:
            return None
        log.info("job claimed", extra={"job_id": job.id, "kind": job.kind, "model_id": job.model_id,
                                       "attempt": job.attempts, "worker": self.owner})
        beat_every = max(0.5, self.ledger.lease.total_seconds() / 4)
        try:
            with _Heartbeat(self.ledger, job.id, self.owner, beat_every) as heartbeat:
                if job.kind == CERTIFICATE:
                    self._certificate(job, heartbeat)
                elif job.kind == PRECOMPUTE:
                    self._precompute(job, heartbeat)
                else:
                    raise ServiceError(f"unknown job kind {job.kind!r}")
        except LeaseLost:
            log.warning("lease lost; another worker has the job", extra={"job_id": job.id})
            return None
        except PERMANENT_ERRORS as exc:
            log.error("job failed", extra={"job_id": job.id, "error": f"{type(exc).__name__}: {exc}"})
            self.ledger.fail(job.id, self.owner, public_reason(exc, job.id))
            return "failed"
        except Exception as exc:
            log.exception("job interrupted; it will be retried", extra={"job_id": job.id})
            self.ledger.release(job.id, self.owner, f"{type(exc).__name__}: {exc}")
            return "queued"
        return "succeeded"

    def _certificate(self, job: JobRecord, heartbeat: _Heartbeat) -> None:
        prover = self.registry.prover(job.model_id)
        query = tuple(int(v) for v in job.request["query"])
        result = prover.prove(query, on_stage=heartbeat.report)
        if result.bundle.decision != job.decision:
            # The decision the customer was told at submission must be the one proved.
            raise ServiceError(f"internal: proved decision {result.bundle.decision} differs from the decision "
                               f"{job.decision} announced at submission")
        certificate_id = self.ledger.finish_certificate(job.id, self.owner, result.bundle, prover.card)
        t = result.timings
        log.info("certificate issued", extra={
            "job_id": job.id, "certificate_id": certificate_id, "model_id": job.model_id,
            "bucket": result.bundle.bucket, "constraints": result.n_constraints,
            "certify_s": round(t.certify, 3), "witness_s": round(t.witness, 3), "prove_s": round(t.prove, 3)})

    def _precompute(self, job: JobRecord, heartbeat: _Heartbeat) -> None:
        from offline_precompute.enumerate import precompute
        from prover_service.key_setup import setup_keys_for_test_customers

        loaded = self.registry.get(job.model_id)
        store = self.registry.store(job.model_id)

        last = [0.0]

        def on_progress(p) -> None:
            if time.monotonic() - last[0] < 1.0:
                return
            last[0] = time.monotonic()
            heartbeat.report(f"enumerating slice {p.slice_index + 1}/{p.n_slices}: {p.regions_found} regions",
                             0.8 * (p.slice_index + min(1.0, p.regions_expanded / max(1, p.regions_found))) / p.n_slices)

        summary = precompute(store, loaded.model, progress=on_progress)
        buckets = []
        key_queries = int(job.request.get("key_queries", 0))
        if key_queries:
            heartbeat.report(f"setting up keys for the first {key_queries} test customers", 0.8)
            prover = self.registry.prover(job.model_id)
            buckets = [b.__dict__ for b in setup_keys_for_test_customers(prover, key_queries, self.data_dir)]
            self.registry.refresh(job.model_id)  # the new buckets' card goes into the log
        self.ledger.finish(job.id, self.owner, {
            "regions": summary.regions, "slices": summary.n_slices, "facets": summary.facets,
            "lps": summary.lps, "seconds": round(summary.seconds, 3), "buckets": buckets})
