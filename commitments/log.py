"""What the transparency log holds and how it is shown: leaves, proofs, evidence.

The log (package `transparency`) knows nothing of fairness; this module says
what FairProof writes into it. One leaf per event, as canonical JSON (sorted
keys, no spaces, ASCII):

    card_published      model_id, commitment, card_digest
    decision_requested  model_id, card_digest, request_id, decision
    certificate_issued  model_id, card_digest, bucket, public_signals, request_id
    card_attested       model_id, card_digest, auditor_key, attestation_digest

A certificate's leaf names its statement (card digest, bucket, public
signals), never the proof bytes, which anyone can re-randomise into another
valid proof of the same statement, and never the customer's raw record. The
customer's side rebuilds every leaf from data it has verified, so a leaf is
never taken on the bank's word.

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

import json
from typing import Annotated, Literal, Sequence, TypeAlias, Union

from pydantic import BaseModel, ConfigDict, Field

from .canonical import FrDecimal, Sha256Hex, hex_validator

MAX_CHECKPOINT_CHARS = 16 * 1024  # a checkpoint with a hundred cosignatures fits easily
MAX_PROOF_HASHES = 64  # log2 of any tree this log can hold
MAX_ENTRIES_PER_PAGE = 1000

HashHex: TypeAlias = Annotated[str, hex_validator(64, "Merkle tree hash")]
ModelIdText = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
RequestId = Annotated[str, Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")]
TreeIndex = Annotated[int, Field(ge=0, lt=2**63)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


# ------------------------------------------------------------------ leaves
class CardPublished(_Frozen):
    kind: Literal["card_published"] = "card_published"
    model_id: ModelIdText
    commitment: str = Field(min_length=1, max_length=100)
    card_digest: Sha256Hex


class DecisionRequested(_Frozen):
    kind: Literal["decision_requested"] = "decision_requested"
    model_id: ModelIdText
    card_digest: Sha256Hex
    request_id: RequestId
    decision: int = Field(ge=0, lt=2**16)


class CertificateIssued(_Frozen):
    kind: Literal["certificate_issued"] = "certificate_issued"
    model_id: ModelIdText
    card_digest: Sha256Hex
    bucket: str = Field(min_length=1, max_length=64)
    public_signals: tuple[FrDecimal, ...] = Field(min_length=1, max_length=4096)
    request_id: RequestId | None = None


class CardAttested(_Frozen):
    """An auditor's attestation of a published card (commitments.attestation), by the SHA-256 of its note."""

    kind: Literal["card_attested"] = "card_attested"
    model_id: ModelIdText
    card_digest: Sha256Hex
    auditor_key: str = Field(min_length=1, max_length=512)
    attestation_digest: Sha256Hex


Leaf: TypeAlias = CardPublished | DecisionRequested | CertificateIssued | CardAttested
LogLeaf = Annotated[Union[CardPublished, DecisionRequested, CertificateIssued, CardAttested],
                    Field(discriminator="kind")]


class _LeafDocument(_Frozen):
    leaf: LogLeaf


def leaf_bytes(leaf: Leaf) -> bytes:
    """The leaf's one spelling: the bytes the log hashes."""
    return json.dumps(leaf.model_dump(mode="json"), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")


def parse_leaf(data: bytes) -> Leaf:
    """A leaf from its bytes, refused unless the bytes are its canonical spelling."""
    from .canonical import NonCanonical, parse_strict

    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise NonCanonical("log leaf: not ASCII") from None
    leaf = parse_strict(_LeafDocument, '{"leaf":' + text + "}", "log leaf").leaf
    if leaf_bytes(leaf) != data:
        raise NonCanonical("log leaf: not in canonical form (sorted keys, no spaces)")
    return leaf


def certificate_leaf(model_id: str, card_digest: str, bucket: str, public_signals: Sequence[str],
                     request_id: str | None) -> CertificateIssued:
    return CertificateIssued(model_id=model_id, card_digest=card_digest, bucket=bucket,
                             public_signals=tuple(public_signals), request_id=request_id)


def card_order_problem(card_index: int, event_index: int, what: str = "certificate") -> str | None:
    """The one rule for the order of leaves, shared by the customer and the monitor: a decision, a
    certificate or an attestation under a card comes after that card's `card_published` leaf. Why
    `card_index` (the card's leaf) and `event_index` break it, or None."""
    if card_index < event_index:
        return None
    return (f"the {what} is leaf {event_index} of the log but its card is published only at leaf {card_index}: "
            "a card is published before anything is issued under it")


# ------------------------------------------------------------------ proofs and evidence
class LogInclusion(_Frozen):
    """Leaf `leaf_index` is in the tree of `tree_size` leaves: the RFC 9162 audit path."""

    leaf_index: TreeIndex
    tree_size: Annotated[int, Field(ge=1, lt=2**63)]
    proof: tuple[HashHex, ...] = Field(max_length=MAX_PROOF_HASHES)


class LogEvidence(_Frozen):
    """A certificate's and its card's inclusion in the log, against one signed checkpoint."""

    checkpoint: str = Field(min_length=1, max_length=MAX_CHECKPOINT_CHARS)  # a C2SP signed note
    certificate: LogInclusion
    card: LogInclusion


class SignedCheckpoint(_Frozen):
    checkpoint: str = Field(min_length=1, max_length=MAX_CHECKPOINT_CHARS)


class LogKey(_Frozen):
    origin: str
    verifier_key: str  # C2SP signed-note verifier key: name+keyid+base64(0x01 || Ed25519 public key)


class ConsistencyProof(_Frozen):
    old_size: TreeIndex
    new_size: TreeIndex
    proof: tuple[HashHex, ...] = Field(max_length=2 * MAX_PROOF_HASHES)


class LogEntry(_Frozen):
    index: TreeIndex
    data: str = Field(max_length=512 * 1024)  # the leaf's canonical JSON; its leaf hash is H(0x00 || data)


class LogEntries(_Frozen):
    entries: tuple[LogEntry, ...] = Field(max_length=MAX_ENTRIES_PER_PAGE)


class PublishedCard(_Frozen):
    """A card the log holds (by digest), with its inclusion against a signed checkpoint."""

    card_json: str  # the card's canonical JSON: its SHA-256 is the digest
    checkpoint: str = Field(min_length=1, max_length=MAX_CHECKPOINT_CHARS)
    inclusion: LogInclusion
