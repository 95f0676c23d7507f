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
import signal
import time
from typing import Any, Callable, Iterable

import procrastinate
import psycopg
from procrastinate import worker as procrastinate_worker
from sqlalchemy.engine import make_url

from .dispatch import sweep_interval
from .errors import ConfigurationError, is_outage, outage_reason
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


# The queue's connection pool (psycopg_pool) during and after an outage. A caller waits at most POOL_WAIT_SECONDS
# for a connection (then PoolTimeout, an outage), and a failing reconnection gives up after POOL_RECONNECT_SECONDS
# so the next caller grows the pool again at once: left to its defaults (30 s, 5 min, with doubling delays) the
# pool would reconnect up to a minute after the database came back from a 90-s outage.
POOL_WAIT_SECONDS = 3.0
POOL_RECONNECT_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 3
# Waits between tries while the database is unavailable: doubling from the first to the last.
BACKOFF_FIRST_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 2.0


def build_queue(database_url: str, runner: Callable[[], JobRunner] | None = None) -> procrastinate.App:
    """The procrastinate app; `runner` (workers only) gives the runner for the current thread."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=libpq_conninfo(database_url), timeout=POOL_WAIT_SECONDS, reconnect_timeout=POOL_RECONNECT_SECONDS,
        kwargs={"connect_timeout": CONNECT_TIMEOUT_SECONDS}))

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


# ------------------------------------------------------------------ queue maintenance (no error per job)
# The ledger's jobs not yet waiting in (todo) or taken from (doing) the queue, deferred in one statement. ON CONFLICT
# covers a job deferred concurrently: never a unique violation, so nothing in PostgreSQL's log either.
_ENQUEUE_MISSING = """
INSERT INTO procrastinate_jobs (queue_name, task_name, priority, lock, queueing_lock, args, scheduled_at)
SELECT %(queue)s, %(task)s, 0, NULL, ids.job_id, jsonb_build_object('job_id', ids.job_id), NULL
  FROM unnest(%(job_ids)s::text[]) AS ids(job_id)
 WHERE NOT EXISTS (SELECT 1 FROM procrastinate_jobs queued
                    WHERE queued.queueing_lock = ids.job_id AND queued.status IN ('todo', 'doing'))
ON CONFLICT (queueing_lock) WHERE status = 'todo' DO NOTHING
RETURNING queueing_lock
"""

# Jobs taken ('doing') by workers that stopped beating (or were pruned), handled in one statement:
#  - a job whose queueing lock already has a row waiting (todo), or taken by a live worker, or a newer stalled
#    row of its own, is a duplicate: marked 'cancelled', never deferred again (deferring it would violate the
#    queueing lock: the sweep that did so aborted every second and filled PostgreSQL's log);
#  - one whose abort was asked is 'failed' (as procrastinate's retry_job does);
#  - the others wait again ('todo').
# A heartbeat is stale only if older than the server too: after PostgreSQL restarts, live workers get a lease to
# beat again before their jobs are taken from them. SKIP LOCKED: sweeps running together (the service, each worker)
# never handle one row twice.
_RETRY_STALLED = """
WITH stalled AS (
    SELECT job.id, job.queueing_lock, job.abort_requested
      FROM procrastinate_jobs job
      LEFT JOIN procrastinate_workers w ON w.id = job.worker_id
     WHERE job.status = 'doing' AND job.queue_name = %(queue)s
       AND (job.worker_id IS NULL OR GREATEST(w.last_heartbeat, pg_postmaster_start_time())
                                      < now() - make_interval(secs => %(seconds)s))
       FOR UPDATE OF job SKIP LOCKED
), decided AS (
    SELECT s.id, s.abort_requested,
           s.queueing_lock IS NOT NULL AND (
               EXISTS (SELECT 1 FROM procrastinate_jobs other
                        WHERE other.queueing_lock = s.queueing_lock AND other.id <> s.id
                          AND (other.status = 'todo'
                               OR (other.status = 'doing' AND EXISTS (
                                       SELECT 1 FROM procrastinate_workers live
                                        WHERE live.id = other.worker_id
                                          AND GREATEST(live.last_heartbeat, pg_postmaster_start_time())
                                              >= now() - make_interval(secs => %(seconds)s)))))
               OR EXISTS (SELECT 1 FROM stalled newer WHERE newer.queueing_lock = s.queueing_lock AND newer.id > s.id)
           ) AS duplicate
      FROM stalled s
)
UPDATE procrastinate_jobs job
   SET status = (CASE WHEN d.duplicate THEN 'cancelled' WHEN d.abort_requested THEN 'failed' ELSE 'todo' END
                 )::procrastinate_job_status,
       attempts = job.attempts + CASE WHEN d.duplicate THEN 0 ELSE 1 END,
       scheduled_at = CASE WHEN d.duplicate OR d.abort_requested THEN job.scheduled_at END
  FROM decided d
 WHERE job.id = d.id
