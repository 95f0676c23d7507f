"""A customer's decision: the record in, the decision and the job that proves its certificate out.

    POST /v1/models/{model_id}/decisions[?wait=S]   DecisionRequest -> DecisionAccepted (202; 200 certified)

Proving never runs in a request: the request records a job in the ledger and hands it to the dispatcher;
`?wait=S` lets a caller of a small model wait up to S seconds for the certificate in the same request.
The record must meet the model's record contract (record_contract: what /openapi.json describes for it).
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import math
import secrets
import time
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from commitments.api import (API_PREFIX, IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_PATTERN, RADIUS_MODES, DecisionAccepted,
                             DecisionRequest)
from commitments.card import TREE_ENSEMBLE, ModelCard
from fairness.radius import Radius

from .contract import BODY_ERRORS, ContractRoute, answers
from .errors import BadRequest, Conflict, NotFound, TooManyRequests, Unavailable, UnknownOption
from .jobs import CERTIFICATE, JobRecord, QueueCaps, QueueFull
from .record_contract import RecordContract
from .registry import LoadedModel, LoadedTreeModel
from .state import ModelId, State, token_hash

log = logging.getLogger("fairproof.service")

router = APIRouter(tags=["decisions"], route_class=ContractRoute)

# A full queue drains at roughly a certificate every few seconds per worker: ask for a short wait.
QUEUE_FULL_RETRY_SECONDS = 10

_JOB_LINK = {"GetJob": {"operationId": "job_status", "parameters": {"job_id": "$response.body#/job_id"},
                        "description": "the job proving the certificate (read it with the answer's job_token, "
                                       "header X-Job-Token)"}}

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


def _submit(ledger, settings, *args, **kwargs) -> JobRecord:
    try:
        return ledger.submit(*args, caps=QueueCaps(settings.max_queued_per_model, settings.max_queued_jobs),
                             **kwargs)
    except QueueFull as exc:
        raise _queue_full(exc.detail) from None


def _radius(radius: str | None) -> dict[str, str]:
    """The job's radius mode when the request names one (none: the service's FAIRPROOF_RADIUS); a word that
    is no mode is refused with the modes named."""
    if radius is None:
        return {}
    if radius not in RADIUS_MODES:
        shown = radius if len(radius) <= 32 else radius[:32] + "..."
        raise UnknownOption(f"radius {shown!r} is not a radius mode; the modes are {', '.join(RADIUS_MODES)}")
    return {"radius": radius}


def _check_request(card: ModelCard, model_id: str, body: DecisionRequest) -> dict[str, Any]:
    """Refuse the lenses, delta and radius the model's decision request (as /openapi.json describes it) does
    not take; the job's persistence delta and radius mode, when the request names them."""
    missing = [lens for lens in body.lenses if lens not in card.lenses]
    if missing:
        raise BadRequest(f"model {model_id} does not prove {', '.join(missing)}; its certificates prove "
                         f"{', '.join(card.lenses)}")
    if card.architecture.kind == TREE_ENSEMBLE and body.radius not in (None, Radius.HYBRID, Radius.BOUND):
        raise BadRequest(f"model {model_id} is a tree ensemble: its certificates state the bound radius, not "
                         f"{body.radius!r}")
    return {**_radius(body.radius), **_persistence_delta(card, model_id, body.delta)}


def _decide(loaded: LoadedModel | LoadedTreeModel, contract: RecordContract | None, record: dict) -> tuple[tuple[int, ...], int]:
    """The query and decision of a record the model's record contract takes; refused (422) otherwise, in the
    model's own words when its preprocessing refuses the record too."""
    try:
        if contract is not None:
            contract.check(record)
    except BadRequest:
        loaded.decide(record)
        raise
    return loaded.decide(record)


@router.post(
    "/models/{model_id}/decisions", response_model=DecisionAccepted, status_code=status.HTTP_202_ACCEPTED,
    responses={
        202: {"description": "the decision; its certificate is being proved (the job says when it is ready)",
              "links": _JOB_LINK},
        200: {"model": DecisionAccepted, "description": "the decision, and its certificate ready within `wait`",
              "links": _JOB_LINK},
        **answers(NotFound, Conflict, TooManyRequests, Unavailable, *BODY_ERRORS, UnknownOption, notes={
            400: "the body is not UTF-8 text or nests too deeply, or names a radius that is no radius mode (the "
                 "reason lists the modes)",
            404: "no model with this id is served",
            409: "this Idempotency-Key was used for another decision request",
            422: "the request does not fit the model's decision request (components DecisionRequest_<model>: "
                 "the record of the model named in the path, the lenses its card proves)",
            429: "too many certificates are waiting (in all or for this model), or too many requests from this "
                 "client; come back after Retry-After seconds",
            503: "briefly unavailable (the database or storage, or the model being republished); retry after "
                 "Retry-After seconds",
        }),
    })
async def request_decision(model_id: ModelId, body: DecisionRequest, state: State, request: Request,
                           wait: Annotated[float, Query(ge=0, le=60, description=(
                               "seconds to wait for the certificate (a service that proves nothing itself, "
                               "FAIRPROOF_WORKERS=0 with the in-process queue, answers at once)"))] = 0,
                           idempotency_key: Annotated[str | None, Header(
                               alias=IDEMPOTENCY_KEY_HEADER, pattern=IDEMPOTENCY_KEY_PATTERN,
                               description="a random key of the client's: the same key and record again "
                                           "answer the same job and token (a retry after a lost answer)")]
                           = None) -> Any:
    """A customer's record in; the decision and the job that proves its certificate out.

    The record is described per model (components Record_<model>, from its card): each attribute once,
    numbers within the model's domain, categories among the card's. With an Idempotency-Key, a retry of the
    same request answers the job the first made (never a second job, certificate or log leaf); the same key
    with another record, box or radius is 409. `radius` names how the certificate states its radius (the
    service's FAIRPROOF_RADIUS when it names none)."""
    loaded = await run_in_threadpool(state.registry.get, model_id)
    card = await run_in_threadpool(state.registry.card, model_id)
    if card.commitment != loaded.commitment:  # a publication between the two reads: never mix them
        raise Unavailable(f"model {model_id} is being republished; retry in a moment")
    options = _check_request(card, model_id, body)
    wait_s = state.rate_limit.take(request.client.host if request.client else "unknown") \
        if state.rate_limit is not None else None
    if wait_s is not None:
        raise TooManyRequests(f"too many decision requests from this client; retry in {math.ceil(wait_s)} s",
                              math.ceil(wait_s))
    query, decision = await run_in_threadpool(_decide, loaded, state.contracts.of(card), body.record)
    job_request = {"query": list(query), **options}
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
    if wait and state.dispatcher.proves:
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
