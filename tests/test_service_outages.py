"""The real service (`fairproof serve` on loopback, PostgreSQL) through a flood, outages and a stop.

Each test runs the service as a child process and checks the numbers
operators rely on: a flood beyond the queue cap is answered 429 with
Retry-After and what was accepted completes exactly once; PostgreSQL stopped,
and a full disk, are answered 503 and the service recovers with no accepted
job lost; SIGTERM with 25 jobs queued exits within the grace period and the
restart completes them all. The outages happen to a private PostgreSQL
server (tests/service_fixtures.private_postgres), never to the machine's.

Every test proves several certificates and starts the service more than once:
they are slow tests, run with `-m slow`.
"""
from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from commitments.log import parse_leaf
from tests.service_fixtures import (fill_disk, ADMIN_KEY, MODEL_DIRECTORY, copy_models_dir, customer_records, fresh_pg_database,
                                    private_postgres, register_model, running, serve, wait_for_job)
from verifier_client.service_client import ServiceClient

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DECISIONS = f"/v1/models/{MODEL_DIRECTORY}/decisions"


@pytest.fixture(scope="module")
def models_dir(service_models, tmp_path_factory):
    return copy_models_dir(service_models, tmp_path_factory.mktemp("outage-models"))


@pytest.fixture(scope="module")
def records():
    return customer_records(8)  # the customers whose buckets the models directory has keys for


def _post(url: str, record: dict) -> httpx.Response:
    return httpx.post(f"{url}{DECISIONS}", json={"record": record}, timeout=60)


def _decide(url: str, record: dict) -> dict:
    r = _post(url, record)
    assert r.status_code == 202, r.text
    return r.json()


def _completes_once(url: str, accepted: list[dict], timeout: float = 300.0) -> None:
    """Every accepted job succeeds, its certificate reads with its token, and it has exactly one audit entry."""
    for a in accepted:
        job = wait_for_job(url, a["job_id"], timeout=timeout, token=a["job_token"])
        assert job["status"] == "succeeded", job
        r = httpx.get(f"{url}{job['certificate_url']}", headers={"X-Job-Token": a["job_token"]}, timeout=30)
        assert r.status_code == 200, r.text
    audit = httpx.get(f"{url}/v1/admin/audit", params={"limit": 1000}, headers={"X-API-Key": ADMIN_KEY},
                      timeout=30).json()["entries"]
    issued = [e["job_id"] for e in audit]
    assert sorted(issued) == sorted(a["job_id"] for a in accepted), "one certificate per accepted job, no other"


def _decision_leaves(url: str) -> int:
    """decision_requested leaves in the service's transparency log, read as an auditor reads them."""
    with ServiceClient(url) as client:
        size = int(client.checkpoint().checkpoint.splitlines()[1])  # a signed note: origin, size, root hash
        leaves, start = [], 0
        while start < size:
            page = client.entries(start, size).entries
            leaves.extend(parse_leaf(e.data.encode()) for e in page)
            start += len(page)
    return sum(leaf.kind == "decision_requested" for leaf in leaves)


