"""The job ledger: every accepted request is a row here before the client hears back.

A job moves queued -> running -> succeeded | failed. A worker claims a job
with a compare-and-set that also takes a lease; while it works it renews the
lease. A job whose lease ran out (its worker died) can be claimed again, so a
restart loses nothing; the unique job id on certificates means a job retried
after its first worker finished unseen still yields one certificate.

A certificate job's request and its certificate each append a leaf to the
transparency log in the same transaction as their row, so the log shows every
decision asked for and every certificate issued, and nothing else. The
certificate's leaf (`certificate_committed`) says only its decision, status,
eps and lens summaries, and commits to its public signals under a salt drawn
here (`secrets`) and stored only in the customer's bundle (`log_salt`).
"""
from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from sqlalchemy import and_, case, or_, select, update
from sqlalchemy.exc import IntegrityError

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.log import LOG_SALT_BYTES, DecisionRequested, bundle_certificate_leaf

from .database import ServiceDatabase
from .publication import publish_added_buckets
from .schema import AuditEntry, IssuedCertificate, Job, as_utc, utcnow
from .transparency_log import TransparencyLog

CERTIFICATE = "certificate"
PRECOMPUTE = "precompute"
KEY_SETUP = "key_setup"  # an admin job: set up one circuit bucket's keys, publish them on the card
QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"


@dataclass(frozen=True)
class JobRecord:
    """A snapshot of one job, detached from any session."""

    id: str
    kind: str
    model_id: str
    status: str
    stage: str
    progress: float
    attempts: int
    request: dict[str, Any]
    decision: int | None
    error: str | None
    result: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    certificate_id: str | None
    access_hash: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in (SUCCEEDED, FAILED)


class LeaseLost(Exception):
    """Another worker holds this job now: stop working on it."""


@dataclass(frozen=True)
class QueueCaps:
    """Unfinished certificate jobs allowed, per model and in all, beyond which a submission is refused."""

    per_model: int
    total: int


