"""The FastAPI application: customers' endpoints, admin endpoints, health.

Customers see model cards, their decision, their job and their certificate;
nothing else (no weights, salts, covering sets or store). Proving never runs
in a request: a decision request records a job in the ledger and hands it to
the dispatcher; `?wait=S` lets a caller of a small model wait up to S seconds
for the certificate in the same request.
"""
from __future__ import annotations

import asyncio
import base64
import errno
import hashlib
import hmac
import logging
import math
import os
import re
import secrets
import tempfile
import time
import uuid
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path as FilePath
from typing import Annotated, Any, AsyncIterator

from fastapi import FastAPI, Header, Path, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy import select, text
from sqlalchemy.exc import DataError as SQLAlchemyDataError
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from commitments.api import (API_PREFIX, IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_PATTERN, DecisionAccepted,
                             DecisionRequest, ErrorBody, Health, JobView, ModelList, ModelSummary, PrecomputeRequest,
                             RegisterModel)
from commitments.bundle import CertificateBundle
from commitments.card import ModelCard

from .errors import (STORAGE_ERRNOS, BadRequest, Conflict, NotFound, ServiceError, TooManyRequests, Unavailable,
                     is_outage, outage_reason)
from .state import JobAccess, token_hash
from .jobs import CERTIFICATE, PRECOMPUTE, JobRecord, QueueCaps, QueueFull
from . import attestation_routes, log_routes
from .page_routes import page_router
from .limits import BodySizeLimit
from .schema import AuditEntry
from .settings import Settings
from .state import Admin, ModelId, State, build_state

log = logging.getLogger("fairproof.service")

UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (401, 403, 404, 409, 413, 422, 429, 503)
}


# ------------------------------------------------------------------ views
def _job_view(job: JobRecord) -> JobView:
    return JobView(
        job_id=job.id, model_id=job.model_id, kind=job.kind, status=job.status, stage=job.stage,
        progress=round(job.progress, 4), attempts=job.attempts,
        created_at=job.created_at.isoformat(timespec="seconds"), updated_at=job.updated_at.isoformat(timespec="seconds"),
        error=job.error, certificate_id=job.certificate_id,
        certificate_url=f"{API_PREFIX}/certificates/{job.certificate_id}" if job.certificate_id else None,
        result=job.result,
    )


def _summary(card: ModelCard) -> ModelSummary:
    return ModelSummary(
        model_id=card.model_id, description=card.description, dataset=card.dataset, commitment=card.commitment,
        card_digest=card.digest(), n_inputs=card.architecture.n_inputs, hidden_sizes=card.architecture.hidden_sizes,
        sensitive_features=tuple(f.name for f in card.sensitive), buckets=tuple(b.bucket for b in card.circuits),
        card_url=f"{API_PREFIX}/models/{card.model_id}/card", lenses=card.lenses,
    )


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
        lifespan=lifespan,
        responses=ERRORS,
        # The interactive pages load their scripts from a CDN: off unless asked for. The schema itself
        # (/openapi.json) is always served; it is what clients and auditors read.
        docs_url="/docs" if settings.api_docs else None,
        redoc_url="/redoc" if settings.api_docs else None,
    )
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes,
                       larger=attestation_routes.body_limits(settings))
    _install_error_handlers(app)
    _install_request_log(app)
    _routes(app)
    app.include_router(log_routes.router, prefix=API_PREFIX)
    app.include_router(attestation_routes.router, prefix=API_PREFIX)
    app.include_router(page_router())
    return app


# Integer query parameters are bounded by their columns' ranges, so that a value out of range is a 422 before the
# database sees it: AuditEntry.seq is a 32-bit INTEGER (the log's sizes and indexes, BIGINT, are bounded in
# log_routes).
INT32_MAX = 2**31 - 1

# Outages (database down, disk full) are answered 503 with this Retry-After, never a 500.
OUTAGE_RETRY_SECONDS = 5

# A full queue drains at roughly a certificate every few seconds per worker: ask for a short wait.
QUEUE_FULL_RETRY_SECONDS = 10


