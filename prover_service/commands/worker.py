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
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import threading

    from prover_service.service.database import open_service_database
    from prover_service.service.jobs import JobLedger
    from prover_service.service.logs import configure_logging
    from prover_service.service.queue_procrastinate import run_worker
    from prover_service.service.registry import ModelRegistry
    from prover_service.service.runner import JobRunner, worker_name
    from prover_service.service.transparency_log import open_transparency_log

    settings = settings_from(args, queue="procrastinate")
    configure_logging(settings.log_level)
    db = open_service_database(settings.resolved_database_url)
    backend = None
    if settings.backend:
        from circuits.backends import get_backend

        backend = get_backend(settings.backend)
    transparency = open_transparency_log(db, settings, signing=False)
    ledger = JobLedger(db, transparency, lease_seconds=settings.lease_seconds, max_attempts=settings.max_attempts)
    registry = ModelRegistry(db, settings, transparency, backend)
    runners: dict[int, JobRunner] = {}

    def runner() -> JobRunner:
        key = threading.get_ident()
        if key not in runners:
            runners[key] = JobRunner(ledger, registry, worker_name("worker"), settings.data_dir)
        return runners[key]

    try:
        asyncio.run(run_worker(settings.resolved_database_url, runner, concurrency=args.concurrency,
                               lease_seconds=settings.lease_seconds))
    finally:
        registry.close()
        db.dispose()
    return 0