class QueueFull(Exception):
    """A certificate job refused because the queue is at one of its caps (`detail` says which)."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


class JobLedger:
    def __init__(self, db: ServiceDatabase, log: TransparencyLog, *, lease_seconds: float = 30.0,
                 max_attempts: int = 3):
        self.db = db
        self.log = log
        self.lease = timedelta(seconds=lease_seconds)
        self.max_attempts = max_attempts

    # ------------------------------------------------------------ submit/read
    def submit(self, kind: str, model_id: str, request: dict[str, Any], *, decision: int | None = None,
               card_digest: str | None = None, access_hash: str | None = None,
               caps: QueueCaps | None = None, idempotency_hash: str | None = None) -> JobRecord:
        """Record a job; a certificate job (which needs `decision` and `card_digest`) is logged too.
        `access_hash`: the SHA-256 of the token that reads the job (None: admins only). With `caps`, a
        certificate job is refused (QueueFull) while the unfinished certificate jobs are at a cap; the
        count and the insert are one step, so concurrent submissions never overshoot it.
        `idempotency_hash`: one job per such hash; a submission whose hash a job already holds (a retry,
        even one racing the first) returns that job and records nothing (see `idempotent`)."""
        if idempotency_hash is not None:
            held = self.idempotent(idempotency_hash)
            if held is not None:
                return held
        now = utcnow()
        job = Job(id=str(uuid.uuid4()), kind=kind, model_id=model_id, status=QUEUED, stage="waiting for a worker",
                  progress=0.0, attempts=0, request_json=json.dumps(request), decision=decision,
                  access_hash=access_hash, idempotency_hash=idempotency_hash, created_at=now, updated_at=now)
        try:
            return self._insert(job, kind, model_id, decision, card_digest, caps)
        except IntegrityError:
            held = self.idempotent(idempotency_hash) if idempotency_hash is not None else None
            if held is None:
                raise
            return held  # a concurrent submission of the same key won: its job, nothing of ours recorded

    def idempotent(self, idempotency_hash: str) -> JobRecord | None:
        """The job submitted under this idempotency hash, if any."""
        with self.db.sessions() as session:
            job = session.scalars(select(Job).where(Job.idempotency_hash == idempotency_hash)).first()
            return None if job is None else self._record(job, None)

    def _insert(self, job: Job, kind: str, model_id: str, decision: int | None, card_digest: str | None,
                caps: QueueCaps | None) -> JobRecord:
        with self.db.transaction() as session:
            if kind == CERTIFICATE:
                if decision is None or card_digest is None:
                    raise ValueError("a certificate job needs its decision and the card it was decided under")
                # The append locks the log head (its row on PostgreSQL, the database on SQLite) until this
                # transaction ends: the backlog counted next cannot change before the job is in.
                self.log.append(session, [DecisionRequested(model_id=model_id, card_digest=card_digest,
                                                            request_id=job.id, decision=decision)])
                if caps is not None:
                    self._check_caps(session, model_id, caps)
            session.add(job)
            session.flush()  # a duplicate idempotency hash fails here, before the transaction commits
        return self._record(job, None)

    def submit_once(self, kind: str, model_id: str, request: dict[str, Any], *,
                    create: bool = True) -> tuple[JobRecord | None, bool]:
        """An unfinished job of this kind, model and request if one exists, else a new one (none without
        `create`); (job, created)."""
        wanted = json.dumps(request)
        with self.db.sessions() as session:
            for job in session.scalars(select(Job).where(Job.kind == kind, Job.model_id == model_id,
                                                         Job.status.in_((QUEUED, RUNNING)))):
                if json.loads(job.request_json) == json.loads(wanted):
                    return self._record(job, None), False
        if not create:
            return None, False
        return self.submit(kind, model_id, request), True

    def backlog(self, kind: str, model_id: str | None = None) -> int:
        """Unfinished (queued or running) jobs of `kind`, for one model or all."""
        from sqlalchemy import func

        query = select(func.count()).select_from(Job).where(Job.kind == kind, Job.status.in_((QUEUED, RUNNING)))
        if model_id is not None:
            query = query.where(Job.model_id == model_id)
        with self.db.sessions() as session:
            return int(session.scalar(query) or 0)

    def get(self, job_id: str) -> JobRecord | None:
        with self.db.sessions() as session:
            job = session.get(Job, job_id)
            if job is None:
                return None
            return self._record(job, self._certificate_id(session, job_id))

    def resumable(self) -> list[str]:
        """Jobs nobody is working on: queued, or running under an expired lease; oldest first."""
        now = utcnow()
        with self.db.sessions() as session:
            rows = session.scalars(
                select(Job.id).where(_claimable(now)).order_by(Job.created_at, Job.id)
            ).all()
        return list(rows)

    def certificate(self, certificate_id: str) -> tuple[str, int | None, str] | None:
        """The bundle as issued, its leaf index in the log (None for one issued before the log) and its job."""
        with self.db.sessions() as session:
            row = session.get(IssuedCertificate, certificate_id)
            return None if row is None else (row.bundle_json, row.leaf_index, row.job_id)

    # ------------------------------------------------------------- workers
    def claim(self, job_id: str, owner: str) -> JobRecord | None:
        """Take the job if nobody holds it; None if it is finished or leased to a live worker."""
        now = utcnow()
        with self.db.transaction() as session:
            taken = session.execute(
                update(Job)
                .where(Job.id == job_id, _claimable(now))
                .values(status=RUNNING, lease_owner=owner, lease_expires_at=now + self.lease,
                        attempts=Job.attempts + 1, updated_at=now, stage="claimed by a worker")
                .execution_options(synchronize_session=False)
            ).rowcount
        if taken != 1:
            return None
        record = self.get(job_id)
        assert record is not None
        if record.attempts > self.max_attempts:
            # A job that kept killing its workers is not retried forever.
            self.fail(job_id, owner, f"gave up after {self.max_attempts} attempts (workers stopped mid-job)")
            return None
        return record

    def lease_remaining(self, job_id: str) -> float | None:
        """Seconds until the running job's lease runs out (0 if it has), or None if the job is not running."""
        with self.db.sessions() as session:
            job = session.get(Job, job_id)
            if job is None or job.status != RUNNING or job.lease_expires_at is None:
                return None
            expires = job.lease_expires_at
        if expires.tzinfo is None:  # SQLite keeps no time zone: the ledger writes UTC
            expires = expires.replace(tzinfo=timezone.utc)
        return max(0.0, (expires - utcnow()).total_seconds())

    def renew(self, job_id: str, owner: str, *, stage: str | None = None, progress: float | None = None) -> None:
        """Extend the lease (and report progress); LeaseLost if another worker took the job."""
        now = utcnow()
        values: dict[str, Any] = {"lease_expires_at": now + self.lease, "updated_at": now}
        if stage is not None:
            values["stage"] = stage[:200]
        if progress is not None:
            values["progress"] = min(1.0, max(0.0, progress))
        with self.db.transaction() as session:
            held = session.execute(
                update(Job).where(Job.id == job_id, Job.status == RUNNING, Job.lease_owner == owner)
                .values(**values).execution_options(synchronize_session=False)
            ).rowcount
        if held != 1:
            raise LeaseLost(job_id)

    def finish_certificate(self, job_id: str, owner: str, bundle: CertificateBundle, card: ModelCard) -> str:
        """Store the bundle, log it, append the audit entry and close the job, in one transaction.

        `card` is the card the bundle was proved under: if it only adds circuit
        buckets to the published card it is published first; under another
        commitment the job fails (only an admin publishes a recommitted model).
        Returns the job's certificate id: this bundle's, or the one an earlier
        attempt already stored (the job then keeps that one; nothing is duplicated).
        """
        if card.digest() != bundle.card_digest or card.model_id != bundle.model_id:
            raise ValueError("internal: the bundle was not proved under the card given")
        # The leaf's salt: it is never published, only stored with the bundle and served with it to its
        # customer, so the leaf's commitment hides the signals (the query among them) from everyone else. The leaf's public fields are the bundle's readable
        # ones, which the prover checked are the claims of its signals (commitments.claims.bundle_claims).
        bundle = bundle.model_copy(update={"request_id": job_id, "log": None,
                                           "log_salt": secrets.token_hex(LOG_SALT_BYTES)})
        text = bundle.model_dump_json()
        digest = hashlib.sha256(text.encode()).hexdigest()
        leaf = bundle_certificate_leaf(bundle)
        now = utcnow()
        try:
            with self.db.transaction() as session:
                existing = self._certificate_id(session, job_id)
                if existing is not None:
                    return existing
                publish_added_buckets(session, self.log, card)
                (leaf_index,) = self.log.append(session, [leaf])
                session.add(IssuedCertificate(id=bundle.certificate_id, job_id=job_id, model_id=bundle.model_id,
                                              bundle_json=text, bundle_sha256=digest, leaf_index=leaf_index,
                                              created_at=now))
                session.add(AuditEntry(
                    at=now, event="certificate_issued", model_id=bundle.model_id, commitment=card.commitment,
                    card_digest=bundle.card_digest, job_id=job_id, certificate_id=bundle.certificate_id,
                    decision=bundle.decision, status=bundle.status, eps_numerator=str(bundle.eps.numerator),
                    eps_scale_bits=bundle.eps.scale_bits, bundle_sha256=digest))
                session.execute(
                    update(Job).where(Job.id == job_id)
                    .values(status=SUCCEEDED, stage="certificate issued", progress=1.0, error=None,
                            lease_owner=None, lease_expires_at=None, updated_at=now)
                    .execution_options(synchronize_session=False))
        except IntegrityError:
            # Another attempt stored its certificate between our check and our insert.
            with self.db.sessions() as session:
                existing = self._certificate_id(session, job_id)
            if existing is None:
                raise
            return existing
        return bundle.certificate_id

    def finish(self, job_id: str, owner: str, result: dict[str, Any]) -> None:
        self._close(job_id, owner, status=SUCCEEDED, stage="done", error=None, result=result)

    def fail(self, job_id: str, owner: str, error: str, result: dict[str, Any] | None = None) -> None:
        """A permanent failure: the request itself cannot be served (the reason, and any `result` such as
        a retry hint, are shown to the client)."""
        self._close(job_id, owner, status=FAILED, stage="failed", error=error[:2000], result=result)

    def release_orphans(self, orphaned: Callable[[str], bool]) -> list[str]:
        """Hand back running jobs whose owner is known dead (`orphaned(owner)`), without waiting out their
        leases: a restarted service resumes the job its killed predecessor was proving at once."""
        with self.db.sessions() as session:
            running = session.execute(select(Job.id, Job.lease_owner).where(Job.status == RUNNING)).all()
        released = []
        for job_id, owner in running:
            if owner and orphaned(owner):
                self.release(job_id, owner, "its worker stopped")
                released.append(job_id)
        return released

    def release(self, job_id: str, owner: str, reason: str, *, refund: bool = False) -> None:
        """Give the job back after a transient failure (it is claimed again, up to max_attempts). `refund`:
        the attempt does not count (the job did not fail: the service stopped, or its database or disk did)."""
        now = utcnow()
        values: dict[str, Any] = {"status": QUEUED, "stage": f"retrying: {reason}"[:200], "lease_owner": None,
                                  "lease_expires_at": None, "updated_at": now}
        if refund:
            values["attempts"] = case((Job.attempts > 0, Job.attempts - 1), else_=0)
        with self.db.transaction() as session:
            session.execute(
                update(Job).where(Job.id == job_id, Job.status == RUNNING, Job.lease_owner == owner)
                .values(**values).execution_options(synchronize_session=False))

    # ------------------------------------------------------------- helpers
    @staticmethod
    def _check_caps(session, model_id: str, caps: QueueCaps) -> None:
        from sqlalchemy import func

        unfinished = select(func.count()).select_from(Job).where(Job.kind == CERTIFICATE,
                                                                  Job.status.in_((QUEUED, RUNNING)))
        if int(session.scalar(unfinished.where(Job.model_id == model_id)) or 0) >= caps.per_model:
            raise QueueFull(f"model {model_id} has {caps.per_model} certificates waiting")
        if int(session.scalar(unfinished) or 0) >= caps.total:
            raise QueueFull(f"the service has {caps.total} certificates waiting")

    def _close(self, job_id: str, owner: str, *, status: str, stage: str, error: str | None,
               result: dict[str, Any] | None) -> None:
        now = utcnow()
        with self.db.transaction() as session:
            session.execute(
                update(Job).where(Job.id == job_id, Job.status.in_((QUEUED, RUNNING)))
                .values(status=status, stage=stage, error=error, progress=1.0 if status == SUCCEEDED else Job.progress,
                        result_json=None if result is None else json.dumps(result),
                        lease_owner=None, lease_expires_at=None, updated_at=now)
                .execution_options(synchronize_session=False))

    @staticmethod
    def _certificate_id(session, job_id: str) -> str | None:
        return session.scalar(select(IssuedCertificate.id).where(IssuedCertificate.job_id == job_id))

    @staticmethod
    def _record(job: Job, certificate_id: str | None) -> JobRecord:
        return JobRecord(
            id=job.id, kind=job.kind, model_id=job.model_id, status=job.status, stage=job.stage,
            progress=job.progress, attempts=job.attempts, request=json.loads(job.request_json),
            decision=job.decision, error=job.error,
            result=None if job.result_json is None else json.loads(job.result_json),
            created_at=as_utc(job.created_at), updated_at=as_utc(job.updated_at), certificate_id=certificate_id,
            access_hash=job.access_hash,
        )


def _claimable(now: datetime):
    return or_(Job.status == QUEUED, and_(Job.status == RUNNING, Job.lease_expires_at < now))

