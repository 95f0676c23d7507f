"""Kill a prover mid-proof, start a new one: the job completes with one valid certificate.

The prover is frozen (SIGSTOP) in short steps until the ledger shows it in
the proving stage of the job, and then killed (SIGKILL: no shutdown code
runs), so it certainly dies mid-proof. The service runs with its default lease
and sweep: a killed prover's job must be taken up again within 5 s.
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

@pytest.fixture(scope="module")
def models_dir(service_models, tmp_path_factory):
    return copy_models_dir(service_models, tmp_path_factory.mktemp("fault-models"))


def _submit(url: str, index: int = 0) -> str:
    r = httpx.post(f"{url}/v1/models/{MODEL_DIRECTORY}/decisions", json={"record": customer_records(index + 1)[index]},
                   timeout=30)
    assert r.status_code == 202, r.text
    return r.json()["job_id"]


def _kill_mid_proof(processes, db_url: str, job_id: str, timeout: float = 120.0):
    """Let `processes` run in 10 ms steps until the ledger shows one of them proving the job, then kill that
    one (frozen inside the proving step, so it dies mid-proof). Returns it and the monotonic time of the kill."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for p in processes:
                p.process.send_signal(signal.SIGSTOP)
            try:
                with engine.connect() as conn:
                    status, stage, owner = conn.execute(
                        text("SELECT status, stage, lease_owner FROM service_jobs WHERE id = :id"), {"id": job_id}).one()
                if status == "running" and stage.startswith("proving"):
                    pid = int(owner.rsplit(":", 2)[1])  # worker names are role@host:pid:suffix
                    victim = next(p for p in processes if p.process.pid == pid)
                    victim.kill()
                    return victim, time.monotonic()
                assert status in ("queued", "running"), (status, stage)
            finally:
                for p in processes:
                    if p.process.poll() is None:
                        p.process.send_signal(signal.SIGCONT)
            time.sleep(0.01)
        raise AssertionError(f"job {job_id} never reached its proving stage")
    finally:
        engine.dispose()


RESUME_SECONDS = 5.0  # a job whose prover was killed mid-proof is taken up again this soon


def _seconds_until_resumed(db_url: str, job_id: str, since: float, timeout: float = 60.0) -> float:
    """Seconds from `since` until the job is claimed again (its second attempt) or done."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        while time.monotonic() - since < timeout:
            with engine.connect() as conn:
                status, attempts = conn.execute(text("SELECT status, attempts FROM service_jobs WHERE id = :id"),
                                                {"id": job_id}).one()
            if attempts >= 2 or status == "succeeded":
                return time.monotonic() - since
            time.sleep(0.02)
        raise AssertionError(f"job {job_id} not resumed within {timeout} s")
    finally:
        engine.dispose()


def _wait_for_live_workers(url: str, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if f"{n} live worker" in httpx.get(f"{url}/v1/ready", timeout=10).json()["checks"]["workers"]:
            return
        time.sleep(0.2)
    raise AssertionError(f"{n} workers not live after {timeout} s")


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
    # The certificate's leaf is `certificate_committed` (the old `certificate_issued` for a bundle without a log
    # salt): either way, exactly one after the decision's.
    kinds = [leaf.kind for leaf in leaves if getattr(leaf, "request_id", None) == job_id]
    assert kinds in (["decision_requested", "certificate_committed"], ["decision_requested", "certificate_issued"]), \
        kinds


def test_killed_queue_worker_is_replaced_within_5_s_and_the_job_completes(models_dir, tmp_path):
    """Two queue workers with the default lease; the one proving the job is killed (SIGKILL) mid-proof; the
    other has taken the job up within 5 s, and the job ends with one valid certificate."""
    with fresh_pg_database() as db_url:
        service = serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_QUEUE="procrastinate").start()
        workers = [worker(models_dir, db_url, tmp_path / f"worker-{i}.log") for i in (1, 2)]
        try:
            register_model(service.url)
            for w in workers:
                w.start()
            _wait_for_live_workers(service.url, 2)
            job_id = _submit(service.url)
            victim, killed_at = _kill_mid_proof(workers, db_url, job_id)
            resumed = _seconds_until_resumed(db_url, job_id, killed_at)
            print(f"resumed {resumed:.2f} s after the kill")
            assert resumed <= RESUME_SECONDS, f"resumed {resumed:.1f} s after the kill"
            _assert_one_valid_certificate(service.url, job_id)
            # The survivor serves new customers too.
            assert wait_for_job(service.url, _submit(service.url, 1))["status"] == "succeeded"
        finally:
            for p in (*workers, service):
                p.stop()


@pytest.mark.slow
def test_a_killed_service_process_has_its_job_resumed_by_its_peer_within_5_s(models_dir, tmp_path):
    """Two `fairproof serve` processes with in-process workers on one database: the one proving is killed."""
    with fresh_pg_database() as db_url:
        services = [serve(models_dir, db_url, tmp_path / f"serve-{i}.log") for i in (1, 2)]
        try:
            for s in services:
                s.start()
            register_model(services[0].url)
            register_model(services[1].url)
            job_id = _submit(services[0].url)
            victim, killed_at = _kill_mid_proof(services, db_url, job_id)
            resumed = _seconds_until_resumed(db_url, job_id, killed_at)
            print(f"resumed {resumed:.2f} s after the kill")
            assert resumed <= RESUME_SECONDS, f"resumed {resumed:.1f} s after the kill"
            survivor = next(s for s in services if s is not victim)
            _assert_one_valid_certificate(survivor.url, job_id)
        finally:
            for s in services:
                s.stop()


def test_killed_service_resumes_its_accepted_jobs_on_restart(models_dir, tmp_path):
    """The only service is killed mid-proof; its restart takes the job up as it starts (its predecessor's pid
    is gone: no lease to wait out), within 5 s of the new process starting."""
    with fresh_pg_database() as db_url:
        first = serve(models_dir, db_url, tmp_path / "serve-1.log").start()
        try:
            register_model(first.url)
            job_id = _submit(first.url)
            _kill_mid_proof([first], db_url, job_id)
        finally:
            first.kill()
        second = serve(models_dir, db_url, tmp_path / "serve-2.log")
        restarted = time.monotonic()
        second.start(wait_ready=False)
        try:
            resumed = _seconds_until_resumed(db_url, job_id, restarted)
            print(f"resumed {resumed:.2f} s after the restart began")
            assert resumed <= RESUME_SECONDS, f"resumed {resumed:.1f} s after the restart began"
            second.wait_ready()
            _assert_one_valid_certificate(second.url, job_id)
        finally:
            second.stop()


def test_a_job_accepted_while_no_worker_runs_waits_and_then_completes(models_dir, tmp_path):
    with fresh_pg_database() as db_url:
        service = serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_QUEUE="procrastinate").start()
        late = worker(models_dir, db_url, tmp_path / "worker.log")
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
