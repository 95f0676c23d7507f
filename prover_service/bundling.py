"""A certificate's bundle: its proofs, their public signals, and the readable fields those signals state.

Every readable field (decision label, flip slice, radius, spread, persistence bounds) is derived from the
statement's public inputs and the card, and the finished bundle is read back through
`commitments.claims.bundle_claims`, the customer's own reading: a bundle whose readable fields a customer
would refuse is never handed out.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from circuits.field import to_signed
from circuits.groth16 import proof_to_bytes
from circuits.snarkjs.json_formats import proof_to_json, public_to_json
from commitments.bundle import (CertificateBundle, CounterfactualSpread, FlipSlice, PersistenceBound, PersistentBias,
                                Radius, SlicePart)
from commitments.card import ModelCard
from commitments.claims import ClaimError, bundle_claims
from fairness.certificate import FLIP, Certificate
from fairness.errors import CertificationError
from fairness.fixed_point import FixedPointModel
from statement import StatementShape


@dataclass(frozen=True)
class ProvedPart:
    """One proof of a certificate: the whole statement's, or one slice's."""

    shape: StatementShape
    public: Sequence[int]  # field elements, as the proof's public signals
    proof: Any


def certificate_bundle(card: ModelCard, model: FixedPointModel, certificate: Certificate,
                       parts: Sequence[ProvedPart]) -> CertificateBundle:
    """The bundle of `certificate` proved by `parts` (one, or one per slice: the first is the bundle's own
    proof, the others its `parts`), checked as a customer reads it."""
    first = parts[0]
    bundle = CertificateBundle(
        certificate_id=str(uuid.uuid4()),
        issued_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        model_id=card.model_id,
        card_digest=card.digest(),
        bucket=first.shape.bucket,
        query=tuple(certificate.query),
        decision=certificate.decision,
        decision_label=card.architecture.class_labels[certificate.decision],
        status="counterfactual_flip" if certificate.status == FLIP else "certified",
        flip_slice=_flip_slice(model, certificate, first.shape),
        eps=Radius(numerator=certificate.eps, scale_bits=certificate.eps_bits,
                   capped=certificate.status != FLIP and certificate.eps == first.shape.eps_cap),
        proof=proof_to_json(first.proof),
        public_signals=tuple(public_to_json(first.public)),
        proof_hex=proof_to_bytes(first.proof).hex(),
        spread=_spread(card, first.shape, first.public),
        persistence=_persistence(model, first.shape, first.public),
        parts=tuple(SlicePart(slice_index=i, bucket=p.shape.bucket, proof=proof_to_json(p.proof),
                              proof_hex=proof_to_bytes(p.proof).hex()) for i, p in enumerate(parts) if i),
    )
    try:  # never hand out a bundle whose readable fields a customer would refuse
        bundle_claims(bundle, card)
    except ClaimError as exc:
        raise CertificationError(f"internal: bundle contradicts its own public signals: {exc}") from exc
    return bundle


def _flip_slice(model: FixedPointModel, certificate: Certificate, shape: StatementShape) -> FlipSlice | None:
    if certificate.status != FLIP or certificate.flip is None:
        return None
    index = certificate.flip.slice_index
    values = tuple(shape.slices[index])
    return FlipSlice(index=index, values=values, labels=model.slice_labels(values))


def _spread(card: ModelCard, shape: StatementShape, public: Sequence[int]) -> CounterfactualSpread | None:
    """The bundle's readable spread: the statement's spread inputs, with their labels."""
    if not shape.spread:
        return None
    at = 5 + shape.n_inputs
    decisions = tuple(int(v) for v in public[at:at + shape.n_slices])
    labels = card.architecture.class_labels
    return CounterfactualSpread(decisions=decisions, decision_labels=tuple(labels[d] for d in decisions),
                                distinct_decisions=len(set(decisions)),
                                score_buckets=int(public[at + shape.n_slices]))


def _persistence(model: FixedPointModel, shape: StatementShape, public: Sequence[int]) -> PersistentBias | None:
    """The bundle's readable persistence bounds: the statement's lens inputs, with their labels."""
    if not shape.persistence:
        return None
    at = 5 + shape.n_inputs + shape.n_spread_public
    values = [to_signed(int(v)) for v in public[at:at + shape.n_persistence_public]]
    query = [to_signed(int(v)) for v in public[5:5 + shape.n_inputs]]
    bounds = []
    for i, (a, point) in enumerate(shape.persistence_pairs):
        feature = model.sensitive[a]
        lower, upper = values[1 + 2 * i], values[2 + 2 * i]
        own = feature.point_of(query) == point
        status = ("own" if own else "favoured" if lower > 0 else "disfavoured" if upper < 0 else "inconclusive")
        bounds.append(PersistenceBound(attribute=feature.name, value=point[0] if feature.width == 1 else point,
                                       label=feature.label_of(point), lower=lower, upper=upper, status=status))
    return PersistentBias(delta=values[0], bounds=tuple(bounds))
