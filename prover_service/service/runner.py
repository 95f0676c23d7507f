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
from .jobs import CERTIFICATE, KEY_SETUP, PRECOMPUTE, JobLedger, JobRecord, LeaseLost
from .registry import ModelRegistry

log = logging.getLogger("fairproof.worker")

PERMANENT_ERRORS: tuple[type[Exception], ...] = (FairnessError, CircuitError, ServiceError)
# After its database or disk failed, a worker waits this long before its next job: the outage is not
# spun through at a proof a second, and the job, handed back, keeps its attempts for after the outage.
OUTAGE_PAUSE_SECONDS = 2.0


def is_outage(exc: BaseException) -> bool:
    """The database or the disk failed (not the job): the job is retried without counting the attempt. A data or
    integrity error is the job's own failure and counts (`errors.is_outage` tells them apart)."""
    from .errors import is_outage as outage

    return outage(exc)


# A job interrupted by an outage is handed back (its attempt refunded) once the database answers again: tried
# this often until it does.
RELEASE_RETRY_SECONDS = 0.5
# A job offered while a dead worker's lease still runs is claimed this long after the lease ends.
LEASE_MARGIN_SECONDS = 0.05


def public_reason(exc: Exception, job_id: str) -> str:
    """What the customer reads. Problems with their record are explained; anything about the
    bank's side (paths, keys, stores) stays in the bank's logs."""
    from prover_service.bucket_keys import KeysNotReady
    from prover_service.proving import ExactRadiusUnavailable  # loaded already wherever jobs are proved

    if isinstance(exc, KeysNotReady):
        return (f"retry later: the keys of this certificate's circuit (bucket {exc.shape.bucket}) are not set up yet; "
                "the bank's service has queued their setup, which takes minutes: submit the record again then")
    if isinstance(exc, DataError):
        return f"the record cannot be certified: {exc}"
    if isinstance(exc, ExactRadiusUnavailable):
        return ("no exact-radius certificate could be computed for this record (no decision-changing point could "
                "be exhibited to make its radius exact), and this model issues exact radii only")
    if isinstance(exc, CertificationError):
        return "no fairness certificate could be computed for this record; the bank has been notified"
    return f"internal error while proving (job {job_id}); the bank has been notified"


# How long a customer should wait before submitting again when their bucket's keys are being set up.
KEY_SETUP_RETRY_SECONDS = 300


def retry_hint(exc: Exception) -> dict | None:
    """What a failed job tells a client about retrying (None: retrying the same request will not help)."""
    setup_job = getattr(exc, "setup_job_id", None)
    if setup_job is None:
        return None
    return {"retry_after_seconds": KEY_SETUP_RETRY_SECONDS, "key_setup_job_id": setup_job}


def worker_name(role: str) -> str:
    return f"{role}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def orphaned_on_this_host(owner: str) -> bool:
    """Whether a worker name of this host belongs to a process that is gone. Call it before this process
    starts any worker: then a name with this process's own pid is a predecessor's (a container restarted
    with the same pid), never one of ours."""
    role, _, rest = owner.partition("@")
    try:
        host, pid_text, _ = rest.rsplit(":", 2)
        pid = int(pid_text)
    except ValueError:
        return False
    if host != socket.gethostname() or not role:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


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
        failing = False  # one log line when renewals start failing and one when they work again, not one per beat
        while not self._stop.wait(self.interval):
            stage, progress = self.stage or (None, None)
            try:
                self.ledger.renew(self.job_id, self.owner, stage=stage, progress=progress)
            except LeaseLost:
                self.lost = True
                return
            except Exception as exc:  # a database hiccup: try again at the next beat
                if not failing:
                    log.warning("lease renewal failing; retrying at every beat",
                                extra={"job_id": self.job_id, "error": f"{type(exc).__name__}: {str(exc)[:150]}"})
                    failing = True
            else:
                if failing:
                    log.info("lease renewal works again", extra={"job_id": self.job_id})
                    failing = False


