"""The FastAPI application: customers' endpoints, admin endpoints, health.

Customers see model cards, their decision, their job and their certificate;
nothing else (no weights, salts, covering sets or store). Proving never runs
in a request: a decision request records a job in the ledger and hands it to
the dispatcher; `?wait=S` lets a caller of a small model wait up to S seconds
for the certificate in the same request.

One router per resource (health here; models, decisions, jobs and certificates, admin, the transparency
log, attestations in their modules); `contract` keeps /openapi.json true: each operation's errors and key,
and each served model's record.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import tempfile
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path as FilePath
from typing import Any, AsyncIterator

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from sqlalchemy import text
from sqlalchemy.exc import DataError as SQLAlchemyDataError
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from commitments.api import API_PREFIX, Health

from . import admin_routes, attestation_routes, decision_routes, job_routes, log_routes, model_routes
from .contract import ContractRoute, allowed_methods, install_openapi
from .decision_routes import _persistence_delta  # noqa: F401  (the persistence tests call it)
from .errors import OUTAGE_RETRY_SECONDS, STORAGE_ERRNOS, ServiceError, is_outage, outage_reason
from .limits import BodySizeLimit
from .page_routes import page_router
from .settings import Settings
from .state import State, build_state

log = logging.getLogger("fairproof.service")


# ------------------------------------------------------------------ the app
def create_app(settings: Settings, *, backend=None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = build_state(settings, backend)
        app.state.service = state
        await state.dispatcher.start()
        log.info("service started", extra={"database": state.db.display_url, "queue": state.dispatcher.name,
                                           "models_dir": str(settings.models_dir)})
        try:
            yield
        finally:
            await state.dispatcher.stop()
            state.registry.close()
            state.db.dispose()

    app = FastAPI(
        title="FairProof prover service",
        version="1",
        summary="Credit decisions with zero-knowledge certificates of individual fairness.",
        description=DESCRIPTION,
        lifespan=lifespan,
        # Operation ids are the handlers' names: the description's links name operations by them.
        generate_unique_id_function=_operation_id,
        # The interactive pages load their scripts from a CDN: off unless asked for. The schema itself
        # (/openapi.json) is always served; it is what clients and auditors read.
        docs_url="/docs" if settings.api_docs else None,
        redoc_url="/redoc" if settings.api_docs else None,
    )
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes,
                       larger=attestation_routes.body_limits(settings))
    _install_error_handlers(app)
    _install_request_log(app)
    app.include_router(health_router, prefix=API_PREFIX)
    for routes in (model_routes, decision_routes, job_routes, admin_routes, log_routes, attestation_routes):
        app.include_router(routes.router, prefix=API_PREFIX)
    app.include_router(page_router())
    install_openapi(app)
    return app


DESCRIPTION = """\
A customer sends their record to a model (`POST /v1/models/{model_id}/decisions`; the record each served
model takes is described as `Record_<model_id>`, from its published card) and gets the decision at once, with
a job whose certificate of individual fairness is proved in the background. The job and its certificate are
read with the job's token (header `X-Job-Token`, returned once in the decision's answer) or the admin key.

