"""The transparency log's public endpoints: anyone may read the log and check it.

    GET  /v1/log/key                          -> LogKey
    GET  /v1/log/checkpoint                   -> SignedCheckpoint (the newest; signs one if the tree grew)
    GET  /v1/log/entries?start&end            -> LogEntries (leaves [start, end), at most 1000; an old
                                                 certificate_issued leaf redacted to its leaf hash)
    GET  /v1/log/proof/inclusion?leaf_hash&tree_size -> LogInclusion
    GET  /v1/log/proof/consistency?old&new    -> ConsistencyProof
    GET  /v1/log/cards/{card_digest}          -> PublishedCard
    POST /v1/log/cosignatures                 SignedCheckpoint -> SignedCheckpoint (a witness's cosignature)
"""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status
from fastapi.concurrency import run_in_threadpool

from commitments.log import (ConsistencyProof, LogEntries, LogInclusion, LogKey, PublishedCard, SignedCheckpoint)

from .contract import BODY_ERRORS, ContractRoute, answers
from .errors import BadRequest, NotFound, Unavailable
from .schema import PublishedCard as PublishedCardRow
from .state import State

router = APIRouter(prefix="/log", tags=["transparency log"], route_class=ContractRoute)

# Tree sizes and positions are checked against the log's size when asked: a well-formed request for a tree
# the log has not reached is 422 (the description cannot say the log's size).
_BEYOND = "a value is malformed, or names a tree size or position beyond the log's size or out of order"

Size = Annotated[int, Query(ge=0, lt=2**63)]
HashHex = Annotated[str, Query(pattern=r"^[0-9a-f]{64}$", description="a leaf hash, 64 hex digits")]
Digest = Annotated[str, Path(pattern=r"^[0-9a-f]{64}$", description="a card digest, 64 hex digits")]


@router.get("/key", response_model=LogKey)
def log_key(state: State) -> LogKey:
    """The log's origin and the verifier key its checkpoints are signed with (pin it)."""
    return LogKey(origin=state.log.origin, verifier_key=state.log.signer.verifier().vkey())


@router.get("/checkpoint", response_model=SignedCheckpoint, responses=answers(Unavailable))
async def checkpoint(state: State) -> SignedCheckpoint:
    """The newest signed checkpoint (a C2SP signed note), with every witness cosignature received."""
    signed = await run_in_threadpool(state.log.checkpoint)
    return SignedCheckpoint(checkpoint=signed.note)


@router.get("/entries", response_model=LogEntries, responses=answers(BadRequest, Unavailable, notes={
    422: _BEYOND + " (start < end <= the log's size)"}))
def entries(state: State, start: Size, end: Annotated[int, Query(ge=1, lt=2**63)]) -> LogEntries:
    """Leaves [start, end) as their canonical JSON; a page holds at most 1000 (ask again from the next).
    An old `certificate_issued` leaf, which holds a customer's query, is served redacted: its leaf hash and
    kind only (enough to recompute the tree)."""
    return LogEntries(entries=tuple(state.log.entries(start, end)))


@router.get("/proof/inclusion", response_model=LogInclusion, responses=answers(
    NotFound, BadRequest, Unavailable, notes={404: "no leaf with this hash in the tree of that size",
                                              422: _BEYOND + " (1 <= tree_size <= the log's size)"}))
def inclusion(state: State, leaf_hash: HashHex, tree_size: Annotated[int, Query(ge=1, lt=2**63)]) -> LogInclusion:
    """The audit path of the first leaf with this hash in the tree of `tree_size` leaves."""
    index = state.log.find(bytes.fromhex(leaf_hash), tree_size)
    return state.log.inclusion(index, tree_size)


@router.get("/proof/consistency", response_model=ConsistencyProof, responses=answers(
    BadRequest, Unavailable, notes={422: _BEYOND + " (old <= new <= the log's size)"}))
def consistency(state: State, old: Size, new: Annotated[int, Query(ge=1, lt=2**63)]) -> ConsistencyProof:
    """The RFC 9162 consistency proof from the tree of `old` leaves to the tree of `new` leaves."""
    return state.log.consistency(old, new)


@router.get("/cards/{card_digest}", response_model=PublishedCard, responses=answers(
    NotFound, BadRequest, Unavailable, notes={404: "the log published no card with this digest",
                                              422: "the digest is not 64 lowercase hex digits"}))
def published_card(card_digest: Digest, state: State) -> PublishedCard:
    """Any card the log ever published, with its inclusion against the newest checkpoint."""
    with state.db.sessions() as session:
        row = session.get(PublishedCardRow, card_digest)
        if row is None:
            raise NotFound(f"the log holds no card with digest {card_digest}")
        card_json, leaf_index = row.card_json, row.leaf_index
    signed = state.log.checkpoint(at_least=leaf_index + 1)
    return PublishedCard(card_json=card_json, checkpoint=signed.note,
                         inclusion=state.log.inclusion(leaf_index, signed.size))


@router.post("/cosignatures", response_model=SignedCheckpoint, status_code=status.HTTP_201_CREATED,
             responses=answers(Unavailable, *BODY_ERRORS, notes={
                 422: "the request is malformed, or its checkpoint is not one this log signed, cosigned by a "
                      "witness it names (whether it is cannot be told from the request's shape)"}))
def cosign(body: SignedCheckpoint, state: State) -> SignedCheckpoint:
    """A witness hands back a checkpoint of this log with its cosignature; the log serves it from then on."""
    return SignedCheckpoint(checkpoint=state.log.add_cosignature(body.checkpoint).note)
