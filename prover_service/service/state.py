"""The service's state and the dependencies that hand it to request handlers.

One `ServiceState` per app, built in the lifespan from `Settings`; handlers
get it by dependency injection (`State`), never from a global.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Path, Request

from .database import ServiceDatabase, open_service_database
from .dispatch import Dispatcher, InProcessDispatcher
from .errors import Forbidden, Unauthorized
from .jobs import JobLedger
from .registry import ModelRegistry
from .settings import Settings
from .transparency_log import TransparencyLog, open_transparency_log


@dataclass
class ServiceState:
    settings: Settings
    db: ServiceDatabase
    ledger: JobLedger
    registry: ModelRegistry
    dispatcher: Dispatcher
    log: TransparencyLog


def build_state(settings: Settings, backend=None) -> ServiceState:
    db = open_service_database(settings.resolved_database_url)
    transparency = open_transparency_log(db, settings)
    ledger = JobLedger(db, transparency, lease_seconds=settings.lease_seconds, max_attempts=settings.max_attempts)
    if backend is None and settings.backend:
        from circuits.backends import get_backend

        backend = get_backend(settings.backend)
    registry = ModelRegistry(db, settings, transparency, backend)
    dispatcher: Dispatcher
    if settings.queue == "procrastinate":
        from .queue_procrastinate import ProcrastinateDispatcher

        dispatcher = ProcrastinateDispatcher(ledger, settings.resolved_database_url)
    else:
        dispatcher = InProcessDispatcher(ledger, registry, workers=settings.workers, data_dir=settings.data_dir)
    return ServiceState(settings, db, ledger, registry, dispatcher, transparency)


# ------------------------------------------------------------------ dependencies
MODEL_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def service(request: Request) -> ServiceState:
    return request.app.state.service


State = Annotated[ServiceState, Depends(service)]
ModelId = Annotated[str, Path(pattern=MODEL_ID, description="the model's id, as its card names it")]


def require_admin(state: State, x_api_key: Annotated[str | None, Header()] = None) -> None:
    expected = state.settings.admin_api_key
    if expected is None:
        raise Forbidden("admin endpoints are disabled: no admin API key is configured")
    # Constant time: the comparison must not tell an attacker how much of a guess was right.
    if x_api_key is None or not secrets.compare_digest(x_api_key.encode(), expected.get_secret_value().encode()):
        raise Unauthorized("missing or wrong admin API key (header X-API-Key)")


Admin = Depends(require_admin)
