"""`fairproof serve`: the prover service over HTTP (FastAPI on uvicorn)."""
from __future__ import annotations

import argparse

from .radius_option import (add_bucket_growth_argument, add_exact_budget_argument, add_exact_size_argument,
                           add_per_slice_argument, add_radius_argument)

SETTINGS_HELP = ("Configuration comes from FAIRPROOF_* environment variables (see docs/guides/operations.md, "
                 "'Settings'); options given here override them. The admin API key is read from "
                 "FAIRPROOF_ADMIN_API_KEY only, never from the command line.")


def add_settings_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models-dir", metavar="DIR", help="committed model directories (FAIRPROOF_MODELS_DIR)")
    p.add_argument("--database-url", metavar="URL",
                   help="service database (FAIRPROOF_DATABASE_URL; default sqlite:///MODELS_DIR/service.sqlite)")
    p.add_argument("--store-url", metavar="URL", help="precompute store for all models (FAIRPROOF_STORE_URL)")
    p.add_argument("--backend", choices=("mcl", "reference"), help="curve backend (FAIRPROOF_BACKEND)")
    add_radius_argument(p, default=None, env="FAIRPROOF_RADIUS")
    add_exact_budget_argument(p, default=None, env="FAIRPROOF_EXACT_BUDGET")
    add_exact_size_argument(p, default=None, env="FAIRPROOF_EXACT_MAX_CONSTRAINTS")
    add_bucket_growth_argument(p, default=None, env="FAIRPROOF_BUCKET_GROWTH")
    add_per_slice_argument(p, env="FAIRPROOF_PER_SLICE")


def settings_from(args: argparse.Namespace, **extra):
    from pydantic import ValidationError

    from prover_service.service.errors import ConfigurationError
    from prover_service.service.settings import Settings

    try:
        return Settings.from_env(models_dir=args.models_dir, database_url=args.database_url,
                                 store_url=args.store_url, backend=args.backend, radius=args.radius,
                                 exact_budget=args.exact_budget, exact_max_constraints=args.exact_max_constraints,
                                 bucket_growth=args.bucket_growth,
                                 per_slice=args.per_slice, **extra)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise ConfigurationError(f"configuration: {where + ': ' if where else ''}{err.get('msg')}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the prover service (HTTP API; proofs in background workers)",
        description="Serve model cards, decisions and certificates over HTTP. " + SETTINGS_HELP,
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    add_settings_options(p)
    p.add_argument("--queue", choices=("inprocess", "procrastinate"),
                   help="who proves: threads in this process (default) or `fairproof worker` processes "
                        "(FAIRPROOF_QUEUE; needs PostgreSQL)")
    p.add_argument("--workers", type=int, metavar="N", help="in-process worker threads (FAIRPROOF_WORKERS, default 1)")
    p.add_argument("--keep-alive", type=float, default=5.0, metavar="SECONDS",
                   help="idle keep-alive of client connections (default 5; behind a proxy, set it above the "
                        "proxy's own idle timeout)")
    p.add_argument("--register", action="append", default=[], metavar="NAME",
                   help="register this model directory (inside the models directory) before serving; repeatable")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from prover_service.service.app import create_app
    from prover_service.service.database import open_service_database
    from prover_service.service.logs import configure_logging
    from prover_service.service.registry import ModelRegistry
    from prover_service.service.transparency_log import open_transparency_log

    settings = settings_from(args, queue=args.queue, workers=args.workers)
    configure_logging(settings.log_level)
    # Wait for the database here, where a failure is one line (inside uvicorn it is a startup traceback).
    db = open_service_database(settings.resolved_database_url, wait_seconds=settings.database_wait_seconds)
    try:
        if args.register:
            registry = ModelRegistry(db, settings, open_transparency_log(db, settings))
            for name in args.register:
                registry.register(name)
            registry.close()
    finally:
        db.dispose()
    if settings.queue == "procrastinate":
        from prover_service.service.queue_procrastinate import check_queue_schema

        check_queue_schema(settings.resolved_database_url)
    from prover_service.service.http_limits import bounded_protocol

    # SIGTERM: open requests get half the grace period, proofs in flight the other half (the dispatcher's stop).
    # Each request must arrive whole within read_timeout_seconds; max_connections open at once.
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_config=None,
                timeout_keep_alive=args.keep_alive, timeout_graceful_shutdown=settings.shutdown_grace_seconds / 2,
                http=bounded_protocol(settings.read_timeout_seconds), limit_concurrency=settings.max_connections)
    return 0
