"""procrastinate's fetch loop under ResilientWorker: database errors pause it, never end it.

The chaos run's workers exited with PoolTimeout (the database gone for about 30 s) or DiskFull raised out of
procrastinate's fetch loop. Here the loop meets those errors (injected into `fetch_job`, against a real
PostgreSQL database for everything else) and keeps going: it backs off, resumes when fetching works again, and
logs one line as the outage begins and one as it ends.
"""
from __future__ import annotations

import asyncio
import logging

import psycopg
import psycopg_pool
import pytest

from tests.service_fixtures import connector_error as _wrapped, fresh_pg_database

pytestmark = pytest.mark.postgres


def test_the_fetch_loop_rides_out_pool_timeouts_and_a_full_disk(caplog, monkeypatch):
    from prover_service.service import queue_procrastinate as q

    monkeypatch.setattr(q, "BACKOFF_MAX_SECONDS", 0.2)
    monkeypatch.setattr(q, "BACKOFF_FIRST_SECONDS", 0.05)
    failures = [psycopg_pool.PoolTimeout("couldn't get a connection after 3.00 sec")] * 3 + [
        psycopg.errors.DiskFull("could not extend file \"base/16384/16397\": No space left on device")] * 3
    calls = []

    with fresh_pg_database() as db_url:
        async def scenario():
            app = q.build_queue(db_url)
            await app.open_async()
            try:
                await q.ensure_queue_schema(app, db_url)
                real_fetch = app.job_manager.fetch_job

                async def fetch_job(**kwargs):
                    calls.append(len(calls))
                    if len(calls) <= len(failures):
                        raise _wrapped(failures[len(calls) - 1])
                    return await real_fetch(**kwargs)

                monkeypatch.setattr(app.job_manager, "fetch_job", fetch_job)
                worker = q.ResilientWorker(app, queues=[q.QUEUE], install_signal_handlers=False,
                                           fetch_job_polling_interval=0.1, update_heartbeat_interval=0.1)
                running = asyncio.create_task(worker.run())
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    if len(calls) > len(failures) + 3:
                        break
                alive = not running.done()
                worker.stop()
                await asyncio.wait_for(running, 10)
                return alive
            finally:
                await app.close_async()

        with caplog.at_level(logging.INFO, logger="fairproof.queue"):
            alive = asyncio.run(scenario())
    assert alive, "the worker ended on a database error"
    assert len(calls) > len(failures) + 3, "fetching did not resume"
    messages = [r.getMessage() for r in caplog.records if r.name == "fairproof.queue"]
    assert sum("database unavailable" in m for m in messages) == 1, messages
    assert sum("database answers again" in m for m in messages) == 1, messages


def test_a_pruned_worker_row_is_recreated_by_the_next_heartbeat():
    """Another worker starting during an outage may prune this one's row (its heartbeat went stale): fetching
    with that id would fail on the foreign key forever. The next beat puts the row back, same id."""
    from prover_service.service import queue_procrastinate as q

    with fresh_pg_database() as db_url:
        async def scenario():
            app = q.build_queue(db_url)
            await app.open_async()
            try:
                await q.ensure_queue_schema(app, db_url)
                worker = q.ResilientWorker(app, queues=[q.QUEUE], install_signal_handlers=False,
                                           fetch_job_polling_interval=0.1, update_heartbeat_interval=0.1)
                running = asyncio.create_task(worker.run())
                while worker.worker_id is None:
                    await asyncio.sleep(0.02)
                worker_id = worker.worker_id
                await app.connector.execute_query_async("DELETE FROM procrastinate_workers")
                await asyncio.sleep(0.5)
                row = await app.connector.execute_query_all_async("SELECT id FROM procrastinate_workers")
                # a job deferred now is fetched with that id (no foreign-key failure)
                await q.enqueue(app, "job-after-prune")
                for _ in range(100):
                    status = await app.connector.execute_query_one_async(
                        "SELECT status::text AS s, worker_id FROM procrastinate_jobs")
                    if status["s"] != "todo":
                        break
                    await asyncio.sleep(0.05)
                worker.stop()
                await asyncio.wait_for(running, 10)
                return worker_id, [r["id"] for r in row], status
            finally:
                await app.close_async()

        worker_id, rows, status = asyncio.run(scenario())
    assert rows == [worker_id]
    # No runner in this process: the task fails, but it was fetched by this worker.
    assert status["s"] in ("doing", "failed") and status["worker_id"] in (worker_id, None), status
