"""Who runs the jobs: worker threads inside the service (the embedded default).

The ledger is the source of truth; a dispatcher only decides when a worker
looks at a job. Both dispatchers resume on start whatever the ledger holds
unfinished, and sweep periodically for jobs whose worker went silent, so a
crash or restart loses no accepted job. `queue_procrastinate` holds the
scale-out dispatcher (workers in other processes or on other machines).
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Protocol

from .jobs import JobLedger
from .registry import ModelRegistry
from .runner import JobRunner, orphaned_on_this_host, worker_name

log = logging.getLogger("fairproof.dispatch")


def sweep_interval(ledger: JobLedger) -> float:
    """How often the ledger is swept for jobs to resume: every second (more often for a lease under 2 s), so
    a job whose worker died is taken up within its lease and a second."""
    return min(1.0, ledger.lease.total_seconds() / 2)


class Dispatcher(Protocol):
    name: str

    @property
    def proves(self) -> bool:
        """Whether some worker takes up the jobs handed over (else they wait in the ledger for one)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def enqueue(self, job_id: str) -> None: ...

    def health(self) -> tuple[bool, str]: ...


class InProcessDispatcher:
    """A pool of threads in this process, fed by a local queue and a periodic sweep of the ledger."""

    name = "inprocess"

    def __init__(self, ledger: JobLedger, registry: ModelRegistry, *, workers: int, data_dir: str | None = None,
                 sweep_seconds: float | None = None, stop_seconds: float = 60.0):
        self.ledger = ledger
        self.registry = registry
        self.workers = workers
        self.data_dir = data_dir
        self.sweep_seconds = sweep_seconds or sweep_interval(ledger)
        self.stop_seconds = stop_seconds
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._pending: set[str] = set()
        self._in_flight: dict[str, str] = {}  # worker name -> the job it is running
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    async def start(self) -> None:
        if self.workers:
            self._release_orphans()
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"prover-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        if self.workers:
            sweeper = threading.Thread(target=self._sweep, name="ledger-sweep", daemon=True)
            sweeper.start()
            self._threads.append(sweeper)
            self._resume()

    async def stop(self) -> None:
        """Take no new job, let each thread finish the one in flight; queued jobs stay queued in the ledger
        (the next start resumes them), so stopping takes one proof's time, not the whole queue's. A proof
        still running after `stop_seconds` is handed back to the ledger (resumed at the next start, the
        attempt not counted) and left behind: its thread dies with the process."""
        self._stopping.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        with self._lock:
            self._pending.clear()
        for _ in range(self.workers):
            self._queue.put(None)
        deadline = time.monotonic() + self.stop_seconds
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._lock:
            unfinished = dict(self._in_flight)
        for owner, job_id in unfinished.items():
            try:
                self.ledger.release(job_id, owner, "the service stopped before the proof finished", refund=True)
                log.warning("proof in flight handed back at shutdown", extra={"job_id": job_id, "worker": owner})
            except Exception:  # the lease runs out instead, or the next start finds the owner gone
                log.warning("could not hand back a job at shutdown", extra={"job_id": job_id}, exc_info=True)

    async def enqueue(self, job_id: str) -> None:
        self._offer(job_id)

    @property
    def proves(self) -> bool:
        """No worker threads (FAIRPROOF_WORKERS=0): jobs wait in the ledger for a start with some."""
        return self.workers > 0

    def health(self) -> tuple[bool, str]:
        alive = sum(t.is_alive() for t in self._threads if t.name.startswith("prover-"))
        if self.workers and alive < self.workers:
            return False, f"{alive} of {self.workers} worker threads alive"
        return True, f"{alive} worker threads, {self._queue.qsize()} jobs waiting"

    # ------------------------------------------------------------ internals
    def _offer(self, job_id: str) -> None:
        with self._lock:
            if job_id in self._pending:
                return
            self._pending.add(job_id)
        self._queue.put(job_id)

    def _release_orphans(self) -> None:
        try:
            released = self.ledger.release_orphans(orphaned_on_this_host)
        except Exception:
            log.warning("could not read the ledger for jobs of a stopped predecessor", exc_info=True)
            return
        if released:
            log.info("resuming jobs of a stopped predecessor", extra={"jobs": len(released)})

    def _resume(self) -> None:
        if self._stopping.is_set():
            return
        try:
            for job_id in self.ledger.resumable():
                self._offer(job_id)
        except Exception:
            log.warning("could not read the ledger to resume jobs; will retry", exc_info=True)

    def _sweep(self) -> None:
        while not self._stopping.wait(self.sweep_seconds):
            self._resume()

    def _work(self) -> None:
        runner = JobRunner(self.ledger, self.registry, worker_name(threading.current_thread().name), self.data_dir)
        while True:
            job_id = self._queue.get()
            if job_id is None or self._stopping.is_set():
                return
            with self._lock:
                self._pending.discard(job_id)
                self._in_flight[runner.owner] = job_id
            try:
                runner.run(job_id)
            except Exception:  # the runner reports its own failures; this keeps the thread alive
                log.exception("worker error", extra={"job_id": job_id})
            finally:
                with self._lock:
                    self._in_flight.pop(runner.owner, None)
