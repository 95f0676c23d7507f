"""The job runner's failure policy, with a prover that fails on purpose.

A failure of the bank's side is reported to the customer without internals
(no paths, no key names); an unexpected exception hands the job back to be
retried rather than failing it.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from circuits.errors import CircuitError
from fairness.errors import DataError
from prover_service.service.database import open_service_database
from prover_service.service.jobs import CERTIFICATE, JobLedger
from prover_service.service.runner import JobRunner
from prover_service.service.schema import ServedModel
from prover_service.service.transparency_log import TransparencyLog
from transparency import note


@dataclass
class _FailingProver:
    error: Exception

    def prove(self, query, on_stage):
        on_stage("proving", 0.5)
        raise self.error


@dataclass
class _Loaded:
    commitment: str = "1"


class _Registry:
    def __init__(self, error: Exception):
        self.error = error

    def get(self, model_id):
        return _Loaded()

    def prover(self, model_id):
        return _FailingProver(self.error)


@pytest.fixture
def ledger(tmp_path):
    db = open_service_database(f"sqlite:///{tmp_path / 'service.sqlite'}")
    with db.transaction() as session:
        session.add(ServedModel(model_id="m", directory="m", commitment="1", card_digest="d" * 64))
    signer = note.Signer.from_key(note.generate_key("runner.test/log")[0])
    yield JobLedger(db, TransparencyLog(db, signer), lease_seconds=30)
    db.dispose()


def _run(ledger, error: Exception):
    job = ledger.submit(CERTIFICATE, "m", {"query": [1, 2]}, decision=0, card_digest="d" * 64)
    outcome = JobRunner(ledger, _Registry(error), "tester").run(job.id)
    return outcome, ledger.get(job.id)


def test_bank_side_failures_reach_the_customer_without_internals(ledger):
    outcome, job = _run(ledger, CircuitError("proving key in /srv/bank/secret/keys/k4-f4 is corrupt"))
    assert outcome == "failed" and job.status == "failed"
    assert "/srv/bank" not in job.error and "internal error" in job.error


def test_problems_with_the_record_are_explained(ledger):
    outcome, job = _run(ledger, DataError("feature 'age' = -3 lies outside the model's domain box"))
    assert outcome == "failed" and "outside the model's domain box" in job.error


def test_unexpected_errors_hand_the_job_back_for_a_retry(ledger):
    outcome, job = _run(ledger, ConnectionResetError("database went away"))
    assert outcome == "queued" and job.status == "queued" and job.attempts == 1
    assert ledger.resumable() == [job.id]


def test_an_exact_radius_the_card_cannot_prove_fails_the_job_with_the_reason(ledger):
    from prover_service.proving import ExactRadiusUnavailable

    outcome, job = _run(ledger, ExactRadiusUnavailable("model m proves exact radii only (its card publishes no "
                                                       "fast bucket) ... /srv/bank/keys"))
    assert outcome == "failed" and job.status == "failed" and job.attempts == 1
    assert "exact radii only" in job.error and "no exact-radius certificate" in job.error and "/srv" not in job.error