Every operation lists the statuses it can answer. Besides those, the server itself answers any request 408
when it does not arrive in time, 413 when its body (on any operation) is larger than the service accepts, and
503 (plain text) while the service holds as many connections as it accepts. An outage (database, storage) is
503 with Retry-After, never 500.
"""


def _operation_id(route: APIRoute) -> str:
    return route.name


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        retry = getattr(exc, "retry_after", None)
        headers = {"Retry-After": str(retry)} if retry is not None else None
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)

    @app.exception_handler(DBAPIError)
    @app.exception_handler(SQLAlchemyTimeout)
    async def database_error(request: Request, exc: Exception) -> JSONResponse:
        """503 with Retry-After only for an outage (the database unreachable, its pool exhausted, its disk
        full): retrying helps. A value the database refuses (out of its column's range, malformed, a duplicate)
        is the request's fault: 4xx, which a client does not retry. Anything else is a bug: 500."""
        if is_outage(exc):
            log.error("database unavailable", extra={"path": request.url.path, "error": outage_reason(exc)})
            return JSONResponse({"detail": "the service's database is unavailable; retry shortly"}, status_code=503,
                                headers={"Retry-After": str(OUTAGE_RETRY_SECONDS)})
        if isinstance(exc, SQLAlchemyDataError):
            log.info("database refused a value", extra={"path": request.url.path, "error": outage_reason(exc)})
            return JSONResponse({"detail": "a value in the request is out of range or malformed for what it names"},
                                status_code=422)
        if isinstance(exc, IntegrityError):
            log.info("database refused a duplicate", extra={"path": request.url.path, "error": outage_reason(exc)})
            return JSONResponse({"detail": "the request conflicts with what the service already holds"},
                                status_code=409)
        log.error("database error", extra={"path": request.url.path, "error": outage_reason(exc)}, exc_info=exc)
        return JSONResponse({"detail": "internal error in the service's database access"}, status_code=500)

    @app.exception_handler(OSError)
    async def storage_failing(request: Request, exc: OSError) -> JSONResponse:
        if exc.errno not in STORAGE_ERRNOS:
            raise exc
        log.error("storage failing", extra={"path": request.url.path, "error": errno.errorcode.get(exc.errno, "")})
        return JSONResponse({"detail": "the service's storage is full or failing; retry later"}, status_code=503,
                            headers={"Retry-After": str(OUTAGE_RETRY_SECONDS)})

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_reason(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method the path answers, not only those of the first route found
            headers["Allow"] = ", ".join(allowed_methods(app, request.url.path))
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=headers or None)


def _validation_reason(exc: RequestValidationError) -> str:
    reasons = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        reasons.append(f"{where[:100]}: {str(err.get('msg'))[:200]}")
    return "invalid request: " + "; ".join(reasons)


REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def _install_request_log(app: FastAPI) -> None:
    @app.middleware("http")
    async def request_log(request: Request, call_next):
        request_id = request.headers.get("x-request-id", "")
        if not REQUEST_ID.fullmatch(request_id):  # echoed and logged: only a short token is taken up
            request_id = uuid.uuid4().hex
        start = time.perf_counter()
        try:
            response = await call_next(request)
        except Exception:
            log.exception("unhandled error", extra={"request_id": request_id, "path": request.url.path})
            response = JSONResponse({"detail": "internal error; the request id is " + request_id}, status_code=500)
        response.headers["x-request-id"] = request_id
        log.info("request", extra={"request_id": request_id, "method": request.method, "path": request.url.path,
                                   "status": response.status_code,
                                   "ms": round(1000 * (time.perf_counter() - start), 1)})
        return response


def _state_directory(settings) -> FilePath:
    """Where this process itself writes: beside its log key (and its SQLite database, by default)."""
    return settings.resolved_log_key_file.parent


def _probe_write(directory: FilePath) -> None:
    """Write, sync and remove a small file: a full or read-only disk fails here, not in a customer's job."""
    fd, name = tempfile.mkstemp(prefix=".ready-", dir=directory)
    try:
        os.write(fd, b"\0" * 4096)
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(name)



# ------------------------------------------------------------------ health
health_router = APIRouter(tags=["health"], route_class=ContractRoute)


@health_router.get("/health", response_model=Health)
def health() -> Health:
    """Liveness: the process answers."""
    return Health(status="ok")


@health_router.get("/ready", response_model=Health, responses={503: {"model": Health, "description": (
    "not ready: a check failed (each check says how)")}})
def ready(state: State) -> Any:
    """Readiness: the database answers at the current schema and the workers are alive."""
    checks: dict[str, str] = {}
    ok = True
    try:
        with state.db.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        current = state.db.is_current()
        checks["database"] = "ok" if current else "schema is not at the newest migration"
        ok &= current
    except Exception as exc:
        checks["database"] = f"unreachable: {type(exc).__name__}"
        ok = False
    try:
        _probe_write(_state_directory(state.settings))
        checks["storage"] = "ok"
    except OSError as exc:
        checks["storage"] = f"not writable: {errno.errorcode.get(exc.errno, type(exc).__name__)}"
        ok = False
    workers_ok, words = state.dispatcher.health()
    checks["workers"] = words
    ok &= workers_ok
    body = Health(status="ok" if ok else "unavailable", checks=checks)
    return body if ok else JSONResponse(body.model_dump(), status_code=503)
