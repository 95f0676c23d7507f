"""Scale-out: proving jobs on worker processes or machines sharing the PostgreSQL database.

The queue is procrastinate, a task queue that lives in PostgreSQL. The
service already needs PostgreSQL for its ledger when it runs on more than one
machine, so the queue adds no broker to deploy, back up or secure; jobs wait
in the same database the ledger lives in, workers take them with
SELECT ... FOR UPDATE SKIP LOCKED, and procrastinate's worker heartbeats
let a surviving worker retry the jobs of one that died. A queue message only
names a ledger job: the ledger's claim-and-lease decides who works on it, so
a message delivered twice still yields one certificate.
"""
from __future__ import annotations

import asyncio
import importlib.metadata
import logging
from typing import Callable

import procrastinate
import psycopg
from procrastinate.exceptions import AlreadyEnqueued
from sqlalchemy.engine import make_url

from .dispatch import sweep_interval
from .errors import ConfigurationError
from .jobs import JobLedger
from .runner import JobRunner

log = logging.getLogger("fairproof.queue")

QUEUE = "fairproof-jobs"
TASK = "fairproof.run_job"
# The procrastinate version whose schema the queue's tables have (one row).
SCHEMA_VERSION_TABLE = "fairproof_queue_schema"


def libpq_conninfo(database_url: str) -> str:
    """The SQLAlchemy URL of the ledger as a libpq connection string."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError("the procrastinate queue needs a PostgreSQL database URL (FAIRPROOF_DATABASE_URL)")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def build_queue(database_url: str, runner: Callable[[], JobRunner] | None = None) -> procrastinate.App:
    """The procrastinate app; `runner` (workers only) gives the runner for the current thread."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=libpq_conninfo(database_url)))

    @app.task(name=TASK, queue=QUEUE)
    def run_job(job_id: str) -> None:
        if runner is None:
            raise RuntimeError("this process only enqueues jobs; start `fairproof worker` to run them")
        runner().run(job_id)

    return app


async def ensure_queue_schema(app: procrastinate.App, database_url: str) -> None:
    """Create procrastinate's tables on first use and record which procrastinate made them; refuse
    (ConfigurationError, one line) tables made by another version, whose migrations must be applied
    first. Under a lock: service and workers start together."""
    installed = importlib.metadata.version("procrastinate")
    async with await psycopg.AsyncConnection.connect(libpq_conninfo(database_url), autocommit=True) as conn:
        await conn.execute("SELECT pg_advisory_lock(hashtext('fairproof-procrastinate-schema'))")
        try:
            cur = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
            row = await cur.fetchone()
            present = bool(row and row[0])
            await conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_VERSION_TABLE} (procrastinate_version text NOT NULL)")
            cur = await conn.execute(f"SELECT procrastinate_version FROM {SCHEMA_VERSION_TABLE}")
            recorded = await cur.fetchone()
            if not present:
                await conn.execute(app.schema_manager.get_schema())
                log.info("procrastinate %s schema applied", installed)
            elif recorded is not None and recorded[0] != installed:
                raise ConfigurationError(
                    f"the job queue's tables were made by procrastinate {recorded[0]}, this is {installed}: apply "
                    f"procrastinate's migrations from {recorded[0]} to {installed} (its sql/migrations directory) "
                    f"with every service and worker stopped, then: UPDATE {SCHEMA_VERSION_TABLE} SET "
                    f"procrastinate_version = '{installed}'")
            if recorded is None:  # new tables, or tables from before the version was recorded
                await conn.execute(f"INSERT INTO {SCHEMA_VERSION_TABLE} VALUES (%s)", (installed,))
        finally:
            await conn.execute("SELECT pg_advisory_unlock(hashtext('fairproof-procrastinate-schema'))")


def check_queue_schema(database_url: str) -> None:
    """`ensure_queue_schema` before a process starts serving, where a refusal is one line."""
    async def check() -> None:
        app = build_queue(database_url)
        async with app.open_async():
            await ensure_queue_schema(app, database_url)

    asyncio.run(check())


async def enqueue(app: procrastinate.App, job_id: str) -> None:
    try:
        await app.configure_task(TASK, queueing_lock=job_id).defer_async(job_id=job_id)
    except AlreadyEnqueued:
        pass  # already waiting for a worker


