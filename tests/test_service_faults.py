"""Kill a prover mid-proof, start a new one: the job completes with one valid certificate.

The prover is frozen (SIGSTOP) in short steps until the ledger shows it in
the proving stage of the job, and then killed (SIGKILL: no shutdown code
runs), so it certainly dies mid-proof. Leases are short so the test does not
wait long for the dead worker's lease to run out.
"""
from __future__ import annotations

import signal
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from commitments.bundle import CertificateBundle
from commitments.card import ModelCard
from commitments.log import parse_leaf
from tests.service_fixtures import (ADMIN_KEY, MODEL_DIRECTORY, copy_models_dir, customer_records, fresh_pg_database,
                                    job_headers, register_model, serve, wait_for_job, worker)
from verifier_client.log_check import check_log_evidence
from verifier_client.pins import PinStore
from verifier_client.service_client import ServiceClient
from verifier_client.verify import verify_bundle

pytestmark = pytest.mark.postgres

LEASE = {"FAIRPROOF_LEASE_SECONDS": "3"}


@pytest.fixture(scope="module")
def models_dir(service_models, tmp_path_factory):
    return copy_models_dir(service_models, tmp_path_factory.mktemp("fault-models"))


def _submit(url: str, index: int = 0) -> str:
    r = httpx.post(f"{url}/v1/models/{MODEL_DIRECTORY}/decisions", json={"record": customer_records(index + 1)[index]},
                   timeout=30)
    assert r.status_code == 202, r.text
    return r.json()["job_id"]


def _kill_mid_proof(process, db_url: str, job_id: str, timeout: float = 120.0) -> None:
    """Let `process` run in 10 ms steps until the ledger shows it proving the job, then kill it."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            process.process.send_signal(signal.SIGSTOP)
            with engine.connect() as conn:
                status, stage = conn.execute(text("SELECT status, stage FROM service_jobs WHERE id = :id"),
                                             {"id": job_id}).one()
            if status == "running" and stage.startswith("proving"):
                process.kill()  # frozen inside the proving step
                return
            assert status in ("queued", "running"), (status, stage)
            process.process.send_signal(signal.SIGCONT)
            time.sleep(0.01)
        raise AssertionError(f"job {job_id} never reached its proving stage")
    finally:
        engine.dispose()


def _assert_one_valid_certificate(url: str, job_id: str) -> None:
    job = wait_for_job(url, job_id, timeout=180)
    assert job["status"] == "succeeded", job
    assert job["attempts"] >= 2  # the killed attempt, then the one that finished
    bundle = CertificateBundle.model_validate_json(httpx.get(f"{url}{job['certificate_url']}",
                                                             headers=job_headers()).text)
    card = ModelCard.model_validate_json(httpx.get(f"{url}/v1/models/{MODEL_DIRECTORY}/card").text)
    assert verify_bundle(bundle, card).valid
    audit = httpx.get(f"{url}/v1/admin/audit", headers={"X-API-Key": ADMIN_KEY}).json()["entries"]
    assert [e["certificate_id"] for e in audit if e["job_id"] == job_id] == [bundle.certificate_id]
    _assert_logged_once(url, job_id, bundle, card)


def _assert_logged_once(url: str, job_id: str, bundle: CertificateBundle, card: ModelCard) -> None:
    """The killed attempt left nothing in the log; the finished one left exactly its leaf, which verifies."""
    with ServiceClient(url) as client, tempfile.TemporaryDirectory() as pins_dir:
        check_log_evidence(bundle, card, bundle.log, PinStore(Path(pins_dir) / "pins.json"),
                           log_key=client.log_key().verifier_key, consistency=client.consistency)
        leaves = [parse_leaf(e.data.encode()) for e in client.entries(0, bundle.log.certificate.tree_size).entries]
    assert [leaf.kind for leaf in leaves if getattr(leaf, "request_id", None) == job_id] == [
        "decision_requested", "certificate_issued"]


def test_killed_queue_worker_is_replaced_and_the_job_completes(models_dir, tmp_path):
    with fresh_pg_database() as db_url:
        service = serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_QUEUE="procrastinate", **LEASE).start()
        doomed = worker(models_dir, db_url, tmp_path / "worker-1.log", **LEASE)
        replacement = worker(models_dir, db_url, tmp_path / "worker-2.log", **LEASE)
        try:
            register_model(service.url)
            doomed.start()
            job_id = _submit(service.url)
            _kill_mid_proof(doomed, db_url, job_id)
            replacement.start()
            _assert_one_valid_certificate(service.url, job_id)
            # The replacement serves new customers too.
            assert wait_for_job(service.url, _submit(service.url, 1))["status"] == "succeeded"
        finally:
            for p in (replacement, doomed, service):
                p.stop()


def test_killed_service_resumes_its_accepted_jobs_on_restart(models_dir, tmp_path):
    with fresh_pg_database() as db_url:
        first = serve(models_dir, db_url, tmp_path / "serve-1.log", **LEASE).start()
        try:
            register_model(first.url)
            job_id = _submit(first.url)
            _kill_mid_proof(first, db_url, job_id)
        finally:
            first.kill()
        second = serve(models_dir, db_url, tmp_path / "serve-2.log", **LEASE).start()
        try:
            _assert_one_valid_certificate(second.url, job_id)
        finally:
            second.stop()


def test_a_job_accepted_while_no_worker_runs_waits_and_then_completes(models_dir, tmp_path):
    with fresh_pg_database() as db_url:
        service = serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_QUEUE="procrastinate", **LEASE).start()
        late = worker(models_dir, db_url, tmp_path / "worker.log", **LEASE)
        try:
            register_model(service.url)
            job_id = _submit(service.url)
            time.sleep(2.0)
            assert httpx.get(f"{service.url}/v1/jobs/{job_id}", headers=job_headers()).json()["status"] == "queued"
            assert "no live worker" in httpx.get(f"{service.url}/v1/ready").json()["checks"]["workers"]
            late.start()
            job = wait_for_job(service.url, job_id)
            assert job["status"] == "succeeded" and job["attempts"] == 1
            time.sleep(2.0)  # the next sweep counts the worker's heartbeats
            assert "1 live worker" in httpx.get(f"{service.url}/v1/ready").json()["checks"]["workers"]
        finally:
            late.stop()
            service.stop()
