"""The API's contract as /openapi.json states it, and the checks that make it true.

- `answers(...)`: an operation's error responses, from the service errors (errors.py) its handler and
  dependencies can raise: each operation lists those it can answer, and no other.
- `ContractRoute`: every route with a body refuses (400) one that is not UTF-8 text or is nested deeper
  than `MAX_BODY_DEPTH`, before any field is read. `AdminRoute` checks the admin key first of all, so an
  unauthenticated admin request is 401 whatever its body.
- `install_openapi(app)`: the description as served, with each served model's record (from its published
  card: record_contract) as the body of its decision requests.
"""
from __future__ import annotations

import copy
import logging
import re
from typing import Any, Callable, Coroutine, Mapping

from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute, iter_route_contexts

from commitments.api import ADMIN_KEY_HEADER, RADIUS_DESCRIPTION, RADIUS_WORDS, ErrorBody
from commitments.card import ModelCard

from .errors import (BadRequest, MalformedBody, ServiceError, TooLarge, TooManyRequests, Unavailable)
from .record_contract import RecordContract
from .state import check_admin

log = logging.getLogger("fairproof.service")

# No request of this API nests deeper than a few levels; a body nested deeper is refused before it is parsed.
MAX_BODY_DEPTH = 32

RETRY_AFTER = {"Retry-After": {"description": "seconds to wait before asking again", "required": True,
                               "schema": {"type": "integer", "minimum": 0}}}


def answers(*errors: type[ServiceError], notes: Mapping[int, str] | None = None) -> dict[int | str, dict[str, Any]]:
    """`responses=` for these errors: each with ErrorBody, its description (or `notes[status]`), and a
    Retry-After header for 429 and 503."""
    out: dict[int | str, dict[str, Any]] = {}
    for error in errors:
        entry: dict[str, Any] = {"model": ErrorBody, "description": (notes or {}).get(error.status_code,
                                                                                      error.description)}
        if error in (TooManyRequests, Unavailable):
            entry["headers"] = RETRY_AFTER
        out[error.status_code] = entry
    return out


# What any route with a JSON body can answer before its fields are read.
BODY_ERRORS = (MalformedBody, TooLarge, BadRequest)


# ------------------------------------------------------------------ routes
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


def body_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON text (strings skipped; malformed text is measured anyway)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth = depth + 1 if bracket in "[{" else depth - 1
        deepest = max(deepest, depth)
    return deepest


async def check_body(request: Request) -> None:
    """400 for a body that is not UTF-8 text (a byte-order mark included) or nests deeper than MAX_BODY_DEPTH."""
    body = await request.body()
    if not body:
        return
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedBody("the request body is not UTF-8 text; send JSON encoded as UTF-8") from None
    if text.startswith("\ufeff"):
        raise MalformedBody("the request body begins with a byte-order mark; send UTF-8 JSON without one")
    if body_depth(text) > MAX_BODY_DEPTH:
        raise MalformedBody(f"the request body nests arrays or objects deeper than {MAX_BODY_DEPTH} levels")


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class ContractRoute(APIRoute):
    """A route whose body, if it takes one, is checked (`check_body`) before FastAPI reads its fields."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def checked(request: Request) -> Response:
            await check_body(request)
            return await handler(request)

        return checked


class AdminRoute(ContractRoute):
    """An admin route: the admin key is checked before anything else, the body included."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()

        async def admin_first(request: Request) -> Response:
            check_admin(request.app.state.service.settings, request.headers.get(ADMIN_KEY_HEADER))
            return await handler(request)

        return admin_first


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method some route of `app` answers at `path` (a 405's Allow header)."""
    methods: set[str] = set()
    for route in iter_route_contexts(app.routes):  # included routers' routes at their full paths
        pattern = getattr(route, "path_regex", None)
        if pattern is not None and pattern.match(path) and route.methods:
            methods |= set(route.methods)
    return sorted(methods)


# ------------------------------------------------------------------ the description as served
DECISION_OPERATION = "request_decision"


def install_openapi(app: FastAPI) -> None:
    """Serve the description with each served model's record and decision request (built from its published
    card) as the body of its decision requests. The static part is built once; the models' part follows the
    models registered and their published cards."""
    generated = app.openapi
    static: list[dict[str, Any]] = []
    built: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}

    def served() -> list[tuple[ModelCard, RecordContract | None]]:
        state = getattr(app.state, "service", None)
        if state is None:
            return []
        out = []
        for model_id in state.registry.model_ids():
            try:
                card = state.registry.card(model_id)
            except ServiceError as exc:  # one broken model must not hide the others
                log.warning("model not described", extra={"model_id": model_id, "reason": exc.detail})
                continue
            out.append((card, state.contracts.of(card)))
        return out

    def openapi() -> dict[str, Any]:
        models = served()
        key = tuple((card.model_id, card.digest()) for card, _ in models)
        if key not in built:
            built.clear()
            if not static:
                static.append(without_null_parameters(generated()))
            built[key] = describe_models(static[0], models)
        return built[key]

    app.openapi = openapi  # type: ignore[method-assign]


