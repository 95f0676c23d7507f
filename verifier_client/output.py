"""`fairproof-verify --json`: the verdict as one JSON document, for scripts.

Two documents, each a pydantic model whose JSON Schema is published in
docs/schemas/ (`python -m verifier_client.output` rewrites them):

- `CertificateReport` for a certificate (file and service modes);
- `GroupCountsReport` for a proof of group counts (`--dataset`).

Like the text output, every value of a valid verdict is derived from the
proof's public signals, the pinned card and the customer's own inputs
(commitments.claims, verifier_client.audit), never read from the bundle's
readable fields; rationals are exact ("numerator/denominator") beside a
decimal for people. An invalid verdict carries only the reason.
"""
from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict

from commitments.bundle import CounterfactualSpread, FlipSlice, PersistentBias, Status
from commitments.card import ModelCard
from commitments.claims import Claims
from fairness.radius import ProvedRadius

from .audit import GroupMetrics
from .verify import CardTrust

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "docs" / "schemas"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Rational(_Frozen):
    exact: str  # "numerator/denominator", lowest terms
    decimal: float

    @classmethod
    def of(cls, value: Fraction) -> "Rational":
        return cls(exact=f"{value.numerator}/{value.denominator}", decimal=float(value))


class Radius(_Frozen):
    numerator: int
    scale_bits: int
    value: Rational
    kind: ProvedRadius  # the verified bucket's statement: a lower bound (fast, bound), or the true radius rounded down
    capped: bool  # the whole input domain


class CardTrustJson(_Frozen):
    """What rests on the card rather than the proof, and why the card is trusted."""

    card_digest: str
    pin: str  # how the card was pinned, in words
    attested_by: list[str]  # trusted auditors whose attestation covers exactly this card
    proved: list[str]  # what the proof establishes whatever the card says
    stated_by_card: list[str]  # what is read from the card alone (labels, names, radius kinds, ...)


class Certificate(_Frozen):
    model_id: str
    commitment: str
    bucket: str
    decision: int
    decision_label: str
    status: Literal["certified", "counterfactual_flip"]
    radius: Radius
    flip_slice: FlipSlice | None
    query: list[int]
    spread: CounterfactualSpread | None
    persistence: PersistentBias | None
    setup: str  # who set up the keys, in words
    about_your_record: bool | None  # None: no record was given
    transparency_log: str | None
    card: CardTrustJson | None = None


class CertificateReport(_Frozen):
    kind: Literal["certificate"] = "certificate"
    valid: bool
    reason: str | None = None
    reason_code: str | None = None  # the refused rule's stable code (docs/VERIFYING.md)
    certificate: Certificate | None = None


class GroupRateJson(_Frozen):
    labels: list[str]
    rows: int
    positives: int
    selected: int
    true_positives: int
    selection_rate: Rational | None
    true_positive_rate: Rational | None
    false_positive_rate: Rational | None = None


class GroupCountsReport(_Frozen):
    kind: Literal["group-counts"] = "group-counts"
    valid: bool
    reason: str | None = None
    reason_code: str | None = None  # the refused rule's stable code (docs/VERIFYING.md)
    model_id: str | None = None
    audit_circuit: str | None = None
    dataset_sha256: str | None = None
    rows: int | None = None
    favourable_label: str | None = None
    groups: list[GroupRateJson] = []
    disparate_impact: Rational | None = None
    statistical_parity: Rational | None = None
    equal_opportunity: Rational | None = None  # the true-positive-rate gap
    false_positive_gap: Rational | None = None
    equalized_odds: Rational | None = None  # max of the two gaps (FVGM's EO)
    most_favoured: list[str] | None = None
    least_favoured: list[str] | None = None


def certificate_report(claims: Claims, card: ModelCard, setup: str, about_your_record: bool | None,
                       log: str | None, trust: CardTrust | None = None) -> CertificateReport:
    return CertificateReport(valid=True, certificate=Certificate(
        model_id=claims.model_id, commitment=str(claims.commitment), bucket=claims.bucket, decision=claims.decision,
        decision_label=claims.decision_label,
        status=cast(Status, claims.status),  # a STATUS_NAMES value, typed str on Claims
        radius=Radius(numerator=claims.eps_numerator, scale_bits=claims.eps_scale_bits,
                      value=Rational.of(claims.eps), kind=claims.radius, capped=claims.capped),
        flip_slice=claims.flip, query=list(claims.query),
        spread=claims.spread.readable() if claims.spread is not None else None,
        persistence=claims.persistence.readable() if claims.persistence is not None else None,
        setup=setup, about_your_record=about_your_record, transparency_log=log,
        card=None if trust is None else CardTrustJson(
            card_digest=trust.card_digest, pin=trust.pin, attested_by=list(trust.attested_by),
            proved=list(trust.PROVED), stated_by_card=list(trust.STATED_BY_CARD))))


def group_counts_report(metrics: GroupMetrics, card: ModelCard, circuit: str, dataset_sha256: str, rows: int,
                        favourable_label: str) -> GroupCountsReport:
    def rational(x: Fraction | None) -> Rational | None:
        return None if x is None else Rational.of(x)

    return GroupCountsReport(
        valid=True, model_id=card.model_id, audit_circuit=circuit, dataset_sha256=dataset_sha256, rows=rows,
        favourable_label=favourable_label,
        groups=[GroupRateJson(labels=list(g.labels), rows=g.counts.rows, positives=g.counts.positives,
                              selected=g.counts.selected, true_positives=g.counts.true_positives,
                              selection_rate=rational(g.selection_rate),
                              true_positive_rate=rational(g.true_positive_rate),
                              false_positive_rate=rational(g.false_positive_rate)) for g in metrics.groups],
        disparate_impact=rational(metrics.disparate_impact), statistical_parity=rational(metrics.statistical_parity),
        equal_opportunity=rational(metrics.equal_opportunity),
        false_positive_gap=rational(metrics.false_positive_gap), equalized_odds=rational(metrics.equalized_odds),
        most_favoured=None if metrics.most_favoured is None else list(metrics.most_favoured),
        least_favoured=None if metrics.least_favoured is None else list(metrics.least_favoured))


SCHEMAS: dict[str, type[BaseModel]] = {"verify-certificate.schema.json": CertificateReport,
                                        "verify-group-counts.schema.json": GroupCountsReport}


def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":  # rewrite the published schemas
    for name, model in SCHEMAS.items():
        (SCHEMA_DIR / name).write_text(schema_text(model))
        print(f"wrote {SCHEMA_DIR / name}", file=sys.stderr)