def _queue_full(detail: str) -> TooManyRequests:
    return TooManyRequests(f"{detail}; retry in {QUEUE_FULL_RETRY_SECONDS} s", QUEUE_FULL_RETRY_SECONDS)


def _persistence_delta(card: ModelCard, model_id: str, delta: float | None) -> dict[str, int]:
    """The job's persistence delta (`ModelCard.persistence_box`), or nothing for the card's default;
    BadRequest when the card cannot prove it."""
    if delta is None:
        return {}
    try:
        return {"persistence_delta": card.persistence_box(delta)}
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def _admit(ledger, settings, model_id: str) -> None:
    """Refuse a new certificate job early while the queue is full (in all, or for this model), before its
    decision is computed. The ledger checks the caps again as it records the job (`_submit`): requests
    arriving together all pass here, and only there are they counted one after another."""
    if ledger.backlog(CERTIFICATE, model_id) >= settings.max_queued_per_model:
        raise _queue_full(f"model {model_id} has {settings.max_queued_per_model} certificates waiting")
    if ledger.backlog(CERTIFICATE) >= settings.max_queued_jobs:
        raise _queue_full(f"the service has {settings.max_queued_jobs} certificates waiting")


def _idempotency_hash(model_id: str, key: str) -> str:
    """What the ledger keeps of an Idempotency-Key: a hash, so a database reader learns no job token."""
    return hashlib.sha256(b"fairproof idempotency\0" + model_id.encode() + b"\0" + key.encode()).hexdigest()


def _idempotent_token(model_id: str, key: str) -> str:
    """The job token of an idempotent request: derived from the client's key (as secret as the key), so a
    retry is answered the same token without the service ever storing it."""
    mac = hmac.new(key.encode(), b"fairproof job token\0" + model_id.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def _submit_precompute(ledger, settings, model_id: str, request: dict[str, Any]) -> JobRecord | None:
    """The precompute job for this request: the same one already waiting or running, else a new one while
    fewer than `max_queued_precompute` are; None when the cap is reached."""
    if ledger.backlog(PRECOMPUTE) >= settings.max_queued_precompute:
        held, _ = ledger.submit_once(PRECOMPUTE, model_id, request, create=False)
        return held
    job, _ = ledger.submit_once(PRECOMPUTE, model_id, request)
    return job


def _submit(ledger, settings, *args, **kwargs) -> JobRecord:
    try:
        return ledger.submit(*args, caps=QueueCaps(settings.max_queued_per_model, settings.max_queued_jobs),
                             **kwargs)
    except QueueFull as exc:
        raise _queue_full(exc.detail) from None


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
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)


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


