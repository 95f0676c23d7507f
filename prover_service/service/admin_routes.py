"""The operator's endpoints, with the admin key (header X-API-Key), checked before anything else is read.

    POST /v1/admin/models                          RegisterModel -> ModelSummary (201)
    POST /v1/admin/models/{model_id}/card          -> ModelSummary (201 a new card; 200 published already)
    POST /v1/admin/models/{model_id}/precompute    PrecomputeRequest -> JobView (202)
    GET  /v1/admin/audit?after&limit               -> AuditPage
"""
from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from commitments.api import JobView, ModelSummary, PrecomputeRequest, RegisterModel

from .contract import BODY_ERRORS, AdminRoute, answers
from .errors import BadRequest, Conflict, Forbidden, NotFound, TooManyRequests, Unauthorized, Unavailable
from .jobs import PRECOMPUTE, JobRecord
from .job_routes import job_view
from .model_routes import MODEL_LINKS, summary
from .schema import AuditEntry
from .state import Admin, ModelId, State

log = logging.getLogger("fairproof.service")

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Admin], route_class=AdminRoute)

# Integer query parameters are bounded by their columns' ranges, so that a value out of range is a 422 before the
# database sees it: AuditEntry.seq is a 32-bit INTEGER.
INT32_MAX = 2**31 - 1

# Every admin operation may answer these: no admin key configured (403), a missing or wrong one (401).
_ADMIN_ERRORS = (Unauthorized, Forbidden)
_NOTES = {401: "the admin key (header X-API-Key) is missing or wrong",
          403: "admin endpoints are disabled: this deployment configures no admin key",
          404: "no model with this id is served"}

_PUBLISHED = {"GetPublishedCard": MODEL_LINKS["GetPublishedCard"]}
_JOB_LINK = {"GetJob": {"operationId": "job_status", "parameters": {"job_id": "$response.body#/job_id"},
                        "description": "the precompute job (read it with the admin key)"}}


class AuditRecord(BaseModel):
    """One issued certificate, as the append-only audit log holds it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=1, description="its place in issue order; read on with `after`")
    at: str = Field(description="when it was issued (ISO 8601, UTC)")
    event: str
    model_id: str
    commitment: str
    card_digest: str
    job_id: str
    certificate_id: str
    decision: int
    status: str
    eps_numerator: str = Field(description="the certified radius's numerator, exact (may exceed 64 bits)")
    eps_scale_bits: int
    bundle_sha256: str


class AuditPage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    entries: tuple[AuditRecord, ...]


@router.post("/models", response_model=ModelSummary, status_code=status.HTTP_201_CREATED, responses={
    201: {"description": "the model, served (again: registering is idempotent)", "links": MODEL_LINKS},
    **answers(*_ADMIN_ERRORS, NotFound, Conflict, Unavailable, *BODY_ERRORS, notes={
        **_NOTES, 404: "no such directory in the models directory",
        409: "the model id is registered from another directory or with another commitment",
        422: "the request does not fit RegisterModel, or the directory does not hold a committed model"})})
def register_model(body: RegisterModel, state: State) -> ModelSummary:
    """Serve a committed model directory (by name, inside the models directory). Idempotent."""
    loaded = state.registry.register(body.directory)
    log.info("model registered", extra={"model_id": loaded.model_id, "commitment": loaded.commitment})
    return summary(state.registry.card(loaded.model_id))


@router.post("/models/{model_id}/card", response_model=ModelSummary, responses={
    200: {"description": "this card was published already", "links": _PUBLISHED},
    201: {"model": ModelSummary, "description": "a new card, appended to the transparency log", "links": _PUBLISHED},
    **answers(*_ADMIN_ERRORS, NotFound, Conflict, BadRequest, Unavailable, notes={
        **_NOTES, 409: "the model's directory now holds another model",
        422: "the model id is malformed, or the card in its directory cannot be published"})})
def publish_card(model_id: ModelId, state: State) -> Any:
    """Publish the card now in the model's directory (after `fairproof commit --force`, say).

    Appends it to the transparency log and serves it from then on; customers who pinned the
    old commitment will refuse it, and monitors report the change. 200 if it is already published."""
    card, new = state.registry.publish(model_id)
    if new:
        log.warning("model card published", extra={"model_id": model_id, "commitment": card.commitment,
                                                   "card_digest": card.digest()})
    return JSONResponse(summary(card).model_dump(), status_code=201 if new else 200)


def _submit_precompute(ledger, settings, model_id: str, request: dict[str, Any]) -> JobRecord | None:
    """The precompute job for this request: the same one already waiting or running, else a new one while
    fewer than `max_queued_precompute` are; None when the cap is reached."""
    if ledger.backlog(PRECOMPUTE) >= settings.max_queued_precompute:
        held, _ = ledger.submit_once(PRECOMPUTE, model_id, request, create=False)
        return held
    job, _ = ledger.submit_once(PRECOMPUTE, model_id, request)
    return job


@router.post("/models/{model_id}/precompute", response_model=JobView, status_code=status.HTTP_202_ACCEPTED,
             responses={202: {"description": "the precompute job (the same one again for the same request while "
                                             "it waits or runs)", "links": _JOB_LINK},
                        **answers(*_ADMIN_ERRORS, NotFound, TooManyRequests, Unavailable, *BODY_ERRORS, notes={
                            **_NOTES, 429: "as many precompute jobs as allowed are waiting or running; come back "
                                           "after Retry-After seconds"})})
async def start_precompute(model_id: ModelId, body: PrecomputeRequest, state: State) -> JobView:
    """Enumerate the model's regions into its store (resumable) and optionally set up circuit keys."""
    await run_in_threadpool(state.registry.get, model_id)
    job = await run_in_threadpool(_submit_precompute, state.ledger, state.settings, model_id, body.model_dump())
    if job is not None:
        await state.dispatcher.enqueue(job.id)
        return job_view(job)
    raise TooManyRequests(f"{state.settings.max_queued_precompute} precompute jobs are waiting or running; "
                          "retry when one has finished", 30)


@router.get("/audit", response_model=AuditPage, responses=answers(
    *_ADMIN_ERRORS, BadRequest, Unavailable, notes={**_NOTES, 422: "after or limit is not an integer in range"}))
def audit_log(state: State, after: Annotated[int, Query(ge=0, le=INT32_MAX, description="the last `seq` read")] = 0,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> AuditPage:
    """Issued certificates in issue order (append-only)."""
    with state.db.sessions() as session:
        rows = session.scalars(select(AuditEntry).where(AuditEntry.seq > after)
                               .order_by(AuditEntry.seq).limit(limit)).all()
        entries = tuple(AuditRecord(**{c.name: getattr(r, c.name) for c in AuditEntry.__table__.columns
                                       if c.name != "at"}, at=r.at.isoformat()) for r in rows)
    return AuditPage(entries=entries)
