"""The service's state and the dependencies that hand it to request handlers.

One `ServiceState` per app, built in the lifespan from `Settings`; handlers
get it by dependency injection (`State`), never from a global.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Path, Request, Security
from fastapi.security import APIKeyHeader

from commitments.api import ADMIN_KEY_HEADER, JOB_TOKEN_HEADER

from .database import ServiceDatabase, open_service_database
from .dispatch import Dispatcher, InProcessDispatcher
from .errors import Forbidden, NotFound, Unauthorized
from .jobs import JobLedger, JobRecord
from .limits import ClientRateLimit
from .record_contract import RecordContracts
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
    contracts: RecordContracts = field(default_factory=RecordContracts)  # each card's record, as described


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


# The two keys the API knows, as the API description's security schemes (headers; each operation names
# which it takes). Read here without refusing: the checks below say what a missing or wrong key means.
ADMIN_KEY = APIKeyHeader(name=ADMIN_KEY_HEADER, scheme_name="AdminKey", auto_error=False,
                         description="the operator's admin key (FAIRPROOF_ADMIN_API_KEY)")
JOB_TOKEN = APIKeyHeader(name=JOB_TOKEN_HEADER, scheme_name="JobToken", auto_error=False,
                         description="a job's capability token, returned once in the decision's answer (job_token)")


def is_admin_key(settings: Settings, key: str | None) -> bool:
    """Whether `key` is the configured admin key, compared in constant time: the comparison must not tell
    an attacker how much of a guess was right."""
    expected = settings.admin_api_key
    return key is not None and expected is not None and secrets.compare_digest(
        key.encode(), expected.get_secret_value().encode())


def check_admin(settings: Settings, key: str | None) -> None:
    """403 when this deployment has no admin key, 401 for a missing or wrong one."""
    if settings.admin_api_key is None:
        raise Forbidden("admin endpoints are disabled: no admin API key is configured")
    if not is_admin_key(settings, key):
        raise Unauthorized(f"missing or wrong admin API key (header {ADMIN_KEY_HEADER})")


def require_admin(state: State, x_api_key: Annotated[str | None, Security(ADMIN_KEY)]) -> None:
    check_admin(state.settings, x_api_key)


Admin = Depends(require_admin)


def token_hash(token: str) -> str:
    """What the ledger keeps of a job's capability token."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class _JobAccess:
    token: str | None
    api_key: str | None

    def check(self, job: JobRecord | None, what: str, settings: Settings) -> None:
        """Let the admin read any job (an unknown one is 404), or the holder of a job's token that job; each
        key compared in constant time. Without the admin key the refusal is the same 401 whether the job
        exists or not, so that a guess learns nothing about which ids exist. `what` names what is read
        ("job ...", "certificate ...")."""
        if is_admin_key(settings, self.api_key):
            if job is None:
                raise NotFound(f"unknown {what}")
            return
        if (self.token is not None and job is not None and job.access_hash is not None
                and secrets.compare_digest(token_hash(self.token).encode(), job.access_hash.encode())):
            return
        raise Unauthorized(f"{what} is read with its job's token (header {JOB_TOKEN_HEADER}) or the admin key "
                           f"(header {ADMIN_KEY_HEADER}); no key given opens it")


def job_access(x_job_token: Annotated[str | None, Security(JOB_TOKEN)],
               x_api_key: Annotated[str | None, Security(ADMIN_KEY)]) -> _JobAccess:
    return _JobAccess(x_job_token, x_api_key)


JobAccess = Annotated[_JobAccess, Depends(job_access)]
