"""An audit dataset's public digest and counts: what the group-counts statement (statement.group_counts)
and the auditor's verifier (verifier_client.audit) both compute from the rows themselves.

The digest is Poseidon over the packed rows (DATASET_SCHEME): each input is packed `input_bits` wide, signed,
so every box value fits and the packing is injective; the labels follow, one bit each. The rows and positives
per slice need nothing but the rows.

Depends on circuits only (no fairness code): the customer's verifier imports it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from circuits.gadgets.bits import pack_native
from circuits.poseidon import poseidon_chain

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