async def retry_stalled(app: procrastinate.App, seconds_since_heartbeat: float) -> int:
    """Hand the jobs of workers that stopped beating back to the queue."""
    stalled = list(await app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=seconds_since_heartbeat))
    for job in stalled:
        await app.job_manager.retry_job(job)
    if stalled:
        log.warning("retried jobs of stopped workers", extra={"count": len(stalled)})
    return len(stalled)


async def live_workers(app: procrastinate.App, within_seconds: float) -> int:
    """Worker processes whose heartbeat is recent (procrastinate keeps them in procrastinate_workers)."""
    row = await app.connector.execute_query_one_async(
        "SELECT count(*) AS n FROM procrastinate_workers "
        "WHERE last_heartbeat > now() - make_interval(secs => %(seconds)s)", seconds=within_seconds)
    return int(row["n"])


class ProcrastinateDispatcher:
    """The service side: defer jobs to the queue, and keep the queue in step with the ledger."""

    name = "procrastinate"

    def __init__(self, ledger: JobLedger, database_url: str, *, sweep_seconds: float | None = None):
        self.ledger = ledger
        self.database_url = database_url
        self.app = build_queue(database_url)
        self.sweep_seconds = sweep_seconds or sweep_interval(ledger)
        self._sweeper: asyncio.Task | None = None
        self._last_error: str | None = None
        self._live_workers: int | None = None

    async def start(self) -> None:
        await self.app.open_async()
        await ensure_queue_schema(self.app, self.database_url)
        await self._sweep_once()
        self._sweeper = asyncio.create_task(self._sweep_forever())

    async def stop(self) -> None:
        if self._sweeper:
            self._sweeper.cancel()
            try:
                await self._sweeper
            except asyncio.CancelledError:
                pass
        await self.app.close_async()

    async def enqueue(self, job_id: str) -> None:
        await enqueue(self.app, job_id)

    def health(self) -> tuple[bool, str]:
        """Ready while the queue answers. With no live worker the API still accepts jobs (they wait
        in PostgreSQL and run when a worker starts); the check says so, for operators."""
        if self._last_error:
            return False, f"queue: {self._last_error}"
        live = self._live_workers
        if live is None:
            return True, "procrastinate queue"
        if live == 0:
            return True, "procrastinate queue; no live worker: jobs wait until `fairproof worker` runs"
        return True, f"procrastinate queue; {live} live worker process(es)"

    async def _sweep_once(self) -> None:
        """Re-offer every job the ledger holds unfinished and unleased (the lock drops duplicates)."""
        try:
            await retry_stalled(self.app, self.ledger.lease.total_seconds())
            self._live_workers = await live_workers(self.app, self.ledger.lease.total_seconds())
            for job_id in await asyncio.to_thread(self.ledger.resumable):
                await enqueue(self.app, job_id)
            self._last_error = None
        except Exception as exc:
            self._last_error = f"{type(exc).__name__}: {exc}"
            log.warning("queue sweep failed", exc_info=True)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_seconds)
            await self._sweep_once()


async def run_worker(database_url: str, runner: Callable[[], JobRunner], *, concurrency: int,
                     lease_seconds: float, shutdown_seconds: float | None = None) -> None:
    """`fairproof worker`: take jobs from the queue until SIGINT/SIGTERM (then let the jobs in flight finish
    for up to `shutdown_seconds`; a job cut short is resumed by another worker when its lease runs out)."""
    app = build_queue(database_url, runner)
    async with app.open_async():
        await ensure_queue_schema(app, database_url)

        async def recover() -> None:
            while True:
                try:
                    await retry_stalled(app, lease_seconds)
                except Exception:
                    log.warning("stalled-job recovery failed", exc_info=True)
                await asyncio.sleep(max(0.5, lease_seconds / 4))

        recovery = asyncio.create_task(recover())
        try:
            # A job handed back by `retry_stalled` wakes no listener: the polling interval bounds how long
            # it waits, so it is a quarter lease like the heartbeat (a killed worker's job resumes within
            # lease + 2 quarter leases).
            await app.run_worker_async(queues=[QUEUE], concurrency=concurrency, install_signal_handlers=True,
                                       update_heartbeat_interval=max(0.5, lease_seconds / 4),
                                       fetch_job_polling_interval=max(0.5, lease_seconds / 4),
                                       stalled_worker_timeout=lease_seconds,
                                       shutdown_graceful_timeout=shutdown_seconds)
        finally:
            recovery.cancel()