RETURNING job.id, job.status::text AS status, job.queueing_lock
"""


async def enqueue_missing(app: procrastinate.App, job_ids: Iterable[str]) -> list[str]:
    """Defer the jobs among `job_ids` that are neither waiting in the queue nor taken by a worker (one query);
    returns those deferred."""
    ids = list(dict.fromkeys(job_ids))
    if not ids:
        return []
    rows = await app.connector.execute_query_all_async(_ENQUEUE_MISSING, queue=QUEUE, task=TASK, job_ids=ids)
    return [row["queueing_lock"] for row in rows]


async def enqueue(app: procrastinate.App, job_id: str) -> None:
    """Offer one ledger job to the workers (nothing if it already waits in the queue)."""
    await enqueue_missing(app, [job_id])


async def retry_stalled(app: procrastinate.App, seconds_since_heartbeat: float) -> int:
    """Hand the jobs of workers that stopped beating back to the queue (duplicates cancelled); the number
    handed back."""
    rows = await app.connector.execute_query_all_async(_RETRY_STALLED, queue=QUEUE,
                                                       seconds=float(seconds_since_heartbeat))
    retried = sum(row["status"] == "todo" for row in rows)
    cancelled = sum(row["status"] == "cancelled" for row in rows)
    if retried:
        log.warning("retried jobs of stopped workers", extra={"count": retried})
    if cancelled:
        log.info("cancelled stalled duplicates of jobs already queued", extra={"count": cancelled})
    return retried


async def live_workers(app: procrastinate.App, within_seconds: float) -> int:
    """Worker processes whose heartbeat is recent (procrastinate keeps them in procrastinate_workers)."""
    row = await app.connector.execute_query_one_async(
        "SELECT count(*) AS n FROM procrastinate_workers "
        "WHERE last_heartbeat > now() - make_interval(secs => %(seconds)s)", seconds=within_seconds)
    return int(row["n"])


async def _refresh_pool(app: procrastinate.App) -> None:
    """Drop the pool's connections broken by an outage now, rather than one per caller with a pause each."""
    try:
        await app.connector.pool.check()
    except Exception:  # the pool is closed, or checking failed: callers find out themselves
        log.debug("queue pool check failed", exc_info=True)


class OutageLog:
    """One log line when the database becomes unavailable and one when it answers again, never one per retry;
    and the doubling wait between retries."""

    def __init__(self, what: str, logger: logging.Logger = log):
        self.what = what
        self.log = logger
        self.down_since: float | None = None
        self.delay = BACKOFF_FIRST_SECONDS

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, exc: BaseException) -> float:
        """Note a failure; returns how long to wait before the next try."""
        if self.down_since is None:
            self.down_since = time.monotonic()
            self.delay = BACKOFF_FIRST_SECONDS
            if is_outage(exc):
                self.log.warning("%s: database unavailable (%s); retrying with backoff until it answers",
                                 self.what, outage_reason(exc))
            else:
                self.log.error("%s failing (%s); retrying with backoff", self.what, outage_reason(exc), exc_info=exc)
        delay = self.delay
        self.delay = min(self.delay * 2, BACKOFF_MAX_SECONDS)
        return delay

    def ok(self) -> bool:
        """Note a success; True if it ends an outage."""
        if self.down_since is None:
            return False
        self.log.warning("%s: database answers again after %.0f s; resumed", self.what,
                         time.monotonic() - self.down_since)
        self.down_since = None
        self.delay = BACKOFF_FIRST_SECONDS
        return True


