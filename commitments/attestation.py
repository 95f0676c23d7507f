"""An auditor's attestation: "I checked every key on this card, and this is what I checked."

A card's digest covers its keys, and `fairproof audit-keys` checks from public
data that each key is the key of the statement its shape describes, set up in
the ceremony the card lists. But a customer cannot run that audit for every
decision, and the card a customer sees comes from the bank. An attestation
closes the gap: the auditor who ran the audit signs a canonical statement of
what it checked (a C2SP signed note, Ed25519, as the transparency log's
checkpoints are), and a customer who trusts the auditor's key accepts only a
card that key attested.

The statement (one line of canonical JSON under a fixed header line):

    model_id, card_digest, commitment   which card, for which model and weights
    phase1_digest                       the powers-of-tau file the keys rest on
    circuits                            per bucket and audit circuit: the R1CS digest the
                                        auditor rebuilt from the card's shape, the
                                        verifying key's digest, and the contributions
                                        (hashes) it verified up to that key
    lenses                              what every certificate under the card proves
    date                                the day of the audit (UTC, YYYY-MM-DD)

`attestation_problem` is the customer's rule: some attestation must open
under a trusted auditor's key, and its statement must name this model, this
card digest and this card's commitment and circuits exactly. An attestation of
an older card, another model's card, or signed by any other key, is no
attestation of this card.

Depends on pydantic and transparency only: the verifier client imports it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Annotated, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from transparency import note

from .canonical import Sha256Hex
from .card import AuditCircuit, CircuitBucket, ModelCard

HEADER = "fairproof-card-attestation/v1"
MAX_ATTESTATION_CHARS = 256 * 1024  # a card with hundreds of buckets fits
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
ContributionHash = Annotated[str, Field(pattern=r"^[0-9a-f]{128}$")]


class AttestationError(ValueError):
    """An attestation that cannot be read or does not open (one line)."""


class NotSignedBy(AttestationError):
    """The attestation carries no signature by the key it was opened with (another auditor's, perhaps)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class AttestedCircuit(_Frozen):
    """One circuit bucket (or audit circuit) as the auditor checked it."""

    name: str = Field(min_length=1, max_length=64)
    r1cs_digest: Sha256Hex  # rebuilt by the auditor from the card's public shape
    verifying_key_digest: Sha256Hex  # the final key's, after the contribution chain verified
    contributions: tuple[ContributionHash, ...] = Field(min_length=1, max_length=256)


class AttestationStatement(_Frozen):
    """What an auditor signs (see the module docstring)."""

    model_id: str = Field(min_length=1, max_length=128)
    card_digest: Sha256Hex
    commitment: str = Field(min_length=1, max_length=100)
    phase1_digest: Sha256Hex
    circuits: tuple[AttestedCircuit, ...] = Field(min_length=1, max_length=1024)
    lenses: tuple[str, ...] = Field(max_length=8)
    date: str = Field(pattern=DATE_PATTERN)

    def text(self) -> str:
        """The note text: the header line, then the statement's canonical JSON on one line."""
        body = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return f"{HEADER}\n{body}\n"

    @classmethod
    def from_text(cls, text: str) -> "AttestationStatement":
        header, _, rest = text.partition("\n")
        body, _, tail = rest.partition("\n")
        if header != HEADER or tail != "":
            raise AttestationError(f"not a card attestation (the note must be '{HEADER}' and one JSON line)")
        try:
            statement = cls.model_validate_json(body, strict=True)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ())) or "statement"
            raise AttestationError(f"the attestation's statement is malformed ({where}: {err.get('msg')})") from None
        if statement.text() != text:
            raise AttestationError("the attestation's statement is not in canonical form (sorted keys, no spaces)")
        return statement


class Attestation(_Frozen):
    """An attestation as it travels: the signed note and the key of the auditor who signed it."""

    auditor_key: str = Field(min_length=1, max_length=512)  # C2SP verifier key: name+keyid+base64
    note: str = Field(min_length=1, max_length=MAX_ATTESTATION_CHARS)

    def digest(self) -> str:
        """SHA-256 of the signed note: the attestation's identity in the transparency log."""
        return hashlib.sha256(self.note.encode("utf-8")).hexdigest()

    @classmethod
    def from_json(cls, text: str | bytes) -> "Attestation":
        """Strict parse; raises commitments.canonical.NonCanonical."""
        from .canonical import parse_strict

        return parse_strict(cls, text, "attestation")


class AttestationList(_Frozen):
    """Every attestation a service holds for one model's cards."""

    attestations: tuple[Attestation, ...] = Field(max_length=1000)