@dataclass
class JobRunner:
    ledger: JobLedger
    registry: ModelRegistry
    owner: str
    data_dir: str | None = None

    def run(self, job_id: str) -> str | None:
        """Run the job if it is free; returns its final status, or None if someone else has it.

        A job offered again while the lease of a worker that died on it still runs (the queue notices a dead
        worker sooner than the lease ends) is waited for, at most one lease, rather than dropped until the
        next sweep puts it at the back of the queue."""
        job = self.ledger.claim(job_id, self.owner)
        if job is None:
            remaining = self.ledger.lease_remaining(job_id)
            if remaining is None or remaining > self.ledger.lease.total_seconds():
                return None
            time.sleep(remaining + LEASE_MARGIN_SECONDS)
            job = self.ledger.claim(job_id, self.owner)
            if job is None:  # a live worker renewed it: it is that worker's
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
                elif job.kind == KEY_SETUP:
                    self._key_setup(job, heartbeat)
                else:
                    raise ServiceError(f"unknown job kind {job.kind!r}")
        except LeaseLost:
            log.warning("lease lost; another worker has the job", extra={"job_id": job.id})
            return None
        except PERMANENT_ERRORS as exc:
            log.error("job failed", extra={"job_id": job.id, "error": f"{type(exc).__name__}: {exc}"})
            self.ledger.fail(job.id, self.owner, public_reason(exc, job.id), result=retry_hint(exc))
            return "failed"
        except Exception as exc:
            outage = is_outage(exc)
            log.exception("job interrupted; it will be retried", extra={"job_id": job.id, "outage": outage})
            reason = f"{type(exc).__name__}: {str(exc)[:150]}"
            if outage:
                self._release_after_outage(job.id, reason)
            else:
                self.ledger.release(job.id, self.owner, reason)
            return "queued"
        return "succeeded"

    def _release_after_outage(self, job_id: str, reason: str) -> None:
        """Hand the job back with its attempt refunded as soon as the database answers again, however long
        that takes (retrying every RELEASE_RETRY_SECONDS: an outage counts no attempt against the customer).
        If the database answered at once, pause first: a flapping database is not spun through at a proof
        a second; after a real outage, go on at once."""
        waited = False
        while True:
            try:
                self.ledger.release(job_id, self.owner, reason, refund=True)
                break
            except Exception as exc:
                if not is_outage(exc):
                    raise
                waited = True
                time.sleep(RELEASE_RETRY_SECONDS)
        if not waited:
            time.sleep(OUTAGE_PAUSE_SECONDS)

    def _certificate(self, job: JobRecord, heartbeat: _Heartbeat) -> None:
        from prover_service.bucket_keys import KeysNotReady

        prover = self.registry.prover(job.model_id, radius=job.request.get("radius"))
        query = tuple(int(v) for v in job.request["query"])
        delta = job.request.get("persistence_delta")
        try:
            result = prover.prove(query, on_stage=heartbeat.report, persistence_delta=delta)
        except KeysNotReady as exc:
            # Never set up keys inside a customer's job: queue one admin job per bucket, tell the customer.
            shape = exc.shape
            setup, created = self.ledger.submit_once(KEY_SETUP, job.model_id, {
                "region_slots": shape.region_slots, "farkas_slots": shape.farkas_slots, "radius": shape.radius,
                **({"per_slice": True} if shape.per_slice else {})})
            log.info("bucket keys missing; setup queued" if created else "bucket keys missing; setup already queued",
                     extra={"job_id": job.id, "setup_job_id": setup.id, "bucket": shape.bucket})
            exc.setup_job_id = setup.id  # type: ignore[attr-defined]
            raise
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
            prover = self.registry.prover(job.model_id, sets_up_keys=True)
            buckets = [b.__dict__ for b in setup_keys_for_test_customers(prover, key_queries, self.data_dir)]
            self.registry.refresh(job.model_id)  # the new buckets' card goes into the log
        self.ledger.finish(job.id, self.owner, {
            "regions": summary.regions, "slices": summary.n_slices, "facets": summary.facets,
            "lps": summary.lps, "seconds": round(summary.seconds, 3), "buckets": buckets})

    def _key_setup(self, job: JobRecord, heartbeat: _Heartbeat) -> None:
        """Set up one bucket's keys (the bank's configured setup) and publish them on the served card."""
        prover = self.registry.prover(job.model_id, sets_up_keys=True)
        shape = prover.shape_for(int(job.request["region_slots"]), int(job.request["farkas_slots"]),
                                 str(job.request["radius"]), per_slice=job.request.get("per_slice") is True)
        heartbeat.report(f"setting up keys for bucket {shape.bucket}", 0.0)
        started = time.monotonic()
        keys = prover.keys(shape)
        self.registry.refresh(job.model_id)  # the new bucket's card goes into the log
        self.ledger.finish(job.id, self.owner, {"bucket": shape.bucket, "constraints": keys.r1cs.n_constraints,
                                                "seconds": round(time.monotonic() - started, 3)})