class StalledRecovery:
    """`retry_stalled` for a sweeper. After an outage seen by this sweeper, jobs are not taken from workers for
    one lease: every heartbeat went stale during it, and live workers need a beat to say so."""

    def __init__(self, app: procrastinate.App, seconds: float):
        self.app, self.seconds = app, seconds
        self._hold_until = 0.0
        self._after_outage = False

    def outage(self) -> None:
        self._after_outage = True

    async def run(self) -> int:
        if self._after_outage:  # the database answers again (or this raises): hold for a lease from now
            await self.app.connector.execute_query_one_async("SELECT 1 AS answers")
            self._after_outage = False
            self._hold_until = time.monotonic() + self.seconds
        if time.monotonic() < self._hold_until:
            return 0
        return await retry_stalled(self.app, self.seconds)


class ProcrastinateDispatcher:
    """The service side: defer jobs to the queue, and keep the queue in step with the ledger."""

    name = "procrastinate"
    proves = True  # `fairproof worker` processes take the jobs up

    def __init__(self, ledger: JobLedger, database_url: str, *, sweep_seconds: float | None = None):
        self.ledger = ledger
        self.database_url = database_url
        self.app = build_queue(database_url)
        self.sweep_seconds = sweep_seconds or sweep_interval(ledger)
        self._sweeper: asyncio.Task | None = None
        self._last_error: str | None = None
        self._live_workers: int | None = None
        self._outage = OutageLog("queue sweep")
        self._stalled = StalledRecovery(self.app, ledger.lease.total_seconds())
        self._step_errors: dict[str, str] = {}

    async def start(self) -> None:
        _quiet_pool_log()
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
        """Offer a job just recorded in the ledger. If the queue is unavailable the job is accepted all the same:
        the sweep offers it as soon as the database answers (it is in the ledger, unfinished and unleased)."""
        try:
            await enqueue(self.app, job_id)
        except Exception as exc:
            if not is_outage(exc):
                raise
            log.warning("job accepted while the queue is unavailable; the sweep offers it when the database answers",
                        extra={"job_id": job_id, "error": outage_reason(exc)})

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
        """Count live workers, hand back stalled jobs, and offer every job the ledger holds unfinished and
        unleased that is not in the queue. Each step stands alone: a step failing for anything but an outage is
        logged (once per distinct failure) and the others still run; readiness fails only while the database is
        unavailable."""
        try:
            self._live_workers = await live_workers(self.app, self.ledger.lease.total_seconds())
            await self._step("stalled-job recovery", self._stalled.run)
            await self._step("re-enqueue", self._reenqueue)
        except Exception as exc:
            if is_outage(exc):
                self._last_error = outage_reason(exc)
                self._stalled.outage()
                self._outage.failed(exc)
                await _refresh_pool(self.app)
                return
            # Not an outage: the queue answers; the failure is logged once and the next sweep tries again.
            self._once("live-worker count", exc)
        self._last_error = None
        self._outage.ok()

    async def _reenqueue(self) -> None:
        resumable = await asyncio.to_thread(self.ledger.resumable)
        if resumable:
            await enqueue_missing(self.app, resumable)

    async def _step(self, name: str, step: Callable[[], Any]) -> None:
        try:
            await step()
        except Exception as exc:
            if is_outage(exc):
                raise
            self._once(name, exc)
        else:
            self._step_errors.pop(name, None)

    def _once(self, name: str, exc: Exception) -> None:
        reason = outage_reason(exc)
        if self._step_errors.get(name) != reason:
            self._step_errors[name] = reason
            log.error("queue sweep: %s failed (%s); retrying at every sweep", name, reason, exc_info=exc)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_seconds)
            await self._sweep_once()


