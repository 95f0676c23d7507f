"""The service's state and the dependencies that hand it to request handlers.

One `ServiceState` per app, built in the lifespan from `Settings`; handlers
get it by dependency injection (`State`), never from a global.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Path, Request

from .database import ServiceDatabase, open_service_database
from .dispatch import Dispatcher, InProcessDispatcher
from .errors import Forbidden, Unauthorized
from .jobs import JobLedger
from .limits import ClientRateLimit
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
    rate_limit: ClientRateLimit | None = None  # per-client decision requests; None: unlimited


def build_state(settings: Settings, backend=None) -> ServiceState:
    db = open_service_database(settings.resolved_database_url, wait_seconds=settings.database_wait_seconds)
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
        dispatcher = InProcessDispatcher(ledger, registry, workers=settings.workers, data_dir=settings.data_dir,
                                         stop_seconds=settings.shutdown_grace_seconds / 2)
    rate_limit = ClientRateLimit(settings.rate_limit_per_minute) if settings.rate_limit_per_minute else None
    return ServiceState(settings, db, ledger, registry, dispatcher, transparency, rate_limit)


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


def token_hash(token: str) -> str:
    """What the ledger keeps of a job's capability token."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class _JobAccess:
    token: str | None
    api_key: str | None

    def may_read(self, access_hash: str | None, settings: Settings) -> bool:
        """The job's own token, or the admin key; each compared in constant time. Refusals look like a
        missing job (404), so that a guess learns nothing about which ids exist."""
        admin = settings.admin_api_key
        if self.api_key is not None and admin is not None and secrets.compare_digest(
                self.api_key.encode(), admin.get_secret_value().encode()):
            return True
        return (self.token is not None and access_hash is not None
                and secrets.compare_digest(token_hash(self.token).encode(), access_hash.encode()))


def job_access(x_job_token: Annotated[str | None, Header(max_length=200)] = None,
               x_api_key: Annotated[str | None, Header(max_length=200)] = None) -> _JobAccess:
    return _JobAccess(x_job_token, x_api_key)


JobAccess = Annotated[_JobAccess, Depends(job_access)]