def without_null_parameters(doc: dict[str, Any]) -> dict[str, Any]:
    """An optional parameter is absent or a value, never null: a header or query value is text, and "null"
    is not what it means. (Python's `str | None = None` describes null as a value.)"""
    for item in doc.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else ():
                schema = parameter.get("schema", {})
                values = [s for s in schema.get("anyOf", ()) if s != {"type": "null"}]
                if not parameter.get("required") and len(values) == 1 and len(schema["anyOf"]) == 2:
                    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
                    parameter["schema"] = {**values[0], **rest}
    return doc


def describe_models(static: dict[str, Any], models: list[tuple[ModelCard, RecordContract | None]]) -> dict[str, Any]:
    """`static` with a record and a decision request per model, and the decision body one of them."""
    doc = copy.deepcopy(static)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    bodies = []
    for card, contract in models:
        if contract is None:  # no preprocessing on the card: only the generic request describes it
            bodies.append({"$ref": "#/components/schemas/DecisionRequest"})
            continue
        schemas[f"Record_{card.model_id}"] = contract.schema()
        schemas[f"DecisionRequest_{card.model_id}"] = decision_request_schema(card)
        bodies.append({"$ref": f"#/components/schemas/DecisionRequest_{card.model_id}"})
    if not bodies:
        return doc
    for item in doc["paths"].values():
        for operation in item.values():
            if isinstance(operation, dict) and operation.get("operationId") == DECISION_OPERATION:
                unique = list({body["$ref"]: body for body in bodies}.values())
                content = operation["requestBody"]["content"]["application/json"]
                content["schema"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
    return doc


def decision_request_schema(card: ModelCard) -> dict[str, Any]:
    """A decision request for this model: its record, the lenses its card proves, a persistence delta only
    when the card has that lens (up to its widest moved feature; null, or none, for the card's own), and the
    radius mode (null, or none, for the service's)."""
    properties: dict[str, Any] = {
        "record": {"$ref": f"#/components/schemas/Record_{card.model_id}"},
        "lenses": {"type": "array", "items": {"enum": list(card.lenses)}, "default": [],
                   "description": "lenses the certificate must prove; every certificate proves all of "
                                  f"{', '.join(card.lenses)}"},
    }
    if card.persistence is not None:
        widest = min(100.0, card.persistence_delta_cap / (1 << card.scale_bits))
        properties["delta"] = {"type": ["number", "null"], "minimum": 0, "maximum": widest,
                               "description": "persistence lens: how far the numeric features move, in "
                                              "standard deviations (null: the card's default)"}
    else:
        properties["delta"] = {"type": "null", "description": "this model proves no persistence lens: no delta"}
    properties["radius"] = {"enum": [*RADIUS_WORDS, None], "description": RADIUS_DESCRIPTION}
    return {"title": f"Decision request for model {card.model_id}", "type": "object", "properties": properties,
            "required": ["record"], "additionalProperties": False}