def _quiet_pool_log() -> None:
    """psycopg_pool logs every failed reconnection attempt; the outage is reported once by OutageLog instead."""
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


# ------------------------------------------------------------------ the worker
_ATTACH_WORKER = """
INSERT INTO procrastinate_workers (id, last_heartbeat) OVERRIDING SYSTEM VALUE VALUES (%(worker_id)s, now())
ON CONFLICT (id) DO UPDATE SET last_heartbeat = now()
"""


class ResilientWorker(procrastinate_worker.Worker):
    """procrastinate's worker, made to outlive its database: where procrastinate's fetch loop ends the worker on
    the first database error (PoolTimeout after 30 s of outage, DiskFull), this one waits with backoff and
    resumes fetching, for an outage of any length. Its heartbeat re-creates its row if another worker pruned it
    during the outage (so fetching never fails on the worker's foreign key), the listener reconnects, and a
    job's end is recorded once the database answers. One log line per change of state, not per retry."""

    def __init__(self, app: procrastinate.App, *, outage: OutageLog | None = None, **kwargs: Any):
        super().__init__(app, **kwargs)
        self.outage = outage or OutageLog("worker", log)

    # -------------------------------------------------------------- fetching
    async def _fetch_and_process_jobs(self) -> None:
        while not self._stop_event.is_set():
            try:
                await super()._fetch_and_process_jobs()
            except Exception as exc:
                delay = self.outage.failed(exc)
                await _refresh_pool(self.app)
                await self._pause(delay)
                await self._attach()
                continue
            self.outage.ok()
            return

    async def _pause(self, seconds: float) -> None:
        """Sleep, or less if the worker is asked to stop."""
        try:
            await asyncio.wait_for(self._stop_event.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

    async def _attach(self) -> bool:
        """Beat, re-creating this worker's row (same id) if it was pruned; False if the database did not answer."""
        if self.worker_id is None:
            return False
        try:
            await self.app.connector.execute_query_async(_ATTACH_WORKER, worker_id=self.worker_id)
            return True
        except Exception:
            log.debug("worker heartbeat failed", exc_info=True)
            return False

    # -------------------------------------------------------------- side tasks
    async def _update_heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.update_heartbeat_interval)
            await self._attach()

    async def _poll_jobs_to_abort(self) -> None:
        while True:
            await asyncio.sleep(self.abort_job_polling_interval)
            if not self._running_jobs:
                continue
            try:
                self._handle_abort_jobs_requested(await self.app.job_manager.list_jobs_to_abort_async())
            except Exception:
                log.debug("polling jobs to abort failed", exc_info=True)

    def _start_side_tasks(self) -> list[asyncio.Task[Any]]:
        listen, self.listen_notify = self.listen_notify, False
        try:
            tasks = super()._start_side_tasks()
        finally:
            self.listen_notify = listen
        if listen:
            tasks.append(asyncio.create_task(self._listen_forever(), name="listener"))
        return tasks

    async def _listen_forever(self) -> None:
        """procrastinate's listener, reconnected after the database comes back (it ends on a failed connect)."""
        delay = BACKOFF_FIRST_SECONDS
        while True:
            started = time.monotonic()
            try:
                await self.app.job_manager.listen_for_jobs(on_notification=self._handle_notification,
                                                           queues=self.queues)
            except Exception:
                log.debug("queue listener lost its connection", exc_info=True)
            if time.monotonic() - started > 10 * BACKOFF_MAX_SECONDS:
                delay = BACKOFF_FIRST_SECONDS
            self._new_job_event.set()  # a notification may have been missed: fetch now
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_SECONDS)

    # -------------------------------------------------------------- a job's end, and the worker's
    async def _persist_job_status(self, job, status, retry_decision, context, job_result) -> None:
        """Record the job's end once the database answers (while the worker runs); a job whose end cannot be
        recorded is left to the stalled-job sweep and the ledger, which decide whether it runs again."""
        delay = BACKOFF_FIRST_SECONDS
        warned = False
        while True:
            try:
                await super()._persist_job_status(job=job, status=status, retry_decision=retry_decision,
                                                  context=context, job_result=job_result)
                if warned:
                    log.info("queue job %s: end recorded", job.id)
                return
            except Exception as exc:
                if not is_outage(exc) or self._stop_event.is_set():
                    log.warning("queue job %s: its end (%s) was not recorded (%s); the ledger sweep offers the job "
                                "again if it is unfinished", job.id, status, outage_reason(exc))
                    return
                if not warned:
                    log.warning("queue job %s: recording its end waits for the database (%s)", job.id,
                                outage_reason(exc))
                    warned = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_SECONDS)

    async def _shutdown(self, side_tasks: list[asyncio.Task[Any]]) -> None:
        try:
            await super()._shutdown(side_tasks)
        except Exception as exc:
            log.warning("worker stopped without unregistering (%s); its row expires with its heartbeat",
                        outage_reason(exc))
            self.worker_id = None


