"""What the transparency log holds and how it is shown: leaves, proofs, evidence.

The log (package `transparency`) knows nothing of fairness; this module says
what FairProof writes into it. One leaf per event, as canonical JSON (sorted
keys, no spaces, ASCII):

    card_published         model_id, commitment, card_digest
    decision_requested     model_id, card_digest, request_id, decision
    certificate_committed  model_id, card_digest, bucket, request_id, decision, status,
                           eps_numerator, eps_scale_bits, capped, spread, persistence,
                           signals_commitment
    card_attested          model_id, card_digest, auditor_key, attestation_digest
    certificate_issued     model_id, card_digest, bucket, public_signals, request_id
                           (old: no longer appended, still parsed; see below)

A certificate's leaf (`certificate_committed`) says only what the public may
know of the certificate, each field a function of its verified claims
(commitments.claims): the decision, the status, eps = eps_numerator /
2^eps_scale_bits and whether it is the bucket's cap, and the lenses' small
summaries (`SpreadSummary`, `PersistenceSummary`: counts, never which slice or
value is the customer's). The rest of the statement, the query among it, is
bound by `signals_commitment`, a salted hash of the full public signals
(`signals_commitment`): the salt is drawn at random per certificate, never
published, and served only in the customer's bundle
(`CertificateBundle.log_salt`), so the commitment hides the signals from
everyone else, however few the possible queries. The customer rebuilds the leaf from the claims it verified, the
salt and the signals, so a leaf whose public fields contradict the proof, or
that commits with another salt, is not the customer's leaf.

The old `certificate_issued` leaf held the public signals themselves, hence
the customer's query: logs that already hold such leaves keep them (the tree
is append-only), but the service serves them redacted (`LogEntry.redacted`:
their leaf hash only), and the customer who holds such a bundle (without
`log_salt`) still checks its inclusion.

A leaf never holds the proof bytes, which anyone can re-randomise into
another valid proof of the same statement, nor the customer's raw record. The
customer's side rebuilds every leaf from data it has verified, so a leaf is
never taken on the bank's word.

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Annotated, Final, Literal, Sequence, TypeAlias, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from circuits.field import R

from .canonical import FrDecimal, NonCanonical, Sha256Hex, hex_validator, parse_decimal

if TYPE_CHECKING:
    from .bundle import CertificateBundle

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


class SpreadSummary(_Frozen):
    """The spread lens, summarised: how many distinct decisions the sensitive slices make at the query,
    and how many margin buckets they fall in (not which slice decides what, nor which is the customer's)."""

    distinct_decisions: int = Field(ge=1, lt=2**16)
    score_buckets: int = Field(ge=1, lt=2**16)


class PersistenceSummary(_Frozen):
    """The persistence lens, summarised for one sensitive attribute: of its values other than the
    customer's own, how many the customer is favoured over (lower bound > 0), disfavoured against
    (upper bound < 0), or neither (inconclusive). Counts only: a per-value status would name the
    customer's own value (it is never conclusive), so the summary says nothing of which it is."""

    attribute: str = Field(min_length=1, max_length=128)
    favoured: int = Field(ge=0, lt=2**16)
    disfavoured: int = Field(ge=0, lt=2**16)
    inconclusive: int = Field(ge=0, lt=2**16)


# The statuses a persistence bound can have (commitments.bundle.PersistenceStatus).
_SUMMARISED = ("favoured", "disfavoured", "inconclusive")


class CertificateCommitted(_Frozen):
    """A certificate, as the public may know it: every field but `signals_commitment` is derived from the
    verified claims, and `signals_commitment` (`signals_commitment()`) binds the full public signals
    under a salt that is never published (the bank stores it with the bundle, its customer receives it)."""

    kind: Literal["certificate_committed"] = "certificate_committed"
    model_id: ModelIdText
    card_digest: Sha256Hex
    bucket: str = Field(min_length=1, max_length=64)
    request_id: RequestId | None = None
    decision: int = Field(ge=0, lt=2**16)
    status: Literal["certified", "counterfactual_flip"]
    eps_numerator: int = Field(ge=0, lt=R)
    eps_scale_bits: int = Field(ge=0, le=64)
    capped: bool
    spread: SpreadSummary | None = None
    persistence: tuple[PersistenceSummary, ...] | None = Field(default=None, max_length=256)
    signals_commitment: Sha256Hex


class CardAttested(_Frozen):
    """An auditor's attestation of a published card (commitments.attestation), by the SHA-256 of its note."""

    kind: Literal["card_attested"] = "card_attested"
    model_id: ModelIdText
    card_digest: Sha256Hex
    auditor_key: str = Field(min_length=1, max_length=512)
    attestation_digest: Sha256Hex


Leaf: TypeAlias = CardPublished | DecisionRequested | CertificateCommitted | CardAttested | CertificateIssued
LogLeaf = Annotated[Union[CardPublished, DecisionRequested, CertificateCommitted, CardAttested, CertificateIssued],
                    Field(discriminator="kind")]
CertificateLeaf: TypeAlias = CertificateCommitted | CertificateIssued

# Leaves the service serves without their data (`LogEntry.redacted`): the old certificate leaf holds a
# customer's query. No other kind is ever withheld.
REDACTED_KINDS: Final = ("certificate_issued",)


class _LeafDocument(_Frozen):
    leaf: LogLeaf


def leaf_bytes(leaf: Leaf) -> bytes:
    """The leaf's one spelling: the bytes the log hashes."""
    return json.dumps(leaf.model_dump(mode="json"), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True).encode("ascii")


def parse_leaf(data: bytes) -> Leaf:
    """A leaf from its bytes, refused unless the bytes are its canonical spelling."""
    from .canonical import parse_strict

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
    """The old certificate leaf (public signals in the clear), for bundles logged before `log_salt`."""
    return CertificateIssued(model_id=model_id, card_digest=card_digest, bucket=bucket,
                             public_signals=tuple(public_signals), request_id=request_id)


SIGNALS_TAG: Final = b"fairproof/log/certificate-signals/v1\x00"
LOG_SALT_BYTES: Final = 32


def signals_commitment(salt: str, public_signals: Sequence[str]) -> str:
    """SHA-256, as 64 lower-case hex digits, of

        SIGNALS_TAG                      the 37 ASCII bytes "fairproof/log/certificate-signals/v1" and 0x00
        salt                             32 bytes (`salt` is their 64 lower-case hex digits)
        n                                the number of public signals, 4 bytes big-endian
        signal[0] ... signal[n-1]        each 32 bytes big-endian

    where the signals are the bundle's `public_signals` (snarkjs's public.json, in order), each a
    canonical decimal below the BN254 scalar field order R, so each has one 32-byte encoding and the
    whole one byte string. ValueError for a salt that is not 64 lower-case hex digits or a signal
    that is not canonical."""
    if len(salt) != 2 * LOG_SALT_BYTES or any(c not in "0123456789abcdef" for c in salt):
        raise ValueError("log salt: expected 64 lower-case hex digits")
    if len(public_signals) >= 2**32:
        raise ValueError("too many public signals")
    parts = [SIGNALS_TAG, bytes.fromhex(salt), len(public_signals).to_bytes(4, "big")]
    for i, text in enumerate(public_signals):
        try:
            parts.append(parse_decimal(text, R, f"public signal {i}").to_bytes(32, "big"))
        except NonCanonical as exc:
            raise ValueError(str(exc)) from None
    return hashlib.sha256(b"".join(parts)).hexdigest()


def persistence_summary(statuses: Sequence[tuple[str, str]]) -> tuple[PersistenceSummary, ...]:
    """Per attribute, in the order the attributes first appear in `statuses` ((attribute, status) per
    counterfactual pair, in the card's order): how many of its values other than the customer's own
    ("own", which is left out) are favoured, disfavoured, inconclusive."""
    counts: dict[str, dict[str, int]] = {}
    for attribute, status in statuses:
        row = counts.setdefault(attribute, dict.fromkeys(_SUMMARISED, 0))
        if status == "own":
            continue
        if status not in row:
            raise ValueError(f"persistence status {status!r} is not one of own, {', '.join(_SUMMARISED)}")
        row[status] += 1
    return tuple(PersistenceSummary(attribute=a, **row) for a, row in counts.items())


def committed_certificate_leaf(*, model_id: str, card_digest: str, bucket: str, request_id: str | None,
                               decision: int, status: str, eps_numerator: int, eps_scale_bits: int, capped: bool,
                               spread: tuple[int, int] | None, persistence: Sequence[tuple[str, str]] | None,
                               public_signals: Sequence[str], salt: str) -> CertificateCommitted:
    """The certificate leaf from a certificate's claims: `spread` is (distinct decisions, score buckets),
    `persistence` (attribute, status) per counterfactual pair, both None without the lens."""
    return CertificateCommitted.model_validate({
        "model_id": model_id, "card_digest": card_digest, "bucket": bucket, "request_id": request_id,
        "decision": decision, "status": status, "eps_numerator": eps_numerator, "eps_scale_bits": eps_scale_bits,
        "capped": capped,
        "spread": None if spread is None else SpreadSummary(distinct_decisions=spread[0], score_buckets=spread[1]),
        "persistence": None if persistence is None else persistence_summary(persistence),
        "signals_commitment": signals_commitment(salt, public_signals)})


def bundle_certificate_leaf(bundle: "CertificateBundle") -> CertificateLeaf:
    """The leaf the service logs for `bundle`, from its readable fields, which the prover has checked are
    its claims (`commitments.claims.bundle_claims`), and its `log_salt`; the old `certificate_issued`
    leaf for a bundle without a salt (one logged before the salt existed). A customer never uses this:
    it rebuilds the leaf from the claims it derived itself (verifier_client.log_check)."""
    if bundle.log_salt is None:
        return certificate_leaf(bundle.model_id, bundle.card_digest, bundle.bucket, bundle.public_signals,
                                bundle.request_id)
    return committed_certificate_leaf(
        model_id=bundle.model_id, card_digest=bundle.card_digest, bucket=bundle.bucket, request_id=bundle.request_id,
        decision=bundle.decision, status=bundle.status, eps_numerator=bundle.eps.numerator,
        eps_scale_bits=bundle.eps.scale_bits, capped=bundle.eps.capped,
        spread=None if bundle.spread is None else (bundle.spread.distinct_decisions, bundle.spread.score_buckets),
        persistence=None if bundle.persistence is None else [(b.attribute, b.status) for b in bundle.persistence.bounds],
        public_signals=bundle.public_signals, salt=bundle.log_salt)


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
    """One leaf as served: its canonical JSON (`data`; its leaf hash is H(0x00 || data)), or, for a leaf
    the service withholds (an old `certificate_issued` leaf, which holds a customer's query), only its
    leaf hash and its kind (`redacted`), enough to recompute the tree but not to read the leaf."""

    index: TreeIndex
    data: str | None = Field(default=None, max_length=512 * 1024, exclude_if=lambda data: data is None)
    leaf_hash: HashHex | None = Field(default=None, exclude_if=lambda h: h is None)
    redacted: str | None = Field(default=None, min_length=1, max_length=64, exclude_if=lambda kind: kind is None)

    @model_validator(mode="after")
    def _data_or_redacted(self) -> "LogEntry":
        if (self.data is None) == (self.leaf_hash is None) or (self.leaf_hash is None) != (self.redacted is None):
            raise ValueError("a log entry has either its data, or (redacted) its leaf hash and kind")
        return self


class LogEntries(_Frozen):
    entries: tuple[LogEntry, ...] = Field(max_length=MAX_ENTRIES_PER_PAGE)


class PublishedCard(_Frozen):
    """A card the log holds (by digest), with its inclusion against a signed checkpoint."""

    card_json: str  # the card's canonical JSON: its SHA-256 is the digest
    checkpoint: str = Field(min_length=1, max_length=MAX_CHECKPOINT_CHARS)
    inclusion: LogInclusion
