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

`DatasetLayout` and the functions below it are what both the statement
(statement.group_counts) and the auditor's verifier compute from the public
dataset: its Poseidon digest and the rows and positives per slice.

Depends on pydantic and the field's Poseidon only: the verifier client imports it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from circuits.field import R
from circuits.gadgets.bits import pack_native
from circuits.poseidon import poseidon_chain

from .bundle import ProofHex, SnarkjsProof
from .canonical import FrDecimal

if TYPE_CHECKING:  # card imports bundle too; only the annotation needs it
    from .card import ModelCard

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


# ----------------------------------------------------------------------------- the dataset's digest and counts
DATASET_TAG = int.from_bytes(b"fairproof.audit.v1", "big")
DATASET_SCHEME = ("poseidon-chain/circomlib; [tag, N, n_inputs, input_bits, pack(rows row-major, input_bits, "
                  "signed), pack(labels, 1)]")
GROUP_COUNT_FIELDS = ("rows", "positives", "selected", "true_positives")


class DatasetError(ValueError):
    """An audit dataset no group-counts proof can be about."""


@dataclass(frozen=True)
class GroupCount:
    """One slice's counts (GROUP_COUNT_FIELDS)."""

    rows: int
    positives: int
    selected: int
    true_positives: int


def input_bits(box_lower: Sequence[int], box_upper: Sequence[int]) -> int:
    """Packing width of an input: every box value v has -2^(b-1) <= v < 2^(b-1)."""
    return max(max(abs(lo), abs(hi)) for lo, hi in zip(box_lower, box_upper)).bit_length() + 1


@dataclass(frozen=True)
class DatasetLayout:
    """What the digest and the per-slice counts of an audit dataset depend on."""

    n_rows: int
    box_lower: tuple[int, ...]
    box_upper: tuple[int, ...]
    sensitive_columns: tuple[int, ...]
    slices: tuple[tuple[int, ...], ...]

    @property
    def n_inputs(self) -> int:
        return len(self.box_lower)

    @property
    def input_bits(self) -> int:
        return input_bits(self.box_lower, self.box_upper)

    @property
    def n_public(self) -> int:
        """The statement's public inputs: commitment, digest, then the counts of every slice."""
        return 2 + len(GROUP_COUNT_FIELDS) * len(self.slices)

    @classmethod
    def of_card(cls, card: ModelCard, n_rows: int) -> "DatasetLayout":
        return cls(n_rows, tuple(card.box_lower), tuple(card.box_upper), tuple(f.column for f in card.sensitive),
                   tuple(card.slices()))

    def check(self, rows: Sequence[Sequence[int]], labels: Sequence[int]) -> None:
        """Refuse (DatasetError) a dataset no honest proof exists for: N rows of n_inputs ints inside the domain
        box, sensitive values forming a slice, labels 0 or 1."""
        if len(rows) != self.n_rows or len(labels) != self.n_rows:
            raise DatasetError(f"the circuit takes {self.n_rows} rows and labels, got {len(rows)} and {len(labels)}")
        slices = set(self.slices)
        for r, (x, label) in enumerate(zip(rows, labels)):
            if len(x) != self.n_inputs or not all(type(v) is int for v in x):
                raise DatasetError(f"row {r}: {self.n_inputs} integer inputs expected")
            outside = [j for j, v in enumerate(x) if not self.box_lower[j] <= v <= self.box_upper[j]]
            if outside:
                raise DatasetError(f"row {r}: input {outside[0]} lies outside the domain box")
            if tuple(x[c] for c in self.sensitive_columns) not in slices:
                raise DatasetError(f"row {r}: its sensitive values are not a combination of domain values")
            if type(label) is not int or label not in (0, 1):
                raise DatasetError(f"row {r}: its label must be 0 or 1")

    def preimage(self, rows: Sequence[Sequence[int]], labels: Sequence[int]) -> list[int]:
        flat = [v for x in rows for v in x]
        return [DATASET_TAG, self.n_rows, self.n_inputs, self.input_bits,
                *pack_native(flat, self.input_bits, signed=True), *pack_native(list(labels), 1, signed=False)]

    def digest(self, rows: Sequence[Sequence[int]], labels: Sequence[int]) -> int:
        """The public digest of an audit dataset (DATASET_SCHEME), checked first (`check`)."""
        self.check(rows, labels)
        return poseidon_chain(self.preimage(rows, labels))

    def counts(self, rows: Sequence[Sequence[int]], labels: Sequence[int]) -> list[tuple[int, int]]:
        """(n_g, p_g) per slice: what anyone computes from the public dataset alone."""
        index = {s: g for g, s in enumerate(self.slices)}
        out = [[0, 0] for _ in self.slices]
        for x, label in zip(rows, labels):
            g = index[tuple(x[c] for c in self.sensitive_columns)]
            out[g][0] += 1
            out[g][1] += label
        return [(n, p) for n, p in out]