async def _recover_forever(app: procrastinate.App, lease_seconds: float) -> None:
    """A worker's own sweep of stalled jobs (a peer that died), every quarter lease; outages logged once."""
    stalled = StalledRecovery(app, lease_seconds)
    outage = OutageLog("worker: stalled-job recovery")
    while True:
        try:
            await stalled.run()
        except Exception as exc:
            if is_outage(exc):
                stalled.outage()
            outage.failed(exc)
        else:
            outage.ok()
        await asyncio.sleep(max(0.5, lease_seconds / 4))


async def run_worker(database_url: str, runner: Callable[[], JobRunner], *, concurrency: int,
                     lease_seconds: float, shutdown_seconds: float | None = None) -> None:
    """`fairproof worker`: take jobs from the queue until SIGINT/SIGTERM (then let the jobs in flight finish
    for up to `shutdown_seconds`; a job cut short is resumed by another worker when its lease runs out).

    The process outlives its database: fetching waits out an outage of any length, or a full disk, and resumes
    (ResilientWorker); should procrastinate's worker end anyway without being asked to, a new one starts after a
    backoff. Only a signal ends the process."""
    _quiet_pool_log()
    app = build_queue(database_url, runner)
    app.perform_import_paths()
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    current: list[ResilientWorker] = []
    signals = (signal.SIGINT, signal.SIGTERM)

    def on_signal() -> None:
        for sig in signals:  # a second signal ends the process at once
            loop.remove_signal_handler(sig)
        log.info("stop requested; jobs in flight finish first")
        stopping.set()
        for w in current:
            w.stop()

    for sig in signals:
        loop.add_signal_handler(sig, on_signal)
    try:
        async with app.open_async():
            await ensure_queue_schema(app, database_url)
            recovery = asyncio.create_task(_recover_forever(app, lease_seconds))
            restarts = OutageLog("worker", log)
            try:
                while not stopping.is_set():
                    # A job handed back by `retry_stalled` wakes no listener: the polling interval bounds how long
                    # it waits, so it is a quarter lease like the heartbeat (a killed worker's job resumes within
                    # lease + 2 quarter leases). Workers silent for long (an outage) are pruned only after minutes:
                    # a worker riding out an outage keeps its row.
                    worker = ResilientWorker(app, outage=restarts, queues=[QUEUE], concurrency=concurrency,
                                             install_signal_handlers=False,
                                             update_heartbeat_interval=max(0.5, lease_seconds / 4),
                                             fetch_job_polling_interval=max(0.5, lease_seconds / 4),
                                             stalled_worker_timeout=max(300.0, 10 * lease_seconds),
                                             shutdown_graceful_timeout=shutdown_seconds)
                    current[:] = [worker]
                    try:
                        await worker.run()
                    except Exception as exc:
                        delay = restarts.failed(exc)
                    else:
                        if stopping.is_set():
                            break
                        delay = restarts.failed(RuntimeError("procrastinate's worker stopped by itself"))
                    await _refresh_pool(app)
                    try:
                        await asyncio.wait_for(stopping.wait(), timeout=delay)
                    except asyncio.TimeoutError:
                        pass
            finally:
                recovery.cancel()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