def _routes(app: FastAPI) -> None:
    # ------------------------------------------------------------ health
    @app.get(f"{API_PREFIX}/health", response_model=Health, tags=["health"])
    def health() -> Health:
        """Liveness: the process answers."""
        return Health(status="ok")

    @app.get(f"{API_PREFIX}/ready", response_model=Health, tags=["health"], responses={503: {"model": Health}})
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

    # ------------------------------------------------------------ models
    @app.get(f"{API_PREFIX}/models", response_model=ModelList, tags=["models"])
    def list_models(state: State) -> ModelList:
        """The models this bank serves, with their commitments."""
        summaries = []
        for model_id in state.registry.model_ids():
            try:
                summaries.append(_summary(state.registry.card(model_id)))
            except ServiceError as exc:  # one broken model must not hide the others
                log.warning("model not listed", extra={"model_id": model_id, "reason": exc.detail})
        return ModelList(models=tuple(summaries))

    @app.get(f"{API_PREFIX}/models/{{model_id}}/card", response_model=ModelCard, tags=["models"])
    def model_card(model_id: ModelId, state: State) -> Response:
        """The model's published card: architecture, domain box, sensitive features, commitment, verifying keys.

        Always the card in the transparency log (`/v1/log/cards/{card_digest}` proves it is there), in its RFC
        8785 canonical form: the bytes whose SHA-256 is the card digest."""
        return Response(state.registry.card(model_id).canonical_json(), media_type="application/json")

    # ------------------------------------------------------------ decisions
    @app.post(f"{API_PREFIX}/models/{{model_id}}/decisions", response_model=DecisionAccepted,
              status_code=status.HTTP_202_ACCEPTED, tags=["decisions"],
              responses={200: {"model": DecisionAccepted, "description": "the certificate was ready within `wait`"}})
    async def request_decision(model_id: ModelId, body: DecisionRequest, state: State, request: Request,
                               wait: Annotated[float, Query(ge=0, le=60, description="seconds to wait for the "
                                                                                    "certificate")] = 0,
                               idempotency_key: Annotated[str | None, Header(
                                   alias=IDEMPOTENCY_KEY_HEADER, pattern=IDEMPOTENCY_KEY_PATTERN,
                                   description="a random key of the client's: the same key and record again "
                                               "answer the same job and token (a retry after a lost answer)")]
                               = None) -> Any:
        """A customer's record in; the decision and the job that proves its certificate out.

        With an Idempotency-Key, a retry of the same request answers the job the first made (never a second
        job, certificate or log leaf); the same key with another record or box is 409."""
        loaded = await run_in_threadpool(state.registry.get, model_id)
        card = await run_in_threadpool(state.registry.card, model_id)
        if card.commitment != loaded.commitment:  # a publication between the two reads: never mix them
            raise Unavailable(f"model {model_id} is being republished; retry in a moment")
        missing = [lens for lens in body.lenses if lens not in card.lenses]
        if missing:
            raise BadRequest(f"model {model_id} does not prove {', '.join(missing)}; its certificates prove "
                             f"{', '.join(card.lenses)}")
        delta = _persistence_delta(card, model_id, body.delta)
        wait_s = state.rate_limit.take(request.client.host if request.client else "unknown") \
            if state.rate_limit is not None else None
        if wait_s is not None:
            raise TooManyRequests(f"too many decision requests from this client; retry in {math.ceil(wait_s)} s",
                                  math.ceil(wait_s))
        query, decision = await run_in_threadpool(loaded.decide, body.record)
        job_request = {"query": list(query), **delta}
        idempotency = None if idempotency_key is None else _idempotency_hash(model_id, idempotency_key)
        held = None if idempotency is None else await run_in_threadpool(state.ledger.idempotent, idempotency)
        if held is None:
            await run_in_threadpool(_admit, state.ledger, state.settings, model_id)
        token = secrets.token_urlsafe(32) if idempotency_key is None else _idempotent_token(model_id, idempotency_key)
        job = held or await run_in_threadpool(partial(_submit, state.ledger, state.settings, CERTIFICATE, model_id,
                                                      job_request, decision=decision, card_digest=card.digest(),
                                                      access_hash=token_hash(token), idempotency_hash=idempotency))
        if job.request != job_request or job.access_hash != token_hash(token):
            raise Conflict(f"the Idempotency-Key was used for another decision request (job {job.id}); "
                           "choose a new random key for each decision")
        if held is None:
            await state.dispatcher.enqueue(job.id)
        log.info("decision requested", extra={"job_id": job.id, "model_id": model_id, "decision": decision})
        if wait:
            deadline = time.monotonic() + wait
            while not job.finished and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                job = await run_in_threadpool(state.ledger.get, job.id) or job
        label = card.architecture.class_labels[decision]
        accepted = DecisionAccepted(
            job_id=job.id, model_id=model_id, decision=decision, decision_label=label, status=job.status,
            job_url=f"{API_PREFIX}/jobs/{job.id}",
            certificate_url=f"{API_PREFIX}/certificates/{job.certificate_id}" if job.certificate_id else None,
            job_token=token,
        )
        code = status.HTTP_200_OK if job.certificate_id else status.HTTP_202_ACCEPTED
        return JSONResponse(accepted.model_dump(), status_code=code)

    @app.get(f"{API_PREFIX}/jobs/{{job_id}}", response_model=JobView, tags=["decisions"])
    def job_status(job_id: Annotated[str, Path(pattern=UUID)], state: State, access: JobAccess) -> JobView:
        """Where a job is: queued, running (with its stage and progress), succeeded or failed (with why).

        Read with the job's token (header X-Job-Token, from the decision's answer) or the admin key."""
        job = state.ledger.get(job_id)
        if job is None or not access.may_read(job.access_hash, state.settings):
            raise NotFound(f"unknown job {job_id}")
        return _job_view(job)

    @app.get(f"{API_PREFIX}/certificates/{{certificate_id}}", tags=["decisions"],
             responses={200: {"model": CertificateBundle, "description": "the certificate bundle"}})
    def certificate(certificate_id: Annotated[str, Path(pattern=UUID)], state: State, access: JobAccess) -> Response:
        """The certificate bundle as issued, with its and its card's inclusion in the transparency log
        against the newest signed checkpoint (verify it with `fairproof-verify`).

        Read with its job's token (header X-Job-Token) or the admin key."""
        found = state.ledger.certificate(certificate_id)
        job = state.ledger.get(found[2]) if found is not None else None
        if found is None or job is None or not access.may_read(job.access_hash, state.settings):
            raise NotFound(f"unknown certificate {certificate_id}")
        text, leaf_index, _ = found
        if leaf_index is None:  # issued before this service kept a log
            return Response(text, media_type="application/json")
        bundle = CertificateBundle.model_validate_json(text)
        evidence = state.log.evidence(leaf_index, bundle.card_digest)
        return Response(bundle.model_copy(update={"log": evidence}).model_dump_json(),
                        media_type="application/json")

    # ------------------------------------------------------------ admin
    @app.post(f"{API_PREFIX}/admin/models", response_model=ModelSummary, status_code=status.HTTP_201_CREATED,
              tags=["admin"], dependencies=[Admin])
    def register_model(body: RegisterModel, state: State) -> ModelSummary:
        """Serve a committed model directory (by name, inside the models directory). Idempotent."""
        loaded = state.registry.register(body.directory)
        log.info("model registered", extra={"model_id": loaded.model_id, "commitment": loaded.commitment})
        return _summary(state.registry.card(loaded.model_id))

    @app.post(f"{API_PREFIX}/admin/models/{{model_id}}/card", response_model=ModelSummary, tags=["admin"],
              dependencies=[Admin], responses={201: {"model": ModelSummary, "description": "a new card"}})
    def publish_card(model_id: ModelId, state: State) -> Any:
        """Publish the card now in the model's directory (after `fairproof commit --force`, say).

        Appends it to the transparency log and serves it from then on; customers who pinned the
        old commitment will refuse it, and monitors report the change. 200 if it is already published."""
        card, new = state.registry.publish(model_id)
        if new:
            log.warning("model card published", extra={"model_id": model_id, "commitment": card.commitment,
                                                       "card_digest": card.digest()})
        return JSONResponse(_summary(card).model_dump(), status_code=201 if new else 200)

    @app.post(f"{API_PREFIX}/admin/models/{{model_id}}/precompute", response_model=JobView,
              status_code=status.HTTP_202_ACCEPTED, tags=["admin"], dependencies=[Admin])
    async def start_precompute(model_id: ModelId, body: PrecomputeRequest, state: State) -> JobView:
        """Enumerate the model's regions into its store (resumable) and optionally set up circuit keys."""
        await run_in_threadpool(state.registry.get, model_id)
        job = await run_in_threadpool(_submit_precompute, state.ledger, state.settings, model_id, body.model_dump())
        if job is not None:
            await state.dispatcher.enqueue(job.id)
            return _job_view(job)
        raise TooManyRequests(f"{state.settings.max_queued_precompute} precompute jobs are waiting or running; "
                              "retry when one has finished", 30)

    @app.get(f"{API_PREFIX}/admin/audit", tags=["admin"], dependencies=[Admin])
    def audit_log(state: State, after: Annotated[int, Query(ge=0, le=INT32_MAX, description="the last `seq` read")] = 0,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
        """Issued certificates in issue order (append-only)."""
        with state.db.sessions() as session:
            rows = session.scalars(select(AuditEntry).where(AuditEntry.seq > after)
                                   .order_by(AuditEntry.seq).limit(limit)).all()
            entries = [{c.name: getattr(r, c.name) for c in AuditEntry.__table__.columns} for r in rows]
        for e in entries:
            e["at"] = e["at"].isoformat()
        return {"entries": entries}

