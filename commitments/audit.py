"""What an auditor publishes and receives: an audit dataset, and a proof of group counts on it.

The audit dataset is public (a regulator publishes it): N rows of model
inputs at the card's scale 2^scale_bits, in the card's input order, and one
label per row, 1 when the row's true outcome is the favourable class. The
group-counts bundle is the bank's answer: for every slice (combination of
sensitive values, card order) the number of rows, of positives, of rows the
committed model selects (decides the favourable class) and of selected
positives, with a Groth16 proof of the statement in statement.group_counts
under one of the card's audit circuits.

The bundle's readable fields are claims; `verifier_client.audit` derives
every number it reports from the public signals, the pinned card and the
dataset, exactly, and refuses a bundle whose fields disagree.

What anyone computes from the dataset itself (its Poseidon digest, the rows
and positives per slice) is statement.dataset, shared by the statement and
the auditor's verifier.

Depends on pydantic only: the verifier client imports it.
"""
from __future__ import annotations

import hashlib
import json
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from circuits.field import R

from .bundle import ProofHex, SnarkjsProof
from .canonical import FrDecimal

# Final: their types are the literals the models' fields take.
AUDIT_DATASET_FORMAT: Final = "fairproof-audit-dataset"
GROUP_COUNTS_KIND: Final = "group-counts"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AuditDataset(_Frozen):
    format: Literal["fairproof-audit-dataset"] = AUDIT_DATASET_FORMAT
    version: Literal[1] = 1
    source: str = Field(default="", max_length=1024)  # where the rows come from, for people
    feature_names: tuple[str, ...]  # the model inputs, in the card's order
    scale_bits: int = Field(ge=0, le=64)
    favourable_label: str  # the class a label of 1 stands for
    rows: tuple[tuple[int, ...], ...] = Field(min_length=1)
    labels: tuple[Literal[0, 1], ...]

    @model_validator(mode="after")
    def _one_label_per_row(self) -> "AuditDataset":
        if len(self.labels) != len(self.rows):
            raise ValueError("one label per row")
        n = len(self.feature_names)
        if any(len(row) != n for row in self.rows):
            raise ValueError(f"every row has one value per feature ({n})")
        return self

    def sha256(self) -> str:
        """SHA-256 of the canonical JSON: how people name the dataset (the proof names its Poseidon digest)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @classmethod
    def from_json(cls, text: str | bytes) -> "AuditDataset":
        from .canonical import parse_strict

        return parse_strict(cls, text, "audit dataset")


class GroupCounts(_Frozen):
    """One slice's counts, as the bundle claims them."""

    slice_index: int = Field(ge=0)
    values: tuple[int, ...]  # the slice's sensitive values, at the input scale
    labels: tuple[str, ...]  # and their readable labels, from the card
    rows: int = Field(ge=0, lt=R)
    positives: int = Field(ge=0, lt=R)
    selected: int = Field(ge=0, lt=R)
    true_positives: int = Field(ge=0, lt=R)


class GroupCountsBundle(_Frozen):
    kind: Literal["group-counts"] = GROUP_COUNTS_KIND
    bundle_version: Literal[1] = 1
    issued_at: str = Field(max_length=64)
    model_id: str = Field(max_length=255)
    card_digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    circuit: str = Field(max_length=64)  # the card's audit circuit
    dataset_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    dataset_digest: FrDecimal  # its Poseidon digest (statement.group_counts.dataset_digest), a public signal
    favourable_class: int = Field(ge=0)
    favourable_label: str
    groups: tuple[GroupCounts, ...]
    proof: SnarkjsProof
    public_signals: tuple[FrDecimal, ...]
    proof_hex: ProofHex

    @classmethod
    def from_json(cls, text: str | bytes) -> "GroupCountsBundle":
        from .canonical import parse_strict

        return parse_strict(cls, text, "group-counts bundle")
