"""Queue workers outlive their database: PostgreSQL stopped for 90 s, or its disk full, with jobs queued.

The chaos run's workers exited (PoolTimeout, DiskFull out of procrastinate's fetch loop) and nothing completed
until someone restarted them; readiness stayed 503 long after the database was back. Here the API and two
`fairproof worker` processes run as docker-compose.yml lays them out, on a private PostgreSQL server; no process
is restarted by the test. They are slow tests (`-m slow`).
"""
from __future__ import annotations

import time

import httpx
import pytest

from tests.service_fixtures import (fill_disk, ADMIN_KEY, MODEL_DIRECTORY, copy_models_dir, customer_records, private_postgres,
                                    register_model, serve, wait_for_job, worker)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DECISIONS = f"/v1/models/{MODEL_DIRECTORY}/decisions"
READY_WITHIN_SECONDS = 5.0


@pytest.fixture(scope="module")
def models_dir(service_models, tmp_path_factory):
    return copy_models_dir(service_models, tmp_path_factory.mktemp("worker-outage-models"))


@pytest.fixture(scope="module")
def records():
    return customer_records(8)


def _decide(url: str, record: dict) -> dict:
    r = httpx.post(f"{url}{DECISIONS}", json={"record": record}, timeout=60)
    assert r.status_code == 202, r.text
    return r.json()


def _statuses(db_url: str) -> dict[str, str]:
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(text("SELECT id, status FROM service_jobs")).all())
    finally:
        engine.dispose()


def _all_complete_once(url: str, accepted: list[dict], timeout: float = 300.0) -> None:
    for a in accepted:
        job = wait_for_job(url, a["job_id"], timeout=timeout, token=a["job_token"])
        assert job["status"] == "succeeded", job
    audit = httpx.get(f"{url}/v1/admin/audit", params={"limit": 1000}, headers={"X-API-Key": ADMIN_KEY},
                      timeout=30).json()["entries"]
    assert sorted(e["job_id"] for e in audit) == sorted(a["job_id"] for a in accepted), "one certificate per job"


def _seconds_until_ready(url: str, timeout: float = 120.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if httpx.get(f"{url}/v1/ready", timeout=5).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"not ready {timeout} s after the database came back")


def _lines(log_path, words: str) -> int:
    return sum(words in line for line in log_path.read_text(errors="replace").splitlines())


def test_workers_outlive_postgresql_stopped_for_90_s_and_every_accepted_job_completes(models_dir, records, tmp_path):
    with private_postgres() as pg:
        db_url = pg.create_database("fairproof")
        service = serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_QUEUE="procrastinate")
        workers = [worker(models_dir, db_url, tmp_path / f"worker-{i}.log") for i in (1, 2)]
        try:
            service.start()
            register_model(service.url)
            for w in workers:
                w.start()
            warm = _decide(service.url, records[0])
            assert wait_for_job(service.url, warm["job_id"], token=warm["job_token"])["status"] == "succeeded"
            # A job queued (or being proved by one worker) as the database goes away; the other worker meets the
            # outage in procrastinate's fetch loop, where the chaos run's workers died of PoolTimeout.
            queued = [_decide(service.url, records[1])]
            pg.stop()
            try:
                stopped = time.monotonic()
                assert httpx.get(f"{service.url}/v1/ready", timeout=30).status_code == 503
                while time.monotonic() - stopped < 90:
                    for w in workers:
                        assert w.process.poll() is None, f"a worker exited during the outage:\n{w.log_tail()}"
                    time.sleep(1.0)
                assert service.process.poll() is None
            finally:
                pg.start()
            ready_after = _seconds_until_ready(service.url)
            print(f"ready {ready_after:.2f} s after PostgreSQL came back")
            assert ready_after <= READY_WITHIN_SECONDS, f"ready {ready_after:.1f} s after the database came back"
            after = [_decide(service.url, records[i]) for i in (2, 3)]
            _all_complete_once(service.url, [warm, *queued, *after])
            assert set(_statuses(db_url).values()) == {"succeeded"}
            fetch_outages = 0
            for w in workers:
                assert w.process.poll() is None, w.log_tail()
                # One line as the outage begins and one as it ends, per loop, not one per retry.
                assert _lines(w.log_path, "worker: database unavailable") <= 1, w.log_tail(80)
                assert _lines(w.log_path, "worker: stalled-job recovery: database unavailable") <= 1, w.log_tail(80)
                assert _lines(w.log_path, "database unavailable") <= 2, w.log_tail(80)
                fetch_outages += _lines(w.log_path, "worker: database unavailable")
                assert _lines(w.log_path, "worker: database answers again") == _lines(
                    w.log_path, "worker: database unavailable")
            assert fetch_outages >= 1, "no worker was fetching during the outage"
            # Nothing deferred twice: at most one row per job waiting or taken, none left waiting at the end.
            from sqlalchemy import create_engine, text

            engine = create_engine(db_url)
            try:
                with engine.connect() as conn:
                    left = conn.execute(text("SELECT count(*) FROM procrastinate_jobs "
                                             "WHERE status IN ('todo', 'doing')")).scalar_one()
            finally:
                engine.dispose()
            assert left == 0
        finally:
            for p in (*workers, service):
                p.stop()


def test_a_worker_outlives_a_full_database_disk_and_every_accepted_job_completes(models_dir, records, tmp_path):
    """The database's data files on a small tmpfs that fills up (its write-ahead log elsewhere), for 30 s."""
    with private_postgres(disk_mb=96) as pg:
        db_url = pg.create_database("fairproof")
        service = serve(models_dir, db_url, tmp_path / "serve.log", FAIRPROOF_QUEUE="procrastinate")
        workers = [worker(models_dir, db_url, tmp_path / f"worker-{i}.log") for i in (1, 2)]
        try:
            service.start()
            register_model(service.url)
            for w in workers:
                w.start()
            before = _decide(service.url, records[0])
            assert wait_for_job(service.url, before["job_id"], token=before["job_token"])["status"] == "succeeded"
            ballast = pg.disk / "ballast"
            fill_disk(ballast)
            try:
                during = []
                for i in range(100):  # PostgreSQL takes decisions while its pages have room
                    r = httpx.post(f"{service.url}{DECISIONS}", json={"record": records[1 + i % 3]}, timeout=60)
                    assert r.status_code in (202, 503), r.text
                    if r.status_code == 503:
                        assert r.headers["retry-after"] == "5"
                        break
                    during.append(r.json())
                full = time.monotonic()
                while time.monotonic() - full < 30:
                    for w in workers:
                        assert w.process.poll() is None, f"a worker exited on a full disk:\n{w.log_tail()}"
                    time.sleep(1.0)
            finally:
                ballast.unlink()
            ready_after = _seconds_until_ready(service.url)
            print(f"ready {ready_after:.2f} s after the disk was freed")
            assert ready_after <= READY_WITHIN_SECONDS, f"ready {ready_after:.1f} s after the disk was freed"
            after = _decide(service.url, records[4])
            _all_complete_once(service.url, [before, *during, after])
            for w in workers:
                assert w.process.poll() is None, w.log_tail()
        finally:
            for p in (*workers, service):
                p.stop()
