"""Auditors' attestations of the model cards (commitments.attestation): anyone reads them; auditors add them.

    GET  /v1/models/{model_id}/attestations   -> AttestationList (every one held for any card of the model,
                                                 oldest first)
    POST /v1/models/{model_id}/attestations   Attestation -> Attestation (201 added; 200 held already)

An attestation is added only when its note opens under the key it names (and carries that signature
alone), that key is an auditor the deployment names (FAIRPROOF_AUDITORS) or the request carries the
admin key (X-API-Key), and its statement attests, exactly, a card the transparency log published for
this model (any card it ever published, not only the current one). The row and its `card_attested`
leaf are written in one transaction: the log never names an attestation the service does not hold,
and the service never serves one the log does not name.

Refusals: 422 malformed, mis-signed or not covering the card; 401 a wrong admin key; 403 an auditor
this deployment does not name, without the admin key; 404 an unknown model, or a card the log never
published for it; 409 the model holds as many attestations as its list serves (1000).
"""
from __future__ import annotations

import logging
import re
import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Security, status
from fastapi.responses import JSONResponse
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from commitments.api import API_PREFIX
from commitments.attestation import (MAX_ATTESTATION_CHARS, Attestation, AttestationError, AttestationList,
                                     parse_auditor_key, statement_mismatch, verify_signature)
from commitments.card import ModelCard
from commitments.log import CardAttested
from transparency import note

from .contract import BODY_ERRORS, ContractRoute, answers
from .errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized, Unavailable
from .schema import CardAttestation, PublishedCard, ServedModel
from .settings import Settings
from .state import ADMIN_KEY, ModelId, ServiceState, State

log = logging.getLogger("fairproof.service")

router = APIRouter(tags=["attestations"], route_class=ContractRoute)

# AttestationList carries at most this many: a model holding as many refuses more (409).
MAX_ATTESTATIONS_PER_MODEL = 1000

# A posted attestation is JSON around a note of up to MAX_ATTESTATION_CHARS, which escaping (the
# statement's quotes, the signature line's em dash) less than doubles: more than the service's default.
ATTESTATION_BODY_BYTES = 2 * MAX_ATTESTATION_CHARS + 4096
ATTESTATIONS_PATH = re.compile(re.escape(API_PREFIX) + r"/models/[^/]+/attestations")


def body_limits(settings: Settings) -> tuple[tuple[str, re.Pattern[str], int], ...]:
    """The body limit of POST .../attestations (limits.BodySizeLimit's `larger`): never below the service's."""
    return (("POST", ATTESTATIONS_PATH, max(settings.max_body_bytes, ATTESTATION_BODY_BYTES)),)


@router.get("/models/{model_id}/attestations", response_model=AttestationList, responses=answers(
    NotFound, BadRequest, Unavailable, notes={404: "no model with this id is served", 422: "the model id is malformed"}))
def list_attestations(model_id: ModelId, state: State) -> AttestationList:
    """Every auditor's attestation the service holds for any card of the model, in the log's order.

    Check them with the auditors' keys you trust (`commitments.attestation.check_attestations`): the
    service accepted each from a configured auditor or its admin, which proves nothing to you."""
    with state.db.sessions() as session:
        if session.get(ServedModel, model_id) is None:
            raise NotFound(f"unknown model {model_id!r}")
        rows = session.execute(select(CardAttestation.auditor_key, CardAttestation.note)
                               .where(CardAttestation.model_id == model_id)
                               .order_by(CardAttestation.leaf_index).limit(MAX_ATTESTATIONS_PER_MODEL)).all()
    return AttestationList(attestations=tuple(Attestation(auditor_key=r.auditor_key, note=r.note) for r in rows))


@router.post("/models/{model_id}/attestations", response_model=Attestation, status_code=status.HTTP_201_CREATED,
             responses={
                 201: {"description": "the attestation, kept and appended to the transparency log"},
                 200: {"model": Attestation, "description": "this attestation was held already"},
                 **answers(Unauthorized, Forbidden, NotFound, Conflict, Unavailable, *BODY_ERRORS, notes={
                     401: "the admin key (header X-API-Key) is wrong",
                     403: "the auditor is not one this deployment names (FAIRPROOF_AUDITORS), and no admin key "
                          "was given",
                     404: "no model with this id is served, or the log published no such card of it",
                     409: "the model holds as many attestations as its list serves",
                     422: "the attestation is malformed, mis-signed, or does not attest a card of this model "
                          "(whether it does cannot be told from the request's shape)"}),
             },
             # Anyone may post an auditor's attestation the deployment names; the admin key adds any other.
             openapi_extra={"security": [{}]})
