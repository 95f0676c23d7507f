"""The deployment of benchmarks/chaos.py: a private PostgreSQL server, the precompute store, the API and workers.

Per scenario from scratch, with compose's settings: the database on a small
tmpfs, the German (4,2) model's precompute store in it, `fairproof serve
--queue procrastinate` and two `fairproof worker --heartbeat-file` processes;
then the model registered and every worker warmed up.
"""
from __future__ import annotations

import asyncio
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from _chaos_common import COMPOSE_ENV, WORKERS
from _chaos_customers import Customer, Tally, customers_load

# ------------------------------------------------------------------ the deployment
@dataclass
class Deployment:
    pg: Any  # tests.service_fixtures.PrivatePostgres
    db_url: str
    api: Any  # ServiceProcess
    workers: list
    heartbeats: list[Path]
    state_dir: Path

    @property
    def url(self) -> str:
        return self.api.url

    @property
    def processes(self) -> list:
        return [self.api, *self.workers]


def _precompute_store(models: Path, db_url: str) -> None:
    """The model's regions in the deployment's database (compose's FAIRPROOF_STORE_URL is the same database)."""
    from offline_precompute.db import open_database
    from offline_precompute.enumerate import precompute
    from prover_service.bucket_keys import SinglePartyKeySetup
    from prover_service.proving import Prover
    from prover_service.workspace import ModelWorkspace
    from tests.service_fixtures import MODEL_DIRECTORY

    db = open_database(db_url)
    try:
        precompute(db, Prover(ModelWorkspace.open(models / MODEL_DIRECTORY), db, key_setup=SinglePartyKeySetup()).model)
    finally:
        db.dispose()


@contextmanager
def deployment(models: Path, logs: Path, name: str, disk_mb: int) -> Iterator[Deployment]:
    """A private PostgreSQL server, its database with the precompute store, the API and two workers, the model
    registered; everything stopped and removed on exit."""
    import httpx

    from tests.service_fixtures import ServiceProcess, free_port, private_postgres, register_model, service_env

    with private_postgres(disk_mb=disk_mb) as pg, ExitStack() as stack:
        db_url = pg.create_database("fairproof")
        _precompute_store(models, db_url)
        state_dir = pg.disk / "service"  # the API's own state (its log key, its readiness probe): the same disk
        state_dir.mkdir()
        env = service_env(models, db_url, **COMPOSE_ENV, FAIRPROOF_STORE_URL=db_url)
        port = free_port()
        api = ServiceProcess(["serve", "--host", "127.0.0.1", "--port", str(port), "--queue", "procrastinate"],
                             {**env, "FAIRPROOF_LOG_KEY_FILE": str(state_dir / "log.key")}, logs / f"{name}-serve.log",
                             port)
        heartbeats = [logs / f"{name}-worker{i}.alive" for i in range(1, WORKERS + 1)]
        workers = [ServiceProcess(["worker", "--heartbeat-file", str(hb)], env, logs / f"{name}-worker{i}.log")
                   for i, hb in enumerate(heartbeats, 1)]
        for p in (api, *workers):
            stack.callback(p.stop)  # SIGTERM (the kill -9'd one is gone already)
        api.start(timeout=120)
        register_model(api.url)
        for w in workers:
            w.start()
        deadline = time.monotonic() + 120
        while True:  # both workers beating in the queue (readiness names them)
            words = httpx.get(f"{api.url}/v1/ready", timeout=10).json()["checks"].get("workers", "")
            if f"{WORKERS} live worker" in words:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers not live after 120 s: {words}\n{workers[0].log_tail()}")
            for w in workers:
                if w.process.poll() is not None:
                    raise RuntimeError(f"a worker exited at start:\n{w.log_tail()}")
            time.sleep(0.5)
        yield Deployment(pg, db_url, api, workers, heartbeats, state_dir)


def warm_up(dep: Deployment, rounds: list[list[dict]], model_id: str, poll: float) -> None:
    """Each bucket's keys loaded in every worker: per bucket, one customer per worker at once."""
    for i, records in enumerate(rounds, 1):
        tally = Tally()
        customers = [Customer(-1, r) for r in records]
        asyncio.run(customers_load(dep.url, model_id, customers, len(customers), poll, 300.0, tally,
                                   f"warm-up {i}/{len(rounds)}", progress_every=100))
        bad = [c.error for c in customers if c.status != "succeeded" or c.error]
        if bad:
            raise RuntimeError(f"warm-up failed: {bad[:3]}")


def _engine(db_url: str):
    from sqlalchemy import create_engine

    return create_engine(db_url, pool_pre_ping=True, pool_size=1, max_overflow=1,
                         connect_args={"connect_timeout": 3})
