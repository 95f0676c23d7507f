"""Publishing a model card: the one way a card reaches customers.

A card is served only once it is in the transparency log. Publishing appends
its leaf, keeps its JSON by digest (so auditors can fetch every card the
model ever had) and makes it the model's current card, in the caller's
transaction. What may be published automatically and what needs an admin is
decided by the callers (the registry and the ledger), not here.
"""
from __future__ import annotations

from sqlalchemy.orm import Session

from commitments.card import ModelCard
from commitments.log import CardPublished

from .errors import NotFound, Unavailable
from .schema import PublishedCard, ServedModel
from .transparency_log import TransparencyLog


def publish_card(session: Session, log: TransparencyLog, served: ServedModel, card: ModelCard) -> int:
    """Append `card` to the log and make it `served`'s current card; returns its leaf index."""
    digest = card.digest()
    (index,) = log.append(session, [CardPublished(model_id=card.model_id, commitment=card.commitment,
                                                  card_digest=digest)])
    if session.get(PublishedCard, digest) is None:  # a card published before keeps its first leaf
        session.add(PublishedCard(card_digest=digest, model_id=card.model_id, commitment=card.commitment,
                                  card_json=card.canonical_json(), leaf_index=index))
    served.commitment = card.commitment
    served.card_digest = digest
    return index


def publish_added_buckets(session: Session, log: TransparencyLog, card: ModelCard) -> None:
    """Publish `card` if it is the served card with circuit buckets added under the same weights.

    Key setup adds buckets as customers need them; that needs no admin, and the
    log shows each new card. A card under another commitment is refused here:
    only an admin publishes a recommitted model.
    """
    served = session.get(ServedModel, card.model_id)
    if served is None:
        raise NotFound(f"unknown model {card.model_id!r}")
    if served.card_digest == card.digest():
        return
    if served.commitment != card.commitment:
        raise Unavailable(f"model {card.model_id}: the card on disk names commitment {card.commitment[:16]}..., the "
                          f"published card {served.commitment[:16]}...; an admin must publish the new card")
    publish_card(session, log, served, card)
