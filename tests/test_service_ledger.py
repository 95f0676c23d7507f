"""The job ledger and the service schema, on SQLite and on PostgreSQL.

Claims are compare-and-set with a lease; an expired lease lets another worker
take the job; a job finished twice keeps one certificate; the audit log
refuses UPDATE and DELETE; migrations go up and down cleanly.
"""
from __future__ import annotations

import contextlib
import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from commitments.bundle import CertificateBundle, Radius
from prover_service.service.database import current_revision, head_revision, migrate, open_service_database
from prover_service.service.jobs import CERTIFICATE, JobLedger, LeaseLost
from prover_service.service.schema import ServedModel
from prover_service.service.transparency_log import TransparencyLog
from tests.service_fixtures import fresh_pg_database
from transparency import note


@contextlib.contextmanager
def _database(kind: str, tmp_path):
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'service.sqlite'}"
    else:
        with fresh_pg_database() as url:
            yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    with _database(request.param, tmp_path) as url:
        database = open_service_database(url)
        with database.transaction() as session:
            session.add(ServedModel(model_id="m", directory="m", commitment="123", card_digest="d" * 64))
        yield database
        database.dispose()


def _ledger(db, lease: float = 30.0, attempts: int = 3) -> JobLedger:
    signer = note.Signer.from_key(note.generate_key("ledger.test/log")[0])
    return JobLedger(db, TransparencyLog(db, signer), lease_seconds=lease, max_attempts=attempts)


class _Card:
    """The served card as far as the ledger looks at it (the ledger never checks a proof)."""

    model_id = "m"
    commitment = "123"

    @staticmethod
    def digest() -> str:
        return "d" * 64


_CARD = _Card()


def _log_kinds(db) -> list[str]:
    with db.engine.connect() as conn:
        return conn.execute(text("SELECT kind FROM service_log_leaves ORDER BY idx")).scalars().all()


def _bundle(certificate_id: str) -> CertificateBundle:
    return CertificateBundle(
        certificate_id=certificate_id, issued_at="2026-11-22T00:00:00+00:00", model_id="m", card_digest="d" * 64,
        bucket="k4-f4", query=(1, 2), decision=1, decision_label="good", status="certified",
        eps=Radius(numerator=5, scale_bits=16), proof=_UNCHECKED_PROOF, public_signals=("123", "1"), proof_hex="ab" * 128)


# The ledger stores bundles without checking them: a well-formed proof document is enough here.
_UNCHECKED_PROOF = {"pi_a": ["1", "2", "1"], "pi_b": [["1", "2"], ["3", "4"], ["1", "0"]], "pi_c": ["1", "2", "1"],
                    "protocol": "groth16", "curve": "bn128"}


def test_a_claim_is_exclusive_until_the_lease_runs_out(db):
    ledger = _ledger(db, lease=1.5)
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=1, card_digest="d" * 64)
    assert ledger.resumable() == [job.id]
    first = ledger.claim(job.id, "worker-a")
    assert first is not None and first.status == "running" and first.attempts == 1
    assert ledger.claim(job.id, "worker-b") is None  # leased to a live worker
    assert ledger.resumable() == []
    time.sleep(1.7)  # worker-a went silent
    assert ledger.resumable() == [job.id]
    second = ledger.claim(job.id, "worker-b")
    assert second is not None and second.attempts == 2
    with pytest.raises(LeaseLost):
        ledger.renew(job.id, "worker-a")  # the old worker learns it lost the job
    ledger.renew(job.id, "worker-b", stage="proving", progress=0.5)
    assert ledger.get(job.id).stage == "proving"


def test_a_job_finished_twice_keeps_one_certificate_and_one_audit_entry(db):
    ledger = _ledger(db, lease=1.0)
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=1, card_digest="d" * 64)
    ledger.claim(job.id, "a")
    time.sleep(1.2)
    ledger.claim(job.id, "b")
    kept = ledger.finish_certificate(job.id, "b", _bundle("11111111-1111-1111-1111-111111111111"), _CARD)
    again = ledger.finish_certificate(job.id, "a", _bundle("22222222-2222-2222-2222-222222222222"), _CARD)
    assert kept == again == "11111111-1111-1111-1111-111111111111"
    assert ledger.get(job.id).status == "succeeded" and ledger.get(job.id).certificate_id == kept
    assert ledger.certificate("22222222-2222-2222-2222-222222222222") is None
    assert _log_kinds(db) == ["decision_requested", "certificate_committed"]  # one leaf per event, never two
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM service_audit_log WHERE job_id = :j"), {"j": job.id}).scalar() == 1
    assert ledger.claim(job.id, "c") is None  # a finished job is never run again


def test_the_audit_log_is_append_only(db):
    ledger = _ledger(db)
    job = ledger.submit(CERTIFICATE, "m", {"query": [1]}, decision=1, card_digest="d" * 64)
    ledger.claim(job.id, "a")
    ledger.finish_certificate(job.id, "a", _bundle("33333333-3333-3333-3333-333333333333"), _CARD)
    for statement in ("UPDATE service_audit_log SET decision = 0", "DELETE FROM service_audit_log"):
        with pytest.raises(DBAPIError, match="append-only"):
            with db.engine.begin() as conn:
                conn.execute(text(statement))
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT decision FROM service_audit_log")).scalars().all() == [1]


def test_a_job_that_keeps_killing_its_workers_is_given_up(db):
    ledger = _ledger(db, lease=0.5, attempts=2)
    job = ledger.submit(CERTIFICATE, "m", {"query": [1]}, decision=1, card_digest="d" * 64)
    for owner in ("a", "b"):
        assert ledger.claim(job.id, owner) is not None
        time.sleep(0.7)
    assert ledger.claim(job.id, "c") is None
    final = ledger.get(job.id)
    assert final.status == "failed" and "gave up after 2 attempts" in final.error


def test_failure_and_release(db):
    ledger = _ledger(db)
    doomed = ledger.submit(CERTIFICATE, "m", {"query": [1]}, decision=1, card_digest="d" * 64)
    ledger.claim(doomed.id, "a")
    ledger.fail(doomed.id, "a", "record outside the domain")
    assert ledger.get(doomed.id).status == "failed" and ledger.get(doomed.id).error == "record outside the domain"
    retried = ledger.submit(CERTIFICATE, "m", {"query": [1]}, decision=1, card_digest="d" * 64)
    ledger.claim(retried.id, "a")
    ledger.release(retried.id, "a", "database restarted")
    assert ledger.get(retried.id).status == "queued" and ledger.resumable() == [retried.id]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_migrations_go_up_down_and_up_again(kind, tmp_path):
    with _database(kind, tmp_path) as url:
        database = open_service_database(url)
        try:
            assert current_revision(database.engine) == head_revision() and database.is_current()
            migrate(database.engine, "head")  # idempotent
            from alembic import command
            from prover_service.service.database import alembic_config

            config = alembic_config()
            with database.engine.begin() as conn:
                config.attributes["connection"] = conn
                command.downgrade(config, "base")
            assert current_revision(database.engine) is None
            migrate(database.engine)
            assert database.is_current()
        finally:
            database.dispose()