@dataclass(frozen=True)
class OpenedAttestation:
    auditor: str  # the auditor key's name
    auditor_key: str  # its verifier key, as the customer trusts it
    statement: AttestationStatement


def parse_auditor_key(vkey: str) -> note.Verifier:
    """An auditor's verifier key (as `fairproof attest keygen` prints it); AttestationError if malformed."""
    try:
        return note.Verifier.from_key(vkey.strip())
    except ValueError as exc:
        raise AttestationError(f"auditor key {vkey[:40]!r} is malformed: {exc}") from None


def sign_attestation(statement: AttestationStatement, signer: note.Signer) -> Attestation:
    return Attestation(auditor_key=signer.verifier().vkey(), note=note.sign(statement.text(), [signer]))


def open_attestation(attestation: Attestation, verifier: note.Verifier) -> OpenedAttestation:
    """The statement of an attestation signed by `verifier`'s key; AttestationError otherwise."""
    try:
        opened = note.open(attestation.note, [verifier])
    except note.UnverifiedNote:
        raise NotSignedBy(f"not signed by {verifier.name}") from None
    except note.NoteError as exc:
        raise AttestationError(f"the attestation is malformed or mis-signed: {exc}") from None
    return OpenedAttestation(verifier.name, verifier.vkey(), AttestationStatement.from_text(opened.text))


def verify_signature(attestation: Attestation) -> OpenedAttestation:
    """The attestation opened under the key it names (proves only that this key signed it)."""
    return open_attestation(attestation, parse_auditor_key(attestation.auditor_key))


def attested_circuits(card: ModelCard) -> tuple[tuple[str, str, str], ...]:
    """(name, R1CS digest, key digest) of every bucket and audit circuit of `card`, in the card's order."""
    entries: tuple[CircuitBucket | AuditCircuit, ...] = (*card.circuits, *card.audit_circuits)
    return tuple((e.bucket if isinstance(e, CircuitBucket) else e.name, e.r1cs_digest, e.verifying_key_digest)
                 for e in entries)


def statement_mismatch(statement: AttestationStatement, card: ModelCard, card_digest: str) -> str | None:
    """Why `statement` does not attest `card` (whose digest is `card_digest`), or None."""
    if statement.model_id != card.model_id:
        return f"it attests a card of model {statement.model_id!r}, not {card.model_id!r}"
    if statement.card_digest != card_digest:
        return f"it attests card {statement.card_digest[:16]}..., not this card {card_digest[:16]}..."
    if statement.commitment != card.commitment:
        return "it names another commitment than the card's"
    attested = tuple((c.name, c.r1cs_digest, c.verifying_key_digest) for c in statement.circuits)
    if attested != attested_circuits(card):
        return "the circuits it lists are not the card's"
    if statement.lenses != card.lenses:
        return "the lenses it lists are not the card's"
    return None


@dataclass(frozen=True)
class AttestationCheck:
    """Which trusted auditors attested a card, and, when none did, why."""

    auditors: tuple[str, ...]  # names of the trusted auditors whose attestation covers the card
    problem: str | None  # None when at least one does


def check_attestations(card: ModelCard, card_digest: str, attestations: Iterable[Attestation],
                       trusted_auditors: Sequence[str]) -> AttestationCheck:
    """The customer's rule (module docstring): some attestation opens under a trusted auditor's key and
    names this model, card digest, commitment, circuits and lenses. With no trusted auditor, nothing is
    required (and `problem` is None)."""
    verifiers = [parse_auditor_key(k) for k in trusted_auditors]
    listed = list(attestations)
    auditors: list[str] = []
    mismatches: list[str] = []
    for verifier in verifiers:
        for attestation in listed:
            try:
                opened = open_attestation(attestation, verifier)
            except NotSignedBy:
                continue
            except AttestationError as exc:
                mismatches.append(f"an attestation under {verifier.name}'s key does not hold: {exc}")
                continue
            mismatch = statement_mismatch(opened.statement, card, card_digest)
            if mismatch is None:
                auditors.append(verifier.name)
                break
            mismatches.append(f"{opened.auditor}'s attestation does not cover this card: {mismatch}")
    if auditors or not verifiers:
        return AttestationCheck(tuple(auditors), None)
    if mismatches:
        return AttestationCheck((), mismatches[0])
    names = ", ".join(v.name for v in verifiers)
    return AttestationCheck((), f"no auditor you trust ({names}) attested this card {card_digest[:16]}... "
                                f"of model {card.model_id!r}")
