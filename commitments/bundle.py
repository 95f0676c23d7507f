"""The certificate bundle: what a customer receives with a decision.

A bundle names the model card it was issued under (by digest), the circuit
bucket, the query as fixed-point integers, the decision, the certified radius
(exact rational E / 2^t), and the Groth16 proof with its public inputs in
snarkjs's formats, so anyone can verify it with snarkjs or `fairproof-verify`.

Public inputs of the statement, in order (docs/STATEMENT.md):
    commitment, decision, E, status, flip slice index, query[0..n-1]
with signed query values encoded as field elements (v mod R), then, when the
card proves the spread lens, each slice's decision and the number of
distinct margin buckets (`spread`), and when it proves the persistence lens,
delta and the (lower, upper) bounds of every counterfactual value
(`persistence`; signed, as v mod R).

A certificate proved slice by slice (per-slice exact buckets, `-exact-slice`)
has one proof per sensitive slice, each with one more public input, the
slice it covers: the bundle's own proof is slice 0's (its public signals end
in 0), and `parts` holds slices 1, 2, ... in order, each with its bucket and
proof, whose public signals are the bundle's with that slice's index last.
Every part must verify: together they state what one whole proof states.

Every readable field here (decision, label, radius, status, flip slice,
query) is a claim the bank makes; the customer's side never trusts one of
them. `commitments.claims` derives each from the public signals and the
pinned card, exactly, and a bundle whose fields disagree is refused.

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Annotated, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from circuits.field import R

from .canonical import FqDecimal, FrDecimal, hex_validator
from .log import LogEvidence, RequestId

BUNDLE_VERSION: Final = 1  # Final: its type is Literal[1], the field's

STATUS_CERTIFIED = 0
STATUS_FLIP = 1
Status = Literal["certified", "counterfactual_flip"]
STATUS_CODES: dict[str, int] = {"certified": STATUS_CERTIFIED, "counterfactual_flip": STATUS_FLIP}
STATUS_NAMES: dict[int, str] = {code: name for name, code in STATUS_CODES.items()}

ProofHex: TypeAlias = Annotated[str, hex_validator(256, "compressed proof")]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Radius(_Frozen):
    """eps = numerator / 2^scale_bits, in standardised input units."""

    numerator: int = Field(ge=0, lt=R)
    scale_bits: int = Field(ge=0, le=64)
    capped: bool = False  # True when no decision boundary lies inside the box within the cap

    @property
    def decimal(self) -> str:
        return radius_decimal(self.numerator, self.scale_bits)


def radius_decimal(numerator: int, scale_bits: int) -> str:
    """numerator / 2^scale_bits to 30 significant digits, for people."""
    with localcontext() as ctx:
        ctx.prec = 30
        return str((Decimal(numerator) / (Decimal(2) ** scale_bits)).normalize())


class FlipSlice(_Frozen):
    index: int = Field(ge=0, lt=R)
    values: tuple[int, ...]
    labels: tuple[str, ...]


# snarkjs's proof.json, affine as snarkjs writes it (z = 1): no other projective
# representative of the same point is accepted, so a proof has one spelling.
G1Json = tuple[FqDecimal, FqDecimal, Literal["1"]]
G2Json = tuple[tuple[FqDecimal, FqDecimal], tuple[FqDecimal, FqDecimal], tuple[Literal["1"], Literal["0"]]]


class SnarkjsProof(_Frozen):
    pi_a: G1Json
    pi_b: G2Json
    pi_c: G1Json
    protocol: Literal["groth16"]
    curve: Literal["bn128"]


class CounterfactualSpread(_Frozen):
    """The spread lens: the decision for every combination of sensitive values (in the card's slice
    order) at the query, how many distinct decisions and margin buckets they make."""

    decisions: tuple[int, ...]
    decision_labels: tuple[str, ...]
    distinct_decisions: int
    score_buckets: int


# The persistence lens's verdict on one counterfactual: the customer's own value ("own", where the gap
# is 0), favoured (LB > 0: the customer's group gets the larger favourable margin everywhere in the box),
# disfavoured (UB < 0), or inconclusive.
PersistenceStatus = Literal["own", "favoured", "disfavoured", "inconclusive"]


class PersistenceBound(_Frozen):
    """Bounds on g = margin(customer) - margin(customer with `attribute` = `value`) over the box, at the
    logit scale: lower <= min g, upper >= max g."""

    attribute: str
    # The counterfactual value at the input scale: an integer for a one-column feature, one per column otherwise.
    value: int | tuple[int, ...]
    label: str
    lower: int
    upper: int
    status: PersistenceStatus


class PersistentBias(_Frozen):
    """The persistence lens: the box's half-width delta (at the input scale 2^scale_bits, on the card's
    moved columns) and the bounds for every value of every sensitive attribute, in the card's order."""

    delta: int = Field(ge=0)
    bounds: tuple[PersistenceBound, ...]


class SlicePart(_Frozen):
    """The proof of one more slice of a per-slice certificate."""

    slice_index: int = Field(ge=1, lt=R)
    bucket: str = Field(max_length=64)
    proof: SnarkjsProof
    proof_hex: ProofHex


class CertificateBundle(_Frozen):
    bundle_version: Literal[1] = BUNDLE_VERSION
    certificate_id: str = Field(max_length=128)
    issued_at: str = Field(max_length=64)
    model_id: str = Field(max_length=255)
    card_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    bucket: str = Field(max_length=64)
    query: tuple[int, ...]  # fixed-point integers at 2^scale_bits, model input order
    decision: int = Field(ge=0, lt=R)
    decision_label: str
    status: Status
    flip_slice: FlipSlice | None = None
    eps: Radius
    proof: SnarkjsProof  # snarkjs proof.json
    public_signals: tuple[FrDecimal, ...]  # snarkjs public.json
    proof_hex: ProofHex  # 128-byte compressed proof
    # The spread lens, when the card proves it (its values are public signals too).
    spread: CounterfactualSpread | None = Field(default=None, exclude_if=lambda spread: spread is None)
    persistence: PersistentBias | None = Field(default=None, exclude_if=lambda lens: lens is None)
    # Per-slice certificates: the proofs of slices 1, 2, ... (the one above is slice 0's); empty otherwise.
    parts: tuple[SlicePart, ...] = Field(default=(), exclude_if=lambda parts: not parts)
    # The decision request this certificate answers (its leaf in the transparency log names it too).
    request_id: RequestId | None = None
    # The salt of this certificate's leaf in the transparency log (commitments.log.signals_commitment):
    # 64 hex digits, never published (the bank keeps it with the bundle and serves it to the customer only),
    # so the leaf hides the public signals from everyone else; None for a
    # bundle logged before salts existed (its leaf is the old certificate_issued) or never logged.
    log_salt: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$", exclude_if=lambda salt: salt is None)
    # Inclusion of this certificate and of its card in the bank's transparency log, against one
    # signed checkpoint. Attached when the bundle is served, so it is the only part that changes.
    log: LogEvidence | None = None

    @classmethod
    def from_json(cls, text: str | bytes) -> "CertificateBundle":
        """Strict parse (canonical JSON and values); raises commitments.canonical.NonCanonical."""
        from .canonical import parse_strict

        return parse_strict(cls, text, "bundle")