def _rows(db_url: str, sql: str) -> list:
    """The rows of one query against the service database, on an engine of its own."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(sql)).all()
    finally:
        engine.dispose()


def _job_statuses(db_url: str) -> dict[str, tuple[str, int]]:
    rows = _rows(db_url, "SELECT id, status, attempts FROM service_jobs WHERE kind = 'certificate'")
    return {job_id: (status, attempts) for job_id, status, attempts in rows}


def _a_proof_starting(db_url: str) -> bool:
    """A job just claimed, not past certifying (its witness and proof, seconds of work, still to come)."""
    stages = [stage for (stage,) in _rows(db_url, "SELECT stage FROM service_jobs WHERE status = 'running'")]
    return any(stage == "claimed by a worker" or stage.startswith("certifying") for stage in stages)


# ------------------------------------------------------------------ a flood beyond the queue cap
def test_a_flood_beyond_the_queue_cap_gets_429_and_every_accepted_job_completes_once(models_dir, records, tmp_path):
    cap, flood = 3, 12
    with fresh_pg_database() as db_url:
        # Nobody proves while the flood comes: the queue holds exactly what was accepted.
        with running(serve(models_dir, db_url, tmp_path / "serve-1.log", FAIRPROOF_WORKERS="0",
                           FAIRPROOF_MAX_QUEUED_PER_MODEL=str(cap))) as idle:
            with ThreadPoolExecutor(max_workers=flood) as pool:  # all at once
                answers = list(pool.map(lambda i: _post(idle.url, records[i % 3]), range(flood)))
        codes = [a.status_code for a in answers]
        assert sorted(codes) == [202] * cap + [429] * (flood - cap), codes
        for refused in (a for a in answers if a.status_code == 429):
            assert int(refused.headers["retry-after"]) > 0
            assert "certificates waiting" in refused.json()["detail"]
        accepted = [a.json() for a in answers if a.status_code == 202]
        assert len(_job_statuses(db_url)) == cap  # a refused request left no job behind

        with running(serve(models_dir, db_url, tmp_path / "serve-2.log", FAIRPROOF_WORKERS="1",
                           FAIRPROOF_MAX_QUEUED_PER_MODEL=str(cap))) as service:
            _completes_once(service.url, accepted)
            assert all(attempts == 1 for _, attempts in _job_statuses(db_url).values())
            assert _decision_leaves(service.url) == cap  # nor anything in the log
            # The queue drained: a refused customer who comes back is accepted.
            assert _post(service.url, records[0]).status_code == 202


# ------------------------------------------------------------------ PostgreSQL stopped
def test_postgresql_stopped_answers_503_and_the_service_recovers_with_nothing_lost(models_dir, records, tmp_path):
    with private_postgres() as pg:
        db_url = pg.create_database("fairproof")
        with running(serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_WORKERS="1")) as service:
            done = _decide(service.url, records[0])
            assert wait_for_job(service.url, done["job_id"], token=done["job_token"])["status"] == "succeeded"
            in_flight = _decide(service.url, records[1])  # queued or being proved as the database goes away
            pg.stop()
            try:
                r = _post(service.url, records[2])
                assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
                assert r.json()["detail"] == "the service's database is unavailable; retry shortly"
                r = httpx.get(f"{service.url}/v1/jobs/{done['job_id']}", headers={"X-Job-Token": done["job_token"]})
                assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
                ready = httpx.get(f"{service.url}/v1/ready", timeout=30)
                assert ready.status_code == 503 and ready.json()["checks"]["database"].startswith("unreachable")
                assert httpx.get(f"{service.url}/v1/health").status_code == 200
                time.sleep(4.0)  # longer than a lease: the worker meets the outage too
                assert service.process.poll() is None  # rode it out
            finally:
                pg.start()
            service.wait_ready(60)
            after = _decide(service.url, records[2])
            _completes_once(service.url, [done, in_flight, after])
            assert _decision_leaves(service.url) == 3


# ------------------------------------------------------------------ a full disk
def test_a_full_disk_answers_503_and_the_service_recovers_with_nothing_lost(models_dir, records, tmp_path):
    """The database's files and the service's own state (its log key, its readiness probe) share one small
    disk, which fills up; the database's write-ahead log is on another volume."""
    with private_postgres(disk_mb=96) as pg:
        db_url = pg.create_database("fairproof")
        state = pg.disk / "service"
        state.mkdir()
        with running(serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_WORKERS="1",
                           FAIRPROOF_LOG_KEY_FILE=str(state / "log.key"))) as service:
            before = _decide(service.url, records[0])
            assert wait_for_job(service.url, before["job_id"], token=before["job_token"])["status"] == "succeeded"
            ballast = pg.disk / "ballast"
            fill_disk(ballast)
            try:
                ready = httpx.get(f"{service.url}/v1/ready", timeout=30)
                assert ready.status_code == 503 and ready.json()["checks"]["storage"] == "not writable: ENOSPC"
                # PostgreSQL takes decisions while its pages have room, then refuses: 503, never a 500.
                answers = []
                for i in range(100):
                    answers.append(_post(service.url, records[i % 3]))
                    if answers[-1].status_code != 202:
                        break
                codes = [a.status_code for a in answers]
                assert codes[-1] == 503 and set(codes) <= {202, 503}, codes
                assert answers[-1].headers["retry-after"] == "5"
                during = [a.json() for a in answers if a.status_code == 202]
                time.sleep(4.0)  # the worker meets the full disk as it stores certificates
                assert service.process.poll() is None
            finally:
                ballast.unlink()
            deadline = time.monotonic() + 60
            while httpx.get(f"{service.url}/v1/ready", timeout=30).status_code != 200:
                assert time.monotonic() < deadline, "not ready after the disk was freed"
                time.sleep(0.5)
            after = _decide(service.url, records[1])
            _completes_once(service.url, [before, *during, after])
            assert _decision_leaves(service.url) == 2 + len(during)


# ------------------------------------------------------------------ SIGTERM with jobs queued
@pytest.mark.parametrize("grace", [None, 2.0], ids=["default-grace", "2s-grace"])
def test_sigterm_with_25_jobs_queued_exits_within_the_grace_period_and_they_complete_after_restart(
        models_dir, records, tmp_path, grace):
    """With the default grace period the proof in flight finishes; with 2 s (1 s for proofs) it is cut short
    and handed back, its attempt not counted. Either way the process is gone within the grace period."""
    from prover_service.service.settings import Settings

    extra = {} if grace is None else {"FAIRPROOF_SHUTDOWN_GRACE_SECONDS": str(grace)}
    grace = grace or Settings().shutdown_grace_seconds
    with fresh_pg_database() as db_url:
        first = serve(models_dir, db_url, tmp_path / "serve-1.log", FAIRPROOF_WORKERS="1", **extra).start()
        try:
            register_model(first.url)
            accepted = [_decide(first.url, records[i % len(records)]) for i in range(25)]
            deadline = time.monotonic() + 120
            while not _a_proof_starting(db_url):  # SIGTERM with a whole proof still ahead of the worker
                assert time.monotonic() < deadline, "no job started"
                time.sleep(0.02)
            finished_before = [status for status, _ in _job_statuses(db_url).values()].count("succeeded")
            asked = time.monotonic()
            first.process.send_signal(signal.SIGTERM)
            code = first.process.wait(timeout=grace + 60)
            stopped = time.monotonic() - asked
        finally:
            first.kill()
        # uvicorn shuts down gracefully, then re-raises the SIGTERM it caught: exit status 0 or "killed by SIGTERM".
        assert code in (0, -signal.SIGTERM), first.log_tail()
        assert "Application shutdown complete." in first.log_tail(), first.log_tail()
        assert stopped <= grace, f"exited {stopped:.1f} s after SIGTERM; the grace period is {grace:g} s"
        statuses = [status for status, _ in _job_statuses(db_url).values()]
        assert "running" not in statuses and "failed" not in statuses, statuses  # handed back or done
        # The one worker finished at most the proof it had in flight: the queue waits for the restart.
        assert statuses.count("succeeded") - finished_before <= 1, (finished_before, statuses)
        assert statuses.count("queued") >= 25 - finished_before - 1

        with running(serve(models_dir, db_url, tmp_path / "serve-2.log", FAIRPROOF_WORKERS="1")) as second:
            _completes_once(second.url, accepted, timeout=600)
        assert all(attempts == 1 for _, attempts in _job_statuses(db_url).values())
