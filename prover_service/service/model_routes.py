"""The models the bank serves and their published cards.

    GET /v1/models                   -> ModelList
    GET /v1/models/{model_id}/card   -> ModelCard
"""
from __future__ import annotations

import logging

from fastapi import APIRouter, Response

from commitments.api import API_PREFIX, ModelList, ModelSummary
from commitments.card import ModelCard

from .contract import ContractRoute, answers
from .errors import BadRequest, NotFound, ServiceError, Unavailable
from .state import ModelId, State

log = logging.getLogger("fairproof.service")

router = APIRouter(tags=["models"], route_class=ContractRoute)

# Where a model's summary leads (the description's links: its id and card digest to other operations).
MODEL_LINKS = {
    "GetCard": {"operationId": "model_card", "parameters": {"model_id": "$response.body#/model_id"},
                "description": "the model's published card"},
    "RequestDecision": {"operationId": "request_decision", "parameters": {"model_id": "$response.body#/model_id"},
                        "description": "a customer's decision by this model"},
    "ListAttestations": {"operationId": "list_attestations",
                         "parameters": {"model_id": "$response.body#/model_id"},
                         "description": "auditors' attestations of the model's cards"},
    "GetPublishedCard": {"operationId": "published_card",
                         "parameters": {"card_digest": "$response.body#/card_digest"},
                         "description": "the card in the transparency log, with its inclusion"},
}


def summary(card: ModelCard) -> ModelSummary:
    return ModelSummary(
        model_id=card.model_id, description=card.description, dataset=card.dataset, commitment=card.commitment,
        card_digest=card.digest(), n_inputs=card.architecture.n_inputs, hidden_sizes=card.architecture.hidden_sizes,
        sensitive_features=tuple(f.name for f in card.sensitive), buckets=tuple(b.bucket for b in card.circuits),
        card_url=f"{API_PREFIX}/models/{card.model_id}/card", lenses=card.lenses,
    )


@router.get("/models", response_model=ModelList, responses={
    200: {"links": {name: {**link, "parameters": {k: v.replace("#/", "#/models/0/")
                                                  for k, v in link["parameters"].items()}}
                    for name, link in MODEL_LINKS.items()}},
    **answers(Unavailable)})
def list_models(state: State) -> ModelList:
    """The models this bank serves, with their commitments."""
    summaries = []
    for model_id in state.registry.model_ids():
        try:
            summaries.append(summary(state.registry.card(model_id)))
        except ServiceError as exc:  # one broken model must not hide the others
            log.warning("model not listed", extra={"model_id": model_id, "reason": exc.detail})
    return ModelList(models=tuple(summaries))


@router.get("/models/{model_id}/card", response_model=ModelCard, responses=answers(
    NotFound, BadRequest, Unavailable, notes={404: "no model with this id is served",
                                              422: "the model id is malformed"}))
def model_card(model_id: ModelId, state: State) -> Response:
    """The model's published card: architecture, domain box, sensitive features, commitment, verifying keys.

    Always the card in the transparency log (`/v1/log/cards/{card_digest}` proves it is there), in its RFC 8785
    canonical form: the bytes whose SHA-256 is the card digest."""
    return Response(state.registry.card(model_id).canonical_json(), media_type="application/json")