def add_attestation(model_id: ModelId, body: Attestation, state: State,
                    x_api_key: Annotated[str | None, Security(ADMIN_KEY)]) -> Any:
    """An auditor's attestation of one of the model's published cards (see the module docstring).

    Posted by anyone when signed by an auditor the deployment names (FAIRPROOF_AUDITORS); by the
    bank's operator, with the admin key, for any other auditor. Appended to the transparency log
    as a `card_attested` leaf. Idempotent: the same attestation again is 200, with no second leaf."""
    with state.db.sessions() as session:
        if session.get(ServedModel, model_id) is None:
            raise NotFound(f"unknown model {model_id!r}")
    try:
        auditor = parse_auditor_key(body.auditor_key)
    except AttestationError as exc:
        raise BadRequest(f"attestation refused: {exc}") from None
    if auditor.vkey() != body.auditor_key:
        raise BadRequest("attestation refused: its auditor key is not in canonical form (name+keyid+base64, "
                         "no spaces)")
    _authorise(state.settings, auditor, x_api_key)
    try:
        opened = verify_signature(body)
    except AttestationError as exc:
        raise BadRequest(f"attestation refused: {exc}") from None
    statement = opened.statement
    signatures = body.note[len(statement.text()) + 1:]  # the note opened: its text is the statement's
    if signatures.count("\n") != 1:
        raise BadRequest("attestation refused: its note must carry the auditor's signature alone (one "
                         "signature line)")
    if statement.model_id != model_id:
        raise BadRequest(f"attestation refused: it attests a card of model {statement.model_id!r}, not "
                         f"{model_id!r}")
    card = _published_card(state, model_id, statement.card_digest)
    mismatch = statement_mismatch(statement, card, statement.card_digest)
    if mismatch is not None:
        raise BadRequest(f"attestation refused: {mismatch}")
    return _keep(state, model_id, statement.card_digest, body)


def _authorise(settings: Settings, auditor: note.Verifier, api_key: str | None) -> None:
    """A configured auditor's key, or the admin key; else 403 (no key) or 401 (a wrong one)."""
    if auditor.vkey() in {parse_auditor_key(k).vkey() for k in settings.auditor_keys}:
        return
    admin = settings.admin_api_key
    if api_key is not None and admin is not None:
        # Constant time, as for the admin endpoints.
        if secrets.compare_digest(api_key.encode(), admin.get_secret_value().encode()):
            return
        raise Unauthorized("wrong admin API key (header X-API-Key)")
    raise Forbidden(f"attestation refused: auditor {auditor.name} is not one this service accepts attestations "
                    "from (FAIRPROOF_AUDITORS); the bank's operator may add it with the admin key (X-API-Key)")


def _published_card(state: ServiceState, model_id: str, card_digest: str) -> ModelCard:
    with state.db.sessions() as session:
        row = session.get(PublishedCard, card_digest)
        text = row.card_json if row is not None and row.model_id == model_id else None
    if text is None:
        raise NotFound(f"attestation refused: the transparency log published no card {card_digest[:16]}... of "
                       f"model {model_id!r}")
    card = ModelCard.from_json(text)
    if card.digest() != card_digest:
        raise Unavailable(f"model {model_id}: the stored card {card_digest[:16]}... does not hash to its digest")
    return card


class _HeldAlready(Exception):
    pass


def _keep(state: ServiceState, model_id: str, card_digest: str, attestation: Attestation) -> JSONResponse:
    """Add the row and its leaf in one transaction (201), or answer with the one held (200)."""
    digest = attestation.digest()
    held = _held(state, digest)
    if held is not None:
        return _held_answer(held)
    leaf = CardAttested(model_id=model_id, card_digest=card_digest, auditor_key=attestation.auditor_key,
                        attestation_digest=digest)
    try:
        with state.db.transaction() as session:
            (index,) = state.log.append(session, [leaf])  # takes the appenders' lock first: no race below
            if session.get(CardAttestation, digest) is not None:
                raise _HeldAlready()
            count = session.scalar(select(func.count()).select_from(CardAttestation)
                                   .where(CardAttestation.model_id == model_id)) or 0
            if count >= MAX_ATTESTATIONS_PER_MODEL:
                raise Conflict(f"model {model_id} holds {MAX_ATTESTATIONS_PER_MODEL} attestations already, "
                               "as many as its list serves")
            session.add(CardAttestation(attestation_digest=digest, model_id=model_id, card_digest=card_digest,
                                        auditor_key=attestation.auditor_key, note=attestation.note,
                                        leaf_index=index))
    except (_HeldAlready, IntegrityError):
        held = _held(state, digest)
        if held is None:
            raise
        return _held_answer(held)
    log.info("card attested", extra={"model_id": model_id, "card_digest": card_digest,
                                     "auditor_key": attestation.auditor_key, "attestation_digest": digest,
                                     "leaf_index": index})
    return JSONResponse(attestation.model_dump(), status_code=status.HTTP_201_CREATED)


def _held(state: ServiceState, digest: str) -> Attestation | None:
    with state.db.sessions() as session:
        row = session.get(CardAttestation, digest)
        return None if row is None else Attestation(auditor_key=row.auditor_key, note=row.note)


def _held_answer(held: Attestation) -> JSONResponse:
    """The attestation held under the posted one's digest: the same note, whose one signature line
    names the same auditor key."""
    return JSONResponse(held.model_dump(), status_code=status.HTTP_200_OK)
