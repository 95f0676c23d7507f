"""`fairproof worker`: a proving worker taking jobs from the PostgreSQL queue."""
from __future__ import annotations

import argparse

from .serve import SETTINGS_HELP, add_settings_options, settings_from


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "worker",
        help="run a proving worker for a service started with --queue procrastinate",
        description="Take certificate and precompute jobs from the procrastinate queue in the service's "
                    "PostgreSQL database and run them; start as many as the machines allow. " + SETTINGS_HELP,
    )
    add_settings_options(p)
    p.add_argument("--concurrency", type=int, default=1, metavar="N",
                   help="jobs run at once by this process (default 1: a proof already uses both cores)")
    p.add_argument("--heartbeat-file", default=None, metavar="PATH",
                   help="touch this file every few seconds while the worker runs (for a container healthcheck: "
                        "see `fairproof worker-alive`)")
    p.set_defaults(handler=run)

    p = subparsers.add_parser("worker-alive", help="exit 0 if a worker's heartbeat file is fresh (a healthcheck)")
    p.add_argument("heartbeat_file", metavar="PATH", help="the worker's --heartbeat-file")
    p.add_argument("--max-age", type=float, default=60.0, metavar="SECONDS",
                   help="fresh: touched within this many seconds (default 60)")
    p.set_defaults(handler=alive)


HEARTBEAT_SECONDS = 10.0


def alive(args: argparse.Namespace) -> int:
    import os
    import sys
    import time

    try:
        age = time.time() - os.stat(args.heartbeat_file).st_mtime
    except OSError as exc:
        print(f"fairproof worker-alive: no heartbeat ({exc.strerror}: {args.heartbeat_file})", file=sys.stderr)
        return 1
    if age > args.max_age:
        print(f"fairproof worker-alive: last heartbeat {age:.0f} s ago", file=sys.stderr)
        return 1
    return 0


def _beat(path: str, stop) -> None:
    """Touch `path` until `stop` is set: the process is alive and its event loop thread is not wedged."""
    from pathlib import Path

    while True:
        try:
            Path(path).touch()
        except OSError:
            pass  # the healthcheck reports a missing or stale file
        if stop.wait(HEARTBEAT_SECONDS):
            return


def run(args: argparse.Namespace) -> int:
    import asyncio
    import threading

    from prover_service.service.database import open_service_database
    from prover_service.service.jobs import JobLedger
    from prover_service.service.logs import configure_logging
    from prover_service.service.queue_procrastinate import run_worker
    from prover_service.service.registry import ModelRegistry
    from prover_service.service.runner import JobRunner, orphaned_on_this_host, worker_name
    from prover_service.service.transparency_log import open_transparency_log

    settings = settings_from(args, queue="procrastinate")
    configure_logging(settings.log_level)
    db = open_service_database(settings.resolved_database_url, wait_seconds=settings.database_wait_seconds)
    backend = None
    if settings.backend:
        from circuits.backends import get_backend

        backend = get_backend(settings.backend)
    transparency = open_transparency_log(db, settings, signing=False)
    ledger = JobLedger(db, transparency, lease_seconds=settings.lease_seconds, max_attempts=settings.max_attempts)
    registry = ModelRegistry(db, settings, transparency, backend)
    runners: dict[int, JobRunner] = {}
    # Jobs a killed worker of this host was proving go back to the queue now, not when their leases end.
    ledger.release_orphans(orphaned_on_this_host)

    def runner() -> JobRunner:
        key = threading.get_ident()
        if key not in runners:
            runners[key] = JobRunner(ledger, registry, worker_name("worker"), settings.data_dir)
        return runners[key]

    stop = threading.Event()
    if args.heartbeat_file:
        threading.Thread(target=_beat, args=(args.heartbeat_file, stop), name="heartbeat", daemon=True).start()
    try:
        asyncio.run(run_worker(settings.resolved_database_url, runner, concurrency=args.concurrency,
                               lease_seconds=settings.lease_seconds,
                               shutdown_seconds=settings.shutdown_grace_seconds))
    finally:
        stop.set()
        registry.close()
        db.dispose()
    return 0
