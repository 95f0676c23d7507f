"""The queue sweep never stalls on the queueing lock, and writes no error to PostgreSQL's log.

The chaos run's sweep re-deferred a stalled row ('doing', its worker silent) whose job already waited ('todo')
under the same queueing lock: a unique violation aborted the whole sweep every second (readiness stayed 503, no job
was re-offered) and PostgreSQL logged an ERROR per locked job per second. The situation is made here directly in
procrastinate's tables, on a private PostgreSQL server whose log the test reads.
"""
from __future__ import annotations

import asyncio
from datetime import timedelta
from types import SimpleNamespace

import pytest

from tests.service_fixtures import private_postgres

pytestmark = pytest.mark.postgres


STALE_AFTER = 3.0  # the sweeps' lease in these tests


@pytest.fixture(scope="module")
def pg():
    """A private server, up for longer than a lease: a heartbeat is stale only if older than the server too
    (after PostgreSQL restarts, live workers get a lease to beat again)."""
    import time

    from sqlalchemy import create_engine, text

    with private_postgres() as server:
        engine = create_engine(server.admin_url)
        try:
            while True:
                with engine.connect() as conn:
                    up = conn.execute(text("SELECT extract(epoch FROM now() - pg_postmaster_start_time())")).scalar()
                if float(up) > STALE_AFTER + 0.5:
                    break
                time.sleep(0.2)
        finally:
            engine.dispose()
        yield server


def _errors(pg, since: int) -> list[str]:
    text = pg.log_path.read_text(errors="replace")[since:]
    return [line for line in text.splitlines() if "ERROR" in line or "FATAL" in line or "PANIC" in line]


def _log_size(pg) -> int:
    return len(pg.log_path.read_text(errors="replace"))


async def _setup(app, db_url):
    from prover_service.service.queue_procrastinate import ensure_queue_schema

    await app.open_async()
    await ensure_queue_schema(app, db_url)


async def _rows(app) -> dict[int, tuple[str, str, int]]:
    rows = await app.connector.execute_query_all_async(
        "SELECT id, status::text AS status, queueing_lock, attempts FROM procrastinate_jobs ORDER BY id")
    return {r["id"]: (r["queueing_lock"], r["status"], r["attempts"]) for r in rows}


async def _worker(app, *, stale: bool) -> int:
    row = await app.connector.execute_query_one_async(
        "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now() - make_interval(secs => %(age)s)) "
        "RETURNING id", age=3600.0 if stale else 0.0)
    return row["id"]


async def _job(app, lock: str, status: str, worker_id: int | None = None) -> int:
    from prover_service.service.queue_procrastinate import QUEUE, TASK

    row = await app.connector.execute_query_one_async(
        "INSERT INTO procrastinate_jobs (queue_name, task_name, queueing_lock, args, status, worker_id) "
        "VALUES (%(queue)s, %(task)s, %(lock)s, jsonb_build_object('job_id', %(lock)s::text), "
        "%(status)s::procrastinate_job_status, %(worker)s) RETURNING id",
        queue=QUEUE, task=TASK, lock=lock, status=status, worker=worker_id)
    return row["id"]


def _waiting(rows: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for lock, status, _ in rows.values():
        if status == "todo":
            counts[lock] = counts.get(lock, 0) + 1
    return counts


def test_stalled_rows_under_a_queued_lock_are_cancelled_not_deferred_and_nothing_errs(pg):
    from prover_service.service.queue_procrastinate import build_queue, enqueue, enqueue_missing, retry_stalled

    db_url = pg.create_database("sweep")

    async def scenario():
        app = build_queue(db_url)
        await _setup(app, db_url)
        try:
            dead, live = await _worker(app, stale=True), await _worker(app, stale=False)
            ids = {
                # the chaos run's case: a stalled row whose job already waits under the same lock
                "conflict-doing": await _job(app, "job-1", "doing", dead),
                "conflict-todo": await _job(app, "job-1", "todo"),
                # a stalled row alone: handed back
                "alone": await _job(app, "job-2", "doing", dead),
                # two stalled rows of one job (one pruned worker): one handed back, the other cancelled
                "twin-a": await _job(app, "job-3", "doing", dead),
                "twin-b": await _job(app, "job-3", "doing", None),
                # a stalled row of a job a live worker has taken again: cancelled
                "taken-live": await _job(app, "job-4", "doing", live),
                "taken-dead": await _job(app, "job-4", "doing", dead),
            }
            since = _log_size(pg)
            first = await retry_stalled(app, STALE_AFTER)
            second = await retry_stalled(app, STALE_AFTER)
            rows = await _rows(app)
            # The ledger's sweep offers every unfinished job, these and a new one: only the new one is deferred.
            deferred = await enqueue_missing(app, ["job-1", "job-2", "job-3", "job-4", "job-5"])
            again = await enqueue_missing(app, ["job-1", "job-2", "job-3", "job-4", "job-5"])
            await enqueue(app, "job-5")  # a request's enqueue of a job already waiting: nothing, and no error
            after = await _rows(app)
            await asyncio.sleep(0.5)  # PostgreSQL writes its log asynchronously
            return ids, first, second, rows, deferred, again, after, _errors(pg, since)
        finally:
            await app.close_async()

    ids, first, second, rows, deferred, again, after, errors = asyncio.run(scenario())
    assert errors == [], errors
    assert first == 2 and second == 0  # job-2 and one row of job-3 handed back, nothing twice
    status = {name: rows[i][1] for name, i in ids.items()}
    assert status["conflict-doing"] == "cancelled" and status["conflict-todo"] == "todo"
    assert status["alone"] == "todo" and rows[ids["alone"]][2] == 1
    assert sorted([status["twin-a"], status["twin-b"]]) == ["cancelled", "todo"]
    assert status["taken-live"] == "doing" and status["taken-dead"] == "cancelled"
    assert deferred == ["job-5"] and again == []
    assert _waiting(after) == {"job-1": 1, "job-2": 1, "job-3": 1, "job-5": 1}  # one waiting row per job at most


def test_the_service_sweep_stays_ready_through_lock_conflicts(pg):
    """The service's sweep (ProcrastinateDispatcher) with the chaos run's rows: ready, and the ledger's jobs
    offered once each."""
    from prover_service.service.queue_procrastinate import ProcrastinateDispatcher, build_queue

    db_url = pg.create_database("dispatcher")
    resumable = ["job-1", "job-2", "job-3"]
    ledger = SimpleNamespace(lease=timedelta(seconds=STALE_AFTER), resumable=lambda: list(resumable))

    async def scenario():
        app = build_queue(db_url)
        await _setup(app, db_url)
        try:
            dead = await _worker(app, stale=True)
            for lock in ("job-1", "job-2"):  # stalled, and already waiting again
                await _job(app, lock, "doing", dead)
                await _job(app, lock, "todo")
            since = _log_size(pg)
            dispatcher = ProcrastinateDispatcher(ledger, db_url)
            await dispatcher.start()
            try:
                for _ in range(3):
                    await dispatcher._sweep_once()
                health = dispatcher.health()
            finally:
                await dispatcher.stop()
            rows = await _rows(app)
            await asyncio.sleep(0.5)
            return health, rows, _errors(pg, since)
        finally:
            await app.close_async()

    health, rows, errors = asyncio.run(scenario())
    assert errors == [], errors
    assert health[0], health
    assert _waiting(rows) == {"job-1": 1, "job-2": 1, "job-3": 1}
    assert sorted(s for lock, s, _ in rows.values() if lock in ("job-1", "job-2")) == [
        "cancelled", "cancelled", "todo", "todo"]
