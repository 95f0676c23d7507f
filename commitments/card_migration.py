"""Version-2 cards, and their one-time re-publication as version 3.

A version-2 card's digest was SHA-256 over Python's JSON of the card as the
card model fills it in (defaults written, `sort_keys`, no spaces), which a
browser cannot recompute from the card as published: one card had two
digests. Version 3 hashes the RFC 8785 canonical form of the card exactly as
published, and spells the spread lens's bucket width (wider than 2^53) as a
decimal string.

`migrate` turns a version-2 card's JSON into the same card in version 3;
`legacy_digest` gives the digest a version-2 card had, so that a pin, a
monitor or a service holding it can recognise its re-publication (the same
fields, nothing else changed) without trusting the bank's word.

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from .canonical import NonCanonical, load_json
from .card import LEGACY_CARD_VERSION, ModelCard


def is_legacy(text: str | bytes) -> bool:
    """Whether `text` is a version-2 card (strict JSON whose card_version is 2)."""
    try:
        value = load_json(text, "model card")
    except NonCanonical:
        return False
    return isinstance(value, dict) and value.get("card_version") == LEGACY_CARD_VERSION


def migrate(text: str | bytes) -> ModelCard:
    """The version-3 card with the fields of the version-2 card `text` (NonCanonical if it is not one)."""
    value = load_json(text, "model card")
    if not isinstance(value, dict) or value.get("card_version") != LEGACY_CARD_VERSION:
        raise NonCanonical("model card: not a version-2 card")
    upgraded: dict[str, Any] = {**value, "card_version": 3}
    spread = upgraded.get("spread")
    if isinstance(spread, dict) and type(spread.get("bucket_width")) is int:
        upgraded["spread"] = {**spread, "bucket_width": str(spread["bucket_width"])}
    card = ModelCard.from_json(json.dumps(upgraded))
    return ModelCard.from_json(json.dumps(card.written_value()))  # as version 3 writes it, not as the old file did


def legacy_digest(card: ModelCard) -> str:
    """The digest `card`'s fields had as a version-2 card: SHA-256 of Python's sorted, unspaced JSON of the
    filled-in card without its absent optional parts, version 2, the bucket width a number."""
    data = card.written_value()
    data = {**data, "card_version": LEGACY_CARD_VERSION}
    if card.spread is not None:
        data["spread"] = {**data["spread"], "bucket_width": card.spread.bucket_width}
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
